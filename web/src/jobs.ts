// Every job the controller knows, cached: read once in pages of 1000, then kept current with
// few requests. Finished jobs never change, so a refresh reads only the active jobs (pending,
// held, running), the jobs newer than the newest seen, and the jobs that stopped being active.
import { ApiError, api, onLogout } from './api';
import { store } from './store';
import type { Job, JobPage } from './types';
import { isActive } from './types';

const PAGE = 1000;

/** All pages of GET /v1/jobs?QUERY. */
export async function fetchAllJobs(query: string, signal?: AbortSignal, after = 0): Promise<Job[]> {
  const out: Job[] = [];
  let cursor: number | null = after;
  while (cursor !== null) {
    const sep = query ? '&' : '';
    const page: JobPage = await api<JobPage>(
      `/v1/jobs?${query}${sep}limit=${PAGE}&after=${cursor}`,
      { signal },
    );
    out.push(...page.jobs);
    cursor = page.next ?? null;
  }
  return out;
}

function sameJob(a: Job, b: Job): boolean {
  return a.state === b.state && JSON.stringify(a) === JSON.stringify(b);
}

class JobCache {
  byId = new Map<number, Job>();
  maxId = 0;
  loaded = false;
  private inflight: Promise<void> | null = null;
  /** Bumped after every refresh that changed something. */
  readonly version = store(0);

  reset(): void {
    this.byId = new Map();
    this.maxId = 0;
    this.loaded = false;
    this.version.set(this.version.get() + 1);
  }

  /** Shared by every caller while one runs: refreshes never overlap. */
  refresh(signal?: AbortSignal): Promise<void> {
    if (!this.inflight) {
      this.inflight = this.doRefresh(signal).finally(() => {
        this.inflight = null;
      });
    }
    return this.inflight;
  }

  /** Stores the jobs; whether any of them is new or changed. */
  private put(jobs: Job[]): boolean {
    let changed = false;
    for (const j of jobs) {
      const had = this.byId.get(j.id);
      if (had && sameJob(had, j)) continue;
      this.byId.set(j.id, j);
      if (j.id > this.maxId) this.maxId = j.id;
      changed = true;
    }
    return changed;
  }

  private async doRefresh(signal?: AbortSignal): Promise<void> {
    if (!this.loaded) {
      const all = await fetchAllJobs('', signal);
      this.byId = new Map();
      this.maxId = 0;
      this.put(all);
      this.loaded = true;
      this.version.set(this.version.get() + 1);
      return;
    }
    const wasActive: number[] = [];
    for (const j of this.byId.values()) if (isActive(j.state)) wasActive.push(j.id);
    const active = await fetchAllJobs('state=pending,held,running', signal);
    const newer = await fetchAllJobs('', signal, this.maxId);
    const seen = new Set<number>();
    for (const j of active) seen.add(j.id);
    for (const j of newer) seen.add(j.id);
    const gone = wasActive.filter((id) => !seen.has(id));
    let ended: Job[] = [];
    if (gone.length > 0 && gone.length <= 16) {
      const got = await Promise.all(
        gone.map((id) =>
          api<Job>(`/v1/jobs/${id}`, { signal }).catch((e: unknown) => {
            if (e instanceof ApiError && e.status === 404) {
              this.byId.delete(id);
              return null;
            }
            throw e;
          }),
        ),
      );
      ended = got.filter((j): j is Job => j !== null);
    } else if (gone.length > 16) {
      const from = Math.min(...gone) - 1;
      ended = await fetchAllJobs('state=succeeded,failed,cancelled,timed_out', signal, from);
    }
    let changed = gone.length > 0;
    changed = this.put(active) || changed;
    changed = this.put(newer) || changed;
    changed = this.put(ended) || changed;
    if (changed) this.version.set(this.version.get() + 1);
  }

  all(): Job[] {
    return [...this.byId.values()];
  }
}

export const jobCache = new JobCache();

/** The catalog's currency (jobs carry their cost without it), read once a session. */
let currencyOnce: Promise<string> | null = null;
export const currency = store('');
export function loadCurrency(signal?: AbortSignal): Promise<string> {
  if (!currencyOnce) {
    const since = new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
    currencyOnce = api<{ currency?: string }>(`/v1/usage?since=${since}`, { signal })
      .then((u) => {
        currency.set(u.currency || 'USD');
        return currency.get();
      })
      .catch((e: unknown) => {
        currencyOnce = null;
        throw e;
      });
  }
  return currencyOnce;
}

onLogout(() => {
  jobCache.reset();
  currencyOnce = null;
  currency.set('');
});

/** Jobs by id, for the users of the jobs on a GPU. */
export function userOf(id: number): string | undefined {
  return jobCache.byId.get(id)?.user;
}
