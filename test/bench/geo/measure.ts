// npm run bench:geo: one tree's measurements on its own local stack (wrangler dev running
// the tree's Worker behind the D1 latency shim): first the idle fleet, on the empty
// stack, then the routes.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, mkdtemp, readFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort, hasExited, ROOT, waitForHealthy } from '../../../src/tools/wrangler.ts';
import type { ApiRequest, TreeAdapter } from './tree.ts';
import { writeEntry } from './source.ts';

export const HELLO_ELF = path.join(ROOT, 'test', 'guests', 'build', 'hello.elf');
const WRAPPER = path.join(ROOT, 'test', 'bench', 'geo', 'worker', 'wrapper.ts');

export interface BenchOptions {
  requests: number;
  warmup: number;
  primaryMs: number;
  replicaMs: number;
  idleSeconds: number;
  agents: number;
  /** Seconds the idle agents run before the window opens (first pulls and claims, agent rows written). */
  settleSeconds: number;
}

/** Children to stop however the bench ends (error, Ctrl-C). */
export interface Children {
  add(child: ChildProcess, stop: (child: ChildProcess) => Promise<void>): void;
  remove(child: ChildProcess): void;
}

export type Log = (msg: string) => void;

// ---------------------------------------------------------------------------
// Per route

/** What the shim reported for one request (response headers). */
interface Sample {
  ms: number;
  primarySeq: number;
  replicaSeq: number;
  calls: number;
  primaryCalls: number;
  replicaCalls: number;
  offPath: number;
}

export interface RouteResult {
  route: string;
  samples: Sample[];
  notes: string[];
}

/** The global counters of the wrapper (GET /__bench/d1), as test/bench/geo/worker/d1-shim.ts keeps them. */
export interface StatementCounts {
  reads: { primary: number; replica: number };
  writes: { primary: number; replica: number };
  calls: { primary: number; replica: number };
}
export interface GlobalCounts {
  product: StatementCounts;
  emulation: StatementCounts;
  handlers: { fetch: number; queue: number; scheduled: number };
}

export interface IdleResult {
  agents: number;
  windowSeconds: number;
  counts: GlobalCounts;
  /** One cron sweep (the scheduled handler), for the whole fleet; null when it could not be triggered. */
  sweep: GlobalCounts | null;
}

export interface TreeResult {
  routes: RouteResult[];
  idle: IdleResult | null;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function headerInt(res: Response, name: string): number {
  const v = res.headers.get(name);
  if (v === null || !/^\d+$/.test(v))
    throw new Error(`the response has no ${name} header: is the Worker running behind the bench's wrapper?`);
  return Number(v);
}

/** One request: its latency (send → whole body read) and the shim's figures. */
async function timed(url: string, init: RequestInit, what: string): Promise<{ sample: Sample; body: string }> {
  const t = performance.now();
  const res = await fetch(url, init);
  const body = await res.text();
  const ms = performance.now() - t;
  if (!res.ok) throw new Error(`${what}: ${res.status} ${body.slice(0, 500)}`);
  return {
    body,
    sample: {
      ms,
      primarySeq: headerInt(res, 'x-bench-d1-primary-seq'),
      replicaSeq: headerInt(res, 'x-bench-d1-replica-seq'),
      calls: headerInt(res, 'x-bench-d1-calls'),
      primaryCalls: headerInt(res, 'x-bench-d1-primary-calls'),
      replicaCalls: headerInt(res, 'x-bench-d1-replica-calls'),
      offPath: headerInt(res, 'x-bench-d1-off-path'),
    },
  };
}

async function json<T>(res: Response, what: string): Promise<T> {
  const text = await res.text();
  if (!res.ok) throw new Error(`${what}: ${res.status} ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

// ---------------------------------------------------------------------------
// The stack

interface Stack {
  url: string;
  worker: ChildProcess;
  /** The last of wrangler dev's output, for error messages. */
  output(): string;
}

async function startStack(adapter: TreeAdapter, dir: string, opts: BenchOptions, children: Children, log: Log) {
  const persistTo = path.join(dir, 'state');
  log('applying migrations and seeding');
  const seed = await adapter.seedState(persistTo);
  const entry = path.join(dir, 'entry.ts');
  await writeEntry(entry, adapter.root, WRAPPER);
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  log(`starting wrangler dev on ${url}`);
  const worker = await adapter.startWorker({
    entry,
    port,
    persistTo,
    vars: { ...adapter.workerVars, BENCH_PRIMARY_MS: String(opts.primaryMs), BENCH_REPLICA_MS: String(opts.replicaMs) },
  });
  children.add(worker, (w) => adapter.stopWorker(w));
  let out = '';
  const keep = (s: string) => (out = (out + s).slice(-20_000));
  worker.stdout!.setEncoding('utf8').on('data', keep);
  worker.stderr!.setEncoding('utf8').on('data', keep);
  try {
    await waitForHealthy(`${url}/healthz`, worker, 120_000);
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${out}`);
  }
  const stack: Stack = { url, worker, output: () => out };
  return { stack, seed, persistTo };
}

