// #/jobs: the queue in start order, the held and waiting jobs, the running ones and the
// latest finished, filtered by user, project, state and name; the tasks of a job array folded
// into one row.
import type { ComponentChildren } from 'preact';
import { useMemo, useState } from 'preact/hooks';
import { api } from '../api';
import { Empty, JobLink, Loading, Section, StateBadge, useNow } from '../components';
import { fmtDuration, fmtGpus, fmtMoney, fmtRelative, fmtTime, jobRuntime, parseTime, fmtExit } from '../format';
import { currency, jobCache, loadCurrency } from '../jobs';
import { usePoll } from '../live';
import { navigate } from '../router';
import { store, useStore } from '../store';
import type { Job } from '../types';
import { JOB_STATES, isActive } from '../types';

export interface Filters {
  user: string;
  project: string;
  state: string;
  name: string;
}

/** Kept while the tab lives, so that coming back finds them. */
const filters = store<Filters>({ user: '', project: '', state: '', name: '' });
const FINISHED_STEP = 200;

async function fetchQueue(signal: AbortSignal): Promise<Job[]> {
  const out: Job[] = [];
  let offset: number | null = 0;
  for (let i = 0; offset !== null && i < 50; i++) {
    const page: { jobs: Job[]; next: number | null } = await api(`/v1/queue?limit=1000&offset=${offset}`, { signal });
    out.push(...page.jobs);
    offset = page.next ?? null;
  }
  return out;
}

interface JobsData {
  queue: Job[];
  version: number;
}

let last: { data: JobsData; queueKey: string } | null = null;

/** The queue and the job cache; the same object again when nothing changed (no re-render). */
async function loadJobs(signal: AbortSignal): Promise<JobsData> {
  const [queue] = await Promise.all([
    fetchQueue(signal),
    jobCache.refresh(signal),
    loadCurrency(signal).catch(() => 'USD'),
  ]);
  const version = jobCache.version.get();
  const queueKey = JSON.stringify(queue);
  if (last && last.queueKey === queueKey && last.data.version === version) return last.data;
  last = { data: { queue, version }, queueKey };
  return last.data;
}

function matches(j: Job, f: Filters): boolean {
  if (f.user.trim() && j.user !== f.user.trim()) return false;
  if (f.project.trim() && j.project !== f.project.trim()) return false;
  if (f.name.trim() && !(j.name ?? '').toLowerCase().includes(f.name.trim().toLowerCase())) return false;
  const s = f.state;
  if (s === 'active') return isActive(j.state);
  if (s === 'finished') return !isActive(j.state);
  if (s && j.state !== s) return false;
  return true;
}

function wants(f: Filters, section: 'pending' | 'waiting' | 'running' | 'finished'): boolean {
  const s = f.state;
  if (!s) return true;
  if (s === 'active') return section !== 'finished';
  if (s === 'finished') return section === 'finished';
  if (s === 'pending') return section === 'pending' || section === 'waiting';
  if (s === 'held') return section === 'waiting';
  if (s === 'running') return section === 'running';
  return section === 'finished';
}

