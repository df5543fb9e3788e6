// `npm test`: every check the suite makes, in two lanes that run side by side, each lane
// its steps one after another: the static checks then the node project; the worker
// project then the e2e project. Run one after another on CI's 2 cores they took 17
// minutes, most of it waiting: the vitest projects spend two thirds of their wall time on
// workerd, agents, browsers and timers (measured alone: worker 515 s wall / 196 s CPU,
// e2e 1008 s / 388 s, node 563 s / 225 s), while tsc, Prettier and eslint keep one core
// busy. Each vitest project runs in its own vitest process: one process runs its projects
// one after another (on 2 cores vitest uses one worker, and worker and e2e are one file
// at a time each, test/vitest.config.ts). Not three lanes: with worker and e2e side by
// side too, the worker project's load-sensitive tests (the multipart property test, the
// 16 MiB child proof, an event stream's poll count) failed on a loaded 2-core host. The
// lanes share no state: each test file, stack and `wrangler` run has its own local
// storage and ports.
//
// A step's output is printed whole when it ends, under a header naming it, its time and
// its outcome (the lanes' output never interleaves), and kept in
// test-artifacts/test-run/<step>.log. Every step runs even when another failed; the
// exit code is 1 if any failed, and the summary lists each step's time.
import { spawn } from 'node:child_process';
import { createWriteStream, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const LOGS = path.join(ROOT, 'test-artifacts', 'test-run');

interface Step {
  name: string;
  command: string[];
}

const npm = (script: string): Step => ({ name: script, command: ['npm', 'run', '--silent', script] });
const vitest = (project: string): Step => ({
  name: `vitest ${project}`,
  command: ['npx', 'vitest', 'run', '--config', 'test/vitest.config.ts', '--project', project],
});

/** Before the lanes: the console's assets, which the tests that serve the console need. */
const FIRST: Step[] = [npm('build:assets')];
const LANES: Step[][] = [
  [npm('typecheck'), npm('format:check'), npm('lint'), npm('lint:deps'), vitest('node')],
  [vitest('worker'), vitest('e2e')],
];

interface Outcome {
  name: string;
  seconds: number;
  ok: boolean;
}

function run(step: Step): Promise<Outcome> {
  const started = performance.now();
  const file = path.join(LOGS, `${step.name.replace(/[^a-z0-9]+/gi, '-')}.log`);
  const log = createWriteStream(file);
  let output = '';
  process.stdout.write(`▶ ${step.name}\n`);
  return new Promise((resolve) => {
    const child = spawn(step.command[0], step.command.slice(1), {
      cwd: ROOT,
      // No colour codes in the kept logs; the lanes are never a terminal anyway.
      env: { ...process.env, FORCE_COLOR: '0', NO_COLOR: '1', WRANGLER_SEND_METRICS: 'false' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const take = (chunk: Buffer) => {
      output += chunk.toString();
      log.write(chunk);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    const finish = (ok: boolean, extra = '') => {
      const seconds = (performance.now() - started) / 1000;
      log.end(extra);
      process.stdout.write(
        `\n──── ${step.name}: ${ok ? 'ok' : 'FAILED'} in ${seconds.toFixed(0)} s ────\n${output}${extra}${output.endsWith('\n') || !output ? '' : '\n'}`,
      );
      resolve({ name: step.name, seconds, ok });
    };
    child.on('error', (err) => finish(false, `could not start ${step.command.join(' ')}: ${err.message}\n`));
    child.on('close', (code, signal) => finish(code === 0, code === 0 ? '' : `exit ${code ?? signal}\n`));
  });
}

async function lane(steps: Step[]): Promise<Outcome[]> {
  const outcomes: Outcome[] = [];
  for (const step of steps) outcomes.push(await run(step));
  return outcomes;
}

mkdirSync(LOGS, { recursive: true });
const started = performance.now();
const outcomes = await lane(FIRST);
outcomes.push(...(await Promise.all(LANES.map(lane))).flat());
const total = (performance.now() - started) / 1000;

process.stdout.write('\n──── npm test ────\n');
for (const o of outcomes) process.stdout.write(`${o.ok ? 'ok    ' : 'FAILED'} ${o.seconds.toFixed(0).padStart(5)} s  ${o.name}\n`);
const failed = outcomes.filter((o) => !o.ok);
process.stdout.write(
  `${failed.length ? `${failed.length} failed` : 'all passed'} in ${total.toFixed(0)} s (logs: test-artifacts/test-run/)\n`,
);
process.exitCode = failed.length ? 1 : 0;
