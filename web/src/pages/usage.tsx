// #/usage: GPU-hours and cost by project and user over a period, budgets, and a bar chart.
import { useMemo, useState } from 'preact/hooks';
import { api } from '../api';
import { Chart, PALETTE, uPlot } from '../chart';
import { Bar, Empty, Loading, Section } from '../components';
import { fmtMoney, fmtNum } from '../format';
import { usePoll } from '../live';
import { store, useStore } from '../store';
import type { Usage, UsageNodes, UsageProject, UsageUser } from '../types';

type Period = '24h' | '7d' | '30d' | 'all' | 'custom';
const period = store<Period>('7d');
const custom = store<{ since: string; until: string }>({ since: '', until: '' });

const HOURS: Record<string, number> = { '24h': 24, '7d': 24 * 7, '30d': 24 * 30 };

/** RFC 3339 UTC to the second, as the API reads it. */
function rfc3339(ms: number): string {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/** A date input's value (local midnight); `end` takes the next midnight. */
function dayStart(v: string, end: boolean): number | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (!m) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + (end ? 1 : 0));
  return d.getTime();
}

export function usageQuery(p: Period, c: { since: string; until: string }, now = Date.now()): string {
  const q = new URLSearchParams();
  if (p in HOURS) q.set('since', rfc3339(now - HOURS[p] * 3600_000));
  if (p === 'custom') {
    const s = dayStart(c.since, false);
    const u = dayStart(c.until, true);
    if (s !== null) q.set('since', rfc3339(s));
    if (u !== null) q.set('until', rfc3339(u));
  }
  const text = q.toString();
  return text ? `?${text}` : '';
}

function budgetTone(pct: number): 'ok' | 'warn' | 'bad' {
  return pct >= 100 ? 'bad' : pct >= 80 ? 'warn' : 'ok';
}

export function UsagePage() {
  const p = useStore(period);
  const c = useStore(custom);
  const poll = usePoll((signal) => api<Usage>(`/v1/usage${usageQuery(p, c)}`, { signal }), [p, c.since, c.until], {
    interval: 10_000,
  });
  const [collapsed, setCollapsed] = useState<Set<string>>(new Set());
  const u = poll.data;
  const currency = u?.currency ?? 'USD';

  const byProject = useMemo(() => {
    const m = new Map<string, UsageUser[]>();
    for (const x of u?.users ?? []) {
      let l = m.get(x.project);
      if (!l) m.set(x.project, (l = []));
      l.push(x);
    }
    for (const l of m.values()) l.sort((a, b) => b.gpu_hours - a.gpu_hours || a.user.localeCompare(b.user));
    return m;
  }, [u]);
  const projects = useMemo(
    () => [...(u?.projects ?? [])].sort((a, b) => b.gpu_hours - a.gpu_hours || a.project.localeCompare(b.project)),
    [u],
  );
  const total = projects.reduce(
    (a, x) => ({
      jobs: a.jobs + x.jobs,
      running: a.running + x.running,
      gh: a.gh + x.gpu_hours,
      cost: a.cost + x.cost,
      idle: a.idle + (x.idle_cost ?? 0),
    }),
    { jobs: 0, running: 0, gh: 0, cost: 0, idle: 0 },
  );
  // With autoscaled nodes: what they cost with no job on them, by whom they were kept for.
  const nodes = u?.nodes;
  const toggle = (name: string) => {
    const n = new Set(collapsed);
    if (n.has(name)) n.delete(name);
    else n.add(name);
    setCollapsed(n);
  };

  return (
    <div class="page">
      <div class="page-head">
        <h1 class="page-title">Usage</h1>
        <div class="period">
          <select class="input" data-testid="usage-period" value={p} onChange={(e) => period.set((e.target as HTMLSelectElement).value as Period)}>
            <option value="24h">last 24 hours</option>
            <option value="7d">last 7 days</option>
            <option value="30d">last 30 days</option>
            <option value="all">all time</option>
            <option value="custom">custom…</option>
          </select>
          {p === 'custom' && (
            <>
              <label class="field-inline">
                <span>since</span>
                <input class="input" type="date" data-testid="usage-since" value={c.since} onChange={(e) => custom.set({ ...c, since: (e.target as HTMLInputElement).value })} />
              </label>
              <label class="field-inline">
                <span>until</span>
                <input class="input" type="date" data-testid="usage-until" value={c.until} onChange={(e) => custom.set({ ...c, until: (e.target as HTMLInputElement).value })} />
              </label>
            </>
          )}
        </div>
      </div>
      <p class="muted small">
        Jobs that were in the system in the period count with all their GPU-hours and cost. Budgets are those of their
        current period.
      </p>
      {!u ? (
        poll.error ? <Empty>Could not read the usage.</Empty> : <Loading />
      ) : projects.length === 0 ? (
        <Empty>No usage in this period.</Empty>
      ) : (
        <>
          <Section title="GPU-hours by project">
            <UsageChart projects={projects} />
          </Section>
          <Section title="Projects" count={projects.length}>
            <table class="table usage-table" data-testid="usage-table">
              <thead>
                <tr>
                  <th>project / user</th>
                  <th class="num">jobs</th>
                  <th class="num">running</th>
                  <th class="num">GPU-hours</th>
                  <th class="num">cost ({currency})</th>
                  {nodes && (
                    <th class="num" title="autoscaled nodes kept for them with no job on them (booting, idle), not in cost">
                      idle nodes ({currency})
                    </th>
                  )}
                  <th class="num" title="decayed usage fair share orders by, GPU-hours">fair-share usage</th>
                  <th class="w-30">budget</th>
                </tr>
              </thead>
              <tbody>
                {projects.map((x) => (
                  <ProjectRows key={x.project} p={x} users={byProject.get(x.project) ?? []} currency={currency} idle={!!nodes} open={!collapsed.has(x.project)} onToggle={() => toggle(x.project)} />
                ))}
                <tr class="total-row">
                  <td>total</td>
                  <td class="num">{total.jobs}</td>
                  <td class="num">{total.running}</td>
                  <td class="num">{fmtNum(total.gh, 2)}</td>
                  <td class="num">{fmtMoney(total.cost, currency)}</td>
                  {nodes && <td class="num">{fmtMoney(total.idle, currency)}</td>}
                  <td />
                  <td />
                </tr>
              </tbody>
            </table>
          </Section>
          {nodes && <NodesSection nodes={nodes} currency={currency} />}
        </>
      )}
    </div>
  );
}

