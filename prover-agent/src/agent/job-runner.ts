// Runs one claimed job from start to its report: work directory, artifacts, the
// engine in its own process group, heartbeats (which carry phases and metrics and
// bring back cancel requests), logs, results, and exactly one ending callback.
//
// How a run ends, and what the service is told:
//   engine result              → results uploaded, /complete
//   engine JobError            → /fail, not retryable (the caller's problem: bad input, guest panic)
//   engine crash / agent error → /fail, retryable (another attempt may succeed)
//   cancel seen on a heartbeat → engine killed, /canceled
//   agent shutting down        → engine killed, /release (requeued for another agent)
//   lease lost (409)           → engine killed, nothing reported: the job has moved on
import { mkdir, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EngineOptions } from '../engine/index.ts';
import type { CommitResult, EngineMetrics, ExecuteResult, ProveResult, ProvePhase, VerifyResult } from '../engine/types.ts';
import type { ClaimedJob, CompleteRequest } from '../protocol.ts';
import { HttpError } from './http.ts';
import { errorText, type Logger } from './log.ts';
import { LogShipper } from './log-shipper.ts';
import type { Metrics } from './metrics.ts';
import type { LeaseClient, ServiceClient } from './service-client.ts';
import { startEngine, type EngineOp, type EngineRun } from './engine-process.ts';

export interface RunnerOptions {
  workRoot: string;
  engineOptions: EngineOptions;
  /** SIGTERM → SIGKILL grace for the engine's process group. */
  killGraceMs: number;
  agentName: string;
  machineType: string;
}

/** What callers call a job's subject: logs name the id the caller holds, not the internal job id. */
const subjectNoun: Record<ClaimedJob['kind'], string> = { commit: 'program', proof: 'proof', execute: 'execution', verify: 'verification' };

export type RunOutcome = 'completed' | 'failed' | 'requeued' | 'canceled' | 'released' | 'lost';

export class JobRunner {
  readonly job: ClaimedJob;
  private readonly lease: LeaseClient;
  private readonly logs: LogShipper;
  private readonly log: Logger;
  private readonly dir: string;
  private engine: EngineRun | null = null;
  private phase: ProvePhase | undefined;
  private metrics: EngineMetrics = {};
  /** Why the run is being stopped early, if it is. */
  private stopReason: 'cancel' | 'release' | 'lost' | null = null;
  private readonly stopped = new AbortController();
  private readonly opts: RunnerOptions;
  private readonly gpus: number[];
  private readonly metricsSink: Metrics;

  constructor(service: ServiceClient, job: ClaimedJob, gpus: number[], opts: RunnerOptions, log: Logger, metrics: Metrics) {
    this.job = job;
    this.gpus = gpus;
    this.opts = opts;
    this.lease = service.lease(job);
    this.log = log.child({ job_id: job.id, kind: job.kind, attempt: job.attempt });
    this.logs = new LogShipper(this.lease, job.log, this.log);
    this.dir = join(opts.workRoot, `${job.id}-${job.attempt}`);
    this.metricsSink = metrics;
  }

  /** Stops the run early: `release` gives the job back (shutdown), `cancel` follows a cancel request. */
  stop(reason: 'cancel' | 'release' | 'lost'): void {
    if (this.stopReason) return;
    this.stopReason = reason;
    this.stopped.abort(new Error(reason));
    void this.engine?.kill(this.opts.killGraceMs);
  }

  async run(): Promise<RunOutcome> {
    const started = Date.now();
    const heartbeats = this.heartbeatLoop();
    let outcome: RunOutcome;
    try {
      await mkdir(this.dir, { recursive: true });
      this.logs.line(`[agent ${this.opts.agentName}] attempt ${this.job.attempt} of ${subjectNoun[this.job.kind]} ${this.job.subject_id} on ${this.opts.machineType}${this.gpus.length ? ` (GPUs ${this.gpus.join(',')})` : ''}`);
      await this.logs.flush(); // who ran an attempt is on record even if this agent dies
      outcome = await this.execute();
    } catch (err) {
      outcome = await this.endEarlyOr(() => this.report('fail', { error: `agent error: ${errorText(err)}`, retryable: true }));
    } finally {
      this.stopped.abort(new Error('done'));
      await heartbeats;
      await rm(this.dir, { recursive: true, force: true }).catch(() => {});
    }
    this.metricsSink.jobFinished(this.job.kind, outcome, (Date.now() - started) / 1000);
    this.log.info('job finished', { outcome, seconds: (Date.now() - started) / 1000 });
    return outcome;
  }

