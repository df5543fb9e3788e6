// Engine processes: every engine operation runs in a child process of its own process
// group (spawned and stopped by ../lib/child-process.ts, the agent's one way to run a
// child), so a crash, a hang or a cancel never takes the agent down, and killing the
// group also kills whatever the engine started (the zkVM tool). The child speaks JSON
// lines on stdout (see engine-child.ts); its stderr is treated as log output. Two
// kinds of process:
//
//   startEngine        a process per operation: spawned for it, gone after it (openvm:
//                      its operations take minutes, its tool is a process anyway)
//   spawnEngineWorker  a warm worker: the engine loaded once, operations one at a time,
//                      reused across jobs by engine-pool.ts (GPU-less engines, whose
//                      jobs can take less time than a Node start-up)
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  MAX_LOG_LINE_CHARS,
  type EngineOptions,
  type ExecuteRequest,
  type ProgramFiles,
  type ProveRequest,
  type VerifyRequest,
} from '../engine/types.ts';
import { spawnChild } from '../lib/child-process.ts';
import type { EngineConfig, EngineMetrics, LimitReached, ProvePhase, PublishedKeys } from '../protocol.ts';

const CHILD = fileURLToPath(new URL('./engine-child.ts', import.meta.url));

/**
 * The longest event line read from an engine process's stdout (a longer one comes cut,
 * is no event, and is logged as text). The largest real one is an execution's result,
 * whose `stdout` holds at most 4 MiB of the guest's text (engine/openvm/tool.ts), up
 * to six characters each once escaped in JSON. Log lines (stderr) are cut at
 * MAX_LOG_LINE_CHARS: neither piles up in the agent, whatever the guest prints.
 */
export const MAX_EVENT_LINE_CHARS = 32 * 1024 * 1024;

/** An engine operation and its request (engine/types.ts), as it travels to the engine's process. */
export type EngineOp =
  | ({ op: 'commit' } & ProgramFiles)
  | ({ op: 'execute' } & ExecuteRequest)
  | ({ op: 'prove' } & ProveRequest)
  | ({ op: 'verify' } & VerifyRequest);

export interface EngineRunRequest {
  engine: string;
  engineOptions: EngineOptions;
  config: EngineConfig;
  /** EngineContext.publishedKeys. */
  publishedKeys?: PublishedKeys;
  workDir: string;
  gpus: number[];
  operation: EngineOp;
}

/** What the child reports, one JSON object per stdout line. */
export type ChildEvent =
  | { type: 'log'; line: string }
  | { type: 'progress'; phase?: ProvePhase; metrics?: EngineMetrics }
  | { type: 'result'; result: unknown }
  | { type: 'error'; message: string; jobError: boolean; limit?: LimitReached };

export type EngineOutcome =
  | { kind: 'result'; result: unknown }
  | { kind: 'job-error'; message: string; limit?: LimitReached }
  | { kind: 'crash'; message: string }
  | { kind: 'killed'; signal: string };

export interface EngineRun {
  readonly pid: number;
  readonly done: Promise<EngineOutcome>;
  /** SIGTERM to the whole group, SIGKILL after `graceMs` if anything is left. */
  kill(graceMs: number): Promise<void>;
}

export async function startEngine(req: EngineRunRequest, onEvent: (e: ChildEvent) => void): Promise<EngineRun> {
  const requestPath = join(req.workDir, 'engine-request.json');
  await writeFile(requestPath, JSON.stringify(req));
  let outcome: EngineOutcome | null = null;
  const stderrTail: string[] = [];
  const child = spawnChild(process.execPath, [CHILD, requestPath], {
    ownGroup: true,
    maxLineChars: { stdout: MAX_EVENT_LINE_CHARS, stderr: MAX_LOG_LINE_CHARS },
    onStdoutLine(line) {
      let event: ChildEvent;
      try {
        event = JSON.parse(line) as ChildEvent;
      } catch {
        event = { type: 'log', line };
      }
      if (event.type === 'result') outcome = { kind: 'result', result: event.result };
      else if (event.type === 'error')
        outcome = event.jobError
          ? { kind: 'job-error', message: event.message, limit: event.limit }
          : { kind: 'crash', message: event.message };
      else onEvent(event);
    },
    onStderrLine(line) {
      keepTail(stderrTail, line);
      onEvent({ type: 'log', line });
    },
  });
  const done = child.closed.then(([code, signal]): EngineOutcome => outcome ?? exitOutcome(code, signal, stderrTail));
  return {
    pid: child.pid!,
    done,
    async kill(graceMs) {
      await child.stop(graceMs);
      await child.closed;
    },
  };
}

