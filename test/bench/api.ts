// `npm run bench:api [-- --concurrency 16 --duration 10 | --requests N]`: latency and
// throughput of the hot API routes on the local runtime (wrangler dev: workerd with
// local D1 and R2), next to GET /healthz, a route that touches neither auth nor D1,
// as the floor, and routes that make only the platform's calls the others are built on
// (none at all, one D1 statement, the two rate-limit calls, one R2 put of the upload's bytes or of a
// proof's input, one queue send; test/bench/workers/platform.ts). What a route costs
// above the floor is its work; what it costs above the platform calls it must make is
// the service's own: each route's workerd CPU per request (/proc, so a busy machine does
// not inflate it) and its ratio to those calls' ("× platform").
// It uses its own state directory and port, so it never touches `npm start`'s state.
// `--baseline <git-ref>` measures that commit too, in one run: it is checked out into a
// temporary git worktree (node_modules hard-linked to this tree's), served by a second
// wrangler dev, and each route is measured on the two trees in turn, round by round,
// so both see the same machine; the table then prints each route's ratio to the floor
// on both trees side by side.
import { execFileSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  applyLocalMigrations,
  d1Execute,
  freePort,
  hasExited,
  ROOT,
  spawnWranglerDev,
  stopGroup,
  waitForHealthy,
} from '../../src/tools/wrangler.ts';
import type { ChildProcess } from 'node:child_process';
import { benchCli } from './cli.ts';
import { startCpuProfile, summarizeProfile } from './cpu-profile.ts';
import { cpuMs, workerdPids } from './workerd.ts';

const usage = `usage: npm run bench:api -- [--concurrency N] [--duration SECONDS | --requests N] [--warmup N] [--baseline REF [--rounds N]] [--only TEXT] [--attribute N] [--profile DIR]
  --concurrency N   requests in flight at once (default 16)
  --duration S      seconds measured per route (default 10; per round and tree with --baseline)
  --requests N      instead of a duration: exactly N requests per route
  --warmup N        unmeasured requests per route first (default 4 × concurrency)
  --baseline REF    also measure this git commit (a temporary worktree), alternating with this tree
  --rounds N        with --baseline: how many times each route is measured on each tree, in turn (default 3)
  --only TEXT       only the service routes whose label holds TEXT (say "GET"), with the floor and the platform rows
                    they are read against
  --attribute N     before the routes, on each tree: GET /v1/proofs/{id}'s parts (the route, its platform calls
                    alone, and those with the route's own D1 batch), each run N times in a row inside one request,
                    workerd's CPU per run (median of 5); what the sampling profiler cannot tell apart
  --profile DIR     the working tree's Worker CPU profile of each route's (first) measured run, written to DIR as
                    <route>.cpuprofile (devtools open it) and summed up by function`;

const cli = benchCli('bench:api', usage, [
  'concurrency',
  'duration',
  'requests',
  'warmup',
  'baseline',
  'rounds',
  'only',
  'attribute',
  'profile',
]);
const concurrency = cli.number('concurrency', 16, 1);
const durationMs = cli.number('duration', 10, 1) * 1000;
const fixedRequests = cli.string('requests') === undefined ? undefined : cli.number('requests', 1, 1);
const warmup = cli.number('warmup', 4 * concurrency, 0);
const baselineRef = cli.string('baseline');
const rounds = baselineRef === undefined ? 1 : cli.number('rounds', 3, 1);
const profileDir = cli.string('profile');
const only = cli.string('only');
const attributeRuns = cli.string('attribute') === undefined ? undefined : cli.number('attribute', 300, 10);

/**
 * The routes `--only` keeps: the service routes whose label holds its text, the floor,
 * and the platform rows of the calls those routes make (and the request alone's).
 */
