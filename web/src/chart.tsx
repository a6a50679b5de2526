// uPlot in a Preact component: made once, fed new data, sized to its box.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

export const PALETTE = [
  '#2f6fdb',
  '#e4572e',
  '#17a673',
  '#a05bd5',
  '#f0a202',
  '#1aa3b8',
  '#d6336c',
  '#6c757d',
  '#7b9e0f',
  '#8c564b',
];

export interface ChartProps {
  /** Options without width and height; a new `key` (or `optsKey`) rebuilds the chart. */
  opts: Omit<uPlot.Options, 'width' | 'height'>;
  optsKey: string;
  data: uPlot.AlignedData;
  height?: number;
  testid?: string;
  attrs?: Record<string, string>;
}

export function Chart({ opts, optsKey, data, height = 220, testid, attrs }: ChartProps) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const dataRef = useRef(data);
  dataRef.current = data;

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = Math.max(200, el.clientWidth);
    const u = new uPlot({ ...opts, width, height } as uPlot.Options, dataRef.current, el);
    plot.current = u;
    let last = width;
    const ro = new ResizeObserver(() => {
      const w = Math.max(200, el.clientWidth);
      if (Math.abs(w - last) > 2) {
        last = w;
        u.setSize({ width: w, height });
      }
    });
    ro.observe(el);
    return () => {
      ro.disconnect();
      u.destroy();
      plot.current = null;
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [optsKey, height]);

  useEffect(() => {
    plot.current?.setData(data);
  }, [data]);

  return <div class="chart" ref={box} data-testid={testid} {...attrs} />;
}

export { uPlot };
