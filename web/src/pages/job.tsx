// #/jobs/ID: one job: its state and actions, its GPUs' gauges, its metric lines as charts and
// its checkpoints, its log on each node (followed live), its events and every field it has.
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, abortWhenHidden, api, authHeaders, errorOf, isAbort, logout, post, showError, sleep, whenVisible } from '../api';
import { Chart, PALETTE } from '../chart';
import type { uPlot } from '../chart';
import { Bar, Empty, Loading, Section, StateBadge, useNow } from '../components';
import {
  fmtBytes,
  fmtCommand,
  fmtDuration,
  fmtExit,
  fmtGpus,
  fmtMoney,
  fmtNum,
  fmtRelative,
  fmtTime,
  jobRuntime,
} from '../format';
import { events, usePoll } from '../live';
import { navigate } from '../router';
import { useStore } from '../store';
import type { Job, JobMetrics, MetricLine, MetricLines } from '../types';
import { isActive } from '../types';

interface JobData {
  job: Job;
  metrics: JobMetrics | null;
}

export function JobPage({ id }: { id: string }) {
  const path = `/v1/jobs/${encodeURIComponent(id)}`;
  const poll = usePoll<JobData>(
    async (signal) => {
      const [job, metrics] = await Promise.all([
        api<Job>(path, { signal }),
        api<JobMetrics>(`${path}/metrics`, { signal }).catch((e: unknown) => {
          if (isAbort(e) || (e instanceof ApiError && e.status === 401)) throw e;
          return null;
        }),
      ]);
      return { job, metrics };
    },
    [path],
  );
  const now = useNow(1000);
  const [busy, setBusy] = useState('');

  if (!poll.data) {
    return (
      <div class="page">
        <h1 class="page-title">Job {id}</h1>
        {poll.error ? (
          <Empty>{poll.error instanceof Error ? poll.error.message : 'Could not read the job.'}</Empty>
        ) : (
          <Loading />
        )}
      </div>
    );
  }
  const { job: j, metrics: m } = poll.data;
  const active = isActive(j.state);

  const act = async (what: 'cancel' | 'hold' | 'release' | 'resubmit') => {
    setBusy(what);
    try {
      const r = await post<Job>(`${path}/${what}`);
      if (what === 'resubmit' && r && typeof r.id === 'number') {
        navigate(`/jobs/${r.id}`);
        return;
      }
      poll.reload();
    } catch (e) {
      showError(e);
    } finally {
      setBusy('');
    }
  };

  const nodes = (j.allocation ?? []).map((a) => a.node);
  const currency = m?.currency ?? 'USD';
  const runtime = jobRuntime(j.started_at, j.finished_at, now);

  return (
    <div class="page job-page" data-testid="job-page" data-id={j.id}>
      <div class="job-head">
        <div>
          <div class="crumbs">
            <a href="#/jobs">Jobs</a> /
          </div>
          <h1 class="page-title">
            <span class="muted">#{j.array_id != null && j.array_index != null ? `${j.id} (${j.array_id}_${j.array_index})` : j.id}</span>{' '}
            {j.name || <span class="muted">(no name)</span>}{' '}
            <StateBadge state={j.state} testid="job-state" />
          </h1>
          <div class="muted">
            {j.user} · project {j.project} · pool {j.pool} · priority {j.priority}
            {j.array_id != null && (
              <>
                {' '}
                · task {j.array_index} of array <a href={`#/jobs/${j.array_id}`}>{j.array_id}</a>
              </>
            )}
          </div>
        </div>
        <div class="actions">
          <button type="button" class={`btn ${active ? 'btn-danger' : 'btn-dim'}`} data-testid="cancel-button" disabled={!!busy} onClick={() => act('cancel')} title="stop the job (pending, held or running)">
            Cancel
          </button>
          <button type="button" class={`btn ${j.state === 'pending' ? '' : 'btn-dim'}`} data-testid="hold-button" disabled={!!busy} onClick={() => act('hold')} title="keep a pending job from starting">
            Hold
          </button>
          <button type="button" class={`btn ${j.state === 'held' ? 'btn-primary' : 'btn-dim'}`} data-testid="release-button" disabled={!!busy} onClick={() => act('release')} title="let a held job queue again">
            Release
          </button>
          <button type="button" class={`btn ${active ? 'btn-dim' : ''}`} data-testid="resubmit-button" disabled={!!busy} onClick={() => act('resubmit')} title="submit the same job again as a new job">
            Resubmit
          </button>
        </div>
      </div>

      <div class="kv-cards">
        <KV label="reason" wide={!!(j.reason_detail ?? j.reason)} testid="job-reason">
          {j.reason_detail ?? j.reason ?? <span class="muted">–</span>}
          {j.reason && j.reason_detail && <span class="tag tag-sm">{j.reason}</span>}
        </KV>
        <KV label="GPUs">
          {fmtGpus(j.resources?.gpus)}
          {j.resources?.gpu_type ? ` × ${j.resources.gpu_type}` : ''}
        </KV>
        <KV label="allocation" testid="job-allocation">
          {nodes.length ? (j.allocation ?? []).map((a) => `${a.node}[${a.gpus.join(',')}]${a.gpu_share !== undefined ? ` ×${fmtGpus(a.gpu_share)}` : ''}`).join('  ') : <span class="muted">none</span>}
        </KV>
        <KV label={j.finished_at ? 'ran' : j.started_at ? 'running for' : 'waiting for'}>
          {j.started_at ? fmtDuration(runtime) : fmtDuration(jobRuntime(j.submitted_at, null, now))}
          {j.time_limit_s ? <span class="muted"> / limit {fmtDuration(j.time_limit_s)}</span> : null}
        </KV>
        <KV label="cost" testid="job-cost">
          {fmtMoney(m?.cost ?? j.cost, currency)}
          <span class="muted"> · {fmtMoney(m?.cost_per_hour ?? j.cost_per_hour, currency)}/h</span>
        </KV>
        <KV label="GPU-hours" testid="job-gpu-seconds">
          {fmtNum((m?.gpu_seconds ?? j.gpu_seconds) / 3600, 2)}
          <span class="muted"> ({fmtNum(m?.gpu_seconds ?? j.gpu_seconds, 0)} GPU-s)</span>
        </KV>
        {j.state === 'pending' && (
          <KV label="expected start">
            {j.estimated_start ? `${fmtRelative(j.estimated_start, now)} (${fmtTime(j.estimated_start)})` : <span class="muted">no estimate</span>}
            {j.queue_position !== undefined && <span class="muted"> · position {j.queue_position}</span>}
          </KV>
        )}
        <KV label="preemptible" testid="job-preemptible">
          {j.preemptible ? 'yes' : 'no'}
          <span class="muted">
            {' '}
            · {j.preemptions} preemption{j.preemptions === 1 ? '' : 's'}
            {j.max_preemptions !== undefined ? ` of at most ${j.max_preemptions}` : ''}
          </span>
          {j.preempt_deadline && <span class="tag tag-sm">SIGKILL {fmtRelative(j.preempt_deadline, now)}</span>}
        </KV>
        {!active && (
          <KV label="exit">
            {fmtExit(j.exit_code, j.exit_signal)}
          </KV>
        )}
      </div>

      <Section title="GPUs" count={m?.gpus.length ?? 0} right={m && <span class="muted" data-testid="mean-util">mean utilisation {m.mean_utilization_pct === null ? '–' : `${fmtNum(m.mean_utilization_pct, 1)}%`} over {m.samples} samples</span>}>
        {m && m.gpus.length > 0 ? (
          <div class="gauges">
            {m.gpus.map((g) => (
              <div class="gauge card" key={`${g.node}:${g.index}`} data-testid="job-gpu" data-node={g.node} data-index={g.index}>
                <div class="gauge-title">
                  {g.node} · GPU {g.index} <span class="muted">{g.model}{g.milli !== 1000 ? ` · ${g.milli / 10}% share` : ''}</span>
                </div>
                <div class="gauge-row">
                  <span class="gauge-label">util</span>
                  <Bar pct={g.utilization_pct} tone="info" />
                  <span class="gauge-val">{g.utilization_pct == null ? '–' : `${g.utilization_pct}%`}</span>
                </div>
                <div class="gauge-row">
                  <span class="gauge-label">memory</span>
                  <Bar pct={g.memory_used_bytes == null ? null : (100 * g.memory_used_bytes) / Math.max(1, g.memory_total_bytes)} tone="ok" />
                  <span class="gauge-val">
                    {fmtBytes(g.memory_used_bytes)} / {fmtBytes(g.memory_total_bytes)}
                  </span>
                </div>
                <div class="gauge-row small muted">
                  {g.temperature_c == null ? '' : `${g.temperature_c} °C`} {g.power_w == null ? '' : ` · ${g.power_w} W`}
                </div>
              </div>
            ))}
          </div>
        ) : (
          <Empty>{active ? 'No GPU readings yet (the job is not running, or asks for no GPU).' : 'The job has ended: no live GPU readings.'}</Empty>
        )}
      </Section>

      <MetricsSection id={id} job={j} />

      <Section title="Log" right={<span class="muted small">{nodes.length > 1 ? `${nodes.length} nodes, rank order` : ''}</span>}>
        <LogView key={id} id={id} nodes={nodes} state={j.state} onEnded={poll.reload} />
      </Section>

      <JobEvents id={j.id} />

      <Section title="All fields">
        <Fields job={j} />
      </Section>
    </div>
  );
}

