// The engine child process, in one of two modes (see engine-process.ts):
//
//   engine-child.ts <request.json>                 one operation, then exit (per-job process)
//   engine-child.ts --worker <engine> <options>    a warm worker: loads the engine once, then
//                                                  runs operations one at a time, as they come
//                                                  on stdin, one JSON object per line
//
// Either way it reports on stdout, one JSON object per line; a worker tags each event
// with its operation's id and, once an operation has ended, writes an end mark on
// stderr too, so the agent knows when everything the operation printed has arrived.
//
// SIGTERM: a per-job process aborts its operation's signal so the engine can stop its
// tool, then exits (the parent SIGKILLs the group if that takes too long). A warm
// worker has no handler: the signal's default action ends it at once, even in the
// middle of a guest's instruction that keeps its one thread busy (a handler would wait
// for the thread); a worker that is stopped is never reused, so nothing is lost.
import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { loadEngine } from '../engine/index.ts';
import { CycleLimitError, JobError, type Engine, type EngineContext, type EngineOptions } from '../engine/types.ts';
import {
  OP_END_MARK,
  type ChildEvent,
  type EngineOp,
  type EngineRunRequest,
  type WorkerEvent,
  type WorkerOperation,
} from './engine-process.ts';

const write = process.stdout.write.bind(process.stdout);
const emit = (e: ChildEvent | WorkerEvent) => write(JSON.stringify(e) + '\n');

/**
 * The agent may die without a word (SIGKILL, host trouble). Its lease will expire and
 * another agent redo the job, so an orphaned engine must not run on: take the whole
 * process group (the engine's tools included) down with it. The watch runs on a thread
 * of its own, so a guest that keeps the main thread busy cannot hold it up.
 */
function dieWithParent(): void {
  const watch = `const { workerData: parent } = require('node:worker_threads');
    setInterval(() => { if (process.ppid !== parent) process.kill(-process.pid, 'SIGKILL'); }, 1000);`;
  new Worker(watch, { eval: true, workerData: process.ppid }).unref();
}

function runOperation(engine: Engine, ctx: EngineContext, o: EngineOp) {
  switch (o.op) {
    case 'commit':
      return engine.commit(ctx, o);
    case 'execute':
      return engine.execute(ctx, o);
    case 'prove':
      return engine.prove(ctx, o);
    case 'verify':
      return engine.verify(ctx, o);
  }
}

const failure = (err: unknown) => ({
  type: 'error' as const,
  message: err instanceof Error ? err.message : String(err),
  jobError: err instanceof JobError,
  ...(err instanceof CycleLimitError ? { limit: { name: 'cycle_limit' as const, reached: err.reached } } : {}),
});

async function runOnce(requestPath: string): Promise<unknown> {
  const req = JSON.parse(await readFile(requestPath, 'utf8')) as EngineRunRequest;
  const abort = new AbortController();
  process.on('SIGTERM', () => abort.abort(new Error('canceled')));
  dieWithParent();
  const engine = await loadEngine(req.engine, req.engineOptions);
  const ctx: EngineContext = {
    workDir: req.workDir,
    config: req.config,
    signal: abort.signal,
    gpus: req.gpus,
    log: (line) => emit({ type: 'log', line }),
    progress: (u) => emit({ type: 'progress', ...u }),
  };
  return runOperation(engine, ctx, req.operation);
}

async function serve(engineName: string, options: EngineOptions): Promise<void> {
  // Anything the engine prints goes to stderr, whose lines are the running operation's
  // log lines: stdout carries nothing but the protocol, so a stray write cannot split an
  // event. Whether stderr's last write ended its line is kept, so that an operation's
  // end mark always starts a line of its own (the agent cuts an over-long line and
  // skips the rest of it: a mark at its end would be lost).
  const writeStderr = process.stderr.write.bind(process.stderr) as (chunk: string | Uint8Array, ...rest: unknown[]) => boolean;
  let atLineStart = true;
  const tracked = (chunk: string | Uint8Array, ...rest: unknown[]) => {
    if (chunk.length > 0) atLineStart = typeof chunk === 'string' ? chunk.endsWith('\n') : chunk[chunk.length - 1] === 0x0a;
    return writeStderr(chunk, ...rest);
  };
  process.stderr.write = tracked;
  process.stdout.write = process.stderr.write;
  dieWithParent();
  const input = createInterface({ input: process.stdin });
  // The agent holds the other end of stdin for as long as it lives: its end is the
  // agent's death, noticed at once rather than at the next look at the parent pid.
  input.on('close', () => process.kill(-process.pid, 'SIGKILL'));
  const engine = await loadEngine(engineName, options);
  emit({ type: 'ready', rss: process.memoryUsage.rss() });
  for await (const line of input) {
    const { id, ...req } = JSON.parse(line) as WorkerOperation;
    const ctx: EngineContext = {
      workDir: req.workDir,
      config: req.config,
      publishedKeys: req.publishedKeys,
      // Never aborted: a worker is stopped by its end (SIGTERM, see above), not asked to stop.
      signal: new AbortController().signal,
      gpus: req.gpus,
      log: (line) => emit({ id, type: 'log', line }),
      progress: (u) => emit({ id, type: 'progress', ...u }),
    };
    let end: ChildEvent;
    try {
      end = { type: 'result', result: await runOperation(engine, ctx, req.operation) };
    } catch (err) {
      end = failure(err);
    }
    emit({ id, ...end, rss: process.memoryUsage.rss() });
    process.stderr.write(`${atLineStart ? '' : '\n'}${OP_END_MARK}${id}\n`);
  }
}

if (process.argv[2] === '--worker') {
  serve(process.argv[3], JSON.parse(process.argv[4] ?? '{}') as EngineOptions).catch((err: unknown) => {
    // The engine did not load: the worker ends before taking any operation.
    emit(failure(err));
    process.exit(1);
  });
} else {
  runOnce(process.argv[2]).then(
    (result) => {
      emit({ type: 'result', result });
      process.exitCode = 0;
    },
    (err: unknown) => {
      emit(failure(err));
      process.exitCode = 1;
    },
  );
}
