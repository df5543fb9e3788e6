// The engine child process: runs one operation and reports on stdout, one JSON
// object per line (see engine-process.ts). SIGTERM aborts the operation's signal so
// the engine can stop its tool; the parent SIGKILLs the group if that takes too long.
import { readFile } from 'node:fs/promises';
import { loadEngine } from '../engine/index.ts';
import { JobError, type EngineContext } from '../engine/types.ts';
import type { ChildEvent, EngineRunRequest } from './engine-process.ts';

const emit = (e: ChildEvent) => process.stdout.write(JSON.stringify(e) + '\n');

async function main() {
  const req = JSON.parse(await readFile(process.argv[2]!, 'utf8')) as EngineRunRequest;
  const abort = new AbortController();
  process.on('SIGTERM', () => abort.abort(new Error('canceled')));
  // The agent may die without a word (SIGKILL, host trouble). Its lease will expire
  // and another agent redo the job, so an orphaned engine must not run on: take the
  // whole process group (the engine's tools included) down with it.
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.kill(-process.pid, 'SIGKILL');
  }, 1000).unref();
  const engine = await loadEngine(req.engine, req.engineOptions);
  const ctx: EngineContext = {
    workDir: req.workDir,
    config: req.config,
    signal: abort.signal,
    gpus: req.gpus,
    log: (line) => emit({ type: 'log', line }),
    progress: (u) => emit({ type: 'progress', ...u }),
  };
  const { operation: o } = req;
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

main().then(
  (result) => {
    emit({ type: 'result', result });
    process.exitCode = 0;
  },
  (err: unknown) => {
    emit({ type: 'error', message: err instanceof Error ? err.message : String(err), jobError: err instanceof JobError });
    process.exitCode = 1;
  },
);
