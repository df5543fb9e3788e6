// Warm engine workers for the engines that use no GPU (the dev engine). Their jobs
// are often shorter than starting Node and loading the engine (~0.3 s), so instead of
// a process per operation the pool keeps long-lived workers (engine-process.ts:
// spawnEngineWorker), each its own process group as before, and hands each operation
// to an idle one. GPU engines (openvm) keep their process per operation: their
// operations take minutes and drive a tool that is a process anyway.
//
//   size       at most the agent's concurrency: no more operations run at once. The
//              agent starts them at start-up (warm), so the first job finds one ready.
//   reuse      only after an operation that ended with a result or a job error. A
//              worker whose operation was killed, crashed, or failed otherwise (a
//              timeout, an engine error) is discarded and replaced at once, in the
//              background: the next job finds it warm, or waits for the rest of its
//              start-up, never more.
//   keys       a worker serves the engine name and EngineOptions it was started for;
//              the job's config, work directory, GPUs and operation travel with each
//              operation.
import type { EngineOptions } from '../engine/types.ts';
import { engineTraits } from '../protocol.ts';
import {
  spawnEngineWorker,
  startEngine,
  type ChildEvent,
  type EngineRun,
  type EngineRunRequest,
  type EngineWorker,
} from './engine-process.ts';
import type { Logger } from './log.ts';

/** What the job runner needs of the engine layer: an operation started, whichever way. */
export interface EngineLauncher {
  start(req: EngineRunRequest, onEvent: (e: ChildEvent) => void): Promise<EngineRun>;
}

/**
 * Reuse is bounded so that whatever a long-running worker might accumulate (a leak
 * in the engine, a heap that fragments) cannot grow without end: a worker is retired
 * after this many operations, or when its resident set after an operation exceeds
 * WORKER_MAX_RSS_BYTES. A dev guest may touch all of its 512 MiB memory, which stays
 * resident until the next garbage collection, so a healthy worker can sit near
 * 600 MiB after a big job; past 1 GiB something is being kept. Retiring costs one
 * start-up in the background per retirement: at 1000 operations, nothing measurable.
 */
export const WORKER_MAX_OPERATIONS = 1000;
export const WORKER_MAX_RSS_BYTES = 1024 ** 3;
/** SIGTERM → SIGKILL grace when the pool stops a worker itself (retired, or the pool closes): an idle worker exits at once. */
const STOP_GRACE_MS = 2000;

export interface EnginePoolOptions {
  /** Most workers kept: the agent's concurrency. */
  size: number;
  log: Logger;
  maxOperations?: number;
  maxRssBytes?: number;
}

/** Whether an engine runs in warm workers: those that use no GPU. */
export function usesWarmWorkers(engine: string): boolean {
  return engineTraits(engine)?.usesGpus === false;
}

interface Slot {
  key: string;
  engine: string;
  options: EngineOptions;
  worker: EngineWorker;
  /** starting: loading its engine, free; idle: loaded, free; busy: holds an operation (maybe still loading). */
  state: 'starting' | 'idle' | 'busy';
  warmed: boolean;
}

export class EnginePool implements EngineLauncher {
  private readonly slots = new Set<Slot>();
  /** Exits of workers being stopped, which close() waits for too. */
  private readonly exiting = new Set<Promise<void>>();
  private closed = false;
  private readonly size: number;
  private readonly log: Logger;
  private readonly maxOperations: number;
  private readonly maxRssBytes: number;

  constructor(opts: EnginePoolOptions) {
    this.size = Math.max(1, opts.size);
    this.log = opts.log;
    this.maxOperations = opts.maxOperations ?? WORKER_MAX_OPERATIONS;
    this.maxRssBytes = opts.maxRssBytes ?? WORKER_MAX_RSS_BYTES;
  }

  /** Starts workers for `engine` up to the pool's size, in the background. */
  warm(engine: string, options: EngineOptions): void {
    if (!usesWarmWorkers(engine)) return;
    while (!this.closed && this.slots.size < this.size) this.spawn(engine, options);
  }

  /** Runs one operation: on a warm worker for a GPU-less engine, in a process of its own otherwise. */
  async start(req: EngineRunRequest, onEvent: (e: ChildEvent) => void): Promise<EngineRun> {
    if (!usesWarmWorkers(req.engine) || this.closed) return startEngine(req, onEvent);
    const slot = this.acquire(req.engine, req.engineOptions);
    slot.state = 'busy';
    const { engine: _engine, engineOptions: _options, ...operation } = req;
    return slot.worker.run(operation, onEvent, (reusable) => this.checkIn(slot, reusable));
  }

