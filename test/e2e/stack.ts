// A real local stack for end-to-end tests and benchmarks: the Worker under
// `wrangler dev` (workerd, local D1/R2/Queues in a throwaway directory) and
// prover-agent processes talking HTTP to it, exactly as in production but for the
// local Queues pull emulation.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { cp, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  createAgentToken,
  createApiKey,
  createConfig,
  createOrganization,
  createPublisherToken,
  DEV_ENGINE_OPENVM_TOML,
  devAppVmCommit,
  TARGET_RELEASE,
  type AdminStep,
} from '../../src/admin/statements.ts';
import {
  applyLocalMigrations,
  childEnv,
  d1Execute,
  freePort,
  ROOT,
  spawnWranglerDev,
  stopGroup,
  waitForHealthy,
} from '../../src/tools/wrangler.ts';

export { freePort, ROOT };
const AGENT = join(ROOT, 'prover-agent/bin/prover-agent.js');
export const GUESTS = join(ROOT, 'test/guests/build');

export interface StackOptions {
  /** Worker vars to override (e.g. LEASE_TTL_SECONDS). */
  vars?: Record<string, string>;
  /** The Worker's devtools inspector port (bench:dispatch --profile); by default a free one. */
  inspectorPort?: number;
}

export interface Stack {
  url: string;
  apiKey: string;
  agentToken: string;
  /** The operator's publisher token, for every config (key publication: prover-agent setup-config --publish). */
  publisherToken: string;
  devConfig: string;
  persistDir: string;
  /** Runs SQL against the stack's local D1 and returns the rows of the last statement. */
  sql(query: string): Promise<Record<string, unknown>[]>;
  startAgent(opts?: AgentOptions): Promise<AgentProcess>;
  /** Fires the Worker's scheduled handler (the cron sweep), as wrangler dev allows. */
  sweep(): Promise<void>;
  /** Stops wrangler dev and starts it again on the same port and persisted state (D1, R2; not queued messages). */
  restartWorker(): Promise<void>;
  /** Everything the Worker has printed (its console.log lines among wrangler's own). */
  workerLogs(): string[];
  stop(): Promise<void>;
}

export interface AgentOptions {
  name?: string;
  engines?: string;
  gpus?: number;
  machineType?: string;
  extraArgs?: string[];
  env?: NodeJS.ProcessEnv;
}

export interface AgentProcess {
  proc: ChildProcess;
  /** Everything the agent logged (JSON lines). */
  logs(): string[];
  /** Resolves when a log line matching `re` appears. */
  waitForLog(re: RegExp, timeoutMs?: number): Promise<string>;
  signal(sig: NodeJS.Signals): void;
  exited: Promise<number | null>;
  /** Its exit code, or after `ms` an error with what the agent says it waits on (/healthz) and its last lines. */
  exitedWithin(ms: number): Promise<number | null>;
  /** Its /healthz answer (what it is doing, `waiting_on`), or that it gave none within 3 s (a blocked event loop). */
  health(): Promise<string>;
  metricsPort: number;
  /**
   * Engine processes the agent reported in its logs: the one that ran `jobId` (a warm
   * worker or a process of its own), or, without a job, every one it started. Each is
   * the leader of its own process group (see liveProcessGroups).
   */
  enginePids(jobId?: string): number[];
}

/**
 * Which of these process groups still have a live process (zombies do not count). An
 * engine process leads its own group, so this is how a test sees an engine, and
 * whatever it started, gone: a warm worker's command line names no job.
 */
export function liveProcessGroups(pgids: number[]): number[] {
  const live = new Set(
    execFileSync('ps', ['-eo', 'pgid=,stat='], { encoding: 'utf8' })
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter(([pgid, stat]) => pgid && stat && !stat.startsWith('Z'))
      .map(([pgid]) => Number(pgid)),
  );
  return pgids.filter((g) => live.has(g));
}

/**
 * Names a local state directory whose D1 has every migration applied (test/e2e/global-setup.ts
 * makes one per e2e run): a stack copies it rather than running `wrangler d1 migrations
 * apply` again, the costliest part of its start. Without it (the benches), a stack applies
 * the migrations itself.
 */
export const MIGRATED_STATE_ENV = 'ZK_E2E_MIGRATED_STATE';

/** The machine types the e2e agents declare, and the agent token of each (what a host is, its token says). */
const E2E_MACHINE_TYPES = new Map([
  ['e2e', 'e2e-agents'],
  ['fake-gpu', 'e2e-gpu-agents'],
]);

