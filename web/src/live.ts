// Live updates: the cluster's event stream (Server-Sent Events read with fetch, since an
// EventSource cannot send the token), and the polling that refreshes each page's data on
// every event and on a 2 s timer while the tab is visible, never two loads at once.
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, abortWhenHidden, api, authHeaders, errorOf, isAbort, logout, showError, sleep, whenVisible } from './api';
import { store } from './store';
import type { ClusterEvent } from './types';

export type LiveStatus = 'off' | 'connecting' | 'live' | 'reconnecting' | 'paused';

/** The latest events, newest first. */
export const events = store<ClusterEvent[]>([]);
export const liveStatus = store<LiveStatus>('off');
/** Bumped (at most every 150 ms) when events arrive: pages reload on it. */
export const eventTick = store(0);

const KEEP = 1000;
let lastSeq = 0;
let stop: AbortController | null = null;

function addEvents(batch: ClusterEvent[]): void {
  if (batch.length === 0) return;
  let list = events.get();
  const fresh: ClusterEvent[] = [];
  for (const e of batch) {
    if (e.seq <= lastSeq) {
      // Seen already, or a controller that restarted counts from 1 again: start over.
      if (list.some((x) => x.seq === e.seq && x.at === e.at) || fresh.some((x) => x.seq === e.seq && x.at === e.at)) continue;
      list = [];
      fresh.length = 0;
    }
    lastSeq = e.seq;
    fresh.push(e);
  }
  if (fresh.length === 0) return;
  events.set([...fresh.reverse(), ...list].slice(0, KEEP));
}

let tickTimer: ReturnType<typeof setTimeout> | null = null;
function bump(): void {
  if (tickTimer) return;
  tickTimer = setTimeout(() => {
    tickTimer = null;
    eventTick.set(eventTick.get() + 1);
  }, 150);
}

/** Reads the kept events (the newest 1000 of up to 10000) and then follows the stream. */
export function startLive(): void {
  stopLive();
  const ctl = new AbortController();
  stop = ctl;
  lastSeq = 0;
  events.set([]);
  void run(ctl.signal);
}

export function stopLive(): void {
  stop?.abort();
  stop = null;
  liveStatus.set('off');
}

async function loadHistory(signal: AbortSignal): Promise<void> {
  const got: ClusterEvent[] = [];
  let after = 0;
  for (let page = 0; page < 10; page++) {
    const r = await api<{ events: ClusterEvent[] }>(`/v1/events?limit=1000&after=${after}`, {
      signal,
    });
    got.push(...r.events);
    if (r.events.length < 1000) break;
    after = r.events[r.events.length - 1].seq;
  }
  lastSeq = 0;
  events.set([]);
  addEvents(got.slice(-KEEP));
}

async function run(signal: AbortSignal): Promise<void> {
  liveStatus.set('connecting');
  let backoff = 1000;
  let haveHistory = false;
  while (!signal.aborted) {
    let hidden = false;
    try {
      if (!haveHistory) {
        await loadHistory(signal);
        haveHistory = true;
      }
      await whenVisible(signal);
      await follow(signal, () => {
        backoff = 1000;
      }, () => {
        hidden = true;
      });
    } catch (e) {
      if (signal.aborted) return;
      if (e instanceof ApiError && e.status === 401) return; // logged out already
    }
    if (signal.aborted) return;
    if (hidden) {
      // given back while the tab is hidden: follow again, from where it stopped, once shown
      liveStatus.set('paused');
      await whenVisible(signal);
      continue;
    }
    liveStatus.set('reconnecting');
    await sleep(backoff + Math.random() * 250, signal);
    backoff = Math.min(5000, backoff * 2);
  }
}

