// #/health: the nodes and GPUs out of service or unwell, with the reasons, and the cluster's
// event list as it happens.
import { useMemo, useState } from 'preact/hooks';
import { api } from '../api';
import { Empty, Loading, Section, StateBadge, useNow } from '../components';
import { fmtRelative, fmtTime } from '../format';
import { events, usePoll } from '../live';
import { useStore } from '../store';
import type { ClusterEvent, NodeInfo } from '../types';
import { gpuState } from './cluster';

interface Problem {
  node: NodeInfo;
  gpus: { index: number; model: string; state: string; reasons: string[] }[];
}

export function problems(nodes: NodeInfo[]): Problem[] {
  const out: Problem[] = [];
  for (const n of nodes) {
    const gpus: Problem['gpus'] = [];
    for (const g of n.gpus ?? []) {
      const reasons: string[] = [];
      if (g.health !== 'ok') reasons.push(`health ${g.health}${g.health_reason ? `: ${g.health_reason}` : ''}`);
      else if (g.health_reason) reasons.push(g.health_reason);
      // a health fault drains the GPU with the reason "health: ...": said once
      if (g.drain_reason && !(g.health === 'drain' && g.drain_reason.startsWith('health:'))) {
        reasons.push(`drained: ${g.drain_reason}`);
      }
      if (g.lost) reasons.push('not answering (lost)');
      if (g.ecc_uncorrected) reasons.push(`${g.ecc_uncorrected} uncorrected ECC errors`);
      if (reasons.length) gpus.push({ index: g.index, model: g.model, state: gpuState(n, g), reasons });
    }
    if (n.state !== 'ready' || n.drain_reason || gpus.length) out.push({ node: n, gpus });
  }
  return out;
}

function where(e: ClusterEvent): string {
  const parts: string[] = [];
  if (e.node) parts.push(e.node);
  if (e.gpu !== null && e.gpu !== undefined) parts.push(`GPU ${e.gpu}`);
  if (e.project) parts.push(`project ${e.project}`);
  return parts.join(' · ');
}

export function HealthPage() {
  const poll = usePoll((signal) => api<{ nodes: NodeInfo[] }>('/v1/nodes', { signal }), []);
  const all = useStore(events);
  const now = useNow(5000);
  const [sev, setSev] = useState('');
  const list = useMemo(() => (sev ? all.filter((e) => e.severity === sev) : all), [all, sev]);
  const probs = poll.data ? problems(poll.data.nodes) : null;

  return (
    <div class="page">
      <Section title="Nodes and GPUs needing attention" count={probs?.length}>
        {!probs ? (
          poll.error ? <Empty>Could not read the nodes.</Empty> : <Loading />
        ) : probs.length === 0 ? (
          <Empty>
            <span data-testid="health-ok">Every node is ready and every GPU is healthy.</span>
          </Empty>
        ) : (
          <table class="table" data-testid="health-nodes">
            <thead>
              <tr>
                <th>node</th>
                <th>state</th>
                <th>pool</th>
                <th>what</th>
              </tr>
            </thead>
            <tbody>
              {probs.map(({ node: n, gpus }) => (
                <tr key={n.name} data-testid="health-node" data-name={n.name} data-state={n.state}>
                  <td>
                    <b>{n.name}</b>
                  </td>
                  <td>
                    <StateBadge state={n.state} />
                  </td>
                  <td>{n.pool ?? 'default'}</td>
                  <td>
                    {n.state === 'lost' && <div>silent since {n.last_seen ? `${fmtTime(n.last_seen)} (${fmtRelative(n.last_seen, now)})` : 'its agent last reported'}</div>}
                    {n.state === 'awaiting' && <div>had running jobs when the controller restarted; not registered since</div>}
                    {n.drain_reason && <div>drained: {n.drain_reason}</div>}
                    {gpus.map((g) => (
                      <div key={g.index} class="health-gpu" data-testid="health-gpu" data-index={g.index} data-state={g.state}>
                        <span class={`gpu-swatch gs-${g.state}`} /> GPU {g.index} <span class="muted">{g.model}</span> · {g.reasons.join('; ')}
                      </div>
                    ))}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </Section>

      <Section
        title="Events"
        count={list.length}
        right={
          <select class="input input-sm" value={sev} data-testid="event-severity" onChange={(e) => setSev((e.target as HTMLSelectElement).value)}>
            <option value="">all severities</option>
            <option value="alert">alerts</option>
            <option value="info">info</option>
          </select>
        }
      >
        {list.length === 0 ? (
          <Empty>No event yet.</Empty>
        ) : (
          <ul class="events" data-testid="events">
            {list.map((e) => (
              <li key={`${e.seq}@${e.at}`} class={`event sev-${e.severity}`} data-testid="event" data-seq={e.seq} data-kind={e.kind} data-severity={e.severity}>
                <span class="event-time" title={e.at}>
                  {fmtTime(e.at)}
                </span>
                <span class="event-kind">{e.kind}</span>
                <span class="event-where muted">{where(e)}</span>
                <span class="event-msg">
                  {e.message}
                  {e.job !== null && e.job !== undefined && (
                    <>
                      {' '}
                      <a href={`#/jobs/${e.job}`}>job {e.job}</a>
                    </>
                  )}
                </span>
              </li>
            ))}
          </ul>
        )}
      </Section>
    </div>
  );
}
