// The engine interface: what the agent's job runner asks of a zkVM backend.
//
// An engine works on files in the job's work directory and reports progress and
// metrics through the context. The runner runs every engine operation in a child
// process of its own process group (see ../agent/engine-process.ts), so an engine may
// block, spawn tools or crash without taking the agent down; cancellation arrives as
// `ctx.signal` (and, past the grace period, as SIGKILL to the whole group). Engines
// that use no GPU (protocol ENGINES) run in warm workers: one process runs one operation after another,
// for different jobs, so such an engine keeps no job's state between operations (a
// killed or failed operation's worker is discarded, never reused).

import type { EngineConfig, EngineMetrics, ProofType, ProvePhase, PublishedKeys, VerifiableProofType } from '../protocol.ts';

/** An engine's operations: what a job of each kind asks of it (prover-agent/src/agent/kinds/). */
export const ENGINE_OPERATIONS = ['commit', 'execute', 'prove', 'verify'] as const;
export type EngineOperation = (typeof ENGINE_OPERATIONS)[number];

/** How an agent configures the engines it loads (its flags); the same for every job. */
export interface EngineOptions {
  /** openvm: directory holding one subdirectory per config id (see setup-config). */
  configsDir?: string;
  /** openvm: the cargo executable whose `openvm` subcommand is the zkVM tool. */
  cargoPath?: string;
  /** Per-operation time limits in seconds, by operation name. */
  timeouts?: Partial<Record<EngineOperation, number>>;
}

export interface EngineContext {
  /** The job's private work directory (exists, empty at start apart from inputs). */
  workDir: string;
  config: EngineConfig;
  /** Aborted when the job is canceled or the agent shuts down. */
  signal: AbortSignal;
  /** GPU device ordinals assigned to this run (empty for engines that use none). */
  gpus: number[];
  /**
   * For an engine that proves with published keys (EngineTraits.usesPublishedKeys), on a
   * prove: the digests the service reports for the config's keys, which the host's
   * copies must match. Absent otherwise.
   */
  publishedKeys?: PublishedKeys;
  /**
   * Appends one line of text to the job's logs (no trailing newline needed), at most
   * MAX_LOG_LINE_CHARS: the agent cuts a longer one. Call it as output comes, so the
   * job's logs stream and nothing waits in memory for a line's end.
   */
  log(line: string): void;
  /** Announces a phase change and/or metrics seen so far. */
  progress(update: { phase?: ProvePhase; metrics?: EngineMetrics }): void;
}

/**
 * The longest line of a job's log, in characters. An engine cuts its guest's longer
 * lines as they come (lib/lines.ts), and the agent cuts any longer line that reaches
 * it from an engine's process (agent/engine-process.ts) or that it logs itself
 * (agent/log-shipper.ts), each with a mark that says so.
 */
export const MAX_LOG_LINE_CHARS = 16 * 1024;

export interface ProgramFiles {
  /** The guest ELF (32-bit RISC-V). */
  elfPath: string;
  /** The transpiled VMEXE (opaque to the service). */
  vmexePath: string;
}

export interface CommitResult {
  /** 0x-prefixed 32-byte hex. */
  app_exe_commit: string;
  /** 0x-prefixed 32-byte hex. */
  app_vm_commit: string;
  /** Verification baseline JSON in the zkVM's shape (client-conventions.md). */
  baseline: Record<string, unknown>;
}

export interface ExecuteRequest extends ProgramFiles {
  /** A JSON file `{"input": ["0x01..", "0x02.."]}` (the zkVM tool's format). */
  inputPath: string;
  /** Execution mode as given by the caller (`pure` by default). */
  mode: string;
  /** The job's cycle limit (protocol ClaimedJob.cycle_limit): reaching it throws CycleLimitError. Null or absent: none. */
  cycleLimit?: number | null;
}

export interface ExecuteResult extends EngineMetrics {
  exit_code: number;
  /** Hex (0x-prefixed) of the final public-values space. */
  public_values: string;
  /** Everything the guest printed. */
  stdout: string;
  /** Null on success; otherwise a human-readable reason (guest panic text when there is one). */
  error: string | null;
}

export interface ProveRequest extends ProgramFiles {
  /** Which proof to make. */
  proof_type: ProofType;
  inputPath: string;
  /** Deferred child STARK proof files, in packing order (may be empty). */
  childProofPaths: string[];
  /** Where to write the proof JSON. */
  outputPath: string;
  /** The program's commit as recorded at registration (0x hex). */
  app_exe_commit: string;
  /** The program's verification baseline JSON file, as produced by commit(). */
  baselinePath: string;
  /** The job's cycle limit: an engine stops at it (or, metering first, refuses before proving) with CycleLimitError. Null or absent: none. */
  cycleLimit?: number | null;
}

export interface ProveResult extends EngineMetrics {
  /** Hex (0x-prefixed) of the public values the proof commits to. */
  public_values: string;
}

export interface VerifyRequest {
  /** Which proof the file holds: a STARK proof JSON or an EVM proof JSON (client-conventions.md). */
  proof_type: VerifiableProofType;
  /** The proof JSON to check. */
  proofPath: string;
  /**
   * The program's verification baseline JSON file and its registered commit; both
   * null when an EVM proof is checked against its config alone (the proof then
   * carries the commit it claims, and only the config's keys vouch for it).
   */
  baselinePath: string | null;
  app_exe_commit: string | null;
}

export interface VerifyResult {
  verified: boolean;
  /** Why verification failed; null when verified. */
  reason: string | null;
}

/**
 * A failure the engine wants shown to the caller as the job's `error_message`
 * (bad input, guest panic, child proof mismatch). Anything else thrown is treated
 * as an infrastructure error and may be retried elsewhere.
 */
export class JobError extends Error {
  override name = 'JobError';
}

/** The job reached its cycle limit (ExecuteRequest/ProveRequest.cycleLimit): `reached` cycles, as the engine counted them. */
export class CycleLimitError extends JobError {
  override name = 'CycleLimitError';
  readonly reached: number;
  readonly limit: number;
  constructor(reached: number, limit: number) {
    super(`cycle limit reached: the guest ran ${reached} cycles; the job's cycle_limit is ${limit}`);
    this.reached = reached;
    this.limit = limit;
  }
}

export interface Engine {
  readonly name: string;
  commit(ctx: EngineContext, program: ProgramFiles): Promise<CommitResult>;
  execute(ctx: EngineContext, req: ExecuteRequest): Promise<ExecuteResult>;
  prove(ctx: EngineContext, req: ProveRequest): Promise<ProveResult>;
  verify(ctx: EngineContext, req: VerifyRequest): Promise<VerifyResult>;
}