function selected(routes: Route[]): Route[] {
  if (only === undefined) return routes;
  const chosen = routes.filter((r) => r.calls && r.label.toLowerCase().includes(only.toLowerCase()));
  if (chosen.length === 0) throw new Error(`--only ${JSON.stringify(only)}: no service route's label holds it`);
  const needed = new Set<PlatformCall>(['request', ...chosen.flatMap((r) => Object.keys(r.calls!) as PlatformCall[])]);
  return routes.filter((r) => chosen.includes(r) || (r.call !== undefined ? needed.has(r.call) : !r.calls));
}

/** The bench-only Worker entry each tree is served by (the platform's routes, then src/index.ts). */
const PLATFORM_ENTRY = path.join('test', 'bench', 'workers', 'platform.ts');
const BIG_ELF = path.join(ROOT, 'test', 'guests', 'build', 'big.elf');
const HELLO_ELF = path.join(ROOT, 'test', 'guests', 'build', 'hello.elf');
const VMEXE = new TextEncoder().encode('opaque vmexe bytes for the bench');

const log = (msg: string) => process.stderr.write(`bench:api: ${msg}\n`);

/**
 * The bench organization's own quotas (set-org-limits): every measured POST creates a
 * job and nothing here runs them, so the default quota (ORG_MAX_ACTIVE_JOBS, 1000
 * queued-or-running jobs) would answer 429 part-way through a run. These are far
 * above what any run submits, so every measured request is a real success.
 */
const BENCH_ORG_LIMITS = { maxActiveJobs: 10_000_000, maxGpus: 10_000_000 };

/** The platform's calls a route is made of, each measured alone by a platform row (its `call`). */
type PlatformCall = 'request' | 'd1' | 'rateLimits' | 'r2Small' | 'r2Body' | 'queue';

interface Route {
  label: string;
  path: string;
  init: () => RequestInit;
  /** Statuses that count as success. */
  ok: number[];
  /** A platform row: the one call it makes. */
  call?: PlatformCall;
  /** A service route: the platform calls it must make, by kind (its floor). */
  calls?: Partial<Record<PlatformCall, number>>;
}

interface Samples {
  latencies: number[];
  errors: number;
  firstError?: string;
  elapsedMs: number;
  /** CPU the tree's workerd processes used while the requests ran (ms), and how many requests (answered or not) that was. */
  cpuMs: number;
  sent: number;
}

interface Result {
  label: string;
  call?: PlatformCall;
  calls?: Partial<Record<PlatformCall, number>>;
  ok: number;
  errors: number;
  firstError?: string;
  p50: number;
  p99: number;
  rps: number;
  /** workerd CPU per request, ms: the Worker, and the local D1, R2 and queues it hosts. */
  cpu: number;
}

function percentile(sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))];
}

/** `concurrency` loops sending the route's request until the request count or the duration is reached; adds what they measured to `into`. */
async function load(
  baseUrl: string,
  route: Route,
  worker: ChildProcess,
  budget: { requests?: number; ms?: number },
  into: Samples,
): Promise<void> {
  let issued = 0;
  const pids = workerdPids(worker.pid);
  const cpuBefore = pids.reduce((n, pid) => n + cpuMs(pid), 0);
  const sentBefore = into.latencies.length + into.errors;
  const start = performance.now();
  const more = () => {
    if (hasExited(worker)) return false;
    if (budget.requests !== undefined) return issued++ < budget.requests;
    return performance.now() - start < budget.ms!;
  };
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (more()) {
        const t = performance.now();
        try {
          const res = await fetch(baseUrl + route.path, route.init());
          const body = await res.text();
          if (route.ok.includes(res.status)) into.latencies.push(performance.now() - t);
          else {
            into.errors++;
            into.firstError ??= `${res.status} ${body.slice(0, 300)}`;
          }
        } catch (err) {
          into.errors++;
          into.firstError ??= String(err);
        }
      }
    }),
  );
  into.elapsedMs += performance.now() - start;
  // Work after the answers (ctx.waitUntil, the queue's consumer) is the requests' too:
  // counted until workerd is idle again, so none of it is counted as the next route's.
  into.cpuMs += (await settled(pids)) - cpuBefore;
  into.sent += into.latencies.length + into.errors - sentBefore;
}

