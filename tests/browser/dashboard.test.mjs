// The dashboard in a real browser (issue 19): Debian's Chromium driven by playwright-core (from
// web/node_modules, pinned by web/package-lock.json), against the real `baton up` started here on
// a free loopback port in a temporary directory. Run by scripts/browser-tests under ctest:
//   node --test tests/browser/dashboard.test.mjs   (with BATON_BINARY, BATON_ARTIFACTS set)
// Screenshots go to $BATON_ARTIFACTS; with BATON_UPDATE_SCREENSHOTS=1 a few also to docs/images.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const source = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const require = createRequire(join(source, 'web', 'package.json'));
const { chromium } = require('playwright-core');

const binary = process.env.BATON_BINARY;
const artifacts = process.env.BATON_ARTIFACTS || join(tmpdir(), 'baton-browser-artifacts');
const chromePath = process.env.CHROMIUM || '/usr/bin/chromium';
assert.ok(binary && existsSync(binary), 'BATON_BINARY must name the baton binary');
mkdirSync(artifacts, { recursive: true });

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// `baton up` in its own directory, on a free port; stopped (SIGTERM) by stop().
async function startBaton(gpus, extra = []) {
  const dir = mkdtempSync(join(tmpdir(), 'baton-ui-'));
  const data = join(dir, 'data');
  const out = join(dir, 'baton.out');
  const child = spawn(binary, ['up', '--data', data, '--listen', '127.0.0.1:0', '--gpus', gpus, ...extra], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, BATON_HOME: data },
  });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  for (let i = 0; i < 600 && !existsSync(join(data, 'server.port')); i++) await sleep(50);
  assert.ok(existsSync(join(data, 'server.port')), `baton up did not start: ${log}`);
  const port = readFileSync(join(data, 'server.port'), 'utf8').trim();
  const admin = readFileSync(join(data, 'admin.token'), 'utf8').trim();
  // Plain HTTP on loopback, as `baton up` prints the dashboard's address for this machine.
  const url = `http://127.0.0.1:${port}`;
  const api = async (method, path, body, token = admin, headers = {}) => {
    const res = await fetch(url + path, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...headers },
      body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await res.text();
    let json = null;
    try { json = JSON.parse(text); } catch { /* a log */ }
    return { status: res.status, json, text };
  };
  // `baton up` writes its port before its own agent has registered: wait for the node, which
  // the tests read first (on a loaded machine it came after the first request).
  for (let i = 0; i < 600; i++) {
    if ((await api('GET', '/v1/nodes')).json?.nodes?.length > 0) break;
    await sleep(50);
  }
  assert.ok((await api('GET', '/v1/nodes')).json?.nodes?.length > 0, `no node registered: ${log}`);
  // The jobs still running here are stopped first: a stopped `baton up` leaves its jobs running.
  const stopLocalJobs = async () => {
    const local = (await api('GET', '/v1/nodes')).json?.nodes?.[0]?.name;
    const running = (await api('GET', '/v1/jobs?state=running&limit=1000')).json?.jobs || [];
    const mine = running.filter((j) => (j.allocation || []).some((a) => a.node === local));
    for (const j of mine) await api('POST', `/v1/jobs/${j.id}/cancel`);
    for (let i = 0; i < 300 && mine.length > 0; i++) {
      const still = (await api('GET', '/v1/jobs?state=running&limit=1000')).json?.jobs || [];
      if (!still.some((j) => mine.some((m) => m.id === j.id))) break;
      await sleep(50);
    }
  };
  const stop = async () => {
    if (child.exitCode === null) await stopLocalJobs().catch(() => {});
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      for (let i = 0; i < 200 && child.exitCode === null; i++) await sleep(50);
    }
    writeFileSync(join(artifacts, 'baton.out'), log);
    rmSync(dir, { recursive: true, force: true });
  };
  return { dir, data, url, admin, api, stop, log: () => log };
}

let browser;
before(async () => {
  browser = await chromium.launch({ executablePath: chromePath, args: ['--no-sandbox'] });
});
after(async () => {
  await browser?.close();
});

