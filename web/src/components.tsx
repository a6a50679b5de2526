// Small pieces shared by the pages.
import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { banner, dismissError } from './api';
import { liveStatus } from './live';
import { useStore } from './store';

export function ErrorBanner() {
  const b = useStore(banner);
  if (!b) return null;
  return (
    <div class="banner error" role="alert" data-testid="error" data-status={b.status} key={b.seq}>
      <span class="banner-status">
        {b.status ? `HTTP ${b.status}` : 'error'}
        {b.code && b.status ? ` · ${b.code}` : ''}
      </span>
      <span class="banner-message">{b.message}</span>
      <button
        type="button"
        class="banner-close"
        data-testid="error-dismiss"
        aria-label="dismiss"
        onClick={dismissError}
      >
        ×
      </button>
    </div>
  );
}

export function LiveIndicator() {
  const status = useStore(liveStatus);
  const label =
    status === 'live'
      ? 'live'
      : status === 'connecting'
        ? 'connecting'
        : status === 'reconnecting'
          ? 'reconnecting'
          : status === 'paused'
            ? 'paused (tab hidden)'
            : 'offline';
  return (
    <span
      class={`live live-${status}`}
      data-testid="live"
      data-status={status}
      title="cluster event stream"
    >
      <span class="live-dot" />
      {label}
    </span>
  );
}

export function StateBadge({ state, testid }: { state: string; testid?: string }) {
  return (
    <span class={`badge st-${state}`} data-testid={testid}>
      {state.replace('_', ' ')}
    </span>
  );
}

/** A horizontal bar, pct 0–100 (more is drawn full). */
export function Bar({
  pct,
  tone,
  testid,
  label,
}: {
  pct: number | null | undefined;
  tone?: 'ok' | 'warn' | 'bad' | 'info';
  testid?: string;
  label?: string;
}) {
  const v = pct === null || pct === undefined || !Number.isFinite(pct) ? 0 : pct;
  const width = Math.max(0, Math.min(100, v));
  return (
    <span class={`bar ${tone ? 'bar-' + tone : ''}`} data-testid={testid} data-pct={v} title={label}>
      <span class="bar-fill" style={{ width: `${width}%` }} />
    </span>
  );
}

export function Section({
  title,
  count,
  right,
  children,
  testid,
}: {
  title: string;
  count?: number | string;
  right?: ComponentChildren;
  children: ComponentChildren;
  testid?: string;
}) {
  return (
    <section class="section" data-testid={testid}>
      <div class="section-head">
        <h2>
          {title}
          {count !== undefined && <span class="count">{count}</span>}
        </h2>
        {right && <div class="section-right">{right}</div>}
      </div>
      {children}
    </section>
  );
}

export function Empty({ children }: { children: ComponentChildren }) {
  return <div class="empty">{children}</div>;
}

export function Loading() {
  return <div class="empty">loading…</div>;
}

/** Re-renders every `ms` so that "3m ago" moves on. */
export function useNow(ms = 1000): number {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

export function JobLink({ id, children }: { id: number | string; children?: ComponentChildren }) {
  return (
    <a href={`#/jobs/${id}`} class="job-link">
      {children ?? id}
    </a>
  );
}