export async function startStack(opts: StackOptions = {}): Promise<Stack> {
  const persistDir = await mkdtemp(join(tmpdir(), 'zk-stack-'));
  let port = await freePort();
  let url = `http://127.0.0.1:${port}`;
  const target = { remote: false, persistTo: persistDir };
  const migrated = process.env[MIGRATED_STATE_ENV];
  if (migrated) await cp(migrated, persistDir, { recursive: true });
  else await applyLocalMigrations(persistDir);

  const orgId = 'org_e2e';
  const steps: AdminStep[] = [
    createOrganization('e2e', orgId),
    await createApiKey(orgId, 'e2e@localhost'),
    // The e2e agents: dev, and openvm for test/e2e/openvm-fleet.test.ts; the tests make more configs.
    // A token says what its hosts are: one per machine type the tests' agents declare (E2E_MACHINE_TYPES).
    ...(await Promise.all(
      [...E2E_MACHINE_TYPES].map(([machineType, name]) =>
        createAgentToken(name, { engines: ['dev', 'openvm'], configs: null }, { machineType, maxGpus: 64, maxLeases: 64 }),
      ),
    )),
    createConfig({
      ...TARGET_RELEASE,
      app_vm_commit: await devAppVmCommit(DEV_ENGINE_OPENVM_TOML),
      engine: 'dev',
      deferral_enabled: true,
      openvm_toml: DEV_ENGINE_OPENVM_TOML,
    }),
    await createPublisherToken({ name: 'e2e-publisher', configIds: null }),
  ];
  await d1Execute(
    target,
    steps.flatMap((s) => s.sql),
  );
  const [, apiKey, ...rest] = steps.map((s) => s.output[s.output.length - 1]);
  const agentTokens = new Map([...E2E_MACHINE_TYPES.keys()].map((type, i) => [type, rest[i]]));
  const [devConfig, publisherToken] = rest.slice(E2E_MACHINE_TYPES.size);
  const agentToken = agentTokens.get('e2e')!;

  const varArgs = Object.entries(opts.vars ?? {}).flatMap(([k, v]) => ['--var', `${k}:${v}`]);
  const workerLines: string[] = [];
  const startWorker = async () => {
    const started = await spawnWranglerDev({ port, persistTo: persistDir, extraArgs: varArgs, inspectorPort: opts.inspectorPort });
    let workerOut = '';
    started.stdout!.on('data', (d) => (workerOut += d));
    started.stderr!.on('data', (d) => (workerOut += d));
    for (const stream of [started.stdout!, started.stderr!])
      createInterface({ input: stream, crlfDelay: Infinity }).on('line', (line) => workerLines.push(line));
    await waitForHealthy(`${url}/healthz`, started, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}\n${workerOut}`);
    });
    return started;
  };
  // A port found free may be taken before wrangler binds it (another process's
  // connection, on a busy machine): the first start tries another. A restart keeps its
  // port, which the stack's agents and callers know.
  let worker: ChildProcess;
  for (let attempt = 1; ; attempt++) {
    try {
      worker = await startWorker();
      break;
    } catch (err) {
      if (attempt === 3 || !/Address already in use|EADDRINUSE/.test(String(err))) throw err;
      port = await freePort();
      url = `http://127.0.0.1:${port}`;
    }
  }

  const agents: AgentProcess[] = [];
  /** The agents' work directories, removed with the stack (their artifact caches included). */
  const workDirs: string[] = [];
  const tokenFor = (machineType: string) => {
    const token = agentTokens.get(machineType);
    if (!token) throw new Error(`no e2e agent token for machine type ${machineType} (test/e2e/stack.ts E2E_MACHINE_TYPES)`);
    return token;
  };
  return {
    url,
    apiKey,
    agentToken,
    publisherToken,
    devConfig,
    persistDir,
    async sweep() {
      const res = await fetch(`${url}/cdn-cgi/local/scheduled`);
      if (!res.ok) throw new Error(`scheduled trigger: ${res.status} ${await res.text()}`);
    },
    async restartWorker() {
      await stopGroup(worker, 5000);
      worker = await startWorker();
    },
    workerLogs: () => workerLines,
    async sql(query) {
      const results = await d1Execute(target, [query]);
      return results[results.length - 1] ?? [];
    },
    async startAgent(a = {}) {
      const metricsPort = await freePort();
      const workDir = await mkdtemp(join(tmpdir(), 'zk-agent-'));
      workDirs.push(workDir);
      const proc = spawn(
        process.execPath,
        [
          AGENT,
          'run',
          '--api-url',
          url,
          '--agent-token',
          tokenFor(a.machineType ?? 'e2e'),
          '--name',
          a.name ?? `agent-${agents.length}`,
          '--engines',
          a.engines ?? 'dev',
          '--gpus',
          String(a.gpus ?? 0),
          '--machine-type',
          a.machineType ?? 'e2e',
          '--work-dir',
          workDir,
          '--metrics-port',
          String(metricsPort),
          '--poll-interval',
          '0.05',
          '--kill-grace',
          '2',
          ...(a.extraArgs ?? []),
        ],
        { cwd: ROOT, env: { ...childEnv(), ...a.env }, stdio: ['ignore', 'pipe', 'pipe'] },
      );
      const lines: string[] = [];
      const waiters: { re: RegExp; resolve: (l: string) => void }[] = [];
      const onLine = (chunk: Buffer) => {
        for (const line of chunk.toString().split('\n').filter(Boolean)) {
          lines.push(line);
          for (const w of [...waiters]) if (w.re.test(line)) (waiters.splice(waiters.indexOf(w), 1), w.resolve(line));
        }
      };
      proc.stdout.on('data', onLine);
      proc.stderr.on('data', onLine);
      const exited = once(proc, 'exit').then(([code]) => code as number | null);
      const agent: AgentProcess = {
        proc,
        metricsPort,
        logs: () => lines,
        waitForLog(re, timeoutMs = 30_000) {
          const found = lines.find((l) => re.test(l));
          if (found) return Promise.resolve(found);
          return new Promise((resolve, reject) => {
            const t = setTimeout(
              () => reject(new Error(`no log line matching ${re} in ${timeoutMs} ms:\n${lines.slice(-20).join('\n')}`)),
              timeoutMs,
            );
            waiters.push({ re, resolve: (l) => (clearTimeout(t), resolve(l)) });
          });
        },
        signal: (sig) => proc.kill(sig),
        exited,
        async exitedWithin(ms) {
          let timer: NodeJS.Timeout | undefined;
          const late = new Promise<never>((_, reject) => {
            timer = setTimeout(async () => {
              const health = await agent.health();
              reject(
                new Error(`the agent did not exit within ${ms} ms; its health: ${health}\nits last lines:\n${lines.slice(-25).join('\n')}`),
              );
            }, ms);
          });
          try {
            return await Promise.race([exited, late]);
          } finally {
            clearTimeout(timer);
          }
        },
        health: () =>
          fetch(`http://127.0.0.1:${metricsPort}/healthz`, { signal: AbortSignal.timeout(3000) })
            .then((r) => r.text())
            .catch((err: Error) => `no answer (${err.message})`),
        enginePids(jobId) {
          const pids = new Set<number>();
          for (const line of lines) {
            if (!line.includes('"engine started"') && !line.includes('"engine worker started"')) continue;
            const entry = JSON.parse(line) as { msg: string; pid: number; job_id?: string };
            if (jobId === undefined || (entry.msg === 'engine started' && entry.job_id === jobId)) pids.add(entry.pid);
          }
          return [...pids];
        },
      };
      agents.push(agent);
      // Running, or (for a test of the refusal) gone: a refused agent never runs.
      const running = agent.waitForLog(/agent running/);
      if ((await Promise.race([running.then(() => 'running'), exited.then(() => 'exited')])) === 'exited') running.catch(() => {});
      return agent;
    },
    async stop() {
      for (const a of agents) if (a.proc.exitCode === null) a.proc.kill('SIGKILL');
      await stopGroup(worker, 5000);
      await Promise.all(agents.map((a) => a.exited));
      // maxRetries: an engine outliving its agent for a moment may still be writing there.
      for (const dir of [persistDir, ...workDirs]) await rm(dir, { recursive: true, force: true, maxRetries: 3 });
    },
  };
}

