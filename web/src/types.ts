// The API's objects (docs/api.md), as far as the dashboard reads them. Every field the
// server may leave out is optional; the job page shows unknown fields too.

export type JobState =
  | 'pending'
  | 'held'
  | 'running'
  | 'succeeded'
  | 'failed'
  | 'cancelled'
  | 'timed_out';

export const JOB_STATES: JobState[] = [
  'pending',
  'held',
  'running',
  'succeeded',
  'failed',
  'cancelled',
  'timed_out',
];

export const ACTIVE_STATES: JobState[] = ['pending', 'held', 'running'];

export function isActive(state: string): boolean {
  return state === 'pending' || state === 'held' || state === 'running';
}

export interface Resources {
  gpus: number;
  gpu_type: string | null;
  gpu_memory_bytes?: number;
  nodes?: number;
  cpus?: number;
  memory_bytes?: number;
}

export interface AllocationPart {
  node: string;
  gpus: number[];
  gpu_share?: number;
}

export interface Factors {
  priority: number;
  fairshare: number;
  age: number;
  size: number;
  las: number;
  score: number;
}

export interface MetricPoint {
  value: number;
  step: number | null;
  checkpoint: string | null;
  at: string | null;
}

export interface TrackedMetric {
  name: string;
  goal: string;
  last: MetricPoint | null;
  best: MetricPoint | null;
}

export interface Job {
  id: number;
  name: string;
  user: string;
  project: string;
  pool: string;
  priority: string;
  state: JobState;
  reason: string | null;
  reason_detail: string | null;
  command: string[] | string;
  shell: boolean;
  resources: Resources;
  time_limit_s: number | null;
  submitted_at: string | null;
  started_at: string | null;
  finished_at: string | null;
  exit_code: number | null;
  exit_signal: number | null;
  allocation: AllocationPart[];
  cost: number;
  cost_per_hour: number;
  gpu_seconds: number;
  estimated_start?: string | null;
  factors?: Factors;
  queue_position?: number;
  array_id?: number;
  array_index?: number;
  array?: string;
  after?: number[];
  last_checkpoint?: string | null;
  metric?: TrackedMetric | null;
  restarts?: number;
  last_requeue?: string | null;
  [key: string]: unknown;
}

export interface JobPage {
  jobs: Job[];
  next: number | null;
}

export interface Gpu {
  index: number;
  uuid?: string;
  model: string;
  memory_bytes: number;
  mig_profile?: string | null;
  drain_reason: string | null;
  health: 'ok' | 'reset' | 'drain' | string;
  health_reason: string | null;
  utilization_pct?: number | null;
  memory_used_bytes?: number | null;
  temperature_c?: number | null;
  power_w?: number | null;
  ecc_uncorrected?: number | null;
  lost?: boolean;
  jobs?: number[];
}

export interface NodeInfo {
  name: string;
  cpus?: number;
  memory_bytes?: number;
  gpu_backend?: string;
  topology?: string;
  address?: string;
  pool?: string;
  gpus?: Gpu[];
  state: 'ready' | 'drained' | 'lost' | 'awaiting' | string;
  last_seen?: string | null;
  drain_reason: string | null;
}

export interface ClusterEvent {
  seq: number;
  at: string;
  kind: string;
  severity: 'alert' | 'info' | string;
  node: string;
  gpu: number | null;
  job: number | null;
  project?: string;
  message: string;
}

export interface WhoAmI {
  user: string;
  role: string;
}

export interface UsageProject {
  project: string;
  jobs: number;
  running: number;
  gpu_seconds: number;
  gpu_hours: number;
  cost: number;
  fairshare_usage?: number;
  budget?: number;
  budget_period?: string;
  budget_spent?: number;
  budget_used_pct?: number;
}

export interface UsageUser {
  project: string;
  user: string;
  jobs: number;
  running: number;
  gpu_seconds: number;
  gpu_hours: number;
  cost: number;
  fairshare_usage?: number;
}

export interface Usage {
  currency?: string;
  projects: UsageProject[];
  users: UsageUser[];
}

export interface JobGpuReading {
  node: string;
  index: number;
  milli: number;
  model: string;
  memory_total_bytes: number;
  utilization_pct?: number | null;
  memory_used_bytes?: number | null;
  temperature_c?: number | null;
  power_w?: number | null;
}

export interface JobMetrics {
  job: number;
  state: string;
  gpu_seconds: number;
  cost: number;
  cost_per_hour: number;
  currency: string;
  gpus: JobGpuReading[];
  mean_utilization_pct: number | null;
  samples: number;
}

export type MetricLine = Record<string, unknown>;

export interface MetricLines {
  job: number;
  node: string;
  offset?: number;
  next?: number;
  size: number;
  ended?: boolean;
  lines: MetricLine[];
}

export interface Report {
  name: string;
  files: string[];
  modified: string;
}
