// Runs one claimed job from start to its report: work directory, artifacts, the
// engine in its own process group (a warm worker or a process of its own, see
// engine-pool.ts), the lease watch (heartbeats that renew the lease and carry phases
// and metrics, and read-only status checks between them that bring back cancel
// requests within about a second), logs, results, and exactly one ending callback.
//
// How a run ends, and what the service is told:
//   engine result              → results uploaded, /complete (which may claim the agent's next job)
//   engine JobError            → /fail, not retryable (the caller's problem: bad input, guest panic)
//   engine crash / agent error → /fail, retryable (another attempt may succeed)
//   cancel seen by the watch   → engine killed (short grace), /canceled
//   canceled before a report   → the service answers `canceled` to /complete or /fail
//   agent shutting down        → engine killed, /release (requeued for another agent)
//   lease lost (409)           → engine killed, nothing reported: the job has moved on
//   its deadline, or the host's time limit for its engine (--job-time-limit), passed
//   before the engine's end    → engine killed (short grace), /fail, not retryable
//
// The time limit is wall-clock time from the claim, whatever the guest does: an engine
// counts instructions, and a guest can make each cost the host milliseconds.
import { mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EngineOptions } from '../engine/types.ts';
import {
  engineTraits,
  MAX_INLINE_RESULT_BYTES,
  type ClaimedJob,
  type CompleteRequest,
  type EngineMetrics,
  type FailRequest,
  type LogChunk,
  type NextClaim,
  type ProvePhase,
  type ResultName,
} from '../protocol.ts';
import type { ArtifactCache } from './artifact-cache.ts';
import { HttpError } from './http.ts';
import { errorText, type Logger } from './log.ts';
import { LogShipper } from './log-shipper.ts';
import type { Metrics } from './metrics.ts';
import type { LeaseClient, ServiceClient } from './service-client.ts';
import type { EngineOp, EngineRun } from './engine-process.ts';
import type { EngineLauncher } from './engine-pool.ts';
import { pickMetrics } from './kinds/contract.ts';
import { handlerOf } from './kinds/index.ts';

export interface RunnerOptions {
  workRoot: string;
  engineOptions: EngineOptions;
  /** Starts engine operations (the agent's pool: warm workers for GPU-less engines, a process per operation otherwise). */
  engines: EngineLauncher;
  /** Where the input files other jobs share are kept between jobs. */
  artifacts: ArtifactCache;
  /** SIGTERM → SIGKILL grace for the engine's process group. */
  killGraceMs: number;
  agentName: string;
  machineType: string;
  /** Per engine: the longest a job may hold this host, from its claim (AgentConfig.jobTimeLimitsMs). */
  jobTimeLimitsMs: Record<string, number>;
  /**
   * The claim to make with the completion, for the slot the job frees and its GPUs
   * (`gpus`); null for none (the agent is shutting down). Its job is the run's `nextJob`.
   */
  nextClaim?: (gpus: number[]) => NextClaim | null;
}

/** Why a run is stopped before its engine's end. */
type StopReason = 'cancel' | 'release' | 'lost' | 'time-limit' | 'deadline';
/** Reasons to stop whose result is dropped: the engine gets a short grace. */
const DROPPED: readonly StopReason[] = ['cancel', 'time-limit', 'deadline'];
/** Longer than setTimeout can wait (2^31 - 1 ms, ~24.8 days): no lease lasts that long. */
const NO_TIMER_MS = 2 ** 31;

/** SIGTERM → SIGKILL grace on cancel or a time limit: the result is dropped, so the engine gets at most this long to stop. */
export const CANCEL_KILL_GRACE_MS = 1000;