/** Polls `get` every `everyMs` until it gives something truthy, which it returns; throws naming `what` past the timeout. */
export async function until<T>(
  what: string,
  get: () => Promise<T | undefined | null | false>,
  timeoutMs = 120_000,
  everyMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await get();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** A small client of the public API, as a caller uses it. */
export function caller(stack: Pick<Stack, 'url' | 'apiKey'>) {
  const call = async (method: string, path: string, body?: BodyInit | object) => {
    const init: RequestInit = { method, headers: { 'Service-API-Key': stack.apiKey } };
    if (body instanceof FormData || typeof body === 'string') init.body = body;
    else if (body !== undefined) {
      init.body = JSON.stringify(body);
      (init.headers as Record<string, string>)['content-type'] = 'application/json';
    }
    return fetch(stack.url + path, init);
  };
  return {
    call,
    async json<T = any>(method: string, path: string, body?: BodyInit | object): Promise<T> {
      const res = await call(method, path, body);
      const text = await res.text();
      if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`);
      return JSON.parse(text) as T;
    },
    /** Polls `path` until `done(record)` or the timeout. */
    async waitFor<T = any>(path: string, done: (r: T) => boolean, timeoutMs = 60_000): Promise<T> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const r = (await (await call('GET', path)).json()) as T;
        if (done(r)) return r;
        if (Date.now() > deadline) throw new Error(`timed out waiting on ${path}: ${JSON.stringify(r)}`);
        await new Promise((res) => setTimeout(res, 100));
      }
    },
  };
}

/** Registers a committed test guest and waits for its commit job to finish. */
export async function registerGuest(api: ReturnType<typeof caller>, config: string, guest: string): Promise<string> {
  return registerElf(api, config, guest, await readFile(join(GUESTS, guest)));
}

/** Registers the guest ELF `elf` (a test's own, e.g. one it assembled) as `name` and waits for its commit job to finish. */
export async function registerElf(
  api: ReturnType<typeof caller>,
  config: string,
  name: string,
  elf: Uint8Array<ArrayBuffer>,
): Promise<string> {
  const form = new FormData();
  form.append('elf', new Blob([elf]), name);
  form.append('vmexe', new Blob([new TextEncoder().encode(`vmexe of ${name}`)]), 'program.vmexe');
  const { id } = await api.json('POST', `/v1/programs?config_id=${config}&program_name=${name}`, form);
  await api.waitFor(`/v1/programs/${id}`, (p: any) => p.status === 'ready' || p.status === 'failed');
  return id;
}
