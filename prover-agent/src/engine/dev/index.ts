// The `dev` engine: executes guest ELFs faithfully with the TypeScript executor and
// issues dev proofs (proofs.ts), which the service can verify but which prove nothing
// cryptographically. The default engine of the local stack and the test suite; see
// README.md beside this file.
import { readFile, writeFile } from 'node:fs/promises';
import type { EngineConfig } from '../../protocol.ts';
import {
  CycleLimitError,
  JobError,
  MAX_LOG_LINE_CHARS,
  type CommitResult,
  type Engine,
  type EngineContext,
  type EngineOperation,
  type EngineOptions,
  type ExecuteRequest,
  type ExecuteResult,
  type ProgramFiles,
  type ProveRequest,
  type ProveResult,
  type VerifyRequest,
  type VerifyResult,
} from '../types.ts';
import { LineSplitter } from '../../lib/lines.ts';
import { devBaseline, exeCommit, toHex } from './commit.ts';
import { ElfError, loadElf, type ProgramImage } from './elf.ts';
import { DEFAULT_MAX_CYCLES, DEFAULT_PUBLIC_VALUES_BYTES, executeProgram, type ExecutionOutcome } from './executor.ts';
import { InputError, parseHex, parseInputJson, type InputEntry } from './input.ts';
import {
  checkDevProof,
  devConfigDigest,
  devInputDigest,
  devProofDigest,
  devProofText,
  makeDevProof,
  readDevProof,
  type DevProof,
} from './proofs.ts';

export interface DevEngineOptions {
  /** Instruction limit per run (default DEFAULT_MAX_CYCLES of executor.ts). */
  maxCycles?: number;
}

/**
 * A made-up but deterministic stand-in for the zkVM's trace cells, so that dashboards and
 * billing code see realistic magnitudes: an RV32IM instruction costs the real prover on
 * the order of tens of trace cells.
 */
export const DEV_CELLS_PER_INSTRUCTION = 32;

/** At most this many lines of guest output are copied into the job's logs. */
const MAX_GUEST_LOG_LINES = 1000;
const GUEST_LINE_PREFIX = 'guest: ';

async function loadProgram(elfPath: string): Promise<ProgramImage> {
  try {
    return loadElf(await readFile(elfPath));
  } catch (err) {
    if (err instanceof ElfError) throw new JobError(err.message);
    throw err;
  }
}

async function loadInput(inputPath: string): Promise<InputEntry[]> {
  try {
    return parseInputJson(await readFile(inputPath, 'utf8'));
  } catch (err) {
    if (err instanceof InputError) throw new JobError(`bad input: ${err.message}`);
    throw err;
  }
}

function publicValuesBytes(config: EngineConfig): number {
  return config.public_values_bytes || DEFAULT_PUBLIC_VALUES_BYTES;
}

function commitBytes(hex: string, what: string): Uint8Array {
  const bytes = parseHex(hex);
  if (!bytes || bytes.length !== 32) throw new Error(`${what} ${JSON.stringify(hex)} is not 32 bytes of hex`);
  return bytes;
}

/**
 * Copies guest output into the job's logs line by line as it is printed, up to
 * MAX_GUEST_LOG_LINES lines. A line is held only up to MAX_LOG_LINE_CHARS: one that
 * grows past it goes to the logs at once, cut, and the rest of it is dropped as it
 * comes (LineSplitter), so what waits here is bounded whatever the guest prints.
 */
function guestLogger(ctx: EngineContext): LineSplitter {
  let lines = 0;
  return new LineSplitter(MAX_LOG_LINE_CHARS - GUEST_LINE_PREFIX.length, (line) => {
    if (lines < MAX_GUEST_LOG_LINES) ctx.log(GUEST_LINE_PREFIX + line);
    else if (lines === MAX_GUEST_LOG_LINES) ctx.log(`${GUEST_LINE_PREFIX}[further output not logged]`);
    lines++;
  });
}

/**
 * Runs the guest up to the engine's own instruction limit or the job's cycle limit
 * (one instruction is one cycle), whichever is lower; stopping at the job's limit
 * throws CycleLimitError (the agent reports it as the limit, README "Job limits").
 */
async function run(
  ctx: EngineContext,
  image: ProgramImage,
  input: InputEntry[],
  maxCycles: number | undefined,
  cycleLimit?: number | null,
): Promise<ExecutionOutcome> {
  const logger = guestLogger(ctx);
  const engineMax = maxCycles ?? DEFAULT_MAX_CYCLES;
  const byJob = cycleLimit != null && cycleLimit < engineMax;
  try {
    const out = await executeProgram(image, input, {
      maxCycles: byJob ? cycleLimit : maxCycles,
      publicValuesBytes: publicValuesBytes(ctx.config),
      signal: ctx.signal,
      onPrint: (text) => logger.push(text),
    });
    if (byJob && out.exitCode === null && out.numInstructions >= cycleLimit) {
      ctx.log(`dev engine: stopped at the job's cycle limit, ${cycleLimit} cycles`);
      throw new CycleLimitError(out.numInstructions, cycleLimit);
    }
    return out;
  } finally {
    logger.end();
  }
}