  private async execute(): Promise<RunOutcome> {
    const files = Object.fromEntries(this.job.artifacts.map((name) => [name, join(this.dir, name)]));
    await Promise.all(this.job.artifacts.map((name) => this.lease.download(name, files[name]!, this.stopped.signal)));
    if (this.stopReason) return this.endEarly();

    const op = this.operation(files);
    const opStarted = Date.now();
    this.engine = await startEngine(
      { engine: this.job.config.engine, engineOptions: this.opts.engineOptions, config: this.job.config, workDir: this.dir, gpus: this.gpus, operation: op },
      (e) => {
        if (e.type === 'log') this.logs.line(e.line);
        else if (e.type === 'progress') this.progress(e.phase, e.metrics);
      },
    );
    if (this.stopReason) void this.engine.kill(this.opts.killGraceMs); // stopped while it was starting
    const result = await this.engine.done;
    this.metricsSink.engineDuration(this.job.config.engine, op.op, (Date.now() - opStarted) / 1000);
    if (this.stopReason) return this.endEarly();

    switch (result.kind) {
      case 'result':
        return this.endEarlyOr(() => this.finish(op, result.result));
      case 'job-error':
        this.logs.line(`error: ${result.message}`);
        return this.endEarlyOr(() => this.report('fail', { error: result.message, retryable: false }));
      case 'crash':
      case 'killed': {
        const message = result.kind === 'crash' ? result.message : `engine killed by ${result.signal}`;
        this.logs.line(`engine failure: ${message}`);
        return this.endEarlyOr(() => this.report('fail', { error: message, retryable: true }));
      }
    }
  }

  /** The engine operation this job asks for. */
  private operation(f: Record<string, string>): EngineOp {
    const j = this.job;
    switch (j.kind) {
      case 'commit':
        return { op: 'commit', elfPath: f.elf!, vmexePath: f.vmexe! };
      case 'execute':
        return { op: 'execute', elfPath: f.elf!, vmexePath: f.vmexe!, inputPath: f.input!, mode: j.execution?.mode ?? 'pure' };
      case 'verify':
        return {
          op: 'verify',
          proof_type: j.verification?.proof_type ?? 'stark',
          proofPath: f.proof!,
          baselinePath: f.baseline ?? null,
          app_exe_commit: j.program?.app_exe_commit ?? null,
        };
      case 'proof':
        return {
          op: 'prove',
          kind: j.proof!.proof_type,
          elfPath: f.elf!,
          vmexePath: f.vmexe!,
          inputPath: f.input!,
          childProofPaths: j.artifacts.filter((n) => n.startsWith('child-')).map((n) => f[n]!),
          outputPath: join(this.dir, `${j.proof!.proof_type}-proof.json`),
          app_exe_commit: j.program?.app_exe_commit ?? '',
          baselinePath: f.baseline!,
        };
    }
  }

  /** Uploads what the engine produced and completes the job. */
  private async finish(op: EngineOp, result: unknown): Promise<RunOutcome> {
    let complete: CompleteRequest;
    if (op.op === 'commit') {
      const r = result as CommitResult;
      const baseline = join(this.dir, 'baseline.json');
      await writeFile(baseline, JSON.stringify(r.baseline));
      await this.logs.flush();
      await this.lease.upload('baseline', baseline);
      complete = { kind: 'commit', app_exe_commit: r.app_exe_commit, app_vm_commit: r.app_vm_commit };
    } else if (op.op === 'prove') {
      const r = result as ProveResult;
      await this.logs.flush();
      await this.lease.upload(op.kind, op.outputPath);
      complete = { kind: 'proof', proofs: [op.kind], public_values: r.public_values, metrics: pickMetrics({ ...this.metrics, ...r }) };
    } else if (op.op === 'verify') {
      const r = result as VerifyResult;
      this.logs.line(r.verified ? 'proof verified' : `proof rejected: ${r.reason}`);
      complete = { kind: 'verify', verified: r.verified, reason: r.reason };
    } else {
      const r = result as ExecuteResult;
      if (r.stdout) this.logs.line(r.stdout.trimEnd());
      if (r.error) this.logs.line(`error: ${r.error}`);
      complete = { kind: 'execute', exit_code: r.exit_code, public_values: r.public_values, error: r.error, metrics: pickMetrics(r) };
    }
    return this.report('complete', complete);
  }