/** Steps a run waits on: artifact downloads, the engine, log flushes, result uploads (small ones ride with the report), the report (complete, fail, canceled, release). */
type Step = 'download' | 'engine' | 'logs' | 'upload' | 'report';

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
  /** The job the completion's claim brought (null: none to be had); undefined when it made none. */
  nextJob: ClaimedJob | null | undefined = undefined;
  /** Why the run is being stopped early, if it is. */
  private stopReason: StopReason | null = null;
  /** The engine's operation has ended (a time limit that passes now changes nothing). */
  private engineEnded = false;
  private readonly stopped = new AbortController();
  private readonly opts: RunnerOptions;
  private readonly service: ServiceClient;
  private readonly gpus: number[];
  private readonly metricsSink: Metrics;
  /** Milliseconds spent waiting on each step, reported with the job's end (where a job's time goes). */
  private readonly spent: Record<Step, number> = { download: 0, engine: 0, logs: 0, upload: 0, report: 0 };

  constructor(service: ServiceClient, job: ClaimedJob, gpus: number[], opts: RunnerOptions, log: Logger, metrics: Metrics) {
    this.service = service;
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
  stop(reason: StopReason): void {
    if (this.stopReason) return;
    this.stopReason = reason;
    this.stopped.abort(new Error(reason));
    void this.engine?.kill(this.killGraceMs());
  }

  /** How long the engine may take to stop after SIGTERM: short on cancel or a time limit, when nothing it does is kept. */
  private killGraceMs(): number {
    return this.stopReason && DROPPED.includes(this.stopReason)
      ? Math.min(this.opts.killGraceMs, CANCEL_KILL_GRACE_MS)
      : this.opts.killGraceMs;
  }

  /** When the job must stop, from now (its claim): its deadline, or the host's limit for its engine if that is sooner. */
  private timeLimit(): { ms: number; reason: 'deadline' | 'time-limit' } {
    const host = this.opts.jobTimeLimitsMs[this.job.config.engine] ?? Infinity;
    const deadline = this.job.deadline_in_ms ?? Infinity;
    return deadline <= host ? { ms: Math.max(0, deadline), reason: 'deadline' } : { ms: host, reason: 'time-limit' };
  }

  async run(): Promise<RunOutcome> {
    const started = Date.now();
    const watch = this.watchLease();
    const limit = this.timeLimit();
    if (limit.ms <= 0) this.stop(limit.reason); // a deadline passed before the claim came: nothing starts
    const limitTimer =
      limit.ms > 0 && limit.ms < NO_TIMER_MS
        ? setTimeout(() => {
            if (!this.engineEnded) this.stop(limit.reason);
          }, limit.ms)
        : null;
    let outcome: RunOutcome;
    try {
      await mkdir(this.dir, { recursive: true });
      // Shipped within half a second, or with the report of a job that ends sooner (if the
      // agent dies first, the service's lease check writes that the attempt was lost).
      this.logs.line(
        `[agent ${this.opts.agentName}] attempt ${this.job.attempt} of ${handlerOf(this.job.kind).subjectNoun} ${this.job.subject_id} on ${this.opts.machineType}${this.gpus.length ? ` (GPUs ${this.gpus.join(',')})` : ''}`,
      );
      outcome = await this.execute();
    } catch (err) {
      outcome = await this.endEarlyOr(() => this.report('fail', { error: `agent error: ${errorText(err)}`, retryable: true }));
    } finally {
      if (limitTimer) clearTimeout(limitTimer);
      this.stopped.abort(new Error('done'));
      await watch;
      await rm(this.dir, { recursive: true, force: true }).catch(() => {});
    }
    this.metricsSink.jobFinished(this.job.kind, outcome, (Date.now() - started) / 1000);
    const ms = Object.fromEntries(Object.entries(this.spent).map(([k, v]) => [k, Math.round(v)]));
    this.log.info('job finished', { outcome, seconds: (Date.now() - started) / 1000, ms });
    return outcome;
  }

  private async execute(): Promise<RunOutcome> {
    const files = Object.fromEntries(this.job.artifacts.map((name) => [name, join(this.dir, name)]));
    await this.timed('download', () => Promise.all(this.job.artifacts.map((name) => this.fetchArtifact(name, files[name]))));
    if (this.stopReason) return this.endEarly();

    const op = handlerOf(this.job.kind).operation(this.job, files, this.dir);
    // An engine that proves with the config's published keys checks its copies against what the service publishes now.
    const publishedKeys =
      op.op === 'prove' && engineTraits(this.job.config.engine)?.usesPublishedKeys
        ? await this.timed('download', () => this.service.publishedKeys(this.job.config.id))
        : undefined;
    if (this.stopReason) return this.endEarly();
    const opStarted = Date.now();
    this.engine = await this.opts.engines.start(
      {
        engine: this.job.config.engine,
        engineOptions: this.opts.engineOptions,
        config: this.job.config,
        publishedKeys,
        workDir: this.dir,
        gpus: this.gpus,
        operation: op,
      },
      (e) => {
        if (e.type === 'log') this.logs.line(e.line);
        else if (e.type === 'progress') this.progress(e.phase, e.metrics);
      },
    );
    this.log.info('engine started', { pid: this.engine.pid, op: op.op }); // which process runs the job (a warm worker's args do not say)
    if (this.stopReason) void this.engine.kill(this.killGraceMs()); // stopped while it was starting
    const result = await this.engine.done;
    this.engineEnded = true;
    this.spent.engine += Date.now() - opStarted;
    this.metricsSink.engineDuration(this.job.config.engine, op.op, (Date.now() - opStarted) / 1000);
    if (this.stopReason) return this.endEarly();

    switch (result.kind) {
      case 'result':
        return this.endEarlyOr(() => this.finish(op, result.result));
      case 'job-error':
        this.logs.line(`error: ${result.message}`);
        // A cycle limit reached carries the figure: the service words the error and charges the run (docs/callers.md "Job limits").
        return this.endEarlyOr(() =>
          this.report('fail', { error: result.message, retryable: false, ...(result.limit ? { limit: result.limit } : {}) }),
        );
      case 'crash':
      case 'killed': {
        const message = result.kind === 'crash' ? result.message : `engine killed by ${result.signal}`;
        this.logs.line(`engine failure: ${message}`);
        return this.endEarlyOr(() => this.report('fail', { error: message, retryable: true }));
      }
    }
  }

  /** One input file: from the claim when it came inline, from the artifact cache when other jobs share it, downloaded otherwise. */
  private async fetchArtifact(name: string, path: string): Promise<void> {
    const inline = this.job.inline_artifacts?.[name];
    if (inline !== undefined) {
      await writeFile(path, Buffer.from(inline, 'base64'));
      this.metricsSink.artifactFetched('inline');
      return;
    }
    const download = (to: string) => this.lease.download(name, to, this.stopped.signal);
    const id = this.job.shared_artifacts?.[name];
    if (id === undefined) {
      await download(path);
      this.metricsSink.artifactFetched('off');
    } else this.metricsSink.artifactFetched(await this.opts.artifacts.provide(id, path, download));
  }

  /**
   * Sends a result file: inline with /complete when it is small (and the service takes
   * results inline), uploaded first otherwise. Returns what /complete carries.
   */
  private async sendResult(name: ResultName, path: string): Promise<CompleteRequest['results']> {
    if (this.serviceTakesEndings() && (await stat(path)).size <= MAX_INLINE_RESULT_BYTES) return { [name]: await readFile(path, 'utf8') };
    await this.timed('upload', () => this.lease.upload(name, path));
    return undefined;
  }

  /**
   * Whether the service takes a lease's last log chunk and small results with the call
   * that ends it (protocol LeaseEnding): a service that sends shared_artifacts does.
   * Against an older one, logs are flushed and results uploaded first, as it expects.
   */
  private serviceTakesEndings(): boolean {
    return this.job.shared_artifacts !== undefined;
  }

  /** Sends what the engine produced and completes the job (the report is its kind's). */
  private async finish(op: EngineOp, result: unknown): Promise<RunOutcome> {
    const complete = await handlerOf(this.job.kind).report(op, result, {
      dir: this.dir,
      progress: this.metrics,
      log: (line) => this.logs.line(line),
      sendResult: (name, path) => this.sendResult(name, path),
    });
    return this.report('complete', complete);
  }

  /** Sends the callback that ends the lease, with the logs not sent yet (they are refused once it ended). */
  private async report(how: 'complete' | 'fail', body: CompleteRequest | FailRequest): Promise<RunOutcome> {
    const ending = await this.lastLogs();
    // `canceled`: the caller canceled before the report landed; the service dropped it.
    if (how === 'complete') {
      const nextClaim = this.opts.nextClaim?.(this.gpus);
      const r = await this.timed('report', () =>
        this.lease.complete({ ...(body as CompleteRequest), ...ending, ...(nextClaim ? { next_claim: nextClaim } : {}) }),
      );
      this.nextJob = r.next;
      return r.status === 'completed' ? 'completed' : r.status === 'canceled' ? 'canceled' : 'failed';
    }
    const r = await this.timed('report', () => this.lease.fail({ ...(body as FailRequest), ...ending }));
    return r.status === 'requeued' ? 'requeued' : r.status === 'canceled' ? 'canceled' : 'failed';
  }

  /** The logs not sent yet, for the call that ends the lease (or flushed before it, to an older service). */
  private async lastLogs(): Promise<{ log?: LogChunk }> {
    // last() also puts what a gap left out, and its last lines, into what is pending.
    const log = await this.timed('logs', () => this.logs.last());
    if (this.serviceTakesEndings()) return log ? { log } : {};
    await this.timed('logs', () => this.logs.flush());
    return {};
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
    await this.engine?.kill(this.killGraceMs());
    if (this.stopReason === 'lost') return 'lost';
    if (this.stopReason === 'time-limit' || this.stopReason === 'deadline') {
      const error = this.limitMessage(this.stopReason);
      this.logs.line(`stopped: ${error}`);
      try {
        return await this.report('fail', { error, retryable: false });
      } catch (err) {
        if (err instanceof HttpError && err.status === 409) return 'lost';
        throw err;
      }
    }
    try {
      if (this.stopReason === 'cancel') {
        this.logs.line('canceled: the engine was stopped');
        const ending = await this.lastLogs();
        await this.timed('report', () => this.lease.canceled(ending));
        return 'canceled';
      }
      this.logs.line('released: the agent is shutting down; the job goes back to the queue');
      const ending = await this.lastLogs();
      await this.timed('report', () => this.lease.release(ending));
      return 'released';
    } catch (err) {
      if (err instanceof HttpError && err.status === 409) return 'lost';
      throw err;
    }
  }

  /** The error of a job stopped at its deadline or at the host's time limit: not retried (another host would stop it too). */
  private limitMessage(reason: 'time-limit' | 'deadline'): string {
    if (reason === 'deadline') return 'Deadline passed: the job was still running at its deadline; the agent stopped its engine';
    const seconds = Math.round(this.timeLimit().ms / 1000);
    return `Time limit reached: the job held its host for ${seconds} s, the most the host allows a ${this.job.config.engine} job; the agent stopped its engine`;
  }

  private async timed<T>(step: Step, f: () => Promise<T>): Promise<T> {
    const t = performance.now();
    try {
      return await f();
    } finally {
      this.spent[step] += performance.now() - t;
    }
  }

  /** Phases and metrics go up with the next heartbeat (the lease's one write per interval). */
  private progress(phase: ProvePhase | undefined, metrics: EngineMetrics | undefined) {
    if (metrics) this.metrics = { ...this.metrics, ...metrics };
    if (phase && phase !== this.phase) {
      this.phase = phase;
      this.logs.line(`phase: ${phase}`);
    }
  }

  /** One heartbeat: renews the lease; a cancel answer or a lost lease stops the run. */
  private async beat(): Promise<void> {
    try {
      // The run's end aborts it: the agent's next job (whose lease runs already) waits on no renewal of this one.
      const r = await this.lease.heartbeat(
        { phase: this.phase, metrics: pickMetrics(this.metrics) },
        { attempts: 2, timeoutMs: Math.max(1000, this.job.heartbeat_interval_ms), signal: this.stopped.signal },
      );
      if (r.cancel) this.stop('cancel');
    } catch (err) {
      if (this.stopped.signal.aborted) return; // the run is over or stopping: this renewal no longer matters
      if (!this.leaseLost(err)) {
        this.metricsSink.heartbeatFailed();
        this.log.warn('heartbeat failed', { error: errorText(err) });
      }
    }
  }

  /** One read-only status check between heartbeats; failures wait for the next one. */
  private async checkStatus(every: number): Promise<void> {
    try {
      const status = await this.lease.status({ attempts: 1, timeoutMs: Math.max(1000, 2 * every), signal: this.stopped.signal });
      if (status.cancel) this.stop('cancel');
    } catch (err) {
      if (this.stopped.signal.aborted) return;
      if (!this.leaseLost(err)) this.log.debug('status check failed', { error: errorText(err) });
    }
  }

  /** A 409 means the job moved on without us: stop the engine, report nothing. */
  private leaseLost(err: unknown): boolean {
    if (!(err instanceof HttpError && err.status === 409)) return false;
    if (!this.stopReason) this.log.warn('lease lost: stopping the engine', { error: err.message });
    this.stop('lost');
    return true;
  }

  /**
   * Watches the lease while the job runs: a heartbeat every heartbeat_interval_ms (the
   * only D1 write) and, between them, a status check every cancel_check_interval_ms.
   */
  private async watchLease(): Promise<void> {
    const renewEvery = this.job.heartbeat_interval_ms;
    const checkEvery = Math.min(renewEvery, this.job.cancel_check_interval_ms ?? renewEvery); // an older service sends none
    let renewed = Date.now();
    while (!this.stopped.signal.aborted) {
      const untilRenewal = renewed + renewEvery - Date.now();
      await sleep(Math.max(0, Math.min(checkEvery, untilRenewal)), undefined, { signal: this.stopped.signal }).catch(() => {}); // aborted: the run is over
      if (this.stopped.signal.aborted) return;
      if (Date.now() >= renewed + renewEvery) {
        renewed = Date.now();
        await this.beat();
      } else await this.checkStatus(checkEvery);
    }
  }
}
