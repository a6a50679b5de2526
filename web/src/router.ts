// Hash routing: #/cluster, #/jobs, #/jobs/ID, #/submit, #/usage, #/health, #/reports.
import { store } from './store';

export type Route =
  | { page: 'cluster' }
  | { page: 'jobs' }
  | { page: 'job'; id: string }
  | { page: 'submit' }
  | { page: 'usage' }
  | { page: 'health' }
  | { page: 'reports' }
  | { page: 'unknown'; path: string };

export function parseRoute(hash: string): Route {
  const path = hash.replace(/^#\/?/, '').split(/[?&]/)[0].replace(/\/+$/, '');
  const parts = path.split('/').filter(Boolean);
  if (parts.length === 0) return { page: 'cluster' };
  const [head, arg] = parts;
  if (head === 'jobs' && arg !== undefined && parts.length === 2) {
    return { page: 'job', id: decodeURIComponent(arg) };
  }
  if (parts.length === 1) {
    switch (head) {
      case 'cluster':
      case 'jobs':
      case 'submit':
      case 'usage':
      case 'health':
      case 'reports':
        return { page: head };
    }
  }
  return { page: 'unknown', path };
}

export const route = store<Route>(parseRoute(location.hash));

window.addEventListener('hashchange', () => route.set(parseRoute(location.hash)));

export function navigate(path: string): void {
  const hash = '#' + path;
  if (location.hash === hash) route.set(parseRoute(hash));
  else location.hash = hash;
}

/**
 * Takes a token given in the URL's fragment (#token=HEX, or #/jobs/7&token=HEX), once: it is
 * removed from the address bar and the history at once.
 */
export function takeTokenFromUrl(): string | null {
  const m = /(?:^#|[&?#])token=([^&]*)/.exec(location.hash);
  if (!m) return null;
  let rest = location.hash.replace(/[&?]?token=[^&]*/, '').replace(/^#[&?]/, '#');
  if (rest === '#' || rest === '') rest = '#/cluster';
  history.replaceState(null, '', location.pathname + location.search + rest);
  route.set(parseRoute(rest));
  return decodeURIComponent(m[1]).trim() || null;
}