  /** Sends the callback that ends the lease (logs first: they are refused once it ended). */
  private async report(how: 'complete' | 'fail', body: CompleteRequest | { error: string; retryable: boolean }): Promise<RunOutcome> {
    await this.logs.flush();
    if (how === 'complete') {
      const r = await this.lease.complete(body as CompleteRequest);
      return r.status === 'completed' ? 'completed' : 'failed';
    }
    const r = await this.lease.fail(body as { error: string; retryable: boolean });
    return r.status === 'requeued' ? 'requeued' : 'failed';
  }

  /** Runs `report` unless the run was stopped meanwhile; a 409 means the lease was lost. */
  private async endEarlyOr(report: () => Promise<RunOutcome>): Promise<RunOutcome> {
    if (this.stopReason) return this.endEarly();
    try {
      return await report();
    } catch (err) {
      if (err instanceof HttpError && err.status === 409) {
        this.log.warn('lease lost before the job could report', { error: err.message });
        return 'lost';
      }
      throw err;
    }
  }

  private async endEarly(): Promise<RunOutcome> {
    await this.engine?.kill(this.opts.killGraceMs);
    if (this.stopReason === 'lost') return 'lost';
    try {
      if (this.stopReason === 'cancel') {
        this.logs.line('canceled: the engine was stopped');
        await this.logs.flush();
        await this.lease.canceled();
        return 'canceled';
      }
      this.logs.line('released: the agent is shutting down; the job goes back to the queue');
      await this.logs.flush();
      await this.lease.release();
      return 'released';
    } catch (err) {
      if (err instanceof HttpError && err.status === 409) return 'lost';
      throw err;
    }
  }

  private progress(phase: ProvePhase | undefined, metrics: EngineMetrics | undefined) {
    if (metrics) this.metrics = { ...this.metrics, ...metrics };
    if (phase && phase !== this.phase) {
      this.phase = phase;
      this.logs.line(`phase: ${phase}`);
      void this.beat(); // phase changes reach callers without waiting for the next beat
    }
  }

  /** One heartbeat; a cancel answer or a lost lease stops the run. */
  private async beat(): Promise<void> {
    try {
      const r = await this.lease.heartbeat({ phase: this.phase, metrics: pickMetrics(this.metrics) }, { attempts: 3, timeoutMs: 10_000 });
      if (r.cancel) this.stop('cancel');
    } catch (err) {
      if (err instanceof HttpError && err.status === 409) {
        if (!this.stopReason) this.log.warn('lease lost: stopping the engine', { error: err.message });
        this.stop('lost');
      } else {
        this.metricsSink.heartbeatFailed();
        this.log.warn('heartbeat failed', { error: errorText(err) });
      }
    }
  }

  private async heartbeatLoop(): Promise<void> {
    const every = this.job.heartbeat_interval_ms;
    while (!this.stopped.signal.aborted) {
      await sleep(every, undefined, { signal: this.stopped.signal }).catch(() => {}); // aborted: the run is over
      if (this.stopped.signal.aborted) return;
      await this.beat();
    }
  }
}

function pickMetrics(m: EngineMetrics): EngineMetrics {
  const out: EngineMetrics = {};
  for (const k of ['num_instructions', 'cells_used', 'num_segments', 'total_cycle', 'total_tick'] as const) {
    const v = m[k];
    if (typeof v === 'number' && Number.isFinite(v) && v >= 0) out[k] = Math.round(v);
  }
  return out;
}