/** One connection to the stream, until it ends or fails. */
async function follow(signal: AbortSignal, connected: () => void, hid: () => void): Promise<void> {
  const inner = new AbortController();
  const onAbort = () => inner.abort();
  signal.addEventListener('abort', onAbort);
  const hidden = new AbortController();
  hidden.signal.addEventListener('abort', () => {
    hid();
    inner.abort();
  });
  const unwatch = abortWhenHidden(hidden);
  // The server sends a comment every 15 s: a stream silent for 40 s is dead.
  let watchdog: ReturnType<typeof setTimeout> | undefined;
  const arm = () => {
    clearTimeout(watchdog);
    watchdog = setTimeout(() => inner.abort(), 40_000);
  };
  try {
    const headers = authHeaders({ Accept: 'text/event-stream' });
    if (lastSeq > 0) headers['Last-Event-ID'] = String(lastSeq);
    arm();
    const res = await fetch('/v1/events?stream=1', {
      headers,
      signal: inner.signal,
      cache: 'no-store',
    });
    if (!res.ok) {
      const err = await errorOf(res);
      if (res.status === 401) logout(err);
      throw err;
    }
    if (!res.body) throw new Error('the event stream has no body');
    liveStatus.set('live');
    connected();
    bump(); // catch up on what changed while away
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buf = '';
    let data: string[] = [];
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      arm();
      buf += decoder.decode(value, { stream: true });
      let nl: number;
      const batch: ClusterEvent[] = [];
      while ((nl = buf.indexOf('\n')) >= 0) {
        let line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (line.endsWith('\r')) line = line.slice(0, -1);
        if (line === '') {
          if (data.length > 0) {
            try {
              batch.push(JSON.parse(data.join('\n')) as ClusterEvent);
            } catch {
              // not an event of ours: skip it
            }
          }
          data = [];
          continue;
        }
        if (line.startsWith(':')) continue; // keep-alive
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let val = colon < 0 ? '' : line.slice(colon + 1);
        if (val.startsWith(' ')) val = val.slice(1);
        if (field === 'data') data.push(val);
        // `id` is the event's seq and `event` its kind: both are in the data too.
      }
      if (batch.length > 0) {
        addEvents(batch);
        bump();
      }
    }
  } finally {
    clearTimeout(watchdog);
    unwatch();
    signal.removeEventListener('abort', onAbort);
  }
}

export interface Poll<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  reload: () => void;
}

/**
 * Loads data now, again on every cluster event and every `interval` ms while the tab is
 * visible; a load never overlaps the one before (a request while one runs is queued once).
 * The first failure of a run of failures goes to the error banner.
 */
export function usePoll<T>(
  load: (signal: AbortSignal) => Promise<T>,
  deps: unknown[],
  opts: { interval?: number; onEvents?: boolean; enabled?: boolean } = {},
): Poll<T> {
  const [state, setState] = useState<{ data: T | undefined; error: unknown; loading: boolean }>({
    data: undefined,
    error: null,
    loading: true,
  });
  const [reloadKey, setReloadKey] = useState(0);
  const loadRef = useRef(load);
  loadRef.current = load;
  const interval = opts.interval ?? 2000;
  const enabled = opts.enabled ?? true;
  const onEvents = opts.onEvents ?? true;

  useEffect(() => {
    if (!enabled) return;
    const ctl = new AbortController();
    let running = false;
    let again = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let lastError = '';
    let lastTook = 0;
    let lastData: T | undefined;
    setState((s) => ({ ...s, loading: true }));

    const schedule = () => {
      clearTimeout(timer);
      if (interval <= 0) return;
      // A slow answer (a large cluster) slows the polling down with it.
      timer = setTimeout(tick, Math.max(interval, lastTook * 3));
    };
    const tick = () => {
      if (document.hidden) schedule();
      else void go();
    };
    const go = async () => {
      if (ctl.signal.aborted) return;
      if (running) {
        again = true;
        return;
      }
      running = true;
      clearTimeout(timer);
      const t0 = performance.now();
      try {
        const data = await loadRef.current(ctl.signal);
        if (ctl.signal.aborted) return;
        const quiet = lastError === '' && data === lastData;
        lastError = '';
        lastData = data;
        if (!quiet) setState({ data, error: null, loading: false });
      } catch (e) {
        if (ctl.signal.aborted || isAbort(e)) return;
        const key = e instanceof Error ? `${(e as ApiError).status ?? ''}${e.message}` : String(e);
        if (key !== lastError) showError(e);
        lastError = key;
        setState((s) => ({ ...s, error: e, loading: false }));
      } finally {
        lastTook = performance.now() - t0;
        running = false;
        if (!ctl.signal.aborted) {
          if (again) {
            again = false;
            void go();
          } else {
            schedule();
          }
        }
      }
    };
    void go();
    const unsub = onEvents ? eventTick.subscribe(() => void go()) : () => {};
    const onVisible = () => {
      if (!document.hidden) void go();
    };
    document.addEventListener('visibilitychange', onVisible);
    return () => {
      ctl.abort();
      clearTimeout(timer);
      unsub();
      document.removeEventListener('visibilitychange', onVisible);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [...deps, interval, enabled, onEvents, reloadKey]);

  return { ...state, reload: () => setReloadKey((n: number) => n + 1) };
}
