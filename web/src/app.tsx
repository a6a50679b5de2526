// The page's frame: the login screen, or the header, the navigation and the current page.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, login, logout, session, showError, dismissError } from './api';
import { ErrorBanner, LiveIndicator } from './components';
import { startLive, stopLive } from './live';
import { route } from './router';
import { useStore } from './store';
import { ClusterPage } from './pages/cluster';
import { HealthPage } from './pages/health';
import { JobPage } from './pages/job';
import { JobsPage } from './pages/jobs';
import { ReportsPage } from './pages/reports';
import { SubmitPage } from './pages/submit';
import { UsagePage } from './pages/usage';

const NAV: { page: string; href: string; label: string }[] = [
  { page: 'cluster', href: '#/cluster', label: 'Cluster' },
  { page: 'jobs', href: '#/jobs', label: 'Jobs' },
  { page: 'submit', href: '#/submit', label: 'Submit' },
  { page: 'usage', href: '#/usage', label: 'Usage' },
  { page: 'health', href: '#/health', label: 'Health' },
  { page: 'reports', href: '#/reports', label: 'Reports' },
];

export function App({ checking }: { checking: boolean }) {
  const s = useStore(session);
  useEffect(() => {
    if (s) startLive();
    return () => stopLive();
  }, [s?.token]);
  if (checking && !s) return <div class="boot">Baton…</div>;
  if (!s) return <Login />;
  return <Shell />;
}

function Login() {
  const [token, setToken] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const t = token.trim();
    if (!t) return;
    setBusy(true);
    try {
      await login(t);
      dismissError();
    } catch (err) {
      showError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <div class="login-wrap">
      <form class="login card" onSubmit={submit} data-testid="login-form">
        <div class="brand brand-lg">
          <span class="brand-mark" />
          Baton
        </div>
        <p class="muted">
          Sign in with an API token: <code>baton token create</code> makes one, and an
          admin's is in <code>DATA/admin.token</code>.
        </p>
        <ErrorBanner />
        <label class="field">
          <span>Token</span>
          <input
            type="password"
            autoComplete="off"
            spellcheck={false}
            data-testid="token-input"
            value={token}
            onInput={(e) => setToken((e.target as HTMLInputElement).value)}
            placeholder="64 hex digits"
            autoFocus
          />
        </label>
        <button type="submit" class="btn btn-primary" data-testid="login-button" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="muted small">The token is kept in this tab only (sessionStorage).</p>
      </form>
    </div>
  );
}

function Shell() {
  const s = useStore(session)!;
  const r = useStore(route);
  const current = r.page === 'job' ? 'jobs' : r.page;
  return (
    <div class="app">
      <header class="topbar">
        <a class="brand" href="#/cluster">
          <span class="brand-mark" />
          Baton
        </a>
        <nav class="nav">
          {NAV.map((n) => (
            <a
              key={n.page}
              href={n.href}
              data-testid={`nav-${n.page}`}
              class={current === n.page ? 'active' : ''}
            >
              {n.label}
            </a>
          ))}
        </nav>
        <div class="topbar-right">
          <LiveIndicator />
          <span class="whoami" data-testid="whoami">
            {s.who.user} ({s.who.role})
          </span>
          <button type="button" class="btn btn-ghost" data-testid="logout" onClick={() => logout()}>
            Log out
          </button>
        </div>
      </header>
      <div class="banner-slot">
        <ErrorBanner />
      </div>
      <main class="main">
        <Page />
      </main>
    </div>
  );
}

function Page() {
  const r = useStore(route);
  useEffect(() => {
    window.scrollTo(0, 0);
  }, [r.page]);
  switch (r.page) {
    case 'cluster':
      return <ClusterPage />;
    case 'jobs':
      return <JobsPage />;
    case 'job':
      return <JobPage key={r.id} id={r.id} />;
    case 'submit':
      return <SubmitPage />;
    case 'usage':
      return <UsagePage />;
    case 'health':
      return <HealthPage />;
    case 'reports':
      return <ReportsPage />;
    default:
      return (
        <div class="empty">
          No page <code>#/{r.path}</code>. <a href="#/cluster">Go to the cluster</a>.
        </div>
      );
  }
}

/** Whether an error is the API's 401. */
export function is401(e: unknown): boolean {
  return e instanceof ApiError && e.status === 401;
}