/** How long after a route's last answer its workerd CPU is still counted (work after the answers): at least SETTLE_MS, then until idle. */
const SETTLE_MS = 500;
/** Idle: workerd used less than this share of one core over a SETTLE_STEP_MS step. */
const IDLE_SHARE = 0.05;
const SETTLE_STEP_MS = 250;
/** The longest a route's work after its answers is waited for. */
const SETTLE_MAX_MS = 15_000;

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuOf = (pids: number[]) => pids.reduce((n, pid) => n + cpuMs(pid), 0);

/**
 * workerd's CPU once the work after a route's answers is done: SETTLE_MS, then steps of
 * SETTLE_STEP_MS until one uses less than IDLE_SHARE of a core (at most SETTLE_MAX_MS).
 * A fixed half second let a submission's queue notices, consumed in batches seconds later,
 * be counted as the next route's: the platform rows measured after the submissions
 * moved by 10-20 % from run to run, and every ratio read against them with them.
 */
async function settled(pids: number[]): Promise<number> {
  await sleep(SETTLE_MS);
  let cpu = cpuOf(pids);
  for (let waited = SETTLE_MS; waited < SETTLE_MAX_MS; waited += SETTLE_STEP_MS) {
    await sleep(SETTLE_STEP_MS);
    const now = cpuOf(pids);
    const idle = now - cpu < IDLE_SHARE * SETTLE_STEP_MS;
    cpu = now;
    if (idle) break;
  }
  return cpu;
}

const newSamples = (): Samples => ({ latencies: [], errors: 0, elapsedMs: 0, cpuMs: 0, sent: 0 });

function summary(route: Route, s: Samples): Result {
  const latencies = [...s.latencies].sort((a, b) => a - b);
  return {
    label: route.label,
    call: route.call,
    calls: route.calls,
    ok: latencies.length,
    errors: s.errors,
    firstError: s.firstError,
    p50: percentile(latencies, 0.5),
    p99: percentile(latencies, 0.99),
    rps: (latencies.length / s.elapsedMs) * 1000,
    cpu: s.cpuMs / s.sent,
  };
}

/**
 * A route's cost against the platform's: workerd's CPU per request (the Worker and the
 * local D1, R2 and queues it hosts; another process's load does not count), over what
 * its platform calls cost measured alone: the request's own (the platform row that
 * answers and calls nothing), plus, per call, its platform row's CPU above the request's.
 * Not above GET /healthz's: that is a route of the service, whose middleware and 'open'
 * rate-limit call would be subtracted from every call, undercounting the platform.
 * 1.00× is a route that does nothing but the calls it must make; the rest is the
 * service's own work.
 */
function platformRatio(results: Result[], r: Result): string {
  if (!r.calls) return '';
  const request = results.find((x) => x.call === 'request');
  if (!request) return '?';
  let platform = request.cpu;
  for (const [call, n] of Object.entries(r.calls) as [PlatformCall, number][]) {
    const row = results.find((x) => x.call === call);
    if (!row) return '?';
    platform += n * (row.cpu - request.cpu);
  }
  return (r.cpu / platform).toFixed(2) + '×';
}

const callsText = (calls: Result['calls']) =>
  Object.entries(calls ?? {})
    .map(([call, n]) => `${n > 1 ? `${n} ` : ''}${CALL_NAMES[call as PlatformCall]}`)
    .join(' + ');

const CALL_NAMES: Record<PlatformCall, string> = {
  request: 'the request',
  d1: 'D1',
  rateLimits: 'rate limits',
  r2Small: 'R2 put',
  r2Body: 'R2 put (ELF)',
  queue: 'queue send',
};

function table(results: Result[]): string {
  const floor = results[0].p50;
  return layout([
    ['route', 'p50 ms', 'p99 ms', 'req/s', 'p50 / floor', 'CPU ms/req', '× platform', 'ok', 'errors'],
    ...results.map((r) => [
      r.label,
      r.p50.toFixed(2),
      r.p99.toFixed(2),
      r.rps.toFixed(0),
      (r.p50 / floor).toFixed(2) + '×',
      r.cpu.toFixed(2),
      platformRatio(results, r),
      String(r.ok),
      String(r.errors),
    ]),
  ]);
}