function KV({ label, children, wide, testid }: { label: string; children: ComponentChildren; wide?: boolean; testid?: string }) {
  return (
    <div class={`kv card ${wide ? 'kv-wide' : ''}`}>
      <div class="kv-label">{label}</div>
      <div class="kv-value" data-testid={testid}>
        {children}
      </div>
    </div>
  );
}

/* ---------- metric lines ---------- */

interface LinesState {
  lines: MetricLine[];
  node: string;
  size: number;
  missing: boolean;
  loaded: boolean;
  error?: string;
}

function useMetricLines(id: string, active: boolean): LinesState {
  const [st, setSt] = useState<LinesState>({ lines: [], node: '', size: 0, missing: false, loaded: false });
  const activeRef = useRef(active);
  const kick = useRef<() => void>(() => {});
  useEffect(() => {
    const was = activeRef.current;
    activeRef.current = active;
    if (was && !active) kick.current(); // read the last lines once it ends
  }, [active]);

  useEffect(() => {
    const ctl = new AbortController();
    let lines: MetricLine[] = [];
    let node: string | null = null;
    let offset = 0;
    let size = 0;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let running = false;
    const base = `/v1/jobs/${encodeURIComponent(id)}/metrics/lines`;

    const once = async () => {
      if (running) return;
      running = true;
      clearTimeout(timer);
      try {
        for (let page = 0; page < 64; page++) {
          const r = await api<MetricLines>(`${base}?offset=${offset}`, { signal: ctl.signal });
          if (node !== null && r.node !== node) {
            // the job moved to another node: its file there starts over
            node = r.node;
            lines = [];
            offset = 0;
            continue;
          }
          node = r.node;
          size = r.size ?? 0;
          if (typeof r.next !== 'number') {
            lines = r.lines ?? []; // a server that answers the whole file at once
            break;
          }
          if (r.lines?.length) lines = lines.concat(r.lines);
          const advanced = r.next > offset;
          offset = r.next;
          if (!advanced || offset >= size) break;
        }
        setSt({ lines, node: node ?? '', size, missing: false, loaded: true });
      } catch (e) {
        if (ctl.signal.aborted || isAbort(e)) return;
        if (e instanceof ApiError && (e.status === 404 || e.status === 405 || e.status === 403)) {
          // an older server without the route, no such job, or another user's job
          setSt({ lines: [], node: '', size: 0, missing: true, loaded: true, error: e.status === 403 ? e.message : '' });
          running = false;
          return;
        }
        setSt((s) => ({ ...s, loaded: true }));
      } finally {
        running = false;
      }
      if (!ctl.signal.aborted && activeRef.current) timer = setTimeout(tick, 5000);
    };
    const tick = () => {
      if (document.hidden) timer = setTimeout(tick, 5000);
      else void once();
    };
    kick.current = () => void once();
    void once();
    return () => {
      ctl.abort();
      clearTimeout(timer);
      kick.current = () => {};
    };
  }, [id]);
  return st;
}

