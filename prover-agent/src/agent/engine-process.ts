// Runs one engine operation in a child process of its own process group, so a
// crash, a hang or a cancel never takes the agent down, and killing the group also
// kills whatever the engine started (the zkVM tool). The child speaks JSON lines on
// stdout (see engine-child.ts); its stderr is treated as log output.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { EngineConfig, EngineMetrics, ProvePhase, VerifyRequest } from '../engine/types.ts';
import type { EngineOptions } from '../engine/index.ts';

const CHILD = fileURLToPath(new URL('./engine-child.ts', import.meta.url));

export type EngineOp =
  | { op: 'commit'; elfPath: string; vmexePath: string }
  | { op: 'execute'; elfPath: string; vmexePath: string; inputPath: string; mode: string }
  | {
      op: 'prove';
      kind: 'app' | 'stark' | 'evm';
      elfPath: string;
      vmexePath: string;
      inputPath: string;
      childProofPaths: string[];
      outputPath: string;
      app_exe_commit: string;
      baselinePath: string;
    }
  | ({ op: 'verify' } & VerifyRequest);

export interface EngineRunRequest {
  engine: string;
  engineOptions: EngineOptions;
  config: EngineConfig;
  workDir: string;
  gpus: number[];
  operation: EngineOp;
}

/** What the child reports, one JSON object per stdout line. */
export type ChildEvent =
  | { type: 'log'; line: string }
  | { type: 'progress'; phase?: ProvePhase; metrics?: EngineMetrics }
  | { type: 'result'; result: unknown }
  | { type: 'error'; message: string; jobError: boolean };

export type EngineOutcome =
  | { kind: 'result'; result: unknown }
  | { kind: 'job-error'; message: string }
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
  const child = spawn(process.execPath, [CHILD, requestPath], { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pid = child.pid!;
  let outcome: EngineOutcome | null = null;
  const stderrTail: string[] = [];

  createInterface({ input: child.stdout! }).on('line', (line) => {
    let event: ChildEvent;
    try {
      event = JSON.parse(line) as ChildEvent;
    } catch {
      event = { type: 'log', line };
    }
    if (event.type === 'result') outcome = { kind: 'result', result: event.result };
    else if (event.type === 'error') outcome = event.jobError ? { kind: 'job-error', message: event.message } : { kind: 'crash', message: event.message };
    else onEvent(event);
  });
  createInterface({ input: child.stderr! }).on('line', (line) => {
    stderrTail.push(line);
    if (stderrTail.length > 20) stderrTail.shift();
    onEvent({ type: 'log', line });
  });

  const exited = once(child, 'close') as Promise<[number | null, NodeJS.Signals | null]>;
  const done = exited.then(([code, signal]): EngineOutcome => {
    if (outcome) return outcome;
    if (signal) return { kind: 'killed', signal };
    return { kind: 'crash', message: `engine process exited with code ${code}${stderrTail.length ? `: ${stderrTail.slice(-5).join(' | ')}` : ''}` };
  });

  const signalGroup = (sig: NodeJS.Signals) => {
    try {
      process.kill(-pid, sig);
    } catch {
      /* the group is already gone */
    }
  };
  return {
    pid,
    done,
    async kill(graceMs) {
      signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
      // The engine may have left grandchildren behind in its group.
      signalGroup('SIGKILL');
    },
  };
}