/** Each service route's platform calls, the floor its `× platform` is read against. */
function platformLegend(results: Result[]): string {
  return [
    "CPU ms/req: workerd's CPU per request (utime + stime of the tree's workerd processes: the Worker and the local",
    "D1, R2 and queues it hosts; its work after the answers too). × platform: a route's CPU per request over that of",
    "the platform calls it must make, each measured alone (a platform row's CPU above that of the request alone, plus",
    "the request alone's):",
    ...results.filter((r) => r.calls).map((r) => `  ${r.label}: ${callsText(r.calls)}`),
  ].join('\n');
}

/**
 * The platform rows of two trees, pooled: the same bench-only entry serves them on both
 * (checkout() copies it), so they are one measurement taken twice, and each tree's
 * × platform is read against their mean. Read against its own tree's rows, a route's
 * ratio moved with those rows' noise (a D1 row 6 % apart between the trees moved a GET's
 * ratio by 0.05), not with anything the route does.
 */
function pooledPlatform(a: Result[], b: Result[]): Result[] {
  return a.map((r, i) => (r.call ? { ...r, cpu: (r.cpu + b[i].cpu) / 2 } : r));
}

/** The two trees side by side: each route's p50 and its ratio to the same tree's floor, its CPU, and its CPU over its platform calls' (pooled). */
function comparison(names: [string, string], [a, b]: [Result[], Result[]]): string {
  const ratio = (rs: Result[], i: number) => (rs[i].p50 / rs[0].p50).toFixed(2) + '×';
  const platform = pooledPlatform(a, b);
  return layout([
    [
      'route',
      `p50 ms ${names[0]}`,
      `p50 ms ${names[1]}`,
      `p50 / floor ${names[0]}`,
      `p50 / floor ${names[1]}`,
      `CPU ms/req ${names[0]}`,
      `CPU ms/req ${names[1]}`,
      `× platform ${names[0]}`,
      `× platform ${names[1]}`,
    ],
    ...a.map((r, i) => [
      r.label,
      r.p50.toFixed(2),
      b[i].p50.toFixed(2),
      ratio(a, i),
      ratio(b, i),
      r.cpu.toFixed(2),
      b[i].cpu.toFixed(2),
      platformRatio(platform, r),
      platformRatio(platform, b[i]),
    ]),
  ]);
}

function layout(rows: string[][]): string {
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join('   ')).join('\n');
}

async function json<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

function programForm(elf: Blob): FormData {
  const form = new FormData();
  form.append('elf', elf, 'program.elf');
  form.append('vmexe', new Blob([VMEXE]), 'program.vmexe');
  return form;
}

/** One tree served by its own wrangler dev, seeded with the bench tenant, and the routes measured on it. */
interface Served {
  name: string;
  worker: ChildProcess;
  baseUrl: string;
  routes: Route[];
  /** GET /v1/proofs/{id}'s path and headers (--attribute). */
  get: { path: string; headers: Record<string, string> };
  output: () => string;
}

/** A GET's parts, workerd's CPU per run, ms (--attribute; test/bench/workers/platform.ts `repeat`). */
interface Attribution {
  /** The route, through the service's Worker. */
  route: number;
  /** Its platform calls alone: the two rate-limit calls and `SELECT 1` in a D1 session. */
  calls: number;
  /** The same with `SELECT 1` on the binding itself, no session. */
  binding: number;
  /** The same calls with the route's own D1 batch (`statements` of them) for the `SELECT 1`. */
  statements: number;
  statementCount: number;
}

/**
 * GET /v1/proofs/{id} taken apart on one tree: each part run `runs` times in a row
 * inside one request of the bench-only entry, workerd's CPU per run around it, the
 * median of five turns (the parts in turn). Run before the routes are measured, workerd
 * idle: nothing else's work is counted.
 */