interface Series {
  key: string;
  xs: number[];
  ys: (number | null)[];
}

/** Every numeric key but `step`, against `step` (or the line's index when no line has one). */
export function seriesOf(lines: MetricLine[]): { xLabel: string; x: number[]; series: Series[] } {
  const byStep = lines.some((l) => typeof l.step === 'number' && Number.isFinite(l.step));
  const rows: { x: number; l: MetricLine }[] = [];
  lines.forEach((l, i) => {
    if (byStep) {
      if (typeof l.step === 'number' && Number.isFinite(l.step)) rows.push({ x: l.step, l });
    } else rows.push({ x: i, l });
  });
  if (byStep) rows.sort((a, b) => a.x - b.x);
  const keys: string[] = [];
  const seen = new Set<string>();
  for (const { l } of rows) {
    for (const [k, v] of Object.entries(l)) {
      if (k === 'step' || seen.has(k)) continue;
      if (typeof v === 'number' && Number.isFinite(v)) {
        seen.add(k);
        keys.push(k);
      }
    }
  }
  const x = rows.map((r) => r.x);
  const series = keys.map((key) => ({
    key,
    xs: x,
    ys: rows.map(({ l }) => {
      const v = l[key];
      return typeof v === 'number' && Number.isFinite(v) ? v : null;
    }),
  }));
  return { xLabel: byStep ? 'step' : 'line', x, series };
}