/** How an operation ended whose process exited without reporting: killed by a signal, or a crash. */
function exitOutcome(code: number | null, signal: NodeJS.Signals | null, stderrTail: string[], what = 'engine process'): EngineOutcome {
  if (signal) return { kind: 'killed', signal };
  return { kind: 'crash', message: `${what} exited with code ${code}${stderrTail.length ? `: ${stderrTail.slice(-5).join(' | ')}` : ''}` };
}

function keepTail(tail: string[], line: string): void {
  tail.push(line);
  if (tail.length > 20) tail.shift();
}

// ---- warm workers

/** An operation for a warm worker: the request but for what the worker was started for. */
export type WorkerRequest = Omit<EngineRunRequest, 'engine' | 'engineOptions'>;

/** What the agent writes on a worker's stdin, one per line. */
export type WorkerOperation = WorkerRequest & { id: number };

/**
 * What a worker reports on stdout: `ready` once its engine is loaded, then each
 * operation's events tagged with its id; the operation's last event (result or error)
 * carries the worker's resident set size. An error without an id: the engine did not load.
 */
export type WorkerEvent = { type: 'ready'; rss: number } | (ChildEvent & { id?: number; rss?: number });

/**
 * Written by a worker on stderr, followed by the operation's id, after the operation's
 * last event. Stdout and stderr are separate pipes, so the agent ends an operation
 * only once it has both its result and this mark: every line the worker printed
 * during the operation has arrived by then, and none of them can reach the next job.
 */
export const OP_END_MARK = '\u0000engine-op-end:';

export interface EngineWorker {
  readonly pid: number;
  /** True once the engine is loaded; false if the process ended before that. */
  readonly ready: Promise<boolean>;
  /** Resolves when the process has exited and its output has been read. */
  readonly exited: Promise<void>;
  /** Operations that ran to their end, and the worker's resident set size after the last one. */
  readonly operations: number;
  readonly rssBytes: number;
  /** Whether the process is being (or has been) stopped. */
  readonly stopping: boolean;
  /**
   * Hands the worker one operation; it must not be running another. `onRelease` is
   * called once the operation no longer holds the worker, before `done` resolves: true
   * when the worker may take another (the operation ended with a result or a job
   * error), false when it must be discarded (killed, crashed, or failed in a way the
   * engine did not put on the job, such as a timeout: its state is unknown). False
   * comes as soon as it is known, so a replacement can start while a killed worker is
   * still exiting.
   */
  run(req: WorkerRequest, onEvent: (e: ChildEvent) => void, onRelease: (reusable: boolean) => void): EngineRun;
  /** Stops the process group (SIGTERM, SIGKILL after `graceMs`); resolves once it has exited. */
  stop(graceMs: number): Promise<void>;
}

interface PendingOperation {
  id: number;
  onEvent: (e: ChildEvent) => void;
  outcome: EngineOutcome | null;
  /** Whether the worker's end mark for this operation has arrived. */
  marked: boolean;
  /** The operation's last stderr lines, for a crash message (never another operation's). */
  tail: string[];
  settle(outcome: EngineOutcome): void;
  release(reusable: boolean): void;
}

/** Calls `f` the first time only. */
function once1<A>(f: (a: A) => void): (a: A) => void {
  let called = false;
  return (a) => {
    if (called) return;
    called = true;
    f(a);
  };
}

/**
 * Starts a warm worker for `engine` with `options`. It takes operations at once (they
 * wait in its stdin while the engine loads). `onIdleLine` gets what it prints while no
 * operation runs: that output belongs to no job.
 */
