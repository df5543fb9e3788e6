// The `openvm` engine: real proofs from the zkVM's own command-line tool
// (`cargo openvm`, built with GPU support on the host).
//
// Each operation: pick the flag mapping for the config's openvm_version
// (commands.ts), refuse if the host's config directory is incomplete
// (config-dir.ts) or the installed tool is another version, then run the tool
// in a scratch directory inside the job's work directory with the job's GPUs,
// streaming its output to the job's logs. The scratch directory goes when the
// operation ends; keys are only ever referenced by path.
//
// Failures: the tool's last stderr lines become the message. A JobError (shown
// to the caller, not retried) when the tool rejects the caller's program, input
// or proof, or the config names an openvm version no mapping serves (a
// pre-release or an unknown major: no agent of this build can run it; the
// service refuses to create such configs). A plain Error (infrastructure: the
// operator's problem, retried elsewhere) for a missing tool or keys, a timeout,
// a kill, a panic (exit status 101), GPU/memory/disk trouble, or a command line
// the tool does not accept (exit status 2: the flag mapping is wrong for the
// installed version); its message says so in the job's logs.
//
// GPUs: the tool proves on one GPU, the current CUDA device (docs
// install.mdx at v2.0.1: "Currently only single GPU support is available
// through the CLI"); ctx.gpus names the one device it is pinned to.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { ENGINES, parseVersion, versionProblem, type EngineMetrics, type ParsedVersion } from '../../protocol.ts';
import {
  CycleLimitError,
  JobError,
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
import { selectCliMapping, shellJoin, type AggregationPaths, type CliMapping, type ConfigPaths } from './commands.ts';
import {
  aggregationPaths,
  configPaths,
  defaultConfigsDir,
  describeMissing,
  missingRequirements,
  publishedKeyFiles,
  requirements,
  type Needs,
} from './config-dir.ts';
import { checkKeyDigests } from './key-digests.ts';
import { gpuEnv } from './gpus.ts';
import { canonicalStarkProof, checkEvmProof, checkInputFile, checkWrittenProof, isHex32, readToolJson } from './job-files.ts';
import { classifyFailure, errorTail, guestStdout, parseMetrics, parsePublicValues, proveOutputReader } from './output.ts';
import { runTool, ToolTimeoutError, type ToolExit } from './tool.ts';

/** GPUs one run of the tool uses, however many it is given (see the header). */
const GPUS_PER_RUN = ENGINES.openvm.maxGpus;

export interface OpenvmEngineOptions extends EngineOptions {
  /** Environment the tool starts from (default: the agent's). Its HOME locates ~/.openvm. */
  env?: NodeJS.ProcessEnv;
  /** Time between SIGTERM and SIGKILL when the tool is stopped (default 10 s). */
  killGraceMs?: number;
}

/**
 * Per-operation limits in seconds when options.timeouts leaves them out. Proving
 * includes the metered execution that precedes it.
 */
export const DEFAULT_TIMEOUTS_S: Record<EngineOperation, number> = {
  commit: 30 * 60,
  execute: 30 * 60,
  prove: 6 * 60 * 60,
  verify: 10 * 60,
};
const DEFAULT_KILL_GRACE_MS = 10_000;
const VERSION_QUERY_TIMEOUT_MS = 60_000;

interface Session {
  mapping: CliMapping;
  cfg: ConfigPaths;
  agg: AggregationPaths;
  scratch: string;
  /** Runs `cargo <args>`, logging the command and its output; resolves on any exit status. */
  tool(label: string, args: string[], onLine?: (line: string) => void): Promise<ToolExit>;
}

export function createOpenvmEngine(options: OpenvmEngineOptions = {}): Engine {
  const baseEnv = options.env ?? process.env;
  const cargo = options.cargoPath ?? baseEnv.PROVER_AGENT_CARGO ?? 'cargo';
  const configsDir = options.configsDir ?? defaultConfigsDir(baseEnv);
  const killGraceMs = options.killGraceMs ?? DEFAULT_KILL_GRACE_MS;
  const timeoutMs = (op: EngineOperation) => (options.timeouts?.[op] ?? DEFAULT_TIMEOUTS_S[op]) * 1000;
  // The tool's log level is the mapping's choice (--verbose where INFO is read), not the
  // host's: RUST_LOG would override it (stark-backend v2.0.1:crates/stark-sdk/src/utils.rs:14)
  // and put log lines among a guest's output.
  const toolEnv = (gpus: number[]): NodeJS.ProcessEnv => {
    const { RUST_LOG: _hostLogLevel, ...env } = baseEnv;
    return { ...env, NO_COLOR: '1', CARGO_TERM_COLOR: 'never', ...gpuEnv(gpus) };
  };

  let installedVersion: Promise<ParsedVersion | null> | null = null;

  async function queryVersion(ctx: EngineContext): Promise<ParsedVersion | null> {
    const args = ['openvm', '--version'];
    const exit = await runTool(cargo, args, {
      cwd: ctx.workDir,
      env: toolEnv([]),
      signal: ctx.signal,
      timeoutMs: VERSION_QUERY_TIMEOUT_MS,
      killGraceMs,
      label: 'openvm --version',
    });
    if (exit.code !== 0) {
      throw new Error(
        `'${shellJoin([cargo, ...args])}' failed, is cargo-openvm installed? ${errorTail(exit.stderrTail, `exit ${exit.code ?? exit.signal}`)}`,
      );
    }
    return parseVersion(exit.stdout.join(' '));
  }

  /** The installed tool must be the config's major.minor: keys and proof formats change between minors. */
  async function checkInstalledVersion(ctx: EngineContext): Promise<void> {
    installedVersion ??= queryVersion(ctx).catch((err: unknown) => {
      installedVersion = null;
      throw err;
    });
    const installed = await installedVersion;
    const wanted = parseVersion(ctx.config.openvm_version)!;
    if (!installed) {
      ctx.log('warning: could not read the version `cargo openvm --version` reports');
    } else if (installed.prerelease !== null) {
      throw new Error(
        `installed cargo-openvm is the pre-release ${installed.text}; this agent maps final releases only: install ${wanted.text} on this host`,
      );
    } else if (installed.major !== wanted.major || installed.minor !== wanted.minor) {
      throw new Error(
        `installed cargo-openvm is ${installed.text} but config ${ctx.config.id} needs openvm ${wanted.text}; install that version on this host`,
      );
    } else if (installed.text !== wanted.text) {
      ctx.log(`note: cargo-openvm ${installed.text} serves config ${ctx.config.id} (openvm ${wanted.text})`);
    }
  }

  async function session<T>(ctx: EngineContext, op: EngineOperation, needs: Needs, body: (s: Session) => Promise<T>): Promise<T> {
    // Permanent for this config whichever agent claims it: the caller's answer, not a retry.
    const unmappable = versionProblem(ctx.config.openvm_version);
    if (unmappable) throw new JobError(`config ${ctx.config.id} cannot be served by the openvm engine: ${unmappable}`);
    const { mapping, warning } = selectCliMapping(ctx.config.openvm_version);
    if (warning) ctx.log(`warning: ${warning}`);
    const cfg = configPaths(configsDir, ctx.config.id, mapping);
    const agg = aggregationPaths(mapping, baseEnv);
    const missing = await missingRequirements(requirements(cfg, agg, mapping, needs));
    if (missing.length) {
      const evm = needs.evmProve || needs.evmVerify;
      throw new Error(
        `openvm engine: config ${ctx.config.id} is not set up on this host (missing ${describeMissing(missing)}); ` +
          `the operator must run \`prover-agent setup-config ${ctx.config.id}${evm ? ' --evm' : ''} --run\``,
      );
    }
    await checkInstalledVersion(ctx);

    const limitMs = timeoutMs(op);
    const deadline = Date.now() + limitMs;
    const scratch = await mkdtemp(join(ctx.workDir, '.openvm-'));
    // Logs reach the caller; host paths do not need to.
    const redact = redactor([
      [scratch, '$SCRATCH'],
      [ctx.workDir, '$WORK_DIR'],
      [cfg.dir, '$CONFIG_DIR'],
      [agg.dir, '~/.openvm'],
    ]);
    const env = toolEnv(ctx.gpus.slice(0, GPUS_PER_RUN));
    const placement = ctx.gpus.length ? `  [CUDA_VISIBLE_DEVICES=${env.CUDA_VISIBLE_DEVICES}]` : '';

    const tool: Session['tool'] = async (label, args, onLine) => {
      ctx.log(`$ ${redact(shellJoin([cargo, ...args]))}${placement}`);
      const each = (line: string) => {
        ctx.log(redact(line));
        onLine?.(line);
      };
      try {
        return await runTool(cargo, args, {
          cwd: scratch,
          env,
          signal: ctx.signal,
          timeoutMs: Math.max(1, deadline - Date.now()),
          killGraceMs,
          label,
          onStdout: each,
          onStderr: each,
        });
      } catch (err) {
        if (err instanceof ToolTimeoutError) {
          throw new ToolTimeoutError(`openvm ${op} timed out after ${limitMs / 1000}s (during ${label}); the zkVM tool was stopped`);
        }
        throw err;
      }
    };

    try {
      return await body({ mapping, cfg, agg, scratch, tool });
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  }

  /** Reads `run`'s metric lines; `live` reports each as it comes (else the caller reports them). */
  function metricsCollector(ctx: EngineContext, o: { live: boolean }) {
    const metrics: EngineMetrics = {};
    let publicValues: string | null = null;
    return {
      metrics,
      /** Metrics past which `run --mode meter` stopped early: they describe a partial run. */
      pastCostCap: (mapping: CliMapping) => (metrics.cells_used ?? 0) > mapping.meterCostCap,
      get publicValues() {
        return publicValues;
      },
      line(line: string) {
        const found = parseMetrics(line);
        if (found) {
          Object.assign(metrics, found);
          if (o.live) ctx.progress({ metrics: { ...metrics } });
        }
        publicValues = parsePublicValues(line) ?? publicValues;
      },
    };
  }

  return {
    name: 'openvm',

    async commit(ctx: EngineContext, program: ProgramFiles): Promise<CommitResult> {
      return session(ctx, 'commit', STARK_ONLY, async (s) => {
        const outputDir = join(s.scratch, 'commit');
        const exit = await s.tool(
          'commit',
          s.mapping.commit(s.cfg, s.agg, { exe: program.vmexePath, outputDir, targetDir: join(s.scratch, 'target') }),
        );
        if (exit.code !== 0) throw failure('commit', exit);
        const commit = await readToolJson(outputDir, '.commit.json');
        const baseline = await readToolJson(outputDir, '.baseline.json');
        const { app_exe_commit, app_vm_commit } = commit;
        if (!isHex32(app_exe_commit) || !isHex32(app_vm_commit))
          throw new Error('openvm engine: the commit JSON the tool wrote lacks 32-byte hex commits');
        if (String(baseline.app_exe_commit).toLowerCase() !== app_exe_commit.toLowerCase()) {
          throw new Error('openvm engine: the tool wrote a baseline for another executable than its commit');
        }
        if (isHex32(ctx.config.app_vm_commit) && ctx.config.app_vm_commit.toLowerCase() !== app_vm_commit.toLowerCase()) {
          throw new Error(
            `openvm engine: this host's keys for config ${ctx.config.id} give app_vm_commit ${app_vm_commit}, the config says ${ctx.config.app_vm_commit}; ` +
              `the config directory holds another VM's keys (rebuild it with setup-config)`,
          );
        }
        return { app_exe_commit, app_vm_commit, baseline };
      });
    },

    async execute(ctx: EngineContext, req: ExecuteRequest): Promise<ExecuteResult> {
      return session(ctx, 'execute', STARK_ONLY, async (s) => {
        if (!s.mapping.runModes.includes(req.mode)) {
          throw new JobError(`unknown execution mode '${req.mode}' (openvm ${s.mapping.label} runs ${s.mapping.runModes.join(', ')})`);
        }
        await checkInputFile(req.inputPath);
        const seen = metricsCollector(ctx, { live: true });
        const exit = await s.tool(
          `run --mode ${req.mode}`,
          s.mapping.run(s.cfg, { exe: req.vmexePath, input: req.inputPath, mode: req.mode }),
          (l) => seen.line(l),
        );
        const result = { public_values: seen.publicValues ?? '0x', stdout: guestStdout(exit.stdout), ...seen.metrics };
        // The meter and segment modes print the instruction count (run.rs:275-288); pure mode prints none, so only those enforce a cycle limit.
        overCycleLimit(ctx, seen.metrics.num_instructions, req.cycleLimit);
        if (exit.code === 0 && req.mode === 'meter' && seen.pastCostCap(s.mapping)) {
          // Metering suspends past the cap and the tool still exits 0: the guest did not finish.
          return {
            ...result,
            exit_code: 1,
            error: `metered execution stopped past the tool's cost cap of ${s.mapping.meterCostCap} cells before the program finished`,
          };
        }
        if (exit.code === 0) return { ...result, exit_code: 0, error: null };
        const err = failure('run', exit);
        if (!(err instanceof JobError)) throw err;
        return { ...result, exit_code: guestExitCode(exit.stderrTail), error: err.message };
      });
    },

    async prove(ctx: EngineContext, req: ProveRequest): Promise<ProveResult> {
      if (req.childProofPaths.length > 0) {
        throw new JobError('deferred child proofs are not supported by the openvm engine: `cargo openvm prove` takes no child proofs');
      }
      return session(ctx, 'prove', { evmProve: req.proof_type === 'evm', evmVerify: false }, async (s) => {
        await checkInputFile(req.inputPath);
        // The keys it proves with must be the published ones (key-digests.ts); hashed once per file, not per job.
        const keys = publishedKeyFiles(s.cfg, s.agg);
        await checkKeyDigests(ctx.config.id, ctx.publishedKeys, {
          app_pk: keys.app_pk.path,
          app_vk: keys.app_vk.path,
          agg_pk: keys.agg_pk.path,
          agg_vk: keys.agg_vk.path,
          ...(req.proof_type === 'evm' ? { halo2_pk: keys.halo2_pk.path } : {}),
        });
        // Reported once checked against the cost cap: progress reports cannot be taken back.
        const seen = metricsCollector(ctx, { live: false });

        // A metered run first: it fails fast (and cheaply) on a guest that cannot
        // finish, and it is where the tool prints instruction and cell counts.
        ctx.progress({ phase: 'Executing' });
        const exec = await s.tool(
          'run --mode meter',
          s.mapping.run(s.cfg, { exe: req.vmexePath, input: req.inputPath, mode: 'meter' }),
          (l) => seen.line(l),
        );
        if (exec.code !== 0) throw failure('run', exec);
        const metered: EngineMetrics = { ...seen.metrics };
        if (seen.pastCostCap(s.mapping)) {
          ctx.log(
            `note: metering stopped past the tool's cost cap (${s.mapping.meterCostCap} cells); its counts are partial and are not reported`,
          );
          delete metered.num_instructions;
          delete metered.cells_used;
        }
        ctx.progress({ phase: 'Executed', metrics: metered });
        // A job with a cycle limit is refused here, before proving, when the metered run went
        // past it: `run --mode meter` prints "Number of instructions executed: {instret}" and
        // "Total cost: {cost}" (v2.0.1:crates/cli/src/commands/run.rs:275-280; the mode is
        // clap's ExecutionMode::Meter, run.rs:22-31, taken by `--mode`, run.rs:64-71). A count
        // cut short by the cost cap is a lower bound: over the limit already, it is refused too.
        overCycleLimit(ctx, seen.metrics.num_instructions, req.cycleLimit);

        ctx.progress({ phase: 'AppProving' });
        const reader = proveOutputReader(req.proof_type, (phase) => ctx.progress({ phase }));
        const args = s.mapping.prove(s.cfg, s.agg, {
          kind: req.proof_type,
          exe: req.vmexePath,
          input: req.inputPath,
          proof: req.outputPath,
          targetDir: join(s.scratch, 'target'),
        });
        const exit = await s.tool(`prove ${req.proof_type}`, args, (l) => reader.line(l));
        if (exit.code !== 0) throw failure(`prove ${req.proof_type}`, exit);
        reader.done();
        const stated = await checkWrittenProof(req.proof_type, req.outputPath);
        const segments = reader.segments;
        if (segments !== null) ctx.progress({ metrics: { num_segments: segments } });
        return { ...metered, ...(segments !== null ? { num_segments: segments } : {}), public_values: stated ?? seen.publicValues ?? '0x' };
      });
    },

    async verify(ctx: EngineContext, req: VerifyRequest): Promise<VerifyResult> {
      if (req.proof_type === 'evm') return verifyEvm(ctx, req);
      const { baselinePath, app_exe_commit } = req;
      if (baselinePath === null || app_exe_commit === null) {
        throw new Error("openvm engine: a STARK verification needs the program's baseline and commit; the job carried none");
      }
      return session(ctx, 'verify', STARK_ONLY, async (s) => {
        const baseline = JSON.parse(await readFile(baselinePath, 'utf8')) as { app_exe_commit?: unknown };
        if (String(baseline.app_exe_commit).toLowerCase() !== app_exe_commit.toLowerCase()) {
          throw new Error(
            `openvm engine: the verification baseline is for ${String(baseline.app_exe_commit)}, not the program's ${app_exe_commit}`,
          );
        }
        const canonical = await canonicalStarkProof(req.proofPath);
        if ('reason' in canonical) return { verified: false, reason: canonical.reason };
        const proofPath = join(s.scratch, 'proof.stark.json');
        await writeFile(proofPath, JSON.stringify(canonical.proof));
        const exit = await s.tool(
          'verify stark',
          s.mapping.verifyStark(s.cfg, s.agg, { proof: proofPath, baseline: baselinePath, targetDir: join(s.scratch, 'target') }),
        );
        return verdict('verify stark', exit);
      });
    },
  };

  /** `verify evm` against this host's verifier, with the program's and the config's commits. */
  function verifyEvm(ctx: EngineContext, req: VerifyRequest): Promise<VerifyResult> {
    return session(ctx, 'verify', { evmProve: false, evmVerify: true }, async (s) => {
      const checked = await checkEvmProof(req.proofPath);
      if ('reason' in checked) return { verified: false, reason: checked.reason };
      // Against a program: its registered commit. Against a config alone: the commit the
      // proof names, which the verifier then checks together with the config's VM commit.
      const appExeCommit = (req.app_exe_commit ?? checked.proof.app_exe_commit).toLowerCase();
      if (checked.proof.app_exe_commit !== appExeCommit) {
        return {
          verified: false,
          reason: `the proof is for app_exe_commit ${checked.proof.app_exe_commit}, not this program's ${req.app_exe_commit}`,
        };
      }
      if (!isHex32(ctx.config.app_vm_commit)) {
        throw new Error(`openvm engine: config ${ctx.config.id} records no app_vm_commit, so an EVM proof cannot be bound to its VM`);
      }
      // --app-commit takes a commit JSON like the one `commit` writes (AppExecutionCommit).
      const appCommit = join(s.scratch, 'app.commit.json');
      await writeFile(appCommit, JSON.stringify({ app_exe_commit: appExeCommit, app_vm_commit: ctx.config.app_vm_commit.toLowerCase() }));
      const exit = await s.tool('verify evm', s.mapping.verifyEvm(s.agg, { proof: req.proofPath, appCommit }));
      return verdict('verify evm', exit);
    });
  }
}

const STARK_ONLY: Needs = { evmProve: false, evmVerify: false };

/** A verify command's exit as a verdict; host failures are thrown. */
function verdict(label: string, exit: ToolExit): VerifyResult {
  if (exit.code === 0) return { verified: true, reason: null };
  const err = failure(label, exit);
  if (!(err instanceof JobError)) throw err;
  return { verified: false, reason: err.message };
}

/** Classifies a non-zero exit (see the header and output.ts classifyFailure). */
function failure(label: string, exit: ToolExit): Error {
  const how = exit.signal ? `killed by ${exit.signal}` : `exit status ${exit.code}`;
  const tail = errorTail(exit.stderrTail, `zkVM tool failed (${label}, ${how})`);
  switch (classifyFailure(exit.code, exit.signal, exit.stderrTail)) {
    case 'command-line':
      return new Error(
        `host problem: the zkVM tool rejected the '${label}' command line (${how}); the flag mapping in prover-agent/src/engine/openvm/commands.ts does not fit the installed version:\n${tail}`,
      );
    case 'host':
      return new Error(
        `host problem (not the caller's; the job may run again elsewhere): the zkVM tool failed during '${label}' (${how}):\n${tail}`,
      );
    case 'caller':
      return new JobError(tail);
  }
}

/** The guest's exit code when the tool states one; 1 otherwise (the run failed). */
function guestExitCode(stderrTail: string[]): number {
  const m = /exit code:?\s*(\d+)/i.exec(stderrTail.join('\n'));
  return m ? Number(m[1]) : 1;
}

function redactor(pairs: [string, string][]): (text: string) => string {
  const ordered = pairs.filter(([from]) => from.length > 1).sort((a, b) => b[0].length - a[0].length);
  return (text) => ordered.reduce((t, [from, to]) => t.split(from).join(to), text);
}

/** Throws CycleLimitError when the tool's instruction count (one instruction, one cycle) is past the job's cycle limit. */
function overCycleLimit(ctx: EngineContext, instructions: number | undefined, limit: number | null | undefined): void {
  if (limit == null || instructions === undefined || instructions <= limit) return;
  ctx.log(`openvm engine: the metered run took ${instructions} cycles, past the job's cycle limit of ${limit}; not proving`);
  throw new CycleLimitError(instructions, limit);
}