function MetricsSection({ id, job }: { id: string; job: Job }) {
  const active = isActive(job.state);
  const st = useMetricLines(id, active);
  const { xLabel, x, series } = useMemo(() => seriesOf(st.lines), [st.lines]);
  const checkpoints = useMemo(
    () =>
      st.lines
        .map((l, i) => ({ l, i }))
        .filter(({ l }) => typeof l.checkpoint === 'string' && l.checkpoint !== '')
        .reverse(),
    [st.lines],
  );
  const tracked = job.metric;
  const right = (
    <span class="muted small">
      {st.loaded && !st.missing && `${st.lines.length.toLocaleString('en-US')} lines · ${fmtBytes(st.size)}${st.node ? ` · ${st.node}` : ''}${active ? ' · every 5 s' : ''}`}
    </span>
  );
  return (
    <Section title="Metrics" right={right}>
      {(tracked || job.last_checkpoint) && (
        <div class="tracked" data-testid="tracked-metric">
          {tracked && (
            <>
              <span>
                tracking <b>{tracked.name}</b> ({tracked.goal})
              </span>
              {tracked.best && (
                <span data-testid="metric-best">
                  best <b>{fmtNum(tracked.best.value, 6)}</b>
                  {tracked.best.step != null && ` at step ${tracked.best.step}`}
                  {tracked.best.checkpoint && <> · <code>{tracked.best.checkpoint}</code></>}
                </span>
              )}
              {tracked.last && (
                <span data-testid="metric-last">
                  last <b>{fmtNum(tracked.last.value, 6)}</b>
                  {tracked.last.step != null && ` at step ${tracked.last.step}`}
                </span>
              )}
            </>
          )}
          {job.last_checkpoint && <span data-testid="last-checkpoint">last checkpoint {fmtTime(job.last_checkpoint)}</span>}
        </div>
      )}
      {!st.loaded ? (
        <Loading />
      ) : st.missing ? (
        <Empty>{st.error ? `No metric lines: ${st.error}` : 'No metric lines (this server does not serve them).'}</Empty>
      ) : series.length === 0 ? (
        <Empty>
          No metric lines yet. A job appends JSON lines such as <code>{'{"step": 100, "loss": 0.42}'}</code> to{' '}
          <code>$BATON_METRICS_FILE</code>.
        </Empty>
      ) : (
        <div class="charts" data-testid="metrics-chart" data-keys={series.map((s) => s.key).join(',')} data-points={x.length}>
          {series.map((s, i) => (
            <MetricChart key={s.key} s={s} xLabel={xLabel} color={PALETTE[i % PALETTE.length]} sync={`m${id}`} />
          ))}
        </div>
      )}
      <div class="checkpoints" data-testid="checkpoints" data-count={checkpoints.length}>
        <div class="sub-head">Checkpoints {checkpoints.length > 0 && <span class="count">{checkpoints.length}</span>}</div>
        {checkpoints.length === 0 ? (
          <div class="muted small">none reported{st.missing ? '' : ' in the metric lines'}</div>
        ) : (
          <table class="table table-compact">
            <thead>
              <tr>
                <th>step</th>
                <th>checkpoint</th>
                <th>values</th>
              </tr>
            </thead>
            <tbody>
              {checkpoints.slice(0, 100).map(({ l, i }) => (
                <tr key={i} data-testid="checkpoint">
                  <td>{typeof l.step === 'number' ? l.step : '–'}</td>
                  <td>
                    <code>{String(l.checkpoint)}</code>
                  </td>
                  <td class="muted">
                    {Object.entries(l)
                      .filter(([k, v]) => k !== 'step' && k !== 'checkpoint' && (typeof v === 'number' || typeof v === 'string'))
                      .map(([k, v]) => `${k}=${v}`)
                      .join(' ')}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </div>
    </Section>
  );
}

/** An axis label: short, and distinct for close values (0.0005, 0.001, 0.0015). */
export function fmtAxis(v: number | null): string {
  if (v === null || !Number.isFinite(v)) return '';
  const a = Math.abs(v);
  if (a >= 1e9) return `${+(v / 1e9).toPrecision(3)}G`;
  if (a >= 1e6) return `${+(v / 1e6).toPrecision(3)}M`;
  if (a >= 1e4) return `${+(v / 1e3).toPrecision(4)}k`;
  if (a !== 0 && a < 1e-3) return v.toExponential(1);
  return String(+v.toPrecision(4));
}

function MetricChart({ s, xLabel, color, sync }: { s: Series; xLabel: string; color: string; sync: string }) {
  const opts = useMemo<Omit<uPlot.Options, 'width' | 'height'>>(
    () => ({
      title: s.key,
      scales: { x: { time: false } },
      legend: { show: true, live: true },
      cursor: { sync: { key: sync }, drag: { x: true, y: false } },
      axes: [
        { label: xLabel, labelSize: 14, size: 32, stroke: '#59606b', grid: { stroke: '#eceef1' }, ticks: { stroke: '#dfe2e6' } },
        { size: 56, stroke: '#59606b', grid: { stroke: '#eceef1' }, ticks: { stroke: '#dfe2e6' }, values: (_u, splits) => splits.map(fmtAxis) },
      ],
      series: [
        { label: xLabel },
        { label: s.key, stroke: color, width: 1.5, spanGaps: true, points: { show: false } },
      ],
    }),
    [s.key, xLabel, color, sync],
  );
  const data = useMemo(() => [s.xs, s.ys] as uPlot.AlignedData, [s]);
  return <Chart opts={opts} optsKey={`${s.key}|${xLabel}`} data={data} height={200} attrs={{ 'data-key': s.key, class: 'chart metric-chart' }} />;
}

/* ---------- the log ---------- */

const LOG_CAP = 2 * 1024 * 1024;

type LogStatus = 'connecting' | 'following' | 'ended' | 'error' | 'reconnecting' | 'paused';

function LogView({ id, nodes, state, onEnded }: { id: string; nodes: string[]; state: string; onEnded: () => void }) {
  const tabs = nodes.length > 0 ? nodes : [''];
  const [picked, setPicked] = useState<string | null>(null);
  const node = picked !== null && tabs.includes(picked) ? picked : tabs[0];
  const [wrap, setWrap] = useState(true);
  return (
    <div class="log-box">
      <div class="tabs">
        {tabs.map((n, rank) => (
          <button
            type="button"
            key={n || '-'}
            class={`tab ${n === node ? 'active' : ''}`}
            data-testid="log-tab"
            data-node={n}
            onClick={() => setPicked(n)}
          >
            {n ? (
              <>
                {n} <span class="muted small">rank {rank}</span>
              </>
            ) : (
              'log'
            )}
          </button>
        ))}
        <label class="tab-option small">
          <input type="checkbox" checked={wrap} onChange={(e) => setWrap((e.target as HTMLInputElement).checked)} /> wrap lines
        </label>
      </div>
      <LogStream key={`${id}|${node}`} id={id} node={node} state={state} wrap={wrap} onEnded={onEnded} />
    </div>
  );
}

function LogStream({
  id,
  node,
  state,
  wrap,
  onEnded,
}: {
  id: string;
  node: string;
  state: string;
  wrap: boolean;
  onEnded: () => void;
}) {
  const endedRef = useRef(onEnded);
  endedRef.current = onEnded;
  const pre = useRef<HTMLPreElement>(null);
  const [status, setStatus] = useState<LogStatus>('connecting');
  const [error, setError] = useState('');
  const [bytes, setBytes] = useState(0);
  const [trimmed, setTrimmed] = useState(false);

  useEffect(() => {
    const ctl = new AbortController();
    let shown = 0;
    let pending = '';
    let flushing = 0;
    let received = 0;
    const el = pre.current!;
    el.textContent = '';

    const flush = () => {
      flushing = 0;
      if (!pending) return;
      const stick = el.scrollTop + el.clientHeight >= el.scrollHeight - 24;
      if (shown + pending.length > LOG_CAP) {
        let text = (el.textContent ?? '') + pending;
        text = text.slice(text.length - LOG_CAP);
        const nl = text.indexOf('\n');
        if (nl >= 0 && nl < 4096) text = text.slice(nl + 1);
        el.textContent = text;
        shown = text.length;
        setTrimmed(true);
      } else {
        el.appendChild(document.createTextNode(pending));
        shown += pending.length;
      }
      pending = '';
      if (stick) el.scrollTop = el.scrollHeight;
      setBytes(received);
    };
    const append = (text: string) => {
      if (!text) return;
      pending += text;
      if (pending.length > LOG_CAP) pending = pending.slice(pending.length - LOG_CAP);
      if (!flushing) flushing = window.setTimeout(flush, 60);
    };

    const run = async () => {
      const decoder = new TextDecoder();
      let backoff = 1000;
      while (!ctl.signal.aborted) {
        // A hidden tab gives its connection back after a while and goes on from `received`.
        await whenVisible(ctl.signal);
        const conn = new AbortController();
        const onAbort = () => conn.abort();
        ctl.signal.addEventListener('abort', onAbort);
        const unwatch = abortWhenHidden(conn);
        try {
          const q = new URLSearchParams({ follow: '1' });
          if (node) q.set('node', node);
          if (received > 0) q.set('offset', String(received));
          const res = await fetch(`/v1/jobs/${encodeURIComponent(id)}/logs?${q}`, {
            headers: authHeaders(),
            signal: conn.signal,
            cache: 'no-store',
          });
          if (!res.ok) {
            const err = await errorOf(res);
            if (res.status === 401) logout(err);
            if (res.status >= 500 && res.status !== 500) throw err; // 503: try again
            setError(`HTTP ${err.status} · ${err.code}: ${err.message}`);
            setStatus('error');
            return;
          }
          setStatus('following');
          backoff = 1000;
          if (!res.body) {
            append(decoder.decode(new Uint8Array(await res.arrayBuffer())));
          } else {
            const reader = res.body.getReader();
            for (;;) {
              const { value, done } = await reader.read();
              if (done) break;
              received += value.byteLength;
              append(decoder.decode(value, { stream: true }));
            }
          }
          append(decoder.decode());
          flush();
          setStatus('ended');
          endedRef.current(); // the job has ended: show its final state now
          return;
        } catch (e) {
          if (ctl.signal.aborted) return;
          if (conn.signal.aborted) {
            setStatus('paused');
            continue; // hidden: wait to be shown
          }
          setStatus('reconnecting');
          await sleep(backoff, ctl.signal);
          backoff = Math.min(5000, backoff * 2);
        } finally {
          unwatch();
          ctl.signal.removeEventListener('abort', onAbort);
        }
      }
    };
    void run();
    return () => {
      ctl.abort();
      clearTimeout(flushing);
    };
  }, [id, node]);

  const waiting = bytes === 0 && (state === 'pending' || state === 'held');
  return (
    <div class="log">
      {trimmed && <div class="log-note muted small">showing the last 2 MiB</div>}
      {error && (
        <div class="log-error" data-testid="log-error">
          {error}
        </div>
      )}
      <pre ref={pre} class={`log-pre ${wrap ? 'wrap' : ''} ${error && bytes === 0 ? 'log-pre-short' : ''}`} data-testid="job-log" data-node={node} />
      <div class="log-foot small">
        {status === 'ended' ? (
          <span class="log-ended" data-testid="log-ended">
            ■ log complete
          </span>
        ) : status === 'error' ? (
          <span class="muted">not following</span>
        ) : status === 'reconnecting' ? (
          <span class="muted">connection lost, reconnecting…</span>
        ) : status === 'paused' ? (
          <span class="muted">paused while the tab is hidden</span>
        ) : waiting ? (
          <span class="muted">waiting for the job to start…</span>
        ) : status === 'connecting' ? (
          <span class="muted">connecting…</span>
        ) : (
          <span class="following">
            <span class="live-dot" /> following
          </span>
        )}
        <span class="muted">{fmtBytes(bytes)}</span>
      </div>
    </div>
  );
}

/* ---------- events ---------- */

function JobEvents({ id }: { id: number }) {
  const all = useStore(events);
  const mine = useMemo(() => all.filter((e) => e.job === id), [all, id]);
  return (
    <Section title="Events" count={mine.length}>
      {mine.length === 0 ? (
        <Empty>No cluster event names this job.</Empty>
      ) : (
        <ul class="events">
          {mine.map((e) => (
            <li key={e.seq} class={`event sev-${e.severity}`} data-testid="event" data-seq={e.seq} data-kind={e.kind}>
              <span class="event-time" title={e.at}>
                {fmtTime(e.at)}
              </span>
              <span class="event-kind">{e.kind}</span>
              <span class="event-msg">{e.message}</span>
            </li>
          ))}
        </ul>
      )}
    </Section>
  );
}

/* ---------- every field ---------- */

const TIME_FIELDS = new Set(['submitted_at', 'started_at', 'finished_at', 'estimated_start', 'last_checkpoint', 'begin', 'preempt_deadline']);

function Fields({ job }: { job: Job }) {
  return (
    <dl class="fields" data-testid="job-fields">
      {Object.entries(job).map(([k, v]) => (
        <div class="field-row" key={k} data-field={k}>
          <dt>{k}</dt>
          <dd>{fieldValue(k, v, job)}</dd>
        </div>
      ))}
    </dl>
  );
}

function fieldValue(k: string, v: unknown, job: Job): ComponentChildren {
  if (v === null || v === undefined) return <span class="muted">null</span>;
  if (k === 'command') {
    return <pre class="cmd" data-testid="job-command">{fmtCommand(v as string[] | string, job.shell)}</pre>;
  }
  if (TIME_FIELDS.has(k) && typeof v === 'string') {
    return (
      <span title={v}>
        {fmtTime(v)} <span class="muted small">{v}</span>
      </span>
    );
  }
  if (k === 'env' && typeof v === 'object') {
    const e = Object.entries(v as Record<string, string>);
    if (e.length === 0) return <span class="muted">{'{}'}</span>;
    return <pre class="cmd">{e.map(([a, b]) => `${a}=${b}`).join('\n')}</pre>;
  }
  if ((k === 'time_limit_s' || k === 'grace_period_s') && typeof v === 'number') {
    return `${fmtDuration(v)} (${v} s)`;
  }
  if (typeof v === 'object') {
    if (Array.isArray(v) && v.length === 0) return <span class="muted">[]</span>;
    return <code class="json">{JSON.stringify(v)}</code>;
  }
  return String(v);
}