export function spawnEngineWorker(engine: string, options: EngineOptions, onIdleLine: (line: string) => void): EngineWorker {
  let current: PendingOperation | null = null;
  let nextId = 1;
  let operations = 0;
  let rssBytes = 0;
  let stopping = false;
  let startError: string | null = null;
  let markReady: (ok: boolean) => void = () => {};
  const ready = new Promise<boolean>((resolve) => (markReady = resolve));

  const logLine = (line: string) => {
    if (current) {
      keepTail(current.tail, line);
      current.onEvent({ type: 'log', line });
    } else onIdleLine(line);
  };
  const maybeEnd = () => {
    const op = current;
    if (!op || !op.outcome || !op.marked || stopping) return; // a stopped worker's operation ends with its exit
    operations++;
    const reusable = op.outcome.kind === 'result' || op.outcome.kind === 'job-error';
    current = null;
    op.release(reusable);
    op.settle(op.outcome);
  };

  const onStdoutLine = (line: string) => {
    let event: WorkerEvent;
    try {
      event = JSON.parse(line) as WorkerEvent;
    } catch {
      return logLine(line);
    }
    if (event.type === 'ready') {
      rssBytes = event.rss;
      return markReady(true);
    }
    if (event.id === undefined) {
      if (event.type === 'error') startError = event.message;
      return;
    }
    const op = current;
    if (!op || event.id !== op.id) return; // cannot happen: one operation at a time, each ended by its mark
    if (event.type === 'result' || event.type === 'error') {
      rssBytes = event.rss ?? rssBytes;
      op.outcome =
        event.type === 'result'
          ? { kind: 'result', result: event.result }
          : event.jobError
            ? { kind: 'job-error', message: event.message, limit: event.limit }
            : { kind: 'crash', message: event.message };
      maybeEnd();
    } else op.onEvent(event);
  };
  const onStderrLine = (line: string) => {
    const at = line.indexOf(OP_END_MARK);
    if (at < 0) return logLine(line);
    if (at > 0) logLine(line.slice(0, at)); // the end of a write without a newline
    if (current && Number(line.slice(at + OP_END_MARK.length)) === current.id) {
      current.marked = true;
      maybeEnd();
    }
  };

  const child = spawnChild(process.execPath, [CHILD, '--worker', engine, JSON.stringify(options)], {
    ownGroup: true,
    maxLineChars: { stdout: MAX_EVENT_LINE_CHARS, stderr: MAX_LOG_LINE_CHARS },
    stdin: 'pipe',
    onStdoutLine,
    onStderrLine,
  });
  const pid = child.pid;
  child.process.stdin!.on('error', () => {}); // the worker is gone: its exit tells the story
  const exited = child.closed.then(([code, signal]) => {
    markReady(false);
    const op = current;
    if (!op) return;
    current = null;
    const what = startError ? `engine worker failed: ${startError}; it` : 'engine worker';
    op.release(false);
    op.settle(op.outcome ?? exitOutcome(code, signal, op.tail, what));
  });

  return {
    pid: pid ?? -1,
    ready,
    exited,
    get operations() {
      return operations;
    },
    get rssBytes() {
      return rssBytes;
    },
    get stopping() {
      return stopping;
    },
    run(req, onEvent, onRelease) {
      if (current) throw new Error(`engine worker ${pid} is already running operation ${current.id}`);
      const id = nextId++;
      let settle: (o: EngineOutcome) => void = () => {};
      const done = new Promise<EngineOutcome>((resolve) => (settle = resolve));
      const release = once1(onRelease);
      const op: PendingOperation = { id, onEvent, outcome: null, marked: false, tail: [], settle, release };
      current = op;
      child.process.stdin!.write(JSON.stringify({ id, ...req } satisfies WorkerOperation) + '\n');
      return {
        pid: pid ?? -1,
        done,
        async kill(graceMs) {
          // An operation that has ended no longer owns the worker, which may be running another job's by now.
          if (current !== op && !stopping) return;
          stopping = true;
          release(false);
          await child.stop(graceMs);
          await exited;
        },
      };
    },
    async stop(graceMs) {
      stopping = true;
      await child.stop(graceMs);
      await exited;
    },
  };
}