async function shot(page, name, docs = false) {
  const file = join(artifacts, `${name}.png`);
  await page.screenshot({ path: file, fullPage: false });
  if (docs && process.env.BATON_UPDATE_SCREENSHOTS === '1') {
    mkdirSync(join(source, 'docs', 'images'), { recursive: true });
    copyFileSync(file, join(source, 'docs', 'images', `dashboard-${name}.png`));
  }
}

async function login(page, url, token) {
  await page.goto(`${url}/ui/`);
  await page.getByTestId('token-input').fill(token);
  await page.getByTestId('login-button').click();
  await page.getByTestId('whoami').waitFor();
}

// Everything a researcher does, in order, on one cluster of 4 simulated GPUs.
test('a user sees the cluster, submits, follows, cancels, and is refused what the API refuses', async () => {
  const b = await startBaton('4xH100-80GB');
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  const problems = [];
  page.on('console', (m) => { if (m.type() === 'error') problems.push(m.text()); });
  page.on('pageerror', (e) => problems.push(String(e)));
  try {
    // Log in: a wrong token is refused with the API's words, the right one shows who we are.
    await page.goto(`${b.url}/ui/`);
    await shot(page, 'login');
    await page.getByTestId('token-input').fill('0'.repeat(64));
    await page.getByTestId('login-button').click();
    await page.getByTestId('error').waitFor();
    assert.match(await page.getByTestId('error').innerText(), /unknown token|401/i);
    await login(page, b.url, b.admin);
    assert.match(await page.getByTestId('whoami').innerText(), /\(admin\)/);
    // The token is kept in this tab's session only.
    const stored = await page.evaluate(() => [JSON.stringify(sessionStorage), JSON.stringify(localStorage), document.cookie]);
    assert.ok(stored[0].includes(b.admin), 'the token is in sessionStorage');
    assert.ok(!stored[1].includes(b.admin) && !stored[2].includes(b.admin), 'and nowhere else');

    // The grid fills as jobs start.
    await page.getByTestId('nav-cluster').click();
    await page.locator('[data-testid="gpu"]').nth(3).waitFor();
    assert.equal(await page.locator('[data-testid="gpu"][data-state="busy"]').count(), 0);
    const sleepers = [];
    for (let i = 0; i < 2; i++) {
      const r = await b.api('POST', '/v1/jobs', { name: `sleeper-${i}`, command: 'echo started; sleep 300', resources: { gpus: 1 } });
      assert.equal(r.status, 201, r.text);
      sleepers.push(r.json.id);
    }
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="gpu"][data-state="busy"]').length === 2, null, { timeout: 20000 });
    const busyJobs = await page.locator('[data-testid="gpu"][data-state="busy"]').evaluateAll((els) => els.map((e) => e.getAttribute('data-jobs')).sort());
    assert.deepEqual(busyJobs, sleepers.map(String).sort());
    await shot(page, 'cluster', true);

    // Submit from the form: the API's own message for a bad field, then a job that runs.
    await page.getByTestId('nav-submit').click();
    await page.getByTestId('submit-command').fill('echo never');
    await page.getByTestId('submit-gpus').fill('1.5');
    await page.getByTestId('submit-button').click();
    await page.getByTestId('error').waitFor();
    assert.match(await page.getByTestId('error').innerText(), /resources\.gpus/);
    assert.match(await page.getByTestId('submit-gpus').getAttribute('class'), /invalid/); // the field it named
    // Check asks the server (a dry run): its refusal at the field, then what would be made; nothing is.
    const before = (await b.api('GET', '/v1/jobs?state=pending,held,running,succeeded,failed,cancelled,timed_out')).json.jobs.length;
    await page.getByTestId('submit-name').fill('curve');
    await page.getByTestId('submit-gpus').fill('1');
    await page.getByTestId('submit-time-limit').fill('10x');
    await page.getByTestId('submit-check').click();
    await page.getByTestId('check-error').waitFor();
    assert.match(await page.getByTestId('check-error').innerText(), /time_limit.*unknown unit/);
    assert.match(await page.getByTestId('submit-time-limit').getAttribute('class'), /invalid/);
    await page.getByTestId('submit-time-limit').fill('10m');
    await page.getByTestId('submit-check').click();
    await page.getByTestId('check-result').waitFor();
    assert.equal(await page.getByTestId('check-result').innerText(),
      'Would submit 1 job, pending: 1 GPU on 1 node, time limit 10m 00s, pool default, priority normal.');
    const after = (await b.api('GET', '/v1/jobs?state=pending,held,running,succeeded,failed,cancelled,timed_out')).json.jobs.length;
    assert.equal(after, before);
    await page.getByTestId('submit-command').fill(
      'for i in $(seq 1 30); do echo "{\\"step\\": $i, \\"loss\\": $(( 1000 / i ))}" >> $BATON_METRICS_FILE; echo "step $i"; sleep 0.1; done; echo all-done');
    await shot(page, 'submit', true);
    await page.getByTestId('submit-button').click();
    await page.waitForURL(/#\/jobs\/\d+$/);
    const curve = Number(page.url().match(/#\/jobs\/(\d+)$/)[1]);
    // Its log, followed to the end.
    await page.getByTestId('log-ended').waitFor({ timeout: 60000 });
    const log = await page.getByTestId('job-log').innerText();
    assert.match(log, /step 1\n/);
    assert.match(log, /all-done/);
    await page.waitForFunction(() => /succeeded/.test(document.querySelector('[data-testid="job-state"]')?.textContent || ''), null, { timeout: 20000 });
    // Its metric lines, plotted.
    await page.locator('[data-testid="metrics-chart"] canvas').first().waitFor({ timeout: 20000 });
    await shot(page, 'job', true);
    const viaApi = await b.api('GET', `/v1/jobs/${curve}`);
    assert.equal(viaApi.json.name, 'curve');

    // What the CLI's submit has (issue 38): a working directory, the environment, an array, a
    // dependency, CPUs and memory.
    await page.getByTestId('nav-submit').click();
    await page.getByTestId('submit-name').fill('sweep');
    await page.getByTestId('submit-command').fill('echo lr=$LR task=$BATON_ARRAY_INDEX in $(pwd)');
    await page.getByTestId('submit-gpus').fill('0');
    await page.getByTestId('submit-time-limit').fill('');
    await page.getByTestId('submit-workdir').fill('/tmp');
    await page.getByTestId('submit-env').fill('LR=0.1\nSEED=7');
    await page.getByTestId('submit-array').fill('0-1');
    await page.getByTestId('submit-after').fill(String(curve));
    await page.getByTestId('submit-cpus').fill('1');
    await page.getByTestId('submit-memory').fill('256MiB');
    await page.getByTestId('submit-button').click();
    await page.waitForURL(/#\/jobs\/\d+$/);
    const sweep = Number(page.url().match(/#\/jobs\/(\d+)$/)[1]);
    const swept = (await b.api('GET', `/v1/jobs/${sweep}`)).json;
    assert.equal(swept.workdir, '/tmp');
    assert.deepEqual(swept.env, { LR: '0.1', SEED: '7' });
    assert.equal(swept.array_id, sweep);
    assert.deepEqual(swept.after, [curve]);
    assert.equal(swept.resources.cpus, 1);
    assert.equal(swept.resources.memory_bytes, 256 * 1024 * 1024);
    const second = (await b.api('GET', `/v1/jobs/${sweep}_1`)).json;
    assert.equal(second.array_index, 1);
    await page.getByTestId('log-ended').waitFor({ timeout: 60000 });
    assert.match(await page.getByTestId('job-log').innerText(), /lr=0\.1 task=0 in \/tmp/);

    // A job that cannot start now says why in the queue.
    const big = await b.api('POST', '/v1/jobs', { name: 'big', command: 'true', resources: { gpus: 4 } });
    assert.equal(big.status, 201, big.text);
    await page.getByTestId('nav-jobs').click();
    const row = page.locator(`[data-testid="job-row"][data-id="${big.json.id}"]`);
    await row.waitFor();
    await page.waitForFunction((id) => /waiting for 4 GPUs|resources/.test(document.querySelector(`[data-testid="job-row"][data-id="${id}"] [data-testid="job-reason"]`)?.textContent || ''), big.json.id, { timeout: 20000 });
    await shot(page, 'queue', true);

    // Cancel one sleeper from its page.
    await page.goto(`${b.url}/ui/#/jobs/${sleepers[0]}`);
    await page.getByTestId('cancel-button').click();
    await page.waitForFunction(() => /cancelled/.test(document.querySelector('[data-testid="job-state"]')?.textContent || ''), null, { timeout: 30000 });
    assert.equal((await b.api('GET', `/v1/jobs/${sleepers[0]}`)).json.state, 'cancelled');

    // Usage, health and a simulator report render.
    execFileSync(binary, ['sim', '--cluster', writeCluster(b.dir), '--trace', writeTrace(b.dir), '--report', join(b.data, 'reports', 'fifo-demo')]);
    await page.getByTestId('nav-usage').click();
    await page.getByTestId('usage-project').first().waitFor();
    await shot(page, 'usage', true);
    // With autoscaled nodes (their numbers are the API's, tested in C++: here, the usage as
    // GET /v1/usage answers with a `nodes` object), the idle column and the nodes' table with
    // what a fixed cluster would have cost and what was saved.
    const usage = (await b.api('GET', '/v1/usage')).json;
    usage.projects.forEach((x) => (x.idle_cost = 0));
    usage.users.forEach((x) => (x.idle_cost = 0));
    usage.projects[0].idle_cost = 3.6;
    usage.nodes = {
      templates: [{ template: 'h100-spot', spot: true, node_seconds: 11196, node_hours: 3.11, cost: 63.6, idle_cost: 3.6, peak_nodes: 1, fixed_cost: 786.4 }],
      window_seconds: 28800, node_seconds: 11196, node_hours: 3.11, cost: 63.6, idle_cost: 3.6, fixed_cost: 786.4, saved: 722.8,
    };
    await page.route('**/v1/usage*', (route) => route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(usage) }));
    await page.reload();
    await page.getByTestId('usage-nodes').waitFor();
    assert.match(await page.getByTestId('usage-saved').textContent(), /saved \$722\.80 \(91\.9%\)/);
    assert.equal(await page.locator('[data-testid="usage-template"][data-template="h100-spot"] td').nth(1).textContent(), 'yes');
    assert.equal(await page.getByTestId('usage-idle-cost').first().textContent(), '$3.60');
    await shot(page, 'usage-autoscaled');
    await page.unroute('**/v1/usage*');
    await page.getByTestId('nav-health').click();
    await page.getByTestId('event').first().waitFor();
    await page.getByTestId('nav-reports').click();
    await page.getByTestId('report').first().waitFor();
    await page.locator('[data-testid="report"] img').first().waitFor();
    await shot(page, 'reports', true);

    // A user token: sees the cluster, but cancelling the admin's job or draining a node is
    // refused with the API's 403 message, and the job runs on.
    const made = await b.api('POST', '/v1/tokens', { user: 'nobody', role: 'user', name: 'browser' });
    assert.equal(made.status, 201, made.text);
    await page.getByTestId('logout').click();
    await login(page, b.url, made.json.token);
    assert.match(await page.getByTestId('whoami').innerText(), /nobody \(user\)/);
    await page.goto(`${b.url}/ui/#/jobs/${sleepers[1]}`);
    await page.getByTestId('cancel-button').click();
    await page.getByTestId('error').waitFor();
    assert.match(await page.getByTestId('error').innerText(), /403|only/);
    await shot(page, 'forbidden');
    assert.equal((await b.api('GET', `/v1/jobs/${sleepers[1]}`)).json.state, 'running');
    // Its log is not the user's to read either.
    await page.getByTestId('job-log').waitFor();
    await page.waitForFunction(() => /403|reads its logs/.test(document.body.textContent || ''), null, { timeout: 10000 });
    // The browser itself logs each refused request ("Failed to load resource: ... 403"); those
    // were asked for. Anything else is a script error.
    assert.deepEqual(problems.filter((p) => !/Failed to load resource: .*\b4\d\d\b/.test(p)), [], 'no script errors in the page');
  } catch (e) {
    await shot(page, 'failure').catch(() => {});
    throw e;
  } finally {
    await context.close();
    await b.stop();
  }
});

function writeCluster(dir) {
  const f = join(dir, 'cluster.yaml');
  writeFileSync(f, 'nodes:\n  - {name: dgx, count: 2, gpus: 8xH100-80GB}\n');
  return f;
}

function writeTrace(dir) {
  const f = join(dir, 'trace.csv');
  let csv = 'submit_time,duration,gpus,user\n';
  for (let i = 0; i < 40; i++) csv += `${i * 30},${600 + (i % 7) * 120},${[1, 2, 4, 8][i % 4]},${['ana', 'bo', 'cy'][i % 3]}\n`;
  writeFileSync(f, csv);
  return f;
}

// 1,000 jobs on 100 nodes: how long the page takes to show them (docs/performance.md). Timed,
// not asserted: the figures are printed and kept in $BATON_ARTIFACTS/load-timings.json.
test('the page with 1,000 jobs and 100 nodes', async () => {
  const b = await startBaton('8xH100-80GB');
  const context = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await context.newPage();
  try {
    // The local node takes no jobs (they would start real processes); 99 more nodes,
    // registered as their agents would, take them.
    const local = (await b.api('GET', '/v1/nodes')).json.nodes[0].name;
    assert.equal((await b.api('POST', `/v1/nodes/${local}/drain`, { reason: 'load test' })).status, 200);
    for (let n = 1; n < 100; n++) {
      const gpus = [];
      for (let g = 0; g < 8; g++) {
        gpus.push({ index: g, uuid: `GPU-${n}-${g}`, model: 'H100-80GB', memory_bytes: 85899345920, numa_node: g >> 2, island: 0, pcie_switch: g >> 1, physical: g, mig_profile: null });
      }
      const r = await b.api('POST', '/v1/agent/register', {
        node: { name: `gpu${String(n).padStart(3, '0')}`, cpus: 64, memory_bytes: 1099511627776, gpu_backend: 'simulated', topology: 'nvswitch', pool: 'default', gpus },
        jobs: [],
      });
      assert.equal(r.status, 200, r.text);
    }
    const jobs = [];
    for (let i = 0; i < 1000; i++) {
      jobs.push({ name: `load-${i}`, command: 'sleep 3600', resources: { gpus: 1 }, project: ['vision', 'nlp', 'speech'][i % 3] });
    }
    const batch = await b.api('POST', '/v1/jobs/batch', { jobs });
    assert.equal(batch.status, 201, batch.text.slice(0, 300));
    const nodes = (await b.api('GET', '/v1/nodes')).json.nodes;
    assert.equal(nodes.length, 100);

    await login(page, b.url, b.admin);
    const timings = {};
    for (const [name, hash, selector, count] of [
      ['cluster', '#/cluster', '[data-testid="gpu"]', 800],
      ['jobs', '#/jobs', '[data-testid="job-row"]', 1],
    ]) {
      const runs = [];
      for (let run = 0; run < 3; run++) {
        await page.goto('about:blank');
        const t0 = Date.now();
        await page.goto(`${b.url}/ui/${hash}`);
        await page.waitForFunction(([s, n]) => document.querySelectorAll(s).length >= n, [selector, count], { timeout: 30000 });
        runs.push(Date.now() - t0);
      }
      timings[name] = { runs_ms: runs, best_ms: Math.min(...runs) };
    }
    await shot(page, 'jobs-1000');
    await page.goto(`${b.url}/ui/#/cluster`);
    await page.locator('[data-testid="gpu"]').nth(799).waitFor();
    await shot(page, 'cluster-100-nodes');
    const report = { jobs: 1000, nodes: 100, gpus: 800, binary, timings };
    writeFileSync(join(artifacts, 'load-timings.json'), JSON.stringify(report, null, 2) + '\n');
    console.log(`page load with 1,000 jobs and 100 nodes: ${JSON.stringify(timings)}`);
  } finally {
    await context.close();
    await b.stop();
  }
});