async function counters(url: string): Promise<GlobalCounts> {
  return json<GlobalCounts>(await fetch(`${url}/__bench/d1`), 'reading the bench counters');
}

async function resetCounters(url: string): Promise<void> {
  await json(await fetch(`${url}/__bench/d1/reset`, { method: 'POST' }), 'resetting the bench counters');
}

const totalStatements = (c: GlobalCounts) =>
  [c.product, c.emulation].reduce((n, s) => n + s.reads.primary + s.reads.replica + s.writes.primary + s.writes.replica, 0);

// ---------------------------------------------------------------------------
// Idle fleet

interface Agent {
  proc: ChildProcess;
  lines: string[];
}

async function startAgent(
  adapter: TreeAdapter,
  url: string,
  agentToken: string,
  name: string,
  dir: string,
  children: Children,
): Promise<Agent> {
  const workDir = await mkdtemp(path.join(dir, `${name}-`));
  const proc = spawn(
    process.execPath,
    [path.join(adapter.root, 'prover-agent', 'bin', 'prover-agent.js'), ...adapter.agentArgs({ url, agentToken, name, workDir })],
    {
      cwd: adapter.root,
      env: adapter.childEnv(),
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    },
  );
  children.add(proc, stopAgent);
  const agent: Agent = { proc, lines: [] };
  const onData = (chunk: string) => {
    for (const line of chunk.split('\n').filter(Boolean)) agent.lines.push(line);
    if (agent.lines.length > 200) agent.lines.splice(0, agent.lines.length - 200);
  };
  proc.stdout.setEncoding('utf8').on('data', onData);
  proc.stderr.setEncoding('utf8').on('data', onData);
  return agent;
}

async function stopAgent(proc: ChildProcess): Promise<void> {
  if (hasExited(proc) || proc.pid === undefined) return;
  const kill = (sig: NodeJS.Signals) => {
    try {
      process.kill(-proc.pid!, sig);
    } catch {
      // gone already
    }
  };
  kill('SIGTERM');
  const timer = setTimeout(() => kill('SIGKILL'), 10_000);
  if (!hasExited(proc)) await once(proc, 'exit');
  clearTimeout(timer);
  kill('SIGKILL');
}

async function waitForLine(agent: Agent, re: RegExp, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!agent.lines.some((l) => re.test(l))) {
    if (hasExited(agent.proc))
      throw new Error(`an agent exited (code ${agent.proc.exitCode}) before it was up:\n${agent.lines.slice(-20).join('\n')}`);
    if (Date.now() > deadline)
      throw new Error(`an agent logged no line matching ${re} within ${timeoutMs / 1000} s:\n${agent.lines.slice(-20).join('\n')}`);
    await sleep(100);
  }
}

