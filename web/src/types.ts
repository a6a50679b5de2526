// The API's objects (docs/api.md), named as the dashboard reads them. They are generated from
// the server's own OpenAPI document (src/api/openapi.json -> web/generated/api.ts by
// openapi-typescript, `npm run gen`, which every build runs first), so a field the server
// changes changes here, and TypeScript finds every page that reads it.
import type { components, paths } from '../generated/api';

type Schemas = components['schemas'];
type Answer<P extends keyof paths> = paths[P] extends { get: { responses: { 200: { content: { 'application/json': infer T } } } } }
  ? T
  : never;

export type JobState = Schemas['JobState'];

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

export type Resources = Schemas['Resources'];
export type AllocationPart = Schemas['Allocation'];
export type Factors = Schemas['QueueFactors'];
export type TrackedMetric = NonNullable<Schemas['JobDraft']['metric']>;
export type MetricPoint = NonNullable<TrackedMetric['last']>;
/** A job: every route's job object, with what GET /v1/jobs/{id} adds for a waiting one. */
export type Job = Schemas['JobDetail'];
/** A job a submit's dry run would make: a job without its id. */
export type JobDraft = Schemas['JobDraft'];
export type DryRun = Schemas['DryRun'];
export type JobPage = Schemas['JobList'];
export type Gpu = Schemas['NodeGpu'];
export type NodeInfo = Schemas['Node'];
export type ClusterEvent = Schemas['Event'];
export type WhoAmI = Answer<'/v1/whoami'>;
export type UsageProject = Schemas['UsageProject'];
export type UsageUser = Schemas['UsageUser'];
export type Usage = Schemas['Usage'];
export type UsageNodes = Schemas['UsageNodes'];
export type JobGpuReading = Schemas['JobGpuMetrics'];
export type JobMetrics = Schemas['JobMetrics'];
export type MetricLines = Schemas['MetricsLines'];
export type MetricLine = MetricLines['lines'][number];
export type Report = Schemas['ReportList']['reports'][number];
/** An error answer's body; `field` names the submitted spec's field that is wrong as written. */
export type ApiError = Schemas['Error'];