export function JobsPage() {
  const f = useStore(filters);
  const poll = usePoll(loadJobs, []);
  const [finishedShown, setFinishedShown] = useState(FINISHED_STEP);
  const now = useNow(5000);
  const version = poll.data?.version ?? -1;
  const queue = poll.data?.queue;

  const view = useMemo(() => {
    if (!queue) return null;
    const all = jobCache.all();
    const users = new Set<string>();
    const projects = new Set<string>();
    const arrays = new Map<number, Job[]>();
    for (const j of all) {
      users.add(j.user);
      projects.add(j.project);
      if (j.array_id !== undefined && j.array_id !== null) {
        let list = arrays.get(j.array_id);
        if (!list) arrays.set(j.array_id, (list = []));
        list.push(j);
      }
    }
    const inQueue = new Set(queue.map((j) => j.id));
    const pending = queue.filter((j) => matches(j, f));
    const waiting = all
      .filter((j) => (j.state === 'held' || j.state === 'pending') && !inQueue.has(j.id) && matches(j, f))
      .sort((a, b) => a.id - b.id);
    const running = all
      .filter((j) => j.state === 'running' && matches(j, f))
      .sort((a, b) => (parseTime(b.started_at) ?? Infinity) - (parseTime(a.started_at) ?? Infinity) || b.id - a.id);
    const finished = all
      .filter((j) => !isActive(j.state) && matches(j, f))
      .sort((a, b) => (parseTime(b.finished_at) ?? 0) - (parseTime(a.finished_at) ?? 0) || b.id - a.id);
    return {
      users: [...users].sort(),
      projects: [...projects].sort(),
      arrays,
      pending,
      waiting,
      running,
      finished,
      total: all.length,
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version, queue, f]);

  const set = (k: keyof Filters) => (e: Event) =>
    filters.set({ ...filters.get(), [k]: (e.target as HTMLInputElement | HTMLSelectElement).value });

  return (
    <div class="page">
      <div class="filters card">
        <label class="field-inline">
          <span>user</span>
          <input class="input" data-testid="filter-user" list="dl-users" value={f.user} onInput={set('user')} placeholder="any" />
        </label>
        <label class="field-inline">
          <span>project</span>
          <input class="input" data-testid="filter-project" list="dl-projects" value={f.project} onInput={set('project')} placeholder="any" />
        </label>
        <label class="field-inline">
          <span>state</span>
          <select class="input" data-testid="filter-state" value={f.state} onChange={set('state')}>
            <option value="">any</option>
            <option value="active">active (pending, held, running)</option>
            <option value="finished">finished</option>
            {JOB_STATES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label class="field-inline">
          <span>name</span>
          <input class="input" data-testid="filter-name" value={f.name} onInput={set('name')} placeholder="contains" />
        </label>
        {(f.user || f.project || f.state || f.name) && (
          <button
            type="button"
            class="btn btn-ghost btn-sm"
            data-testid="filter-clear"
            onClick={() => filters.set({ user: '', project: '', state: '', name: '' })}
          >
            clear
          </button>
        )}
        <span class="muted filters-total">{view ? `${view.total.toLocaleString('en-US')} jobs known` : ''}</span>
        <datalist id="dl-users">{view?.users.map((u) => <option key={u} value={u} />)}</datalist>
        <datalist id="dl-projects">{view?.projects.map((p) => <option key={p} value={p} />)}</datalist>
      </div>

      {!view ? (
        poll.error ? <Empty>Could not read the jobs.</Empty> : <Loading />
      ) : (
        <>
          {wants(f, 'pending') && (
            <Section title="Pending" count={view.pending.length} testid="section-pending" right={<span class="muted small">in start order</span>}>
              <JobTable kind="pending" jobs={view.pending} arrays={view.arrays} now={now} empty="No job waits in the queue." />
            </Section>
          )}
          {wants(f, 'waiting') && view.waiting.length > 0 && (
            <Section title="Held and waiting" count={view.waiting.length} testid="section-waiting" right={<span class="muted small">held, or waiting for a dependency or a start time</span>}>
              <JobTable kind="waiting" jobs={view.waiting} arrays={view.arrays} now={now} empty="" />
            </Section>
          )}
          {wants(f, 'running') && (
            <Section title="Running" count={view.running.length} testid="section-running">
              <JobTable kind="running" jobs={view.running} arrays={view.arrays} now={now} empty="No job runs." />
            </Section>
          )}
          {wants(f, 'finished') && (
            <Section
              title="Recently finished"
              count={view.finished.length > finishedShown ? `${finishedShown} of ${view.finished.length}` : view.finished.length}
              testid="section-finished"
            >
              <JobTable kind="finished" jobs={view.finished.slice(0, finishedShown)} arrays={view.arrays} now={now} empty="No job has finished." />
              {view.finished.length > finishedShown && (
                <div class="more">
                  <button type="button" class="btn btn-sm" data-testid="show-more" onClick={() => setFinishedShown(finishedShown + FINISHED_STEP)}>
                    show {Math.min(FINISHED_STEP, view.finished.length - finishedShown)} more
                  </button>
                </div>
              )}
            </Section>
          )}
        </>
      )}
    </div>
  );
}

type Kind = 'pending' | 'waiting' | 'running' | 'finished';

type Row = { job: Job; pos?: number } | { array: number; tasks: Job[]; pos?: number };

/** Folds the tasks of each array (two or more in the list) into one row at its first task. */
function fold(jobs: Job[], kind: Kind): Row[] {
  const count = new Map<number, number>();
  for (const j of jobs) if (j.array_id != null) count.set(j.array_id, (count.get(j.array_id) ?? 0) + 1);
  const rows: Row[] = [];
  const groups = new Map<number, Job[]>();
  jobs.forEach((j, i) => {
    const pos = kind === 'pending' ? i + 1 : undefined;
    if (j.array_id != null && (count.get(j.array_id) ?? 0) > 1) {
      let g = groups.get(j.array_id);
      if (!g) {
        groups.set(j.array_id, (g = []));
        rows.push({ array: j.array_id, tasks: g, pos });
      }
      g.push(j);
    } else {
      rows.push({ job: j, pos });
    }
  });
  return rows;
}

const HEADS: Record<Kind, string[]> = {
  pending: ['#', 'job', 'name', 'user', 'project', 'GPUs', 'priority', 'waiting', 'reason', 'est. start', 'score'],
  waiting: ['job', 'name', 'user', 'project', 'GPUs', 'state', 'waiting', 'reason'],
  running: ['job', 'name', 'user', 'project', 'GPUs', 'nodes', 'running', 'limit', 'cost'],
  finished: ['job', 'name', 'user', 'project', 'state', 'GPUs', 'ended', 'ran', 'exit', 'how it ended'],
};

function JobTable({
  kind,
  jobs,
  arrays,
  now,
  empty,
}: {
  kind: Kind;
  jobs: Job[];
  arrays: Map<number, Job[]>;
  now: number;
  empty: string;
}) {
  const [open, setOpen] = useState<Set<number>>(new Set());
  const rows = useMemo(() => fold(jobs, kind), [jobs, kind]);
  if (jobs.length === 0) return empty ? <Empty>{empty}</Empty> : null;
  const toggle = (id: number) => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };
  const heads = HEADS[kind];
  return (
    <div class="table-wrap">
      <table class={`table jobs-table jobs-${kind}`}>
        <thead>
          <tr>
            {heads.map((h) => (
              <th key={h} class={h === 'GPUs' || h === 'score' || h === 'cost' || h === '#' ? 'num' : ''}>
                {h}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) =>
            'job' in r ? (
              <JobRow key={r.job.id} job={r.job} kind={kind} pos={r.pos} now={now} />
            ) : (
              <ArrayRows
                key={`a${r.array}`}
                id={r.array}
                tasks={r.tasks}
                all={arrays.get(r.array) ?? r.tasks}
                kind={kind}
                pos={r.pos}
                now={now}
                open={open.has(r.array)}
                onToggle={() => toggle(r.array)}
                cols={heads.length}
              />
            ),
          )}
        </tbody>
      </table>
    </div>
  );
}

function reasonOf(j: Job): string {
  return j.reason_detail ?? j.reason ?? '';
}

function go(e: MouseEvent, id: number | string) {
  const t = e.target as HTMLElement;
  if (t.closest('a,button,input,select')) return;
  if (window.getSelection()?.toString()) return;
  navigate(`/jobs/${id}`);
}

function taskId(j: Job): string {
  return j.array_id != null && j.array_index != null ? `${j.array_id}_${j.array_index}` : String(j.id);
}

function JobRow({ job: j, kind, pos, now, child }: { job: Job; kind: Kind; pos?: number; now: number; child?: boolean }) {
  const cells: ComponentChildren[] = [];
  const name = (
    <td class="name-cell" title={j.name}>
      {child ? <span class="tree">└ </span> : null}
      <a href={`#/jobs/${j.id}`}>{j.name || <span class="muted">(no name)</span>}</a>
      {j.array_id != null && <span class="tag tag-sm">{taskId(j)}</span>}
    </td>
  );
  const id = (
    <td class="id-cell">
      <JobLink id={j.id} />
    </td>
  );
  const reason = (
    <td class="reason-cell" data-testid="job-reason" title={reasonOf(j)}>
      {reasonOf(j)}
    </td>
  );
  const gpus = <td class="num">{fmtGpus(j.resources?.gpus)}{j.resources?.gpu_type ? <span class="muted small"> {j.resources.gpu_type}</span> : null}</td>;
  const user = <td>{j.user}</td>;
  const project = <td>{j.project}</td>;
  switch (kind) {
    case 'pending':
      cells.push(
        <td class="num muted">{pos ?? ''}</td>,
        id,
        name,
        user,
        project,
        gpus,
        <td>
          <span class={`prio prio-${j.priority}`}>{j.priority}</span>
        </td>,
        <td>{fmtDuration(jobRuntime(j.submitted_at, null, now))}</td>,
        reason,
        <td title={j.estimated_start ?? ''}>{j.estimated_start ? fmtRelative(j.estimated_start, now) : <span class="muted">–</span>}</td>,
        <td class="num" title={factorsText(j)}>
          {j.factors ? j.factors.score.toFixed(1) : '–'}
        </td>,
      );
      break;
    case 'waiting':
      cells.push(
        id,
        name,
        user,
        project,
        gpus,
        <td>
          <StateBadge state={j.state} />
        </td>,
        <td>{fmtDuration(jobRuntime(j.submitted_at, null, now))}</td>,
        reason,
      );
      break;
    case 'running':
      cells.push(
        id,
        name,
        user,
        project,
        gpus,
        <td class="alloc-cell" title={allocText(j)}>
          {allocText(j)}
        </td>,
        <td>{fmtDuration(jobRuntime(j.started_at, null, now))}</td>,
        <td>{j.time_limit_s ? fmtDuration(j.time_limit_s) : <span class="muted">none</span>}</td>,
        <td class="num">{fmtMoney(j.cost, currency.get() || 'USD')}</td>,
      );
      break;
    case 'finished':
      cells.push(
        id,
        name,
        user,
        project,
        <td>
          <StateBadge state={j.state} />
        </td>,
        gpus,
        <td title={j.finished_at ?? ''}>{fmtTime(j.finished_at)}</td>,
        <td>{fmtDuration(jobRuntime(j.started_at, j.finished_at, now))}</td>,
        <td>{fmtExit(j.exit_code, j.exit_signal)}</td>,
        reason,
      );
      break;
  }
  return (
    <tr
      class={`job-row ${child ? 'child-row' : ''}`}
      data-testid="job-row"
      data-id={j.id}
      data-state={j.state}
      data-user={j.user}
      onClick={(e) => go(e as unknown as MouseEvent, j.id)}
    >
      {cells}
    </tr>
  );
}

function ArrayRows({
  id,
  tasks,
  all,
  kind,
  pos,
  now,
  open,
  onToggle,
  cols,
}: {
  id: number;
  tasks: Job[];
  all: Job[];
  kind: Kind;
  pos?: number;
  now: number;
  open: boolean;
  onToggle: () => void;
  cols: number;
}) {
  const counts = new Map<string, number>();
  for (const t of all) counts.set(t.state, (counts.get(t.state) ?? 0) + 1);
  const first = tasks[0];
  const gpus = tasks.reduce((a, t) => a + (t.resources?.gpus ?? 0), 0);
  return (
    <>
      <tr class="array-row" data-testid="array-row" data-array-id={id} data-tasks={tasks.length} onClick={onToggle}>
        {kind === 'pending' && <td class="num muted">{pos ?? ''}</td>}
        <td class="id-cell">
          <button type="button" class="fold" data-testid="array-toggle" aria-expanded={open} onClick={(e) => { e.stopPropagation(); onToggle(); }}>
            {open ? '▾' : '▸'}
          </button>
          <JobLink id={id} />
        </td>
        <td class="name-cell">
          {first.name || <span class="muted">(no name)</span>} <span class="tag tag-sm">array · {tasks.length} here</span>
        </td>
        <td>{first.user}</td>
        <td>{first.project}</td>
        <td colSpan={cols - (kind === 'pending' ? 5 : 4)} class="array-counts" data-testid="array-counts">
          <span class="num-inline">{fmtGpus(gpus)} {gpus === 1 ? 'GPU' : 'GPUs'}</span>
          {JOB_STATES.filter((s) => counts.get(s)).map((s) => (
            <span key={s} class={`count-chip st-${s}`} data-state={s}>
              {counts.get(s)} {s.replace('_', ' ')}
            </span>
          ))}
          <span class="muted small">{all.length} tasks</span>
          {(kind === 'pending' || kind === 'waiting') && reasonOf(first) && (
            <span class="array-reason" data-testid="job-reason" title={reasonOf(first)}>
              {reasonOf(first)}
            </span>
          )}
        </td>
      </tr>
      {open && tasks.map((t) => <JobRow key={t.id} job={t} kind={kind} now={now} child />)}
    </>
  );
}

function allocText(j: Job): string {
  return (j.allocation ?? [])
    .map((a) => `${a.node}[${a.gpus.join(',')}]${a.gpu_share !== undefined ? `×${fmtGpus(a.gpu_share)}` : ''}`)
    .join(' ');
}

function factorsText(j: Job): string {
  const f = j.factors;
  if (!f) return '';
  return `priority ${f.priority.toFixed(3)} · fairshare ${f.fairshare.toFixed(3)} · age ${f.age.toFixed(3)} · size ${f.size.toFixed(3)} · las ${f.las.toFixed(3)} → score ${f.score.toFixed(2)}`;
}