/** Fires the cron sweep once and waits until its statements stop coming. */
async function measureSweep(url: string): Promise<GlobalCounts | null> {
  await resetCounters(url);
  const res = await fetch(`${url}/cdn-cgi/local/scheduled`);
  await res.arrayBuffer();
  if (!res.ok) return null;
  const deadline = Date.now() + 30_000;
  let last = -1;
  let c = await counters(url);
  while (Date.now() < deadline && (c.handlers.scheduled === 0 || totalStatements(c) !== last)) {
    last = totalStatements(c);
    await sleep(1_500);
    c = await counters(url);
  }
  return c.handlers.scheduled > 0 ? c : null;
}

async function idleFleet(
  adapter: TreeAdapter,
  stack: Stack,
  agentToken: string,
  dir: string,
  opts: BenchOptions,
  children: Children,
  log: Log,
): Promise<IdleResult> {
  log(`idle fleet: starting ${opts.agents} agents (the tree's own CLI, its deployed polling defaults)`);
  const agentsDir = path.join(dir, 'agents');
  await mkdir(agentsDir, { recursive: true });
  const agents: Agent[] = [];
  try {
    for (let i = 0; i < opts.agents; i++)
      agents.push(await startAgent(adapter, stack.url, agentToken, `bench-agent-${i}`, agentsDir, children));
    await Promise.all(agents.map((a) => waitForLine(a, adapter.agentReadyLog, 60_000)));
    log(`idle fleet: agents up; ${opts.settleSeconds} s to settle, then a ${opts.idleSeconds} s window`);
    await sleep(opts.settleSeconds * 1000);
    await resetCounters(stack.url);
    const t0 = performance.now();
    await sleep(opts.idleSeconds * 1000);
    const counts = await counters(stack.url);
    const windowSeconds = (performance.now() - t0) / 1000;
    for (const a of agents) if (hasExited(a.proc)) throw new Error(`an agent exited during the window:\n${a.lines.slice(-20).join('\n')}`);
    if (hasExited(stack.worker)) throw new Error(`wrangler dev exited during the window:\n${stack.output()}`);
    return { agents: opts.agents, windowSeconds, counts, sweep: null };
  } finally {
    await Promise.all(
      agents.map(async (a) => {
        await stopAgent(a.proc);
        children.remove(a.proc);
      }),
    );
  }
}

// ---------------------------------------------------------------------------
// Routes

interface RouteSpec {
  route: string;
  send(i: number): { url: string; init: RequestInit };
  /** Looks at each answer (measured or warm-up); returns a note to print, if any. */
  check?(body: string): void;
  /** Notes to print under the table, computed once the route ran. */
  notes?(): string[];
}

async function measureRoute(spec: RouteSpec, opts: BenchOptions, stack: Stack, log: Log): Promise<RouteResult> {
  log(`${spec.route}: ${opts.warmup} warm-up + ${opts.requests} measured requests, one at a time`);
  const samples: Sample[] = [];
  for (let i = 0; i < opts.warmup + opts.requests; i++) {
    const { url, init } = spec.send(i);
    let r: Awaited<ReturnType<typeof timed>>;
    try {
      r = await timed(url, init, spec.route);
    } catch (err) {
      if (hasExited(stack.worker)) throw new Error(`wrangler dev exited:\n${stack.output()}`);
      throw err;
    }
    spec.check?.(r.body);
    if (i >= opts.warmup) samples.push(r.sample);
  }
  return { route: spec.route, samples, notes: spec.notes?.() ?? [] };
}

function programForm(elf: Blob): FormData {
  const form = new FormData();
  form.append('elf', elf, 'hello.elf');
  form.append('vmexe', new Blob([new TextEncoder().encode('opaque vmexe bytes for bench:geo')]), 'program.vmexe');
  return form;
}

