// npm run bench:engine [-- --jobs N --kills K]   (--help: usage)
//
// The agent's engine overhead per job, for an instant dev-engine job (a STARK dev proof
// of hello.elf on a 1-byte input, as bench:dispatch submits), measured from the
// runner's call to start the operation to its outcome, three ways in one run:
//   in-process   the engine called directly in this process: the engine's own work
//   warm worker  the agent's pool (engine-pool.ts): an operation sent to a worker that
//                has its engine loaded
//   per job      a process per operation (startEngine), as every job ran before and
//                openvm jobs still do
// and the first job after a kill (a canceled job's worker is discarded and replaced in
// the background), started the moment the kill returns: the worst case, where the job
// waits for the rest of the replacement's start-up. Numbers only: nothing here passes
// or fails on a timing.
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EnginePool } from '../../prover-agent/src/agent/engine-pool.ts';
import { startEngine, type EngineOutcome, type EngineRun, type EngineRunRequest } from '../../prover-agent/src/agent/engine-process.ts';
import { CANCEL_KILL_GRACE_MS } from '../../prover-agent/src/agent/job-runner.ts';
import { createLogger } from '../../prover-agent/src/agent/log.ts';
import { createDevEngine } from '../../prover-agent/src/engine/dev/index.ts';
import { devEngineConfig } from '../engine/dev/helpers.ts';
import { benchCli } from './cli.ts';

const usage = `usage: npm run bench:engine -- [--jobs N] [--kills K]
  --jobs N    instant jobs measured each way (default 200)
  --kills K   kills of a running job, each followed at once by an instant job (default 10)`;

const cli = benchCli('bench:engine', usage, ['jobs', 'kills']);
const jobs = cli.number('jobs', 200, 1);
const kills = cli.number('kills', 10, 0);

const GUESTS = fileURLToPath(new URL('../guests/build/', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'bench-engine-'));
const config = devEngineConfig({ id: 'cfg_01BENCHENGINE' });

let dirs = 0;
/** A job's work directory with its artifacts, as the runner prepares it. */
function jobDir(guest: string, input: string[]): string {
  const dir = join(work, `job-${++dirs}`);
  mkdirSync(dir);
  copyFileSync(join(GUESTS, guest), join(dir, 'elf'));
  writeFileSync(join(dir, 'input'), JSON.stringify({ input }));
  return dir;
}

function proveRequest(appExeCommit: string): EngineRunRequest {
  const dir = jobDir('hello.elf', ['0x0101']);
  return {
    engine: 'dev',
    engineOptions: {},
    config,
    workDir: dir,
    gpus: [],
    operation: {
      op: 'prove',
      proof_type: 'stark',
      elfPath: join(dir, 'elf'),
      vmexePath: join(dir, 'elf'),
      inputPath: join(dir, 'input'),
      childProofPaths: [],
      outputPath: join(dir, 'proof.json'),
      app_exe_commit: appExeCommit,
      baselinePath: join(dir, 'baseline.json'),
    },
  };
}

function expectResult(outcome: EngineOutcome, what: string): void {
  if (outcome.kind !== 'result') throw new Error(`${what}: ${JSON.stringify(outcome)}`);
}

/** Milliseconds from starting the operation to its outcome. */
async function timed(start: () => Promise<EngineRun>, what: string): Promise<number> {
  const t = performance.now();
  const run = await start();
  expectResult(await run.done, what);
  return performance.now() - t;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))];
};
const ms = (x: number) => `${x.toFixed(1)} ms`.padStart(10);

async function main() {
  const engine = createDevEngine({});
  const ignore = () => {};
  const ctx = (workDir: string) => ({ workDir, config, signal: new AbortController().signal, gpus: [], log: ignore, progress: ignore });
  const commitDir = jobDir('hello.elf', []);
  const { app_exe_commit: appExeCommit } = await engine.commit(ctx(commitDir), {
    elfPath: join(commitDir, 'elf'),
    vmexePath: join(commitDir, 'elf'),
  });

  const pool = new EnginePool({ size: 1, log: createLogger('warn') });
  pool.warm('dev', {});
  const inProcess: number[] = [];
  const warm: number[] = [];
  const cold: number[] = [];
  try {
    // Unmeasured: the pool's worker loads, and V8 warms up in all three.
    for (let i = 0; i < 5; i++) {
      await timed(() => pool.start(proveRequest(appExeCommit), ignore), 'warm-up');
      await timed(() => startEngine(proveRequest(appExeCommit), ignore), 'warm-up');
    }
    console.error(`bench:engine: ${jobs} instant jobs each way, interleaved...`);
    for (let i = 0; i < jobs; i++) {
      const req = proveRequest(appExeCommit);
      const t = performance.now();
      await engine.prove(ctx(req.workDir), req.operation as Parameters<typeof engine.prove>[1]);
      inProcess.push(performance.now() - t);
      warm.push(await timed(() => pool.start(proveRequest(appExeCommit), ignore), 'warm worker'));
      cold.push(await timed(() => startEngine(proveRequest(appExeCommit), ignore), 'process per job'));
    }

    const afterKill: number[] = [];
    for (let i = 0; i < kills; i++) {
      await timed(() => pool.start(proveRequest(appExeCommit), ignore), 'warm-up'); // a warm worker again
      const dir = jobDir('loop.elf', ['0x01' + Buffer.from(Uint32Array.of(2_000_000_000).buffer).toString('hex')]);
      const long = await pool.start(
        {
          engine: 'dev',
          engineOptions: {},
          config,
          workDir: dir,
          gpus: [],
          operation: { op: 'execute', elfPath: join(dir, 'elf'), vmexePath: join(dir, 'elf'), inputPath: join(dir, 'input'), mode: 'pure' },
        },
        ignore,
      );
      await new Promise((r) => setTimeout(r, 200)); // executing
      await long.kill(CANCEL_KILL_GRACE_MS);
      afterKill.push(await timed(() => pool.start(proveRequest(appExeCommit), ignore), 'after a kill'));
    }

    const row = (label: string, xs: number[]) =>
      console.log(`${label.padEnd(34)}${ms(pct(xs, 50))}${ms(pct(xs, 99))}${ms(Math.max(...xs))}`);
    console.log(
      `bench:engine — an instant dev-engine job (STARK dev proof of hello.elf), start → outcome, ${jobs} jobs each way, ${cpus().length} cores`,
    );
    console.log(`${''.padEnd(34)}${'p50'.padStart(10)}${'p99'.padStart(10)}${'max'.padStart(10)}`);
    row('in-process (the engine’s work)', inProcess);
    row('warm worker (engine-pool)', warm);
    row('process per job (startEngine)', cold);
    console.log(
      `per-job overhead above the engine’s work, p50: warm worker ${(pct(warm, 50) - pct(inProcess, 50)).toFixed(1)} ms, process per job ${(pct(cold, 50) - pct(inProcess, 50)).toFixed(1)} ms`,
    );
    if (kills > 0) row(`first job right after a kill (${kills})`, afterKill);
  } finally {
    await pool.close();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  console.error(err);
  process.exitCode = 1;
});
