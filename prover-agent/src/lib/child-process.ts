// The one way the agent starts a child process and stops it: the engine processes
// (../agent/engine-process.ts: a process per job, warm workers) and the zkVM tool an
// engine runs (../engine/openvm/tool.ts) all come through here.
//
//   ownGroup: true    the child leads a process group of its own (an engine process):
//                     a stop signals the whole group, so whatever the engine started
//                     (the zkVM tool) goes with it, and a last SIGKILL to the group
//                     after the child exits takes anything it left behind.
//   ownGroup: false   the child stays in its parent's group (the tool, inside its
//                     engine process's group, so the runner's kill of that group
//                     reaches it too): a stop signals the child alone.
//
// A stop is SIGTERM, then SIGKILL once `graceMs` have passed without an exit. Output
// comes line by line, each line at most `maxLineChars` (./lines.ts: a longer one is
// handed on cut, as soon as it passes the cap), so what a child prints never piles
// up in this process.
import { spawn, type ChildProcess } from 'node:child_process';
import { readLines } from './lines.ts';

export interface ChildOptions {
  ownGroup: boolean;
  /** `pipe` to write to the child (a warm worker's operations); default `ignore`. */
  stdin?: 'ignore' | 'pipe';
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** The longest line of each output handed on whole; a longer one comes cut (cutLine). */
  maxLineChars: { stdout: number; stderr: number };
  onStdoutLine?(line: string): void;
  onStderrLine?(line: string): void;
}

export interface Child {
  readonly process: ChildProcess;
  /** Undefined when the spawn failed (an 'error' event says why; 'close' follows). */
  readonly pid: number | undefined;
  /** Resolves when the process is gone (its 'exit', or the 'close' of a spawn that failed). */
  readonly exited: Promise<void>;
  /** Resolves when the process is gone and its output has been read: how it ended. */
  readonly closed: Promise<[code: number | null, signal: NodeJS.Signals | null]>;
  /** Sends `signal` to the child (its whole group with ownGroup); a child already gone is no error. */
  signal(signal: NodeJS.Signals): void;
  /** SIGTERM, SIGKILL after `graceMs` if it has not exited by then; resolves once it has exited. */
  stop(graceMs: number): Promise<void>;
}

export function spawnChild(command: string, args: readonly string[], o: ChildOptions): Child {
  const child = spawn(command, args, { cwd: o.cwd, env: o.env, detached: o.ownGroup, stdio: [o.stdin ?? 'ignore', 'pipe', 'pipe'] });
  child.on('error', () => {}); // a failed spawn: 'close' follows, and the caller's own listener says why
  // Output nobody reads is still drained: a full pipe would stall the child.
  if (o.onStdoutLine) readLines(child.stdout!, o.maxLineChars.stdout, o.onStdoutLine);
  else child.stdout!.resume();
  if (o.onStderrLine) readLines(child.stderr!, o.maxLineChars.stderr, o.onStderrLine);
  else child.stderr!.resume();
  const closed = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('close', (code, signal) => resolve([code, signal])),
  );
  const exited = Promise.race([new Promise<void>((resolve) => child.once('exit', () => resolve())), closed.then(() => {})]);
  const pid = child.pid;

  const signal = (sig: NodeJS.Signals) => {
    if (!o.ownGroup) {
      child.kill(sig); // a no-op once it has exited: its pid may be another's by then
      return;
    }
    if (pid === undefined) return; // never spawned
    try {
      process.kill(-pid, sig);
    } catch {
      /* the group is gone */
    }
  };

  return {
    process: child,
    pid,
    exited,
    closed,
    signal,
    async stop(graceMs) {
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // Whatever the group's leader started and left behind.
      if (o.ownGroup) signal('SIGKILL');
    },
  };
}
