// #/submit: a job from a form (POST /v1/jobs with JSON) or from a YAML job file sent as it
// is (Content-Type: application/yaml, read as `baton submit -f` reads it).
import { useEffect, useState } from 'preact/hooks';
import { api, ApiError, dismissError, showError } from '../api';
import { Section } from '../components';
import { fmtDuration } from '../format';
import { navigate } from '../router';
import { store, useStore } from '../store';
import type { DryRun, Job, JobDraft, NodeInfo } from '../types';

interface Form {
  name: string;
  command: string;
  gpus: string;
  gpuType: string;
  nodes: string;
  cpus: string;
  memory: string;
  timeLimit: string;
  priority: string;
  project: string;
  pool: string;
  workdir: string;
  env: string; // KEY=VALUE, one a line
  array: string;
  after: string; // job ids, comma- or space-separated
  hold: boolean;
}

const EMPTY: Form = {
  name: '',
  command: '',
  gpus: '',
  gpuType: '',
  nodes: '',
  cpus: '',
  memory: '',
  timeLimit: '',
  priority: '',
  project: '',
  pool: '',
  workdir: '',
  env: '',
  array: '',
  after: '',
  hold: false,
};

/** A number when the text is one; else the text, for the API to name what is wrong. */
function numberOr(text: string): number | string {
  const n = Number(text);
  return text !== '' && Number.isFinite(n) ? n : text;
}
const form = store<Form>(EMPTY);
const yamlText = store<string>(
  `name: train
command: python3 train.py --lr 0.1
resources:
  gpus: 1
time_limit: 2h
`,
);
const mode = store<'form' | 'yaml'>('form');

/** What the server said of the spec: the jobs a submit would make (a dry run), or its refusal. */
type Verdict = { jobs: JobDraft[] } | { error: ApiError } | null;
const verdict = store<Verdict>(null);

// The spec's fields (as the API's errors name them) that a form field holds.
const FORM_FIELDS: Record<string, keyof Form> = {
  name: 'name',
  command: 'command',
  'resources.gpus': 'gpus',
  'resources.gpu_type': 'gpuType',
  'resources.nodes': 'nodes',
  'resources.cpus': 'cpus',
  'resources.memory': 'memory',
  time_limit: 'timeLimit',
  priority: 'priority',
  project: 'project',
  pool: 'pool',
  workdir: 'workdir',
  env: 'env',
  array: 'array',
  after: 'after',
  hold: 'hold',
};

/** The form field an API error names ("after[1]" and "env.X" are the after and env fields). */
export function formFieldOf(field: string | undefined): keyof Form | undefined {
  if (!field) return undefined;
  const base = field.replace(/\[\d+\]$/, '');
  return FORM_FIELDS[base.startsWith('env.') ? 'env' : base];
}

/** One line of what a dry run answered: how many jobs, on what, for how long. */
export function summaryOf(jobs: JobDraft[]): string {
  const j = jobs[0];
  if (!j) return 'nothing would be submitted';
  const r = j.resources;
  const what = r.gpus ? `${r.gpus} GPU${r.gpus === 1 ? '' : 's'}${r.gpu_type ? ` of type ${r.gpu_type}` : ''} on ${r.nodes} node${r.nodes === 1 ? '' : 's'}` : 'no GPU';
  const limit = j.time_limit_s ? `time limit ${fmtDuration(j.time_limit_s)}` : 'no time limit';
  const count = jobs.length === 1 ? '1 job' : `${jobs.length} jobs (array tasks ${jobs[0].array_index}–${jobs[jobs.length - 1].array_index})`;
  return `${count}, ${j.state}: ${what}, ${limit}, pool ${j.pool}, priority ${j.priority}`;
}

/** The JSON spec of the form: empty optional fields left out. */
export function specOf(f: Form): Record<string, unknown> {
  const spec: Record<string, unknown> = {};
  if (f.name.trim()) spec.name = f.name.trim();
  spec.command = f.command;
  const resources: Record<string, unknown> = {};
  if (f.gpus.trim() !== '') {
    const n = Number(f.gpus.trim());
    resources.gpus = Number.isFinite(n) ? n : f.gpus.trim(); // the API names a bad value
  }
  if (f.gpuType.trim()) resources.gpu_type = f.gpuType.trim();
  if (f.nodes.trim()) resources.nodes = numberOr(f.nodes.trim());
  if (f.cpus.trim()) resources.cpus = numberOr(f.cpus.trim());
  if (f.memory.trim()) resources.memory = f.memory.trim(); // a size: 64GiB (a bare number is bytes)
  if (Object.keys(resources).length) spec.resources = resources;
  if (f.timeLimit.trim()) spec.time_limit = f.timeLimit.trim();
  if (f.priority) spec.priority = f.priority;
  if (f.project.trim()) spec.project = f.project.trim();
  if (f.pool.trim()) spec.pool = f.pool.trim();
  if (f.workdir.trim()) spec.workdir = f.workdir.trim();
  const env: Record<string, string> = {};
  for (const line of f.env.split('\n')) {
    const t = line.trim();
    if (!t) continue;
    const eq = t.indexOf('=');
    // A line without '=' is sent as a name with no value: the API says what is wrong with it.
    env[eq < 0 ? t : t.slice(0, eq)] = eq < 0 ? '' : t.slice(eq + 1);
  }
  if (Object.keys(env).length) spec.env = env;
  if (f.array.trim()) spec.array = f.array.trim();
  const after = f.after.split(/[\s,]+/).filter((x) => x !== '').map(numberOr);
  if (after.length) spec.after = after;
  if (f.hold) spec.hold = true;
  return spec;
}

