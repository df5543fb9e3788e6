// Runs the zkVM tool as a child process (../../lib/child-process.ts): line-by-line
// output, a deadline, and cancellation. The tool is spawned in the caller's process
// group (not a group of its own), so the runner's kill of the whole group also
// reaches it; on our own abort or deadline it is stopped (SIGTERM, then SIGKILL after
// a grace period), and we settle only once the process is gone so no prover outlives
// its job.
import { spawnChild } from '../../lib/child-process.ts';
import { MAX_LOG_LINE_CHARS } from '../types.ts';

export interface ToolRunOptions {
  cwd: string;
  env: NodeJS.ProcessEnv;
  signal: AbortSignal;
  timeoutMs: number;
  killGraceMs: number;
  /** Short name for messages, e.g. "prove stark". */
  label: string;
  onStdout?(line: string): void;
  onStderr?(line: string): void;
}

export interface ToolExit {
  /** Exit status; null when a signal ended the process. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** All stdout lines (capped: see MAX_STDOUT_CHARS). */
  stdout: string[];
  /** The last stderr lines (see STDERR_TAIL_LINES). */
  stderrTail: string[];
}

export class ToolNotFoundError extends Error {
  override name = 'ToolNotFoundError';
}
export class ToolTimeoutError extends Error {
  override name = 'ToolTimeoutError';
}
export class ToolCanceledError extends Error {
  override name = 'ToolCanceledError';
}

const STDERR_TAIL_LINES = 40;
// Guest output is returned to the caller; past this the tool's output still goes to the logs.
const MAX_STDOUT_CHARS = 4 * 1024 * 1024;

// Colour codes would otherwise end up in logs and error messages.

const ANSI = /\u001b\[[0-9;?]*[ -/]*[@-~]/g;
export const stripAnsi = (s: string): string => s.replace(ANSI, '');

export function runTool(command: string, args: readonly string[], o: ToolRunOptions): Promise<ToolExit> {
  if (o.signal.aborted) return Promise.reject(new ToolCanceledError(`${o.label}: canceled before start`));
  return new Promise<ToolExit>((resolve, reject) => {
    const stdout: string[] = [];
    let stdoutChars = 0;
    const stderrTail: string[] = [];
    let stopReason: 'canceled' | 'timeout' | null = null;
    let settled = false;

    const tool = spawnChild(command, args, {
      ownGroup: false,
      // The guest's output comes through the tool's stdout: a line without an end is cut, not held.
      maxLineChars: { stdout: MAX_LOG_LINE_CHARS, stderr: MAX_LOG_LINE_CHARS },
      cwd: o.cwd,
      env: o.env,
      onStdoutLine(raw) {
        const line = stripAnsi(raw);
        if (stdoutChars < MAX_STDOUT_CHARS) {
          stdout.push(line);
          stdoutChars += line.length + 1;
        }
        o.onStdout?.(line);
      },
      onStderrLine(raw) {
        const line = stripAnsi(raw);
        stderrTail.push(line);
        if (stderrTail.length > STDERR_TAIL_LINES) stderrTail.shift();
        o.onStderr?.(line);
      },
    });
    const child = tool.process;

    const stop = (reason: 'canceled' | 'timeout') => {
      if (stopReason || settled) return;
      stopReason = reason;
      void tool.stop(o.killGraceMs);
    };
    const onAbort = () => stop('canceled');
    o.signal.addEventListener('abort', onAbort, { once: true });
    const deadline = setTimeout(() => stop('timeout'), o.timeoutMs);

    const finish = (err: Error | null, exit?: ToolExit) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      o.signal.removeEventListener('abort', onAbort);
      if (err) reject(err);
      else resolve(exit!);
    };

    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT' || err.code === 'EACCES') {
        finish(
          new ToolNotFoundError(
            `zkVM tool not runnable: '${command}' (${err.code}); install cargo-openvm (prover-agent/README.md) or set the engine's cargoPath`,
          ),
        );
      } else {
        finish(err);
      }
    });
    // 'close' waits for the output streams; after a kill we settle on 'exit' instead, in
    // case something inherited the pipes and keeps them open.
    child.on('exit', (code, signal) => {
      if (stopReason === 'canceled')
        finish(new ToolCanceledError(`${o.label}: canceled; the zkVM tool was stopped (${signal ?? `exit ${code}`})`));
      else if (stopReason === 'timeout')
        finish(new ToolTimeoutError(`${o.label}: timed out after ${formatSeconds(o.timeoutMs)}; the zkVM tool was stopped`));
      if (stopReason) {
        child.stdout!.destroy();
        child.stderr!.destroy();
      }
    });
    child.on('close', (code, signal) => finish(null, { code, signal, stdout, stderrTail }));
  });
}

function formatSeconds(ms: number): string {
  return `${Math.round(ms / 100) / 10}s`;
}