async function routes(
  adapter: TreeAdapter,
  stack: Stack,
  seed: Awaited<ReturnType<TreeAdapter['seedState']>>,
  persistTo: string,
  opts: BenchOptions,
  log: Log,
): Promise<RouteResult[]> {
  const { url } = stack;
  const auth = { 'Service-API-Key': seed.apiKey };
  const elf = new Blob([await readFile(HELLO_ELF)]);
  log('routes: registering a program and submitting proofs to read');
  const program = await json<{ id: string }>(
    await fetch(`${url}/v1/programs?config_id=${seed.configId}&program_name=bench-geo`, {
      method: 'POST',
      headers: auth,
      body: programForm(elf),
    }),
    'registering the program',
  );
  await adapter.markProgramReady(persistTo, program.id);
  const proofInit = (): RequestInit => ({
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ input: ['0x0148656c6c6f'] }),
  });
  const proofIds: string[] = [];
  for (let i = 0; i < 3; i++)
    proofIds.push(
      (await json<{ id: string }>(await fetch(`${url}/v1/proofs?program_id=${program.id}`, proofInit()), 'submitting a proof')).id,
    );

  const request = (r: ApiRequest) => ({ url: url + r.path, init: { method: r.method, headers: r.headers, body: r.body } });
  const agentId = crypto.randomUUID();
  const jobTokens: string[] = [];
  let claimsWithoutJob = 0;
  // Measured in this order: claims take the proof jobs POST proofs queued (programs
  // registered later would queue commit jobs, which go first: they have a higher priority).
  const specs: RouteSpec[] = [
    { route: 'GET proof', send: () => ({ url: `${url}/v1/proofs/${proofIds[0]}`, init: { headers: auth } }) },
    { route: 'GET program', send: () => ({ url: `${url}/v1/programs/${program.id}`, init: { headers: auth } }) },
    { route: 'list proofs', send: () => ({ url: `${url}/v1/proofs?program_id=${program.id}`, init: { headers: auth } }) },
    { route: 'POST proofs', send: () => ({ url: `${url}/v1/proofs?program_id=${program.id}`, init: proofInit() }) },
    {
      route: 'claim',
      send: () => request(adapter.claim(seed.agentToken, agentId)),
      check(body) {
        const token = adapter.claimedJobToken(JSON.parse(body));
        if (token === null) claimsWithoutJob++;
        else jobTokens.push(token);
      },
      notes: () => (claimsWithoutJob ? [`claim: ${claimsWithoutJob} of ${opts.warmup + opts.requests} claims found no job queued`] : []),
    },
    {
      route: 'heartbeat',
      send: (i) => {
        // One claimed job per heartbeat while there are enough; else they take turns.
        const token = jobTokens[i % Math.max(1, jobTokens.length)];
        if (token === undefined) throw new Error('heartbeat: no claim got a job, so there is no job token to heartbeat with');
        return request(adapter.heartbeat(token));
      },
    },
    {
      route: 'POST programs',
      send: () => ({
        url: `${url}/v1/programs?config_id=${seed.configId}&program_name=bench-geo`,
        init: { method: 'POST', headers: auth, body: programForm(elf) },
      }),
    },
  ];
  const results: RouteResult[] = [];
  for (const spec of specs) results.push(await measureRoute(spec, opts, stack, log));
  return results;
}

// ---------------------------------------------------------------------------

/** Runs one tree's stack in `dir`: the idle fleet (when asked for), then the routes; stops it. */
export async function benchTree(adapter: TreeAdapter, dir: string, opts: BenchOptions, children: Children, log: Log): Promise<TreeResult> {
  const { stack, seed, persistTo } = await startStack(adapter, dir, opts, children, log);
  try {
    let idle: IdleResult | null = null;
    if (opts.agents > 0 && opts.idleSeconds > 0) {
      idle = await idleFleet(adapter, stack, seed.agentToken, dir, opts, children, log);
      log('idle fleet: one cron sweep');
      idle.sweep = await measureSweep(stack.url);
    }
    const routeResults = await routes(adapter, stack, seed, persistTo, opts, log);
    return { routes: routeResults, idle };
  } finally {
    await adapter.stopWorker(stack.worker);
    children.remove(stack.worker);
  }
}
