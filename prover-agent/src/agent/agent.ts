// The agent's main loop. States: starting → running → draining → stopped.
//
//   starting: report presence (who we are, what we serve); the answer carries the
//             queue token pulls use.
//   running:  while there may be work (at start, and each time a job ends and frees a
//             slot), claim without a notice: D1 decides the job. A job that completes
//             makes that claim with its completion (one request), and the job it brings
//             starts as it ends. Otherwise wait on the queue: pull a batch of notices,
//             claim for each, ack the notices whose job is settled and hand back the
//             others. An idle agent pulls (no D1 touched) and reports presence once a
//             minute (its only D1 write); a dead agent's jobs come back through their
//             lease checks, not through idle claims.
//   draining: (SIGTERM) no more pulls; running jobs may finish within the grace
//             period, then they are released back to the queue. A second SIGTERM
//             releases them at once.
//   stopped:  the agent leaves the fleet: the service stops counting it at once.
//
// A token the service refuses for good (401: unknown or revoked; 403: another machine
// type than the token's, or one the deployment does not price) drains the agent like a
// SIGTERM and ends run() with AgentRefused: retrying would only poll a refusal forever.
import { mkdir, readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { ClaimedJob, ClaimResponse, NextClaim } from '../protocol.ts';
import { ArtifactCache } from './artifact-cache.ts';
import type { AgentConfig } from './config.ts';
import { EnginePool } from './engine-pool.ts';
import { gpusForJob } from './gpus.ts';
import { errorText, type Logger } from './log.ts';
import { JobRunner } from './job-runner.ts';
import type { Metrics } from './metrics.ts';
import { decodeNotice, FleetQueue, type PulledMessage } from './queue-client.ts';
import { HttpError } from './http.ts';
import { ServiceClient } from './service-client.ts';

export type AgentState = 'starting' | 'running' | 'draining' | 'stopped';

/** The artifact cache's directory under the work dir (job directories are named after their jobs). */
const ARTIFACT_CACHE_DIR = 'artifact-cache';

/** The service's answer when it refuses this agent's token for good: no retry can change it. */
const refusedForGood = (err: unknown): err is HttpError => err instanceof HttpError && (err.status === 401 || err.status === 403);

/**
 * How long one claim may take. A claim is one D1 batch (milliseconds); one answered later
 * would hold a lease all but expired (the service's LEASE_TTL_SECONDS, src/jobs/settings.ts),
 * and a shutdown waits for the claim in flight. A lease granted to a claim given up on expires; its job goes back
 * to the queue.
 */
const CLAIM_TIMEOUT_MS = 15_000;

/** run()'s end when the service refused the agent's token for good (the refusal says why). */
export class AgentRefused extends Error {}

export class Agent {
  state: AgentState = 'starting';
  readonly id = crypto.randomUUID();
  private readonly running = new Map<string, JobRunner>();
  private freeGpus: number[];
  private readonly service: ServiceClient;
  private readonly queue: FleetQueue;
  /** Whether a claim without a notice may find work: at start, and after a job ends without its completion having claimed. */
  private mayHaveWork = true;
  private readonly stopping = new AbortController();
  /** Ends the loop's current sleep; a wake while it is not asleep ends its next one at once. */
  private waiting: (() => void) | null = null;
  private woken = false;
  private graceTimer: NodeJS.Timeout | null = null;
  /** Running jobs are being released (grace over, or a second SIGTERM): so is any a claim in flight brings. */
  private releasing = false;
  /** What the main loop waits on now (/healthz `waiting_on`): where a stuck agent is stuck. */
  private waitingOn = 'start';
  /** The service's refusal of this agent's token, once it came: the agent is draining because of it. */
  private refusal: HttpError | null = null;
  private readonly cfg: AgentConfig;
  private readonly log: Logger;
  private readonly metrics: Metrics;
  private readonly engines: EnginePool;
  private readonly artifactCache: ArtifactCache;

  constructor(cfg: AgentConfig, log: Logger, metrics: Metrics) {
    this.cfg = cfg;
    this.log = log.child({ agent: cfg.name, agent_id: this.id });
    this.metrics = metrics;
    this.freeGpus = [...cfg.gpus];
    const retry = { attempts: Infinity, signal: this.stopping.signal };
    this.service = new ServiceClient(cfg.apiUrl, cfg.agentToken, { onRetry: (r) => this.retrying('service', r) });
    const whoAmI = {
      agent_id: this.id,
      name: cfg.name,
      machine_type: cfg.machineType,
      gpus: cfg.gpus.length,
      engines: cfg.engines,
      configs: cfg.configs,
    };
    this.queue = new FleetQueue(this.service, whoAmI, { ...retry, onRetry: (r) => this.retrying('queue', r) });
    this.engines = new EnginePool({ size: cfg.concurrency, log: this.log });
    this.artifactCache = new ArtifactCache(join(cfg.workDir, ARTIFACT_CACHE_DIR), cfg.artifactCacheBytes, this.log);
  }

  async run(): Promise<void> {
    try {
      await this.cleanWorkDir();
      await this.artifactCache.open();
      // Warm workers load their engines while the agent announces itself: the first job finds them ready.
      for (const engine of this.cfg.engines) this.engines.warm(engine, this.cfg.engineOptions);
      try {
        await this.queue.reportPresence(true);
      } catch (err) {
        if (refusedForGood(err)) this.refused(err);
        else if (!this.stopping.signal.aborted) throw err;
      }
      if (!this.stopping.signal.aborted) await this.loop();
      await this.awaiting('running jobs', this.drain());
      if (!this.refusal)
        await this.awaiting(
          'the leave',
          this.queue
            .leave()
            .catch((err) =>
              this.log.warn('could not tell the service this agent left; it will age out of the fleet view', { error: errorText(err) }),
            ),
        );
    } finally {
      await this.awaiting('engine processes to exit', this.engines.close()); // no engine process outlives the agent
    }
    this.state = 'stopped';
    this.log.info('agent stopped');
    if (this.refusal) throw new AgentRefused(`the service refuses this agent: ${this.refusal.message}`);
  }

  /** The service refused this agent's token for good: stop taking work, as on SIGTERM, and say why. */
  private refused(err: HttpError): void {
    if (this.refusal) return;
    this.refusal = err;
    this.log.error('the service refuses this agent; stopping (fix its token or --machine-type, then start it again)', {
      error: errorText(err),
    });
    if (!this.stopping.signal.aborted) this.shutdown(); // a second shutdown would release running jobs at once
  }

  /** Awaits `step`, saying so in /healthz meanwhile. */
  private async awaiting<T>(what: string, step: Promise<T>): Promise<T> {
    this.waitingOn = what;
    try {
      return await step;
    } finally {
      this.waitingOn = 'nothing';
    }
  }

  private async loop(): Promise<void> {
    this.state = 'running';
    this.log.info('agent running', { engines: this.cfg.engines, gpus: this.cfg.gpus.length, concurrency: this.cfg.concurrency });
    // Presence once a minute even while every slot is busy (pulls report it when idle).
    const presence = setInterval(
      () =>
        void this.queue.reportPresence().catch((err) => {
          if (refusedForGood(err)) this.refused(err);
          else this.log.warn('presence report failed', { error: errorText(err) });
        }),
      10_000,
    );
    presence.unref();
    while (this.state === 'running') {
      const slots = this.cfg.concurrency - this.running.size;
      if (slots <= 0) {
        await this.awaiting('a free slot', this.sleep(Infinity)); // until a job ends or shutdown
        continue;
      }
      if (this.mayHaveWork) {
        // Claim straight away while claims find work: a backlog drains without a notice per job.
        this.mayHaveWork = false;
        if ((await this.awaiting('a claim', this.claimAndStart(null))).claimed) this.mayHaveWork = true;
        continue;
      }
      const messages = await this.awaiting('a queue pull', this.pull(slots));
      if (messages.length === 0) {
        await this.awaiting('the poll interval', this.sleep(this.cfg.pollIntervalMs));
        continue;
      }
      const acks: string[] = [];
      const retries: { lease_id: string; delay_seconds?: number }[] = [];
      for (const m of messages) {
        const free = this.state === 'running' && this.running.size < this.cfg.concurrency;
        const hint = free ? (await this.awaiting('a claim', this.claimAndStart(decodeNotice(m).job_id ?? null))).hint : 'still-queued';
        if (hint === 'still-queued') retries.push({ lease_id: m.lease_id });
        else if (hint === 'not-servable') retries.push({ lease_id: m.lease_id, delay_seconds: 5 });
        else acks.push(m.lease_id);
      }
      await this.awaiting(
        'a queue ack',
        this.queue.ack(acks, retries).catch((err) => this.log.warn('ack failed; the notices will come back', { error: errorText(err) })),
      );
    }
    clearInterval(presence);
  }

  /** First call: drain (jobs may finish within the grace period). Second call: release everything now. */
  shutdown(): void {
    if (this.state === 'draining' || this.stopping.signal.aborted) {
      this.log.warn('second shutdown signal: releasing running jobs now');
      this.releaseAll();
      return;
    }
    this.log.info('shutting down: no new jobs', { running: this.running.size, grace_s: this.cfg.shutdownGraceMs / 1000 });
    this.state = 'draining';
    this.stopping.abort(new Error('shutting down'));
    this.graceTimer = setTimeout(() => this.releaseAll(), this.cfg.shutdownGraceMs);
    // A shutdown that takes a while says what it waits on, every 10 s, until the agent stops.
    const stillStopping = setInterval(() => {
      if (this.state === 'stopped') return clearInterval(stillStopping);
      this.log.warn('still shutting down', { waiting_on: this.waitingOn, running: this.running.size });
    }, 10_000);
    stillStopping.unref();
    this.wake();
  }

  health() {
    const { pids: _pids, ...engineWorkers } = this.engines.stats();
    return {
      ok: this.state === 'running' || this.state === 'draining',
      state: this.state,
      waiting_on: this.waitingOn,
      running_jobs: [...this.running.keys()],
      free_gpus: this.freeGpus.length,
      engine_workers: engineWorkers,
      artifact_cache: this.artifactCache.stats(),
    };
  }

  private async pull(slots: number): Promise<PulledMessage[]> {
    try {
      return await this.queue.pull(Math.min(slots, 10), this.cfg.visibilityTimeoutMs);
    } catch (err) {
      if (refusedForGood(err)) this.refused(err);
      else if (!this.stopping.signal.aborted) this.log.error('pull failed', { error: errorText(err) });
      return [];
    }
  }

  /** Who this agent is and what it serves, as a claim declares it (with the GPUs it offers). */
  private claimOf(gpus: number): NextClaim {
    const { name, machineType, engines, configs } = this.cfg;
    return { agent_id: this.id, name, machine_type: machineType, gpus, engines, configs };
  }

  /** Claims a job and starts it in the background; says whether one was claimed and what became of the hinted job. */
  private async claimAndStart(hintJobId: string | null): Promise<{ claimed: boolean; hint: ClaimResponse['hint'] }> {
    const started = performance.now();
    let res: ClaimResponse;
    try {
      res = await this.service.claim(
        { ...this.claimOf(this.freeGpus.length), hint_job_id: hintJobId },
        // A claim in flight when shutdown begins is let finish: the service may have leased
        // a job to us already, and that job then runs (and drains) like the others, or goes
        // back at once if they were released meanwhile.
        { attempts: Infinity, signal: this.stopping.signal, finishInFlight: true, timeoutMs: CLAIM_TIMEOUT_MS },
      );
    } catch (err) {
      if (refusedForGood(err)) this.refused(err);
      else if (!this.stopping.signal.aborted) this.log.error('claim failed', { error: errorText(err) });
      return { claimed: false, hint: 'still-queued' };
    }
    this.metrics.claimed(!!res.job, (performance.now() - started) / 1000);
    if (res.job) this.start(res.job, { claim_ms: Math.round(performance.now() - started) });
    return { claimed: !!res.job, hint: res.hint };
  }

  /**
   * Runs a claimed job in the background. While the agent is running, its completion
   * claims the next job with the slot it frees, its GPUs and the idle ones (lent to that
   * claim while it is in flight, so no claim of the loop's offers them too): that job
   * starts as this one ends. When none was made, the loop claims. When it found nothing,
   * the loop goes on as it was: it claims again if its own last claim found work. (Waiting
   * on the queue instead cost bench:dispatch 11 % of its jobs/s: under load such a claim
   * often finds nothing where the next one does, for a reason not yet understood.)
   */
  private start(job: ClaimedJob, how: { claim_ms: number } | { with: 'completion' }): void {
    const gpus = gpusForJob(this.freeGpus, job.config.engine, job.num_gpus);
    this.freeGpus = this.freeGpus.filter((g) => !gpus.includes(g));
    const lent: number[] = [];
    if (this.cfg.heartbeatIntervalMs) job.heartbeat_interval_ms = this.cfg.heartbeatIntervalMs;
    const runner = new JobRunner(
      this.service,
      job,
      gpus,
      {
        workRoot: this.cfg.workDir,
        engineOptions: this.cfg.engineOptions,
        engines: this.engines,
        artifacts: this.artifactCache,
        killGraceMs: this.cfg.killGraceMs,
        agentName: this.cfg.name,
        machineType: this.cfg.machineType,
        jobTimeLimitsMs: this.cfg.jobTimeLimitsMs,
        nextClaim: (freed) => {
          if (this.state !== 'running') return null;
          lent.push(...this.freeGpus.splice(0));
          return this.claimOf(freed.length + lent.length);
        },
      },
      this.log,
      this.metrics,
    );
    this.running.set(job.id, runner);
    if (this.releasing) runner.stop('release'); // claimed as everything was released: it goes back unrun
    this.metrics.jobStarted(job.kind);
    this.log.info('claimed job', { job_id: job.id, kind: job.kind, attempt: job.attempt, priority: job.priority, gpus, ...how });
    void runner
      .run()
      .catch((err) => this.log.error('job runner failed', { job_id: job.id, error: errorText(err) }))
      .finally(() => {
        this.freeGpus.push(...gpus, ...lent);
        this.running.delete(job.id);
        if (runner.nextJob) this.startOrLog(runner.nextJob);
        else if (runner.nextJob === undefined) this.mayHaveWork = true; // a slot is free: there may be more where this came from
        this.wake();
      });
  }

  /** Starts the job a completion claimed; one that cannot start is logged (its lease expires and the job goes back to the queue). */
  private startOrLog(job: ClaimedJob): void {
    try {
      this.start(job, { with: 'completion' });
    } catch (err) {
      this.log.error('could not start the job a completion claimed', { job_id: job.id, error: errorText(err) });
      this.mayHaveWork = true;
    }
  }

  private async drain(): Promise<void> {
    while (this.running.size > 0) await this.sleep(Infinity);
    if (this.graceTimer) clearTimeout(this.graceTimer);
  }

  private releaseAll(): void {
    this.releasing = true;
    for (const runner of this.running.values()) runner.stop('release');
  }

  /** A job ended or shutdown began: the loop looks again. */
  private wake(): void {
    if (this.waiting) this.waiting();
    else this.woken = true;
  }

  /**
   * Waits `ms`, or until a job ends or shutdown begins. A wake that came while the loop was
   * busy (a pull or claim in flight) is not lost: the loop would otherwise sleep through a
   * shutdown that began meanwhile.
   */
  private sleep(ms: number): Promise<void> {
    if (this.woken) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        if (timer) clearTimeout(timer);
        this.waiting = null;
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(done, ms) : null;
      this.waiting = done;
    });
  }

  private retrying(target: 'service' | 'queue', r: { attempt: number; delayMs: number; reason: string }) {
    this.metrics.retried(target);
    this.log.warn(`${target} unavailable; backing off`, { attempt: r.attempt, delay_ms: r.delayMs, reason: r.reason });
  }

  /** Work directories left by a crashed run belong to leases that will expire: clear them. */
  /** Removes what jobs of an earlier run left; the artifact cache stays. */
  private async cleanWorkDir(): Promise<void> {
    await mkdir(this.cfg.workDir, { recursive: true });
    for (const entry of await readdir(this.cfg.workDir))
      if (entry !== ARTIFACT_CACHE_DIR) await rm(join(this.cfg.workDir, entry), { recursive: true, force: true });
  }
}