export function SubmitPage() {
  const f = useStore(form);
  const m = useStore(mode);
  const yaml = useStore(yamlText);
  const [busy, setBusy] = useState(false);
  const [models, setModels] = useState<string[]>([]);

  useEffect(() => {
    // the GPU models the nodes have, as suggestions
    const ctl = new AbortController();
    api<{ nodes: NodeInfo[] }>('/v1/nodes', { signal: ctl.signal })
      .then((r) => setModels([...new Set(r.nodes.flatMap((n) => (n.gpus ?? []).map((g) => g.model)))].sort()))
      .catch(() => {});
    return () => ctl.abort();
  }, []);

  const set = (k: keyof Form) => (e: Event) => {
    const t = e.target as HTMLInputElement;
    form.set({ ...form.get(), [k]: t.type === 'checkbox' ? t.checked : t.value });
    verdict.set(null); // what was checked is not what the form holds now
  };

  const v = useStore(verdict);
  // The form's spec, or the YAML as it is, to POST /v1/jobs (with ?dry_run=true to check it).
  const send = <T,>(query: string) =>
    m === 'yaml'
      ? api<T>('/v1/jobs' + query, { method: 'POST', raw: { text: yaml, type: 'application/yaml' } })
      : api<T>('/v1/jobs' + query, { method: 'POST', body: specOf(f) });

  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      const r = await send<Job | { jobs: Job[] }>('');
      dismissError();
      verdict.set(null);
      const first = 'jobs' in r && Array.isArray(r.jobs) ? r.jobs[0] : (r as Job);
      if (first && typeof first.id === 'number') navigate(`/jobs/${first.id}`);
      else navigate('/jobs');
    } catch (err) {
      if (err instanceof ApiError) verdict.set({ error: err });
      showError(err);
    } finally {
      setBusy(false);
    }
  };

  // Asks the server what the submit would do (its dry run), changing nothing.
  const check = async () => {
    setBusy(true);
    try {
      const r = await send<DryRun>('?dry_run=true');
      verdict.set({ jobs: r.jobs });
    } catch (err) {
      if (err instanceof ApiError && err.status < 500 && err.status !== 401) verdict.set({ error: err });
      else showError(err);
    } finally {
      setBusy(false);
    }
  };
  const wrong = v && 'error' in v && m === 'form' ? formFieldOf(v.error.field) : undefined;
  const cls = (k: keyof Form, base = 'input') => (wrong === k ? `${base} invalid` : base);

  return (
    <div class="page">
      <h1 class="page-title">Submit a job</h1>
      <div class="tabs">
        <button type="button" class={`tab ${m === 'form' ? 'active' : ''}`} data-testid="submit-mode-form" onClick={() => mode.set('form')}>
          Form
        </button>
        <button type="button" class={`tab ${m === 'yaml' ? 'active' : ''}`} data-testid="submit-mode-yaml" onClick={() => mode.set('yaml')}>
          YAML
        </button>
      </div>
      <form class="card submit-form" onSubmit={submit} data-testid="submit-form">
        {m === 'form' ? (
          <div class="form-grid">
            <label class="field span-2">
              <span>Name</span>
              <input class={cls('name')} data-testid="submit-name" value={f.name} onInput={set('name')} maxLength={128} placeholder="exp-42" />
            </label>
            <label class="field span-4">
              <span>
                Command <span class="muted small">runs under /bin/sh -c</span>
              </span>
              <textarea class={cls('command', 'input mono')} rows={3} data-testid="submit-command" value={f.command} onInput={set('command')} placeholder="python3 train.py --lr 0.1" spellcheck={false} />
            </label>
            <label class="field">
              <span>GPUs</span>
              <input class={cls('gpus')} type="number" min="0" step="any" data-testid="submit-gpus" value={f.gpus} onInput={set('gpus')} placeholder="0, 0.5, 1, 8" />
            </label>
            <label class="field">
              <span>GPU type</span>
              <input class={cls('gpuType')} data-testid="submit-gpu-type" list="dl-models" value={f.gpuType} onInput={set('gpuType')} placeholder="any" />
              <datalist id="dl-models">{models.map((x) => <option key={x} value={x} />)}</datalist>
            </label>
            <label class="field">
              <span>Nodes</span>
              <input class={cls('nodes')} type="number" min="1" data-testid="submit-nodes" value={f.nodes} onInput={set('nodes')} placeholder="the fewest" />
            </label>
            <label class="field">
              <span>CPUs per node</span>
              <input class={cls('cpus')} type="number" min="1" data-testid="submit-cpus" value={f.cpus} onInput={set('cpus')} placeholder="any" />
            </label>
            <label class="field">
              <span>Memory per node</span>
              <input class={cls('memory')} data-testid="submit-memory" value={f.memory} onInput={set('memory')} placeholder="64GiB" />
            </label>
            <label class="field">
              <span>Time limit</span>
              <input class={cls('timeLimit')} data-testid="submit-time-limit" value={f.timeLimit} onInput={set('timeLimit')} placeholder="2h, 30m, 1h30m" />
            </label>
            <label class="field">
              <span>Priority</span>
              <select class={cls('priority')} data-testid="submit-priority" value={f.priority} onChange={set('priority')}>
                <option value="">default (normal)</option>
                <option value="low">low</option>
                <option value="normal">normal</option>
                <option value="high">high</option>
                <option value="critical">critical</option>
              </select>
            </label>
            <label class="field">
              <span>Project</span>
              <input class={cls('project')} data-testid="submit-project" value={f.project} onInput={set('project')} placeholder="default" />
            </label>
            <label class="field">
              <span>Pool</span>
              <input class={cls('pool')} data-testid="submit-pool" value={f.pool} onInput={set('pool')} placeholder="default" />
            </label>
            <label class="field span-2">
              <span>
                Working directory <span class="muted small">on the nodes; default: the job's own</span>
              </span>
              <input class={cls('workdir', 'input mono')} data-testid="submit-workdir" value={f.workdir} onInput={set('workdir')} placeholder="/home/you/project" />
            </label>
            <label class="field span-2">
              <span>
                Environment <span class="muted small">KEY=VALUE, one a line</span>
              </span>
              <textarea class={cls('env', 'input mono')} rows={2} data-testid="submit-env" value={f.env} onInput={set('env')} placeholder="LR=0.1" spellcheck={false} />
            </label>
            <label class="field">
              <span>
                Array <span class="muted small">as --array</span>
              </span>
              <input class={cls('array')} data-testid="submit-array" value={f.array} onInput={set('array')} placeholder="0-99%8" />
            </label>
            <label class="field">
              <span>
                After <span class="muted small">jobs that must succeed</span>
              </span>
              <input class={cls('after')} data-testid="submit-after" value={f.after} onInput={set('after')} placeholder="12, 13" />
            </label>
            <label class="field field-check">
              <input type="checkbox" data-testid="submit-hold" checked={f.hold} onChange={set('hold')} />
              <span>submit held</span>
            </label>
          </div>
        ) : (
          <label class="field">
            <span>
              YAML job file <span class="muted small">one spec, a list, or {'{jobs: [...]}'}, as for <code>baton submit -f</code></span>
            </span>
            <textarea class="input mono" rows={16} data-testid="submit-yaml" value={yaml} onInput={(e) => { yamlText.set((e.target as HTMLTextAreaElement).value); verdict.set(null); }} spellcheck={false} />
          </label>
        )}
        <div class="form-foot">
          <button type="submit" class="btn btn-primary" data-testid="submit-button" disabled={busy}>
            {busy ? 'Submitting…' : 'Submit'}
          </button>
          <button type="button" class="btn" data-testid="submit-check" disabled={busy} onClick={check} title="ask the server what this submit would do, submitting nothing">
            Check
          </button>
          {m === 'form' && (
            <button type="button" class="btn btn-ghost" onClick={() => { form.set(EMPTY); verdict.set(null); }}>
              Clear
            </button>
          )}
        </div>
        {v && 'jobs' in v && (
          <div class="check ok" data-testid="check-result">
            Would submit {summaryOf(v.jobs)}.
          </div>
        )}
        {v && 'error' in v && (
          <div class="check bad" data-testid="check-error">
            {v.error.field && <code>{v.error.field}</code>} {v.error.message}
          </div>
        )}
      </form>
      {m === 'form' && (
        <Section title="Request body">
          <pre class="cmd" data-testid="submit-preview">{JSON.stringify(specOf(f), null, 2)}</pre>
        </Section>
      )}
    </div>
  );
}