  /** Live workers by state (for tests and health). */
  stats(): { starting: number; idle: number; busy: number; pids: number[] } {
    const count = (state: Slot['state']) => [...this.slots].filter((s) => s.state === state).length;
    return { starting: count('starting'), idle: count('idle'), busy: count('busy'), pids: [...this.slots].map((s) => s.worker.pid) };
  }

  /** Stops every worker (idle ones exit at once) and resolves when all have exited. */
  async close(): Promise<void> {
    this.closed = true;
    for (const slot of [...this.slots]) this.discard(slot, 'the pool closed', false);
    await Promise.all(this.exiting);
  }

  /** A free worker of this key: a loaded one if there is one, else one still loading, else a new one. */
  private acquire(engine: string, options: EngineOptions): Slot {
    const key = keyOf(engine, options);
    let starting: Slot | undefined;
    for (const slot of this.slots) {
      if (slot.key !== key) continue;
      if (slot.state === 'idle') return slot;
      if (slot.state === 'starting') starting ??= slot;
    }
    if (starting) return starting;
    if (this.slots.size >= this.size) {
      const other = [...this.slots].find((s) => s.state !== 'busy');
      if (other) this.discard(other, 'room for workers of other engine options', false);
    }
    // Over the size only if every worker is busy, which the agent's concurrency rules
    // out; the pool shrinks back as they come free (checkIn).
    return this.spawn(engine, options);
  }

  private spawn(engine: string, options: EngineOptions): Slot {
    const started = performance.now();
    const worker = spawnEngineWorker(engine, options, (line) =>
      this.log.warn('engine worker output outside any job', { pid: worker.pid, line }),
    );
    const slot: Slot = { key: keyOf(engine, options), engine, options, worker, state: 'starting', warmed: false };
    this.slots.add(slot);
    this.log.info('engine worker started', { engine, pid: worker.pid });
    void worker.ready.then((ok) => {
      if (!ok) return;
      slot.warmed = true;
      if (slot.state === 'starting') slot.state = 'idle';
      this.log.debug('engine worker ready', { engine, pid: worker.pid, ms: Math.round(performance.now() - started) });
    });
    void worker.exited.then(() => {
      // A worker that died between operations (an OOM kill, an operator's kill) is
      // replaced; one that died before it ever loaded is not, so a broken engine is not
      // respawned in a loop (the next job starts one, and fails as it would have).
      if (this.slots.has(slot) && slot.state !== 'busy') this.discard(slot, 'exited while idle', slot.warmed);
    });
    return slot;
  }

  /** A worker's operation let go of it: back to idle, or retired (and replaced). */
  private checkIn(slot: Slot, reusable: boolean): void {
    const w = slot.worker;
    if (!reusable) return this.discard(slot, w.stopping ? 'killed' : 'its operation failed or it crashed', true);
    if (this.closed) return this.discard(slot, 'the pool closed', false);
    if (w.operations >= this.maxOperations) return this.discard(slot, `retired after ${w.operations} operations`, true);
    if (w.rssBytes > this.maxRssBytes) return this.discard(slot, `retired at ${Math.round(w.rssBytes / 2 ** 20)} MiB resident`, true);
    if (this.slots.size > this.size) return this.discard(slot, 'more workers than the pool size', false);
    slot.state = 'idle';
  }

  private discard(slot: Slot, reason: string, replace: boolean): void {
    if (!this.slots.delete(slot)) return;
    const w = slot.worker;
    this.log.info('engine worker stopped', { engine: slot.engine, pid: w.pid, reason, operations: w.operations });
    // A worker being killed for its job is left to that kill and its grace.
    const exit = w.stopping ? w.exited : w.stop(STOP_GRACE_MS);
    this.exiting.add(exit);
    void exit.then(() => this.exiting.delete(exit));
    if (replace && !this.closed && this.slots.size < this.size) this.spawn(slot.engine, slot.options);
  }
}

/** Workers are told apart by engine and options; keys are sorted so equal options give equal keys. */
function keyOf(engine: string, options: EngineOptions): string {
  const sorted = (v: unknown): unknown =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.keys(v)
            .sort()
            .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
        )
      : v;
  return `${engine} ${JSON.stringify(sorted(options))}`;
}