/**
 * The baseline's app_exe_commit, or null when there is no readable baseline: the proof is
 * checked against the request's app_exe_commit; the baseline only cross-checks it.
 */
async function readBaselineCommit(path: string): Promise<string | null> {
  try {
    const baseline = JSON.parse(await readFile(path, 'utf8')) as { app_exe_commit?: unknown };
    return typeof baseline.app_exe_commit === 'string' ? baseline.app_exe_commit : null;
  } catch {
    return null;
  }
}

/**
 * Deferred child proofs: each must be a dev STARK proof made under this same config and
 * for this same program (their seals are the Worker's to check: it holds the secret). The dev engine cannot run the zkVM's deferral
 * circuits, so it binds children to the parent's program rather than to a verifying key
 * the guest names; a child for anything else fails the job, naming the child's index.
 */
async function checkChildren(ctx: EngineContext, req: ProveRequest): Promise<DevProof[]> {
  if (req.childProofPaths.length > 0 && !ctx.config.deferral_enabled) {
    throw new JobError(`config ${ctx.config.id} does not enable deferral, but the job has ${req.childProofPaths.length} child proofs`);
  }
  const children: DevProof[] = [];
  for (const [i, path] of req.childProofPaths.entries()) {
    let proof: DevProof;
    try {
      proof = readDevProof(JSON.parse(await readFile(path, 'utf8')));
    } catch (err) {
      throw new JobError(`child proof ${i}: not a dev STARK proof: ${(err as Error).message}`);
    }
    const reason = checkDevProof(proof, { kind: 'stark', appExeCommit: req.app_exe_commit, config: ctx.config });
    if (reason) throw new JobError(`child proof ${i}: ${reason}`);
    children.push(proof);
  }
  return children;
}

/**
 * Segments a run of `n` instructions would split into, for `segment` mode. A proxy:
 * the real zkVM cuts a segment when a chip's trace would pass 2^log_stacked_height
 * rows (openvm v2.0.1 crates/vm/src/arch/vm.rs:903-919, segment_ctx.rs:58), and its
 * benchmarks' default height is 2^21 (benchmarks/prove/src/lib.rs:20); the dev
 * engine counts one row per instruction.
 */
export const DEV_SEGMENT_INSTRUCTIONS = 1 << 21;
export function devSegments(n: number): number {
  return Math.max(1, Math.ceil(n / DEV_SEGMENT_INSTRUCTIONS));
}

/**
 * `options.timeouts`, as the openvm engine reads them: an operation past its limit is
 * stopped and fails as the host's problem (a plain error, retried elsewhere), not the
 * caller's. No limit unless configured: the cycle limit already bounds every run. The
 * executor sees the deadline at its next check of the signal.
 */
function withTimeout<R, T>(
  options: EngineOptions,
  op: EngineOperation,
  run: (ctx: EngineContext, req: R) => Promise<T>,
): (ctx: EngineContext, req: R) => Promise<T> {
  const seconds = options.timeouts?.[op];
  if (!seconds) return run;
  return async (ctx, req) => {
    const deadline = AbortSignal.timeout(seconds * 1000);
    try {
      return await run({ ...ctx, signal: AbortSignal.any([ctx.signal, deadline]) }, req);
    } catch (err) {
      if (deadline.aborted && !ctx.signal.aborted) throw new Error(`dev engine: ${op} timed out after ${seconds} s`);
      throw err;
    }
  };
}

export function createDevEngine(options: EngineOptions & DevEngineOptions): Engine {
  const engine = createUntimedDevEngine(options);
  return {
    ...engine,
    commit: withTimeout(options, 'commit', engine.commit),
    execute: withTimeout(options, 'execute', engine.execute),
    prove: withTimeout(options, 'prove', engine.prove),
    verify: withTimeout(options, 'verify', engine.verify),
  };
}