/** Autoscaled nodes' money: node-hours and cost by template, and what a fixed cluster of the peak would have cost. */
function NodesSection({ nodes, currency }: { nodes: UsageNodes; currency: string }) {
  const pct = nodes.fixed_cost > 0 ? (100 * nodes.saved) / nodes.fixed_cost : 0;
  return (
    <Section title="Autoscaled nodes" count={nodes.templates.length}>
      <p class="small" data-testid="usage-saved">
        {fmtNum(nodes.node_hours, 2)} node-hours cost <b>{fmtMoney(nodes.cost, currency)}</b> ({fmtMoney(nodes.idle_cost, currency)} with no
        job on them). A fixed on-demand cluster of the peak would have cost {fmtMoney(nodes.fixed_cost, currency)}: saved{' '}
        <b>{fmtMoney(nodes.saved, currency)}</b>
        {nodes.fixed_cost > 0 && ` (${fmtNum(pct, 1)}%)`}.
      </p>
      <table class="table" data-testid="usage-nodes">
        <thead>
          <tr>
            <th>template</th>
            <th>spot</th>
            <th class="num">node-hours</th>
            <th class="num">cost ({currency})</th>
            <th class="num">with no job</th>
            <th class="num">peak nodes</th>
            <th class="num" title="the peak of nodes, on demand, for the whole period">fixed cluster</th>
          </tr>
        </thead>
        <tbody>
          {nodes.templates.map((t) => (
            <tr key={t.template} data-testid="usage-template" data-template={t.template}>
              <td>{t.template}</td>
              <td>{t.spot ? 'yes' : 'no'}</td>
              <td class="num">{fmtNum(t.node_hours, 2)}</td>
              <td class="num">{fmtMoney(t.cost, currency)}</td>
              <td class="num">{fmtMoney(t.idle_cost, currency)}</td>
              <td class="num">{t.peak_nodes}</td>
              <td class="num">{fmtMoney(t.fixed_cost, currency)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </Section>
  );
}

function ProjectRows({
  p,
  users,
  currency,
  idle,
  open,
  onToggle,
}: {
  p: UsageProject;
  users: UsageUser[];
  currency: string;
  idle: boolean;
  open: boolean;
  onToggle: () => void;
}) {
  const hasBudget = typeof p.budget === 'number';
  const pct = p.budget_used_pct ?? 0;
  return (
    <>
      <tr class="project-row" data-testid="usage-project" data-project={p.project}>
        <td>
          <button type="button" class="fold" aria-expanded={open} onClick={onToggle}>
            {open ? '▾' : '▸'}
          </button>
          <b>{p.project}</b> <span class="muted small">{users.length === 1 ? '1 user' : `${users.length} users`}</span>
        </td>
        <td class="num">{p.jobs}</td>
        <td class="num">{p.running}</td>
        <td class="num" data-testid="usage-gpu-hours">{fmtNum(p.gpu_hours, 2)}</td>
        <td class="num" data-testid="usage-cost">{fmtMoney(p.cost, currency)}</td>
        {idle && (
          <td class="num" data-testid="usage-idle-cost">
            {fmtMoney(p.idle_cost ?? 0, currency)}
          </td>
        )}
        <td class="num">{p.fairshare_usage === undefined ? '–' : fmtNum(p.fairshare_usage / 3600, 2)}</td>
        <td>
          {hasBudget ? (
            <div class="budget">
              <Bar pct={pct} tone={budgetTone(pct)} testid="budget-bar" label={`${fmtNum(pct, 1)}% of the ${p.budget_period} budget`} />
              <span class="small">
                {fmtMoney(p.budget_spent, currency)} of {fmtMoney(p.budget, currency)} / {p.budget_period} · <b>{fmtNum(pct, 1)}%</b>
              </span>
            </div>
          ) : (
            <span class="muted">no budget</span>
          )}
        </td>
      </tr>
      {open &&
        users.map((x) => (
          <tr key={x.user} class="user-row" data-testid="usage-user" data-project={x.project} data-user={x.user}>
            <td class="indent">{x.user}</td>
            <td class="num">{x.jobs}</td>
            <td class="num">{x.running}</td>
            <td class="num">{fmtNum(x.gpu_hours, 2)}</td>
            <td class="num">{fmtMoney(x.cost, currency)}</td>
            {idle && <td class="num">{fmtMoney(x.idle_cost ?? 0, currency)}</td>}
            <td class="num">{x.fairshare_usage === undefined ? '–' : fmtNum(x.fairshare_usage / 3600, 2)}</td>
            <td />
          </tr>
        ))}
    </>
  );
}

function UsageChart({ projects }: { projects: UsageProject[] }) {
  const names = projects.map((p) => p.project);
  const key = names.join('\u0000');
  const opts = useMemo<Omit<uPlot.Options, 'width' | 'height'>>(() => {
    const bars = uPlot.paths.bars!({ size: [0.6, 64], align: 0 });
    return {
      scales: { x: { time: false, range: (_u, min, max) => [min - 0.5, max + 0.5] }, y: { range: (_u, _min, max) => [0, max > 0 ? max * 1.1 : 1] } },
      legend: { show: false },
      cursor: { drag: { x: false, y: false }, points: { show: false } },
      axes: [
        {
          stroke: '#59606b',
          grid: { show: false },
          ticks: { stroke: '#dfe2e6' },
          splits: () => names.map((_, i) => i),
          values: (_u, splits) => splits.map((i) => names[i] ?? ''),
        },
        { label: 'GPU-hours', labelSize: 14, size: 56, stroke: '#59606b', grid: { stroke: '#eceef1' }, ticks: { stroke: '#dfe2e6' } },
      ],
      series: [{}, { label: 'GPU-hours', fill: PALETTE[0] + 'cc', stroke: PALETTE[0], paths: bars, points: { show: false } }],
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key]);
  const data = useMemo(() => [names.map((_, i) => i), projects.map((p) => p.gpu_hours)] as uPlot.AlignedData, [projects]);
  return <Chart opts={opts} optsKey={key} data={data} height={220} testid="usage-chart" />;
}
