// Calls to the controller's REST API: same origin, relative /v1 paths, the bearer token from
// sessionStorage. Every error is an ApiError carrying the API's own message; a 401 at any time
// logs out.
import { store } from './store';
import type { ApiError as ErrorBody, WhoAmI } from './types';

const TOKEN_KEY = 'baton.token';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** A submitted spec's field that is wrong as written ("time_limit", "resources.gpus"). */
    readonly field?: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

export interface Session {
  token: string;
  who: WhoAmI;
}

/** The signed-in session, or null on the login screen. */
export const session = store<Session | null>(null);

/** The error banner: the latest error, or null. */
export interface Banner {
  status: number;
  code: string;
  message: string;
  seq: number;
}
export const banner = store<Banner | null>(null);
let bannerSeq = 0;

export function showError(e: unknown): void {
  if (isAbort(e)) return;
  if (e instanceof ApiError) {
    banner.set({ status: e.status, code: e.code, message: e.message, seq: ++bannerSeq });
  } else {
    const message = e instanceof Error ? e.message : String(e);
    banner.set({ status: 0, code: 'network', message, seq: ++bannerSeq });
  }
}

export function dismissError(): void {
  banner.set(null);
}

export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError';
}

export function storedToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY);
  } catch {
    return null;
  }
}

export function storeToken(token: string | null): void {
  try {
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage refused (private mode): the session lasts as long as the page.
  }
}

const logoutHooks = new Set<() => void>();
/** Runs fn on every logout (streams close, caches empty). */
export function onLogout(fn: () => void): () => void {
  logoutHooks.add(fn);
  return () => logoutHooks.delete(fn);
}

export function logout(reason?: ApiError): void {
  storeToken(null);
  const was = session.get();
  session.set(null);
  if (was) for (const fn of [...logoutHooks]) fn();
  if (reason) showError(reason);
}

function token(): string {
  return session.get()?.token ?? storedToken() ?? '';
}

export function authHeaders(extra?: Record<string, string>, tok?: string): Record<string, string> {
  return { Authorization: `Bearer ${tok ?? token()}`, ...extra };
}

/** Turns a non-2xx answer into an ApiError with the API's message. */
export async function errorOf(res: Response): Promise<ApiError> {
  let code = 'http_' + res.status;
  let message = res.statusText || `HTTP ${res.status}`;
  let field: string | undefined;
  try {
    const text = await res.text();
    try {
      const body = JSON.parse(text) as Partial<ErrorBody>;
      if (body?.error?.message) {
        message = body.error.message;
        code = body.error.code ?? code;
        field = body.error.field;
      } else if (text.trim()) {
        message = text.trim().slice(0, 500);
      }
    } catch {
      if (text.trim()) message = text.trim().slice(0, 500);
    }
  } catch {
    // the body could not be read: keep the status line
  }
  return new ApiError(res.status, code, message, field);
}

export interface CallOptions {
  method?: string;
  body?: unknown;
  /** A body sent as it is, with this content type. */
  raw?: { text: string; type: string };
  signal?: AbortSignal;
  /** Use this token rather than the session's (the login check). */
  token?: string;
  /** Do not log out on a 401 (the login check reports it itself). */
  keep401?: boolean;
}

/** Fetches and checks an answer, whatever its body. A 401 logs out. */
export async function request(path: string, opts: CallOptions = {}): Promise<Response> {
  const headers = authHeaders({}, opts.token);
  let body: string | undefined;
  if (opts.raw) {
    headers['Content-Type'] = opts.raw.type;
    body = opts.raw.text;
  } else if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(path, {
    method: opts.method ?? (body !== undefined ? 'POST' : 'GET'),
    headers,
    body,
    signal: opts.signal,
    cache: 'no-store',
    credentials: 'same-origin',
  });
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401 && !opts.keep401) logout(err);
    throw err;
  }
  return res;
}

/** A JSON call: GET by default, POST when there is a body. */
export async function api<T>(path: string, opts: CallOptions = {}): Promise<T> {
  const res = await request(path, opts);
  const text = await res.text();
  return (text ? JSON.parse(text) : {}) as T;
}

export function post<T>(path: string, body?: unknown, opts: CallOptions = {}): Promise<T> {
  return api<T>(path, { ...opts, method: 'POST', body });
}

/** Checks a token with GET /v1/whoami and starts the session. */
export async function login(tok: string): Promise<WhoAmI> {
  const who = await api<WhoAmI>('/v1/whoami', { token: tok, keep401: true });
  storeToken(tok);
  session.set({ token: tok, who });
  dismissError(); // what went wrong before signing in is moot now
  return who;
}

export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** Resolves once the tab is visible (at once if it is), or when `signal` aborts. */
export function whenVisible(signal?: AbortSignal): Promise<void> {
  if (!document.hidden || signal?.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      if (document.hidden && !signal?.aborted) return;
      document.removeEventListener('visibilitychange', done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    document.addEventListener('visibilitychange', done);
    signal?.addEventListener('abort', done);
  });
}

/**
 * Aborts `ctl` once the tab has been hidden for `ms`: a browser allows only six HTTP/1.1
 * connections to a server, shared by all its tabs, so a hidden tab gives its streams back.
 * Returns the function that stops watching.
 */
export function abortWhenHidden(ctl: AbortController, ms = 20_000): () => void {
  let t: ReturnType<typeof setTimeout> | undefined;
  const check = () => {
    clearTimeout(t);
    if (document.hidden) t = setTimeout(() => ctl.abort(), ms);
  };
  check();
  document.addEventListener('visibilitychange', check);
  return () => {
    clearTimeout(t);
    document.removeEventListener('visibilitychange', check);
  };
}
