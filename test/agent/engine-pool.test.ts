// The warm engine pool against the real dev engine and real worker processes: reuse,
// log attribution, kill, crash, timeout, retirement, orphan protection and close.
// Behaviour only: how fast a warm worker is belongs to `npm run bench:engine`.
import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { EnginePool, usesWarmWorkers } from '../../prover-agent/src/agent/engine-pool.ts';
import { startEngine, type ChildEvent, type EngineOutcome, type EngineRunRequest } from '../../prover-agent/src/agent/engine-process.ts';
import { CANCEL_KILL_GRACE_MS } from '../../prover-agent/src/agent/job-runner.ts';
import { createLogger } from '../../prover-agent/src/agent/log.ts';
import type { EngineOptions, ExecuteResult } from '../../prover-agent/src/engine/types.ts';
import type { EngineConfig } from '../../prover-agent/src/protocol.ts';
import { MAX_LOG_LINE_CHARS } from '../../prover-agent/src/engine/types.ts';
import { cutMark } from '../../prover-agent/src/lib/lines.ts';
import { devEngineConfig, printBombElf, slowHintElf } from '../engine/dev/helpers.ts';

const GUESTS = fileURLToPath(new URL('../guests/build/', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'engine-pool-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const config = devEngineConfig({ id: 'cfg_01POOLTEST' });

const u32 = (...words: number[]) => {
  const b = Buffer.alloc(4 * words.length);
  words.forEach((w, i) => b.writeUInt32LE(w, 4 * i));
  return `0x01${b.toString('hex')}`;
};

let jobs = 0;
/** An execute operation of a committed guest in a work directory of its own. */
function executeJob(guest: string, input: string[], engineOptions: EngineOptions = {}): EngineRunRequest {
  const dir = join(work, `job-${++jobs}`);
  rmSync(dir, { recursive: true, force: true });
  execFileSync('mkdir', ['-p', dir]);
  copyFileSync(join(GUESTS, guest), join(dir, 'elf'));
  writeFileSync(join(dir, 'input'), JSON.stringify({ input }));
  return {
    engine: 'dev',
    engineOptions,
    config,
    workDir: dir,
    gpus: [],
    operation: { op: 'execute', elfPath: join(dir, 'elf'), vmexePath: join(dir, 'elf'), inputPath: join(dir, 'input'), mode: 'pure' },
  };
}
/** An execute operation of a guest assembled by the test (test/engine/dev/helpers.ts). */
function elfJob(elf: Uint8Array): EngineRunRequest {
  const req = executeJob('hello.elf', []);
  writeFileSync(join(req.workDir, 'elf'), elf);
  return req;
}
/** loop.elf for about a minute: long enough to be interrupted. */
const longJob = (engineOptions: EngineOptions = {}) => executeJob('loop.elf', [u32(4_000_000_000)], engineOptions);
const helloJob = (text: string) => executeJob('hello.elf', [`0x01${Buffer.from(text).toString('hex')}`]);
const sha256 = async (text: string) =>
  `0x${Buffer.from(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(text))).toString('hex')}`;

interface Ran {
  pid: number;
  outcome: EngineOutcome;
  logs: string[];
}

/** Runs one operation through a launcher, collecting its log lines. */
async function run(launcher: { start: typeof startEngine }, req: EngineRunRequest): Promise<Ran> {
  const logs: string[] = [];
  const r = await launcher.start(req, (e) => e.type === 'log' && logs.push(e.line));
  return { pid: r.pid, outcome: await r.done, logs };
}

/** Starts an operation and resolves once its guest is executing (its first log line has arrived). */
async function started(pool: EnginePool, req: EngineRunRequest) {
  const logs: string[] = [];
  let executing: () => void = () => {};
  const running = new Promise<void>((resolve) => (executing = resolve));
  const r = await pool.start(req, (e: ChildEvent) => {
    if (e.type !== 'log') return;
    logs.push(e.line);
    if (e.line.startsWith('dev engine: executing')) executing();
  });
  await Promise.race([running, r.done]);
  return { run: r, logs };
}

/** Whether a live (not zombie) process of the group is left. */
function groupAlive(pgid: number): boolean {
  return execFileSync('ps', ['-eo', 'pgid=,stat='], { encoding: 'utf8' })
    .split('\n')
    .some((l) => {
      const [group, stat] = l.trim().split(/\s+/);
      return Number(group) === pgid && !stat.startsWith('Z');
    });
}

const quiet = createLogger('error');
let pool: EnginePool | null = null;
const newPool = (size = 1, extra: Partial<ConstructorParameters<typeof EnginePool>[0]> = {}) =>
  (pool = new EnginePool({ size, log: quiet, ...extra }));
afterEach(async () => {
  await pool?.close();
  pool = null;
});

/** Waits until `check` holds, polling (the pool replaces workers in the background). */
async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('warm engine pool', () => {
  it('runs only GPU-less engines in warm workers', () => {
    expect(usesWarmWorkers('dev')).toBe(true);
    expect(usesWarmWorkers('openvm')).toBe(false);
    expect(usesWarmWorkers('no-such-engine')).toBe(false);
  });

  it('reuses a worker: a second job runs in the same process and gets its own result', async () => {
    const p = newPool();
    p.warm('dev', {});
    const first = await run(p, helloJob('first job'));
    const second = await run(p, helloJob('second job'));
    expect(second.pid).toBe(first.pid);
    for (const [ran, text] of [
      [first, 'first job'],
      [second, 'second job'],
    ] as const) {
      expect(ran.outcome.kind).toBe('result');
      const result = (ran.outcome as { result: ExecuteResult }).result;
      expect(result).toMatchObject({ exit_code: 0, error: null, public_values: await sha256(text) });
      expect(result.stdout).toBe(`hello from the dev zkVM: read ${text.length} bytes, sha256 ${(await sha256(text)).slice(2)}\n`);
    }
    expect(p.stats()).toMatchObject({ idle: 1, busy: 0, pids: [first.pid] });
  });

  it('a job that fails as the caller’s problem leaves the worker reusable; an engine error retires it', async () => {
    const p = newPool();
    const panicked = await run(p, executeJob('panic.elf', []));
    expect(panicked.outcome).toMatchObject({
      kind: 'result',
      result: { exit_code: 1, error: expect.stringMatching(/this guest always panics/) },
    });
    const prove = (req: EngineRunRequest, cfg: EngineConfig = config): EngineRunRequest => {
      const o = req.operation as { elfPath: string; inputPath: string };
      const operation = {
        op: 'prove' as const,
        proof_type: 'stark' as const,
        elfPath: o.elfPath,
        vmexePath: o.elfPath,
        inputPath: o.inputPath,
        childProofPaths: [],
        outputPath: join(req.workDir, 'proof'),
        app_exe_commit: `0x${'00'.repeat(32)}`,
        baselinePath: join(req.workDir, 'none'),
      };
      return { ...req, config: cfg, operation };
    };
    const badInput = prove(helloJob('x'));
    writeFileSync((badInput.operation as { inputPath: string }).inputPath, '{"input": "not a list"}');
    const jobError = await run(p, badInput);
    expect(jobError.outcome).toMatchObject({ kind: 'job-error', message: expect.stringMatching(/^bad input/) });
    // An infrastructure error (a config of another engine): the worker crashes and is replaced.
    const noSecret = await run(p, prove(helloJob('x'), { ...config, engine: 'openvm' }));
    expect(noSecret.outcome).toMatchObject({ kind: 'crash', message: expect.stringMatching(/only proves under dev configs/) });
    const next = await run(p, helloJob('after'));
    expect(next.outcome.kind).toBe('result');
    expect([jobError.pid, noSecret.pid]).toEqual([panicked.pid, panicked.pid]);
    expect(next.pid).not.toBe(noSecret.pid);
  });

  it('never lets a job’s log lines into the next job’s', async () => {
    const p = newPool();
    // io.elf prints a line per input entry: 300 lines per job, each naming its job.
    const job = (k: number) => executeJob('io.elf', [u32(300), ...Array.from({ length: 300 }, () => u32(0xa0000000 + k))]);
    const runs: Ran[] = [];
    for (let k = 0; k < 8; k++) runs.push(await run(p, job(k)));
    expect(new Set(runs.map((r) => r.pid)).size).toBe(1);
    runs.forEach((r, k) => {
      const mine = Buffer.alloc(4);
      mine.writeUInt32LE(0xa0000000 + k);
      const entries = r.logs.filter((l) => l.startsWith('guest: entry '));
      expect(entries).toHaveLength(300);
      expect(entries.every((l) => l.endsWith(`: ${mine.toString('hex')}`))).toBe(true);
      expect(r.logs[0]).toMatch(/^dev engine: executing/);
      expect(r.logs.at(-1)).toMatch(/^dev engine: guest exited 0/);
    });
  });

  it('attributes what the engine itself prints on stdout and stderr, up to the last unterminated write, to the job that printed it', async () => {
    // The dev engine prints nothing itself, so a preloaded module makes it: a line on
    // stdout when it reads a file, and on stderr right before its result when it writes
    // the proof (plus a write without a newline), the moment a line could overtake the
    // result through the other pipe and land in the next job.
    const noisy = join(work, 'noisy.mjs');
    writeFileSync(
      noisy,
      `import fsp from 'node:fs/promises';
       import { syncBuiltinESMExports } from 'node:module';
       const { readFile, writeFile } = fsp;
       fsp.readFile = async (path, ...rest) => { console.log('noise: reading ' + path); return readFile(path, ...rest); };
       fsp.writeFile = async (path, ...rest) => {
         await writeFile(path, ...rest);
         process.stderr.write('noise: wrote ' + path + '\\n');
         process.stderr.write('noise: unterminated ' + path);
       };
       syncBuiltinESMExports();`,
    );
    const saved = process.env.NODE_OPTIONS;
    process.env.NODE_OPTIONS = `${saved ?? ''} --import ${noisy}`;
    let p: EnginePool;
    try {
      p = newPool();
      p.warm('dev', {});
      await until('a warm worker', () => p.stats().idle === 1);
    } finally {
      process.env.NODE_OPTIONS = saved;
      if (saved === undefined) delete process.env.NODE_OPTIONS;
    }
    const committed = await run(p, {
      ...helloJob(''),
      operation: { ...helloJob('').operation, op: 'commit' } as EngineRunRequest['operation'],
    });
    const appExeCommit = (committed.outcome as { result: { app_exe_commit: string } }).result.app_exe_commit;
    const proveJob = (k: number): EngineRunRequest => {
      const req = helloJob(`job ${k}`);
      const o = req.operation as { elfPath: string; inputPath: string };
      return {
        ...req,
        operation: {
          op: 'prove',
          proof_type: 'stark',
          elfPath: o.elfPath,
          vmexePath: o.elfPath,
          inputPath: o.inputPath,
          childProofPaths: [],
          outputPath: join(req.workDir, 'proof'),
          app_exe_commit: appExeCommit,
          baselinePath: join(req.workDir, 'none'),
        },
      };
    };
    const reqs = Array.from({ length: 10 }, (_, k) => proveJob(k));
    const runs: Ran[] = [];
    for (const req of reqs) runs.push(await run(p, req));
    expect(new Set(runs.map((r) => r.pid))).toEqual(new Set([committed.pid]));
    runs.forEach((r, k) => {
      const dir = reqs[k].workDir;
      expect(r.outcome.kind).toBe('result');
      expect(r.logs).toContain(`noise: reading ${dir}/elf`);
      expect(r.logs).toContain(`noise: wrote ${dir}/proof`);
      expect(r.logs).toContain(`noise: unterminated ${dir}/proof`); // (stdout and stderr lines may interleave, as ever)
      expect(r.logs.filter((l) => l.startsWith('noise: ') && !l.includes(`${dir}/`))).toEqual([]);
    });
  });

  it('kill() stops a running operation’s process group within the cancel grace; the next job runs on a new worker', async () => {
    const p = newPool();
    const { run: r } = await started(p, longJob());
    const pid = r.pid;
    await r.kill(CANCEL_KILL_GRACE_MS);
    expect(groupAlive(pid)).toBe(false);
    // SIGTERM ended the worker at once (it has no handler: the signal's default action), no SIGKILL was needed.
    expect(await r.done).toEqual({ kind: 'killed', signal: 'SIGTERM' });
    await r.kill(CANCEL_KILL_GRACE_MS); // a second kill (the runner's endEarly) is harmless
    const next = await run(p, helloJob('after a kill'));
    expect(next.outcome.kind).toBe('result');
    expect(next.pid).not.toBe(pid);
    expect(p.stats().pids).toEqual([next.pid]);
  });

  it('kill() stops a worker busy in one slow guest instruction on SIGTERM alone: no grace is waited for', async () => {
    const p = newPool();
    // Every instruction of this guest costs the host milliseconds (16 MiB of random hint):
    // the executor looks at its signal once in 2^25 instructions, which is days.
    const { run: r } = await started(p, elfJob(slowHintElf()));
    await r.kill(10 * 60_000); // were SIGTERM not enough, the SIGKILL would come after ten minutes
    expect(groupAlive(r.pid)).toBe(false);
    expect(await r.done).toEqual({ kind: 'killed', signal: 'SIGTERM' });
  });

  it('a guest that prints without a newline streams to the job’s log as it prints, cut, and nothing of it piles up', async () => {
    const p = newPool();
    // 64 MiB printed, never a newline, and then the guest spins: the cut line must come while it runs.
    const spinning = printBombElf(64, 1 << 20, 'spin');
    const { run: r, logs } = await started(p, elfJob(spinning));
    await until('the cut line', () => logs.some((l) => l.includes(cutMark(MAX_LOG_LINE_CHARS - 'guest: '.length))));
    await r.kill(CANCEL_KILL_GRACE_MS);
    const guest = logs.filter((l) => l.startsWith('guest: '));
    expect(guest).toEqual([`guest: ${'x'.repeat(MAX_LOG_LINE_CHARS - 'guest: '.length)}${cutMark(MAX_LOG_LINE_CHARS - 'guest: '.length)}`]);
    // What reached the agent of 64 MiB: one cut line and the engine's own few lines.
    expect(logs.reduce((n, l) => n + l.length, 0)).toBeLessThan(2 * MAX_LOG_LINE_CHARS);
  });

  it('kill() after the operation ended leaves the worker, which may be serving another job, alone', async () => {
    const p = newPool();
    const first = await p.start(helloJob('done already'), () => {});
    expect((await first.done).kind).toBe('result');
    const second = await started(p, longJob());
    expect(second.run.pid).toBe(first.pid);
    await first.kill(CANCEL_KILL_GRACE_MS);
    expect(groupAlive(first.pid)).toBe(true);
    await second.run.kill(CANCEL_KILL_GRACE_MS);
  });

  it('a worker killed from outside mid-job (kill -9) ends its job as killed, and the pool recovers', async () => {
    const p = newPool();
    const { run: r } = await started(p, longJob());
    process.kill(r.pid, 'SIGKILL');
    expect(await r.done).toEqual({ kind: 'killed', signal: 'SIGKILL' });
    const next = await run(p, helloJob('after a crash'));
    expect(next.outcome.kind).toBe('result');
    expect(next.pid).not.toBe(r.pid);
  });

  it('a worker that dies while idle is replaced in the background', async () => {
    const p = newPool();
    p.warm('dev', {});
    await until('a warm worker', () => p.stats().idle === 1);
    const [pid] = p.stats().pids;
    process.kill(pid, 'SIGKILL');
    await until('a replacement', () => p.stats().idle === 1 && p.stats().pids[0] !== pid);
    const next = await run(p, helloJob('on the replacement'));
    expect(next.outcome.kind).toBe('result');
    expect(next.pid).toBe(p.stats().pids[0]);
  });

  it('a timeout fails the job as an infrastructure error, as a process per job does, and the worker is not reused', async () => {
    const timeouts = { execute: 1 };
    const cold = await run({ start: startEngine }, longJob({ timeouts }));
    const p = newPool();
    const warm = await run(p, longJob({ timeouts }));
    expect(cold.outcome).toEqual({ kind: 'crash', message: 'dev engine: execute timed out after 1 s' });
    expect(warm.outcome).toEqual(cold.outcome);
    const next = await run(p, executeJob('hello.elf', ['0x0101'], { timeouts }));
    expect(next.outcome.kind).toBe('result');
    expect(next.pid).not.toBe(warm.pid);
    await until('the timed-out worker to exit', () => !groupAlive(warm.pid));
  });

  it('keeps workers per engine options: a job with other options gets a worker started for them', async () => {
    const p = newPool(2);
    const plain = await run(p, helloJob('plain'));
    const timed = await run(p, executeJob('hello.elf', ['0x0101'], { timeouts: { execute: 60 } }));
    const plainAgain = await run(p, helloJob('plain again'));
    expect(timed.pid).not.toBe(plain.pid);
    expect(plainAgain.pid).toBe(plain.pid);
    expect(p.stats().pids.sort()).toEqual([plain.pid, timed.pid].sort());
  });

  it('retires a worker after its quota of operations', async () => {
    const p = newPool(1, { maxOperations: 2 });
    const a = await run(p, helloJob('1'));
    const b = await run(p, helloJob('2'));
    const c = await run(p, helloJob('3'));
    expect(b.pid).toBe(a.pid);
    expect(c.pid).not.toBe(a.pid);
    expect(c.outcome.kind).toBe('result');
  });

  it('retires a worker whose resident set grew past the limit', async () => {
    const p = newPool(1, { maxRssBytes: 1 }); // every worker is past one byte
    const a = await run(p, helloJob('1'));
    const b = await run(p, helloJob('2'));
    expect(b.pid).not.toBe(a.pid);
    expect(b.outcome.kind).toBe('result');
  });

  it('starts at most its size at warm-up, and its workers serve jobs at once', async () => {
    const p = newPool(3);
    p.warm('dev', {});
    p.warm('dev', {});
    expect(p.stats().pids).toHaveLength(3);
    const ran = await Promise.all([1, 2, 3].map((k) => run(p, helloJob(`parallel ${k}`))));
    expect(new Set(ran.map((r) => r.pid))).toEqual(new Set(p.stats().pids));
    p.warm('openvm', {}); // a GPU engine has no warm workers
    expect(p.stats().pids).toHaveLength(3);
  });

  it('close() stops every worker: none is left', async () => {
    const p = newPool(2);
    p.warm('dev', {});
    await until('warm workers', () => p.stats().idle === 2);
    const { pids } = p.stats();
    await p.close();
    for (const pid of pids) expect(groupAlive(pid)).toBe(false);
    expect(p.stats().pids).toEqual([]);
    // After close, a job still runs, in a process of its own.
    const late = await run(p, helloJob('late'));
    expect(late.outcome.kind).toBe('result');
    expect(groupAlive(late.pid)).toBe(false);
  });

  /**
   * A stand-in agent: a process that makes a pool of `size`, runs `body` (which prints a
   * JSON line of the pids to watch) and waits. Resolves with the process and those pids.
   */
  async function standInAgent(name: string, size: number, body: string): Promise<{ agent: ReturnType<typeof spawn>; pids: number[] }> {
    const script = join(work, `${name}.ts`);
    const poolModule = fileURLToPath(new URL('../../prover-agent/src/agent/engine-pool.ts', import.meta.url));
    const logModule = fileURLToPath(new URL('../../prover-agent/src/agent/log.ts', import.meta.url));
    writeFileSync(
      script,
      `import { EnginePool } from ${JSON.stringify(poolModule)};
       import { createLogger } from ${JSON.stringify(logModule)};
       const pool = new EnginePool({ size: ${size}, log: createLogger('error') });
       ${body}
       setInterval(() => {}, 1000);`,
    );
    const agent = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'inherit'] });
    const [line] = (await once(createInterface({ input: agent.stdout }), 'line')) as [string];
    return { agent, pids: [JSON.parse(line) as number].flat() };
  }

  it('a worker busy in a guest dies with its agent too (its watch has a thread of its own)', async () => {
    const job = elfJob(slowHintElf());
    const { agent, pids } = await standInAgent(
      'busy-agent',
      1,
      `const run = await pool.start(${JSON.stringify(job)},
         (e) => e.type === 'log' && e.line.startsWith('dev engine: executing') && console.log(JSON.stringify(run.pid)));`,
    );
    expect(pids.every(groupAlive)).toBe(true);
    agent.kill('SIGKILL');
    await until('the busy worker to die with its agent', () => !pids.some(groupAlive));
  });

  it('workers die with their agent: a SIGKILLed parent leaves no worker behind', async () => {
    const { agent, pids } = await standInAgent(
      'agent',
      2,
      `pool.warm('dev', {});
       const wait = () => (pool.stats().idle === 2 ? console.log(JSON.stringify(pool.stats().pids)) : setTimeout(wait, 20));
       wait();`,
    );
    expect(pids.every(groupAlive)).toBe(true);
    agent.kill('SIGKILL');
    await until('the workers to die with their agent', () => !pids.some(groupAlive));
  });
});
