// #/cluster: every node and its GPUs as a grid coloured by utilisation, the pools' totals,
// and the drain and undrain actions (admin only; the API answers a user with 403).
import { useState } from 'preact/hooks';
import { api, post, showError } from '../api';
import { Empty, Loading, Section, StateBadge, useNow } from '../components';
import { fmtBytes, fmtRelative, fmtTime, gib, heat } from '../format';
import { fetchAllJobs } from '../jobs';
import { usePoll } from '../live';
import { navigate } from '../router';
import { store, useStore } from '../store';
import type { Gpu, Job, NodeInfo } from '../types';

type Density = 'auto' | 'detail' | 'compact';
const density = store<Density>('auto');

export type GpuState = 'idle' | 'busy' | 'drained' | 'failed' | 'reset' | 'lost';

/**
 * What a GPU is doing, worst first: its node lost, failed (its agent's health verdict is
 * drain), reset, the GPU itself not answering, drained by an admin, busy, idle.
 */
export function gpuState(node: NodeInfo, g: Gpu): GpuState {
  if (node.state === 'lost' || node.state === 'awaiting') return 'lost';
  // Autoscaling's nodes that are not ready: none of their GPUs takes a job.
  if (node.state === 'failed') return 'failed';
  if (node.state === 'resuming' || node.state === 'suspending' || node.state === 'suspended') return 'drained';
  if (g.health === 'drain') return 'failed';
  if (g.health === 'reset') return 'reset';
  if (g.lost) return 'lost';
  if (g.drain_reason || node.state === 'drained') return 'drained';
  if (g.jobs && g.jobs.length > 0) return 'busy';
  return 'idle';
}

interface ClusterData {
  nodes: NodeInfo[];
  running: Map<number, Job>;
}

async function loadCluster(signal: AbortSignal): Promise<ClusterData> {
  const [n, jobs] = await Promise.all([
    api<{ nodes: NodeInfo[] }>('/v1/nodes', { signal }),
    fetchAllJobs('state=running', signal),
  ]);
  const running = new Map<number, Job>();
  for (const j of jobs) running.set(j.id, j);
  return { nodes: n.nodes, running };
}

interface PoolSum {
  pool: string;
  nodes: number;
  total: number;
  busy: number;
  free: number;
  out: number;
  util: number;
  utilN: number;
}

export function poolSummary(nodes: NodeInfo[]): PoolSum[] {
  const pools = new Map<string, PoolSum>();
  for (const n of nodes) {
    const name = n.pool ?? 'default';
    let p = pools.get(name);
    if (!p) {
      p = { pool: name, nodes: 0, total: 0, busy: 0, free: 0, out: 0, util: 0, utilN: 0 };
      pools.set(name, p);
    }
    p.nodes++;
    for (const g of n.gpus ?? []) {
      p.total++;
      const st = gpuState(n, g);
      if (g.jobs && g.jobs.length > 0 && st !== 'lost') p.busy++;
      else if (st === 'idle') p.free++;
      else p.out++;
      if (typeof g.utilization_pct === 'number' && st !== 'lost') {
        p.util += g.utilization_pct;
        p.utilN++;
      }
    }
  }
  return [...pools.values()].sort((a, b) => a.pool.localeCompare(b.pool));
}

