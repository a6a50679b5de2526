// #/reports: the simulator's reports kept in DATA/reports: their SVG pictures (read with the
// token, shown from blob: URLs), the summary table and the other files to download.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, api, request, showError } from '../api';
import { Empty, Loading, Section } from '../components';
import { fmtTime } from '../format';
import { usePoll } from '../live';
import type { Report } from '../types';

function fileUrl(report: string, file: string): string {
  return `/v1/reports/${encodeURIComponent(report)}/${encodeURIComponent(file)}`;
}

interface ReportsData {
  reports: Report[];
  missing: boolean;
}

export function ReportsPage() {
  const poll = usePoll<ReportsData>(
    async (signal) => {
      try {
        const r = await api<{ reports: Report[] }>('/v1/reports', { signal });
        return { reports: r.reports ?? [], missing: false };
      } catch (e) {
        if (e instanceof ApiError && e.status === 404) return { reports: [], missing: true };
        throw e;
      }
    },
    [],
    { interval: 30_000, onEvents: false },
  );
  if (!poll.data) return poll.error ? <Empty>Could not read the reports.</Empty> : <Loading />;
  const { reports, missing } = poll.data;
  return (
    <div class="page">
      <h1 class="page-title">Reports</h1>
      {reports.length === 0 ? (
        <Empty>
          {missing ? 'This server does not serve reports.' : 'No report yet. '}
          {!missing && (
            <>
              <code>baton sim … --report DIR</code> writes one; the controller shows those in <code>DATA/reports</code>.
            </>
          )}
        </Empty>
      ) : (
        reports.map((r) => <ReportCard key={`${r.name}@${r.modified}`} report={r} />)
      )}
    </div>
  );
}

const SVG_ORDER = ['utilisation.svg', 'queue.svg', 'jct_cdf.svg'];
function svgRank(f: string): number {
  const i = SVG_ORDER.indexOf(f);
  return i < 0 ? SVG_ORDER.length : i;
}

function ReportCard({ report }: { report: Report }) {
  const svgs = report.files.filter((f) => f.endsWith('.svg')).sort((a, b) => svgRank(a) - svgRank(b) || a.localeCompare(b));
  const summary = report.files.find((f) => f === 'summary.json');
  const others = report.files.filter((f) => !f.endsWith('.svg'));
  return (
    <div data-testid="report" data-name={report.name}>
      <Section title={report.name} right={<span class="muted small">{fmtTime(report.modified)}</span>}>
        {summary && <Summary report={report.name} file={summary} />}
        <div class="report-pics">
          {svgs.map((f) => (
            <SvgPicture key={f} report={report.name} file={f} />
          ))}
        </div>
        {others.length > 0 && (
          <div class="report-files small">
            files:{' '}
            {others.map((f) => (
              <button type="button" key={f} class="btn btn-ghost btn-sm" data-testid="report-file" onClick={() => download(report.name, f)}>
                ↓ {f}
              </button>
            ))}
          </div>
        )}
      </Section>
    </div>
  );
}

function SvgPicture({ report, file }: { report: string; file: string }) {
  const [url, setUrl] = useState<string | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    const ctl = new AbortController();
    let made: string | null = null;
    request(fileUrl(report, file), { signal: ctl.signal })
      .then((r) => r.blob())
      .then((b) => {
        const typed = b.type === 'image/svg+xml' ? b : new Blob([b], { type: 'image/svg+xml' });
        made = URL.createObjectURL(typed);
        setUrl(made);
      })
      .catch((e: unknown) => {
        if (!ctl.signal.aborted) setErr(e instanceof Error ? e.message : String(e));
      });
    return () => {
      ctl.abort();
      if (made) URL.revokeObjectURL(made);
    };
  }, [report, file]);
  return (
    <figure class="report-pic card">
      {url ? <img src={url} alt={file} data-testid="report-image" data-file={file} /> : err ? <div class="log-error">{err}</div> : <Loading />}
      <figcaption class="muted small">{file}</figcaption>
    </figure>
  );
}

type Row = Record<string, unknown>;

/** summary.json: one JSON object a line (one per policy), or a JSON array. */
export function parseSummary(text: string): Row[] {
  const t = text.trim();
  if (!t) return [];
  if (t.startsWith('[')) {
    try {
      const a = JSON.parse(t) as unknown;
      if (Array.isArray(a)) return a.filter((x): x is Row => !!x && typeof x === 'object');
    } catch {
      // not one array: read it by lines
    }
  }
  const rows: Row[] = [];
  for (const line of t.split('\n')) {
    const s = line.trim();
    if (!s) continue;
    try {
      const v = JSON.parse(s) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) rows.push(v as Row);
    } catch {
      // skip a line that is not JSON
    }
  }
  if (rows.length === 0) {
    try {
      const v = JSON.parse(t) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) rows.push(v as Row);
    } catch {
      // nothing readable
    }
  }
  return rows;
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return '–';
  if (typeof v === 'number') return Number.isInteger(v) ? v.toLocaleString('en-US') : v.toLocaleString('en-US', { maximumFractionDigits: 4 });
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function Summary({ report, file }: { report: string; file: string }) {
  const [rows, setRows] = useState<Row[] | null>(null);
  useEffect(() => {
    const ctl = new AbortController();
    request(fileUrl(report, file), { signal: ctl.signal })
      .then((r) => r.text())
      .then((t) => setRows(parseSummary(t)))
      .catch((e: unknown) => {
        if (!ctl.signal.aborted) {
          showError(e);
          setRows([]);
        }
      });
    return () => ctl.abort();
  }, [report, file]);
  if (!rows) return <Loading />;
  if (rows.length === 0) return null;
  const cols: string[] = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  return (
    <div class="table-wrap">
      <table class="table table-compact" data-testid="report-summary">
        <thead>
          <tr>
            {cols.map((c) => (
              <th key={c} class={typeof rows[0][c] === 'number' ? 'num' : ''}>
                {c}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={i}>
              {cols.map((c) => (
                <td key={c} class={typeof r[c] === 'number' ? 'num' : ''}>
                  {cell(r[c])}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

async function download(report: string, file: string): Promise<void> {
  try {
    const r = await request(fileUrl(report, file));
    const url = URL.createObjectURL(await r.blob());
    const a = document.createElement('a');
    a.href = url;
    a.download = `${report}-${file}`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
  } catch (e) {
    showError(e);
  }
}