async function attributeGet(tree: Served, runs: number): Promise<Attribution> {
  const repeat = async (what: string, n: number) => {
    const res = await fetch(`${tree.baseUrl}/__bench/platform/repeat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ what, n, ...tree.get }),
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`${tree.name}: repeating ${what}: ${res.status} ${text.slice(0, 500)}`);
    return JSON.parse(text) as { statements?: number };
  };
  const { statements: statementCount = 0 } = await repeat('capture', 1);
  const pids = workerdPids(tree.worker.pid);
  const parts = ['route', 'calls', 'binding', 'statements'] as const;
  for (const part of parts) await repeat(part, Math.ceil(runs / 10));
  const per: Record<(typeof parts)[number], number[]> = { route: [], calls: [], binding: [], statements: [] };
  for (let turn = 0; turn < 5; turn++)
    for (const part of parts) {
      const before = await settled(pids);
      await repeat(part, runs);
      per[part].push((cpuOf(pids) - before) / runs);
    }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  return {
    route: median(per.route),
    calls: median(per.calls),
    binding: median(per.binding),
    statements: median(per.statements),
    statementCount,
  };
}

/** The attributions of the trees, one column each. */
function attributionTable(trees: Served[], rows: Attribution[], runs: number): string {
  const ms = (x: number) => x.toFixed(2) + ' ms';
  const lines: string[][] = [
    ['GET /v1/proofs/{id}, per run', ...trees.map((t) => t.name)],
    ['the route (through the Worker)', ...rows.map((a) => ms(a.route))],
    ['its platform calls (2 rate limits, SELECT 1 in a session)', ...rows.map((a) => ms(a.calls))],
    ['  the same, SELECT 1 on the binding (no session)', ...rows.map((a) => ms(a.binding))],
    ['those, with its own D1 batch for the SELECT 1', ...rows.map((a) => ms(a.statements))],
    ['  its statements over SELECT 1', ...rows.map((a) => `${ms(a.statements - a.calls)} (${a.statementCount} statements)`)],
    ['  the rest of the route (its JS, the response)', ...rows.map((a) => ms(a.route - a.statements))],
  ];
  return [
    `The GET taken apart (--attribute ${runs}): each part ${runs} times in a row inside one request, no HTTP, no concurrency; workerd CPU per run, median of 5:\n`,
    layout(lines),
  ].join('\n');
}

/**
 * Serves the tree at `root` (its wrangler.toml, its migrations, its code) on a local
 * D1/R2 under `dir`, seeds the bench tenant and a ready program with a proof, and
 * answers the routes to measure.
 */
async function serve(name: string, root: string, dir: string, started: ChildProcess[], inspectorPort?: number): Promise<Served> {
  const bigElf = new Blob([readFileSync(BIG_ELF)]);
  const helloElf = new Blob([readFileSync(HELLO_ELF)]);
  const config_ = path.join(root, 'wrangler.toml');
  const persistTo = path.join(dir, 'state');
  log(`${name}: local state in ${persistTo}: applying migrations and seeding a tenant`);
  await applyLocalMigrations(persistTo, config_);
  // Seeded with the tree's own operator statements: a baseline's schema may lack columns this tree's write.
  const { createApiKey, createConfig, createOrganization, lit, setOrganizationLimits } = (await import(
    path.join(root, 'src', 'admin', 'statements.ts')
  )) as typeof import('../../src/admin/statements.ts');
  const org = createOrganization('bench');
  const orgId = org.output.at(-1)!;
  const key = await createApiKey(orgId, 'bench@localhost');
  const limits = setOrganizationLimits(orgId, BENCH_ORG_LIMITS);
  const config = createConfig({
    openvm_version: '1.4.0',
    stark_backend_version: '1.2.0',
    app_vm_commit: '0x' + 'ab'.repeat(32),
    engine: 'dev',
    deferral_enabled: false,
  });
  const target = { remote: false, persistTo, config: config_ };
  await d1Execute(target, [...org.sql, ...limits.sql, ...key.sql, ...config.sql]);
  const apiKey = key.output.at(-1)!;
  const configId = config.output.at(-1)!;

  const port = await freePort();
  const baseUrl = `http://127.0.0.1:${port}`;
  log(`${name}: starting wrangler dev on ${baseUrl}`);
  // The service's Worker behind the bench-only entry that adds the platform's routes
  // (test/bench/workers/platform.ts; everything else goes to src/index.ts unchanged).
  const entry = path.join(root, PLATFORM_ENTRY);
  const worker = await spawnWranglerDev({ port, persistTo, inspectorPort, extraArgs: [entry, '--log-level', 'warn', '--config', config_] });
  started.push(worker);
  let workerOutput = '';
  worker.stdout!.setEncoding('utf8').on('data', (s: string) => (workerOutput = (workerOutput + s).slice(-20_000)));
  worker.stderr!.setEncoding('utf8').on('data', (s: string) => (workerOutput = (workerOutput + s).slice(-20_000)));
  try {
    await waitForHealthy(`${baseUrl}/healthz`, worker);
  } catch (err) {
    process.stderr.write(workerOutput);
    throw err;
  }

  const auth = { 'Service-API-Key': apiKey };
  const { id: programId } = await json<{ id: string }>(
    await fetch(`${baseUrl}/v1/programs?config_id=${configId}`, { method: 'POST', headers: auth, body: programForm(helloElf) }),
    'registering the program',
  );
  // The program's commit job is the fleet's part; the bench only needs the program ready.
  await d1Execute(target, [
    `UPDATE programs SET status = 'ready', app_exe_commit = ${lit('0x' + 'cd'.repeat(32))} WHERE id = ${lit(programId)};`,
  ]);
  const proofBody = JSON.stringify({ input: ['0x0148656c6c6f'] });
  const proofInit = (): RequestInit => ({ method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: proofBody });
  const { id: proofId } = await json<{ id: string }>(
    await fetch(`${baseUrl}/v1/proofs?program_id=${programId}`, proofInit()),
    'submitting a proof',
  );

  const routes: Route[] = [
    { label: 'GET /healthz (floor)', path: '/healthz', init: () => ({}), ok: [200] },
    // Each with the platform calls it must make: a GET, the key's and organization's
    // budgets and one read; a submission, those, its input or files stored, its rows
    // written and its job's notice sent.
    {
      label: 'GET /v1/proofs/{id}',
      path: `/v1/proofs/${proofId}`,
      init: () => ({ headers: auth }),
      ok: [200],
      calls: { rateLimits: 1, d1: 1 },
    },
    {
      label: 'POST /v1/proofs (JSON input)',
      path: `/v1/proofs?program_id=${programId}`,
      init: proofInit,
      ok: [200],
      calls: { rateLimits: 1, d1: 2, r2Small: 1, queue: 1 },
    },
    {
      label: `POST /v1/programs (${(bigElf.size / 2 ** 20).toFixed(1)} MiB ELF)`,
      path: `/v1/programs?config_id=${configId}`,
      init: () => ({ method: 'POST', headers: auth, body: programForm(bigElf) }),
      ok: [200, 201],
      calls: { rateLimits: 1, d1: 2, r2Body: 1, r2Small: 1, queue: 1 },
    },
    // What the platform alone costs (test/bench/workers/platform.ts): the calls the routes above are made of.
    { label: 'platform: the request alone', path: '/__bench/platform/nothing', init: () => ({}), ok: [200], call: 'request' },
    { label: 'platform: one D1 statement', path: '/__bench/platform/d1', init: () => ({}), ok: [200], call: 'd1' },
    { label: 'platform: two rate-limit calls', path: '/__bench/platform/rate-limit', init: () => ({}), ok: [200], call: 'rateLimits' },
    {
      label: `platform: R2 put of the ${(bigElf.size / 2 ** 20).toFixed(1)} MiB body`,
      path: '/__bench/platform/r2',
      init: () => ({ method: 'POST', body: programForm(bigElf) }),
      ok: [201],
      call: 'r2Body',
    },
    {
      label: 'platform: R2 put of the proof input',
      path: '/__bench/platform/r2',
      init: () => ({ method: 'POST', body: proofBody }),
      ok: [201],
      call: 'r2Small',
    },
    { label: 'platform: one queue send', path: '/__bench/platform/queue', init: () => ({ method: 'POST' }), ok: [200], call: 'queue' },
  ];
  return {
    name,
    worker,
    baseUrl,
    routes: selected(routes),
    get: { path: `/v1/proofs/${proofId}`, headers: auth },
    output: () => workerOutput,
  };
}

/** Checks `ref` out into a new git worktree under `dir`, with this tree's node_modules (hard links) and its console assets built. */
async function checkout(ref: string, dir: string): Promise<string> {
  const tree = path.join(dir, 'tree');
  execFileSync('git', ['-C', ROOT, 'worktree', 'add', '--quiet', '--detach', tree, ref], { stdio: ['ignore', 'ignore', 'inherit'] });
  // node_modules hard-linked (no copy of a byte): a symlink would resolve every package
  // outside the tree, which the console's bundle check (src/tools/build-assets.ts) refuses.
  execFileSync('cp', ['-al', path.join(ROOT, 'node_modules'), path.join(tree, 'node_modules')]);
  // The baseline is served by this tree's platform entry (a commit may predate it): the
  // same platform routes on both trees, and the baseline's own src/index.ts behind them.
  mkdirSync(path.dirname(path.join(tree, PLATFORM_ENTRY)), { recursive: true });
  copyFileSync(path.join(ROOT, PLATFORM_ENTRY), path.join(tree, PLATFORM_ENTRY));
  // wrangler dev wants the console's assets built before it starts (wrangler.toml [assets]).
  execFileSync(process.execPath, ['src/tools/build-assets.ts'], { cwd: tree, stdio: ['ignore', 'ignore', 'inherit'] });
  return tree;
}

async function main(): Promise<void> {
  if (!existsSync(BIG_ELF)) throw new Error(`${path.relative(ROOT, BIG_ELF)} is missing: build the test guests (npm run build:guests)`);

  const dir = await mkdtemp(path.join(tmpdir(), 'zk-bench-api-'));
  if (profileDir !== undefined) await mkdir(profileDir, { recursive: true });
  const started: ChildProcess[] = [];
  let baselineTree: string | undefined;
  const cleanup = async () => {
    await Promise.all(started.map((w) => stopGroup(w)));
    if (baselineTree) {
      try {
        execFileSync('git', ['-C', ROOT, 'worktree', 'remove', '--force', baselineTree], { stdio: 'ignore' });
      } catch {
        // Removed below with the directory; `git worktree prune` forgets it.
      }
    }
    await rm(dir, { recursive: true, force: true });
    if (baselineTree) execFileSync('git', ['-C', ROOT, 'worktree', 'prune'], { stdio: 'ignore' });
  };
  const onSignal = () => void cleanup().then(() => process.exit(130));
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);

  try {
    const inspectorPort = profileDir !== undefined ? await freePort() : undefined;
    const trees: Served[] = [await serve('this tree', ROOT, path.join(dir, 'this'), started, inspectorPort)];
    if (baselineRef !== undefined) {
      baselineTree = await checkout(baselineRef, path.join(dir, 'baseline'));
      trees.push(await serve(baselineRef, baselineTree, path.join(dir, 'baseline'), started));
    }
    const attributions: Attribution[] = [];
    if (attributeRuns !== undefined)
      for (const tree of trees) {
        log(`${tree.name}: taking GET /v1/proofs/{id} apart, ${attributeRuns} runs of each part, 5 turns`);
        attributions.push(await attributeGet(tree, attributeRuns));
      }
    const budget = fixedRequests !== undefined ? { requests: fixedRequests } : { ms: durationMs };
    const samples = trees.map((t) => t.routes.map(() => newSamples()));
    for (let i = 0; i < trees[0].routes.length; i++) {
      for (let round = 0; round < rounds; round++) {
        // The trees in turn (the baseline first on odd rounds), so neither always follows the other.
        const order = round % 2 ? [...trees.keys()].reverse() : [...trees.keys()];
        for (const t of order) {
          const tree = trees[t];
          const route = tree.routes[i];
          log(
            `${tree.name}: ${route.label}: ${round === 0 ? `${warmup} warm-up requests, then ` : ''}${fixedRequests !== undefined ? `${fixedRequests} requests` : `${durationMs / 1000} s`} at concurrency ${concurrency}${rounds > 1 ? ` (round ${round + 1} of ${rounds})` : ''}`,
          );
          if (round === 0) await load(tree.baseUrl, route, tree.worker, { requests: warmup }, newSamples());
          const profiler = inspectorPort !== undefined && t === 0 && round === 0 ? await startCpuProfile(inspectorPort) : null;
          await load(tree.baseUrl, route, tree.worker, budget, samples[t][i]);
          if (profiler) {
            const profile = await profiler.stop();
            const file = path.join(profileDir!, `${route.label.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-|-$/g, '')}.cpuprofile`);
            await writeFile(file, JSON.stringify(profile));
            log(`${route.label}: profile written to ${file}`);
            for (const line of summarizeProfile(profile, 15)) log(line);
          }
          if (hasExited(tree.worker)) {
            process.stderr.write(tree.output());
            throw new Error(`${tree.name}: wrangler dev exited during the run`);
          }
        }
      }
    }
    const results = trees.map((tree, t) => tree.routes.map((route, i) => summary(route, samples[t][i])));
    for (const [t, tree] of trees.entries()) {
      for (const result of results[t]) {
        if (result.errors) log(`${tree.name}: ${result.label}: ${result.errors} failed requests; the first: ${result.firstError}`);
        if (result.firstError?.startsWith('429 '))
          log(
            result.firstError.includes('Quota exceeded')
              ? `${result.label}: refused by the organization's job quota: this run submits more than BENCH_ORG_LIMITS allows; raise them`
              : `${result.label}: throttled by the local rate limits ([[ratelimits]] in wrangler.toml): this run sends more than they allow; raise them to measure past them`,
          );
      }
    }

    const per = fixedRequests !== undefined ? `${fixedRequests} requests` : `${durationMs / 1000} s`;
    console.log(
      `\nAPI latency on wrangler dev (local workerd, D1, R2, under the local rate limits of wrangler.toml, organization quotas raised to ${BENCH_ORG_LIMITS.maxActiveJobs} jobs), concurrency ${concurrency}, ${per} per route${rounds > 1 ? ` per round, ${rounds} rounds` : ''}, Node ${process.version}\n`,
    );
    for (const [t, tree] of trees.entries()) {
      if (trees.length > 1) console.log(`${tree.name}:`);
      console.log(table(results[t]) + '\n');
    }
    console.log(platformLegend(results[0]) + '\n');
    if (attributeRuns !== undefined) console.log(attributionTable(trees, attributions, attributeRuns) + '\n');
    if (trees.length > 1) {
      const head = execFileSync('git', ['-C', ROOT, 'rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
      console.log(
        `Each route's p50 over the floor's (GET /healthz) on the same tree, measured in turn; its CPU, and × platform against the two trees' platform rows pooled:\n`,
      );
      console.log(
        comparison(
          [
            `${baselineRef}`,
            `this tree (${head}${execFileSync('git', ['-C', ROOT, 'status', '--porcelain', '--untracked-files=no'], { encoding: 'utf8' }).trim() ? ', modified' : ''})`,
          ],
          [results[1], results[0]],
        ),
      );
    }
    if (results.some((rs) => rs.some((r) => r.errors > 0))) process.exitCode = 1;
  } finally {
    await cleanup();
  }
}

main().catch((err: unknown) => {
  console.error(`bench:api: ${err instanceof Error ? err.message : String(err)}`);
  process.exitCode = 1;
});