export function ClusterPage() {
  const poll = usePoll(loadCluster, []);
  const now = useNow(5000);
  const dens = useStore(density);
  if (!poll.data) return poll.error ? <Empty>Could not read the nodes.</Empty> : <Loading />;
  const { nodes, running } = poll.data;
  const pools = poolSummary(nodes);
  // a large cluster reads best as a heat map: small cells, the details in their tooltips
  const compact = dens === 'compact' || (dens === 'auto' && pools.reduce((a, p) => a + p.total, 0) > 64);
  const all = pools.reduce(
    (a, p) => ({ total: a.total + p.total, busy: a.busy + p.busy, free: a.free + p.free, out: a.out + p.out }),
    { total: 0, busy: 0, free: 0, out: 0 },
  );
  const sorted = [...nodes].sort(
    (a, b) => (a.pool ?? '').localeCompare(b.pool ?? '') || a.name.localeCompare(b.name, undefined, { numeric: true }),
  );
  return (
    <div class="page">
      <div class="stats">
        <Stat label="nodes" value={nodes.length} sub={`${nodes.filter((n) => n.state === 'ready').length} ready`} />
        <Stat label="GPUs" value={all.total} />
        <Stat label="busy" value={all.busy} tone="busy" />
        <Stat label="free" value={all.free} tone="free" />
        <Stat label="out of service" value={all.out} tone={all.out > 0 ? 'bad' : undefined} />
        <Stat label="running jobs" value={running.size} />
      </div>

      <Section title="Pools" count={pools.length}>
        <table class="table" data-testid="pools">
          <thead>
            <tr>
              <th>pool</th>
              <th class="num">nodes</th>
              <th class="num">GPUs</th>
              <th class="num">busy</th>
              <th class="num">free</th>
              <th class="num">out of service</th>
              <th class="num">mean util</th>
              <th class="w-40">occupancy</th>
            </tr>
          </thead>
          <tbody>
            {pools.map((p) => (
              <tr key={p.pool} data-testid="pool" data-pool={p.pool} data-total={p.total} data-busy={p.busy} data-free={p.free}>
                <td>{p.pool}</td>
                <td class="num">{p.nodes}</td>
                <td class="num">{p.total}</td>
                <td class="num">{p.busy}</td>
                <td class="num">{p.free}</td>
                <td class="num">{p.out}</td>
                <td class="num">{p.utilN ? `${Math.round(p.util / p.utilN)}%` : '–'}</td>
                <td>
                  <Occupancy p={p} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Section>

      <Section
        title="Nodes"
        count={nodes.length}
        right={
          <>
            <Legend />
            <select
              class="input input-sm"
              data-testid="cluster-density"
              value={dens}
              onChange={(e) => density.set((e.target as HTMLSelectElement).value as Density)}
              title="how much each GPU shows"
            >
              <option value="auto">auto ({compact ? 'compact' : 'detailed'})</option>
              <option value="detail">detailed</option>
              <option value="compact">compact</option>
            </select>
          </>
        }
      >
        {sorted.length === 0 && <Empty>No node has joined yet.</Empty>}
        <div class={`nodes ${compact ? 'compact' : ''}`}>
          {sorted.map((n) => (
            <NodeCard key={n.name} node={n} running={running} now={now} onChanged={poll.reload} compact={compact} />
          ))}
        </div>
      </Section>
    </div>
  );
}

function Stat({ label, value, sub, tone }: { label: string; value: number | string; sub?: string; tone?: string }) {
  return (
    <div class={`stat ${tone ? 'stat-' + tone : ''}`}>
      <div class="stat-value">{value}</div>
      <div class="stat-label">
        {label}
        {sub && <span class="muted"> · {sub}</span>}
      </div>
    </div>
  );
}

function Occupancy({ p }: { p: PoolSum }) {
  const t = Math.max(1, p.total);
  return (
    <span class="stack" title={`${p.busy} busy, ${p.free} free, ${p.out} out of service`}>
      <span class="stack-busy" style={{ width: `${(100 * p.busy) / t}%` }} />
      <span class="stack-free" style={{ width: `${(100 * p.free) / t}%` }} />
      <span class="stack-out" style={{ width: `${(100 * p.out) / t}%` }} />
    </span>
  );
}

function Legend() {
  return (
    <div class="legend">
      <span class="legend-heat">
        util 0%
        <span class="heat-scale" />
        100%
      </span>
      <span class="gpu-swatch gs-drained" /> drained
      <span class="gpu-swatch gs-failed" /> failed
      <span class="gpu-swatch gs-reset" /> reset
      <span class="gpu-swatch gs-lost" /> lost
    </div>
  );
}

function NodeCard({
  node,
  running,
  now,
  onChanged,
  compact,
}: {
  node: NodeInfo;
  running: Map<number, Job>;
  now: number;
  onChanged: () => void;
  compact: boolean;
}) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const gpus = node.gpus ?? [];
  const models = [...new Set(gpus.map((g) => g.model))];
  const act = async (what: 'drain' | 'undrain') => {
    setBusy(true);
    try {
      const r = reason.trim();
      await post(`/v1/nodes/${encodeURIComponent(node.name)}/${what}`, what === 'drain' && r ? { reason: r } : undefined);
      if (what === 'drain') setReason('');
      onChanged();
    } catch (e) {
      showError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class={`node card node-${node.state}`} data-testid="node" data-name={node.name} data-state={node.state}>
      <div class="node-head">
        <div class="node-title">
          <span class="node-name">{node.name}</span>
          <StateBadge state={node.state} testid="node-state" />
          <span class="tag" title="pool">
            {node.pool ?? 'default'}
          </span>
          {node.spot && (
            <span class="tag" title="a spot node: only preemptible jobs run here" data-testid="node-spot">
              spot
            </span>
          )}
        </div>
        <div class="node-meta muted">
          {gpus.length} × {models.join(', ') || 'no GPUs'}
          {node.cpus !== undefined && ` · ${node.cpus} CPUs`}
          {node.memory_bytes !== undefined && ` · ${fmtBytes(node.memory_bytes)}`}
          {node.last_seen && node.state !== 'ready' && ` · seen ${fmtRelative(node.last_seen, now)}`}
        </div>
      </div>
      {node.drain_reason && (
        <div class="node-reason" data-testid="node-drain-reason">
          drained: {node.drain_reason}
        </div>
      )}
      {node.cooling_until && (
        <div class="node-reason" data-testid="node-cooling">
          no new jobs until {fmtTime(node.cooling_until)}: another spot node of its pool was reclaimed
        </div>
      )}
      {node.state === 'awaiting' && <div class="node-reason">awaiting: had running jobs when the controller restarted; not registered since</div>}
      {node.template && (
        <div class="node-reason" data-testid="node-scaling">
          autoscaled ({node.template})
          {node.idle_since
            ? `: idle since ${fmtTime(node.idle_since)}`
            : node.state !== 'ready' && node.state_since
              ? `: ${node.state} since ${fmtTime(node.state_since)}`
              : ''}
          {node.scaling_reason && node.state !== 'ready' && ` (${node.scaling_reason})`}
        </div>
      )}
      <div class="gpus">
        {gpus.map((g) => (
          <GpuCell key={g.index} node={node} gpu={g} running={running} compact={compact} />
        ))}
      </div>
      <div class="node-actions">
        <input
          type="text"
          class="input input-sm"
          placeholder="drain reason"
          data-testid="drain-reason"
          value={reason}
          maxLength={256}
          onInput={(e) => setReason((e.target as HTMLInputElement).value)}
        />
        <button type="button" class="btn btn-sm" data-testid="drain-button" disabled={busy} onClick={() => act('drain')}>
          Drain
        </button>
        <button type="button" class="btn btn-sm" data-testid="undrain-button" disabled={busy} onClick={() => act('undrain')}>
          Undrain
        </button>
      </div>
    </div>
  );
}

function GpuCell({ node, gpu: g, running, compact }: { node: NodeInfo; gpu: Gpu; running: Map<number, Job>; compact: boolean }) {
  const st = gpuState(node, g);
  const jobs = g.jobs ?? [];
  const util = typeof g.utilization_pct === 'number' ? g.utilization_pct : null;
  const memPct =
    typeof g.memory_used_bytes === 'number' && g.memory_bytes > 0 ? (100 * g.memory_used_bytes) / g.memory_bytes : null;
  const lines = [`${node.name} GPU ${g.index} · ${g.model}`, `state: ${st}`];
  if (util !== null) lines.push(`utilisation ${util}%`);
  if (typeof g.memory_used_bytes === 'number') lines.push(`memory ${fmtBytes(g.memory_used_bytes)} of ${fmtBytes(g.memory_bytes)}`);
  if (typeof g.temperature_c === 'number') lines.push(`temperature ${g.temperature_c} °C`);
  if (typeof g.power_w === 'number') lines.push(`power ${g.power_w} W`);
  if (g.ecc_uncorrected) lines.push(`uncorrected ECC errors: ${g.ecc_uncorrected}`);
  if (g.health !== 'ok') lines.push(`health: ${g.health}${g.health_reason ? ` (${g.health_reason})` : ''}`);
  else if (g.health_reason) lines.push(`health: ${g.health_reason}`);
  if (g.drain_reason && !(g.health === 'drain' && g.drain_reason.startsWith('health:'))) lines.push(`drained: ${g.drain_reason}`);
  if (g.lost) lines.push('not answering (lost)');
  if (node.drain_reason) lines.push(`node drained: ${node.drain_reason}`);
  for (const id of jobs) {
    const j = running.get(id);
    lines.push(j ? `job ${id} · ${j.user} · ${j.name || '(no name)'}` : `job ${id}`);
  }
  const bg = st === 'idle' || st === 'busy' ? heat(util) : undefined;
  return (
    <div
      class={`gpu gs-${st}`}
      data-testid="gpu"
      data-node={node.name}
      data-index={g.index}
      data-state={st}
      data-jobs={jobs.join(',')}
      data-util={util ?? ''}
      title={lines.join('\n')}
      style={bg ? { background: bg } : undefined}
      onClick={compact && jobs.length > 0 ? () => navigate(`/jobs/${jobs[0]}`) : undefined}
    >
      {compact ? (
        <span class="gpu-compact">{st === 'idle' || st === 'busy' ? (util !== null ? util : jobs.length ? '•' : '') : st[0].toUpperCase()}</span>
      ) : (
      <>
      <div class="gpu-top">
        <span class="gpu-index">{g.mig_profile ? `${g.index}·${g.mig_profile}` : g.index}</span>
        <span class="gpu-util">{st === 'lost' ? 'lost' : util !== null ? `${util}%` : '–'}</span>
      </div>
      <div class="gpu-mid">
        <span>
          {gib(g.memory_used_bytes)}/{gib(g.memory_bytes)} GiB
        </span>
        <span>{typeof g.temperature_c === 'number' ? `${g.temperature_c}°C` : ''}</span>
      </div>
      <div class="gpu-mem" title="memory used">
        <span style={{ width: `${Math.min(100, memPct ?? 0)}%` }} />
      </div>
      <div class="gpu-jobs">
        {jobs.length > 0
          ? jobs.map((id) => (
              <a key={id} href={`#/jobs/${id}`} class="gpu-job">
                {id}
                {running.get(id) ? <span class="gpu-user"> {running.get(id)!.user}</span> : null}
              </a>
            ))
          : st === 'idle'
            ? <span class="muted">idle</span>
            : <span class="gpu-why">{st}</span>}
      </div>
      </>
      )}
    </div>
  );
}
