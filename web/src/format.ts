// How numbers, times and sizes read on the page.

export function fmtNum(v: number | null | undefined, digits = 1): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  if (Number.isInteger(v)) return v.toLocaleString('en-US');
  return v.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: 0 });
}

export function fmtGpus(v: number | null | undefined): string {
  if (v === null || v === undefined) return '–';
  return Number.isInteger(v) ? String(v) : String(Math.round(v * 1000) / 1000);
}

export function fmtBytes(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let x = v;
  let i = 0;
  while (Math.abs(x) >= 1024 && i < units.length - 1) {
    x /= 1024;
    i++;
  }
  return `${i === 0 ? x : x.toFixed(x >= 100 ? 0 : 1)} ${units[i]}`;
}

/** GiB without the unit, for "60/80 GiB". */
export function gib(v: number | null | undefined): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  const g = v / 1024 ** 3;
  return g >= 10 ? g.toFixed(0) : g.toFixed(1);
}

export function fmtMoney(v: number | null | undefined, currency = 'USD'): string {
  if (v === null || v === undefined || !Number.isFinite(v)) return '–';
  try {
    return v.toLocaleString('en-US', {
      style: 'currency',
      currency,
      maximumFractionDigits: v !== 0 && Math.abs(v) < 1 ? 4 : 2,
    });
  } catch {
    return `${v.toFixed(2)} ${currency}`;
  }
}

export function parseTime(t: string | null | undefined): number | null {
  if (!t) return null;
  const ms = Date.parse(t);
  return Number.isNaN(ms) ? null : ms;
}

const pad = (n: number) => String(n).padStart(2, '0');

/** A local time: "14:03:07" today, "Nov 23 14:03" otherwise. */
export function fmtTime(t: string | null | undefined): string {
  const ms = parseTime(t);
  if (ms === null) return '–';
  const d = new Date(ms);
  const now = new Date();
  const hms = `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
  if (d.toDateString() === now.toDateString()) return hms;
  const month = d.toLocaleString('en-US', { month: 'short' });
  const year = d.getFullYear() === now.getFullYear() ? '' : ` ${d.getFullYear()}`;
  return `${month} ${d.getDate()}${year} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** Seconds as "45s", "12m 03s", "3h 04m", "2d 03h". */
export function fmtDuration(s: number | null | undefined): string {
  if (s === null || s === undefined || !Number.isFinite(s)) return '–';
  const neg = s < 0;
  let x = Math.round(Math.abs(s));
  const d = Math.floor(x / 86400);
  x -= d * 86400;
  const h = Math.floor(x / 3600);
  x -= h * 3600;
  const m = Math.floor(x / 60);
  const sec = x - m * 60;
  let out: string;
  if (d > 0) out = `${d}d ${pad(h)}h`;
  else if (h > 0) out = `${h}h ${pad(m)}m`;
  else if (m > 0) out = `${m}m ${pad(sec)}s`;
  else out = `${sec}s`;
  return neg ? '-' + out : out;
}

/** "3m ago", "in 2h 10m". */
export function fmtRelative(t: string | null | undefined, now = Date.now()): string {
  const ms = parseTime(t);
  if (ms === null) return '–';
  const s = (ms - now) / 1000;
  if (Math.abs(s) < 5) return 'now';
  return s < 0 ? `${fmtDuration(-s)} ago` : `in ${fmtDuration(s)}`;
}

/** How long a job ran, or has run so far. */
export function jobRuntime(started: string | null, finished: string | null, now = Date.now()): number | null {
  const a = parseTime(started);
  if (a === null) return null;
  const b = parseTime(finished) ?? now;
  return Math.max(0, (b - a) / 1000);
}

/** A command as a shell line: the string of a shell job, else the argv quoted. */
export function fmtCommand(command: string[] | string, shell?: boolean): string {
  if (typeof command === 'string') return command;
  if (shell && command.length === 1) return command[0];
  return command.map(shellQuote).join(' ');
}

function shellQuote(w: string): string {
  if (w !== '' && /^[A-Za-z0-9_@%+=:,./-]+$/.test(w)) return w;
  return `'${w.replace(/'/g, `'\\''`)}'`;
}

const SIGNALS: Record<number, string> = {
  1: 'SIGHUP', 2: 'SIGINT', 3: 'SIGQUIT', 4: 'SIGILL', 6: 'SIGABRT', 7: 'SIGBUS', 8: 'SIGFPE',
  9: 'SIGKILL', 10: 'SIGUSR1', 11: 'SIGSEGV', 12: 'SIGUSR2', 13: 'SIGPIPE', 14: 'SIGALRM',
  15: 'SIGTERM',
};

export function fmtExit(code: number | null, signal: number | null): string {
  if (signal !== null && signal !== undefined) return `${SIGNALS[signal] ?? 'signal'} (${signal})`;
  if (code !== null && code !== undefined) return `exit ${code}`;
  return '–';
}

/** The heat colour of a utilisation, 0–100: pale blue-grey through green and amber to red. */
export function heat(pct: number | null | undefined): string {
  if (pct === null || pct === undefined || !Number.isFinite(pct)) return '#f1f3f6';
  const p = Math.max(0, Math.min(100, pct)) / 100;
  // hue 150 (green) at low load to 0 (red) at full; lightness falls with load
  const hue = 150 - 150 * p;
  const light = 93 - 28 * p;
  const sat = 45 + 35 * p;
  return `hsl(${hue.toFixed(0)} ${sat.toFixed(0)}% ${light.toFixed(0)}%)`;
}