function createUntimedDevEngine(options: EngineOptions & DevEngineOptions): Engine {
  return {
    name: 'dev',

    async commit(ctx: EngineContext, program: ProgramFiles): Promise<CommitResult> {
      const appExeCommit = toHex(exeCommit(await loadProgram(program.elfPath)));
      commitBytes(ctx.config.app_vm_commit, `config ${ctx.config.id}: app_vm_commit`);
      return { app_exe_commit: appExeCommit, app_vm_commit: ctx.config.app_vm_commit, baseline: devBaseline(appExeCommit, ctx.config) };
    },

    async execute(ctx: EngineContext, req: ExecuteRequest): Promise<ExecuteResult> {
      const failed = (error: string): ExecuteResult => ({
        exit_code: -1,
        num_instructions: 0,
        public_values: toHex(new Uint8Array(publicValuesBytes(ctx.config))),
        stdout: '',
        error,
      });
      let image: ProgramImage;
      let input: InputEntry[];
      try {
        [image, input] = await Promise.all([loadProgram(req.elfPath), loadInput(req.inputPath)]);
      } catch (err) {
        if (err instanceof JobError) return failed(err.message);
        throw err;
      }
      ctx.log(`dev engine: executing (${req.mode} mode, ${input.length} input entries)`);
      const out = await run(ctx, image, input, options.maxCycles, req.cycleLimit);
      ctx.log(`dev engine: ${out.error ? `failed: ${out.error}` : 'guest exited 0'} after ${out.numInstructions} instructions`);
      return {
        exit_code: out.exitCode ?? -1,
        num_instructions: out.numInstructions,
        // One instruction is one cycle (guest-abi.md, "What a cycle is").
        total_cycle: out.numInstructions,
        ...(req.mode === 'segment' ? { num_segments: devSegments(out.numInstructions) } : {}),
        public_values: toHex(out.publicValues),
        stdout: out.stdout,
        error: out.error,
      };
    },

    async prove(ctx: EngineContext, req: ProveRequest): Promise<ProveResult> {
      const config = ctx.config;
      if (config.engine !== 'dev') {
        throw new Error(`the dev engine only proves under dev configs; config ${config.id} uses engine '${config.engine}'`);
      }
      const appVmCommit = commitBytes(config.app_vm_commit, `config ${config.id}: app_vm_commit`);
      const [image, input] = await Promise.all([loadProgram(req.elfPath), loadInput(req.inputPath)]);
      const appExeCommit = exeCommit(image);
      if (toHex(appExeCommit) !== toHex(commitBytes(req.app_exe_commit, "the program's app_exe_commit"))) {
        throw new JobError(
          `the program's ELF does not match its registered app_exe_commit (${req.app_exe_commit}; the ELF gives ${toHex(appExeCommit)})`,
        );
      }
      const children = await checkChildren(ctx, req);
      if (children.length) ctx.log(`dev engine: ${children.length} deferred child proofs verified`);

      ctx.signal.throwIfAborted();
      ctx.progress({ phase: 'Executing' });
      ctx.log(`dev engine: executing ${toHex(appExeCommit)} on ${input.length} input entries`);
      const out = await run(ctx, image, input, options.maxCycles, req.cycleLimit);
      if (out.error) {
        // The count is worth recording for a failed job too.
        ctx.progress({ metrics: { num_instructions: out.numInstructions } });
        ctx.log(`dev engine: execution failed after ${out.numInstructions} instructions: ${out.error}`);
        throw new JobError(out.error);
      }
      const metrics = { num_instructions: out.numInstructions, cells_used: out.numInstructions * DEV_CELLS_PER_INSTRUCTION };
      ctx.progress({ phase: 'Executed', metrics });
      ctx.log(`dev engine: executed ${out.numInstructions} instructions; public values ${toHex(out.publicValues)}`);

      ctx.signal.throwIfAborted();
      ctx.progress({ phase: 'AppProving' });
      // Unsealed: the Worker seals it with the deployment's secret when the completion stores it.
      const proof = makeDevProof(
        {
          kind: req.proof_type,
          appExeCommit,
          appVmCommit,
          configDigest: devConfigDigest(config),
          inputDigest: devInputDigest(input),
          childDigests: children.map(devProofDigest),
        },
        out.publicValues,
      );
      ctx.progress({ phase: 'AppProvingDone' });

      ctx.signal.throwIfAborted();
      ctx.progress({ phase: 'PostProcessing' });
      const proofText = devProofText(proof);
      await writeFile(req.outputPath, proofText);
      // No host path in the job's logs: callers read them.
      ctx.log(`dev engine: wrote a dev ${req.proof_type} proof (not a zero-knowledge proof), ${proofText.length} bytes`);
      return { ...metrics, public_values: toHex(out.publicValues) };
    },

    async verify(ctx: EngineContext, req: VerifyRequest): Promise<VerifyResult> {
      const config = ctx.config;
      if (config.engine !== 'dev') {
        return {
          verified: false,
          reason: `config ${config.id} is not a dev config (engine '${config.engine}'); dev proofs are only accepted under dev configs`,
        };
      }
      const baselineCommit = req.baselinePath === null ? null : await readBaselineCommit(req.baselinePath);
      if (baselineCommit !== null && req.app_exe_commit !== null && baselineCommit.toLowerCase() !== req.app_exe_commit.toLowerCase()) {
        return { verified: false, reason: `the verification baseline is for another program (${baselineCommit})` };
      }
      let doc: unknown;
      try {
        doc = JSON.parse(await readFile(req.proofPath, 'utf8'));
      } catch (err) {
        return { verified: false, reason: `proof file is not JSON: ${(err as Error).message}` };
      }
      let proof: DevProof;
      try {
        proof = readDevProof(doc);
      } catch (err) {
        return { verified: false, reason: (err as Error).message };
      }
      // The MAC is not checked here (no secret on the host): the Worker checks it when the result comes back.
      const reason = checkDevProof(proof, { kind: req.proof_type, appExeCommit: req.app_exe_commit, config });
      return reason ? { verified: false, reason } : { verified: true, reason: null };
    },
  };
}
