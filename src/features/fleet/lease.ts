// Callbacks of an agent on a job it claimed, authenticated by the lease's job token.
// Each is idempotent: a repeat of the call that ended a lease gets the same answer
// and changes nothing. A lease that is no longer the job's current one (it expired
// and the job moved on) is refused with 409 and changes nothing.
import { zValidator } from '@hono/zod-validator';
import { Hono, type Context } from 'hono';
import { batchByName, type Statement } from '../../db/batch.ts';
import type { HeartbeatResponse, LeaseStatusResponse, LogChunk, ResultName } from 'prover-agent/protocol';
import { notifyJob } from '../../jobs/dispatch.ts';
import { appendLogChunk, compactAfterEnding, stageLogChunk, stageWholeLog } from '../../jobs/logs.ts';
import { fleetSettings, tenantLimits } from '../../jobs/settings.ts';
import { enqueueAfterResponse } from '../../jobs/webhooks.ts';
import { contractOf, type Completion } from '../../jobs/kinds/index.ts';
import {
  acknowledgeCancel,
  CANCELED_RESPONSE,
  completeJob,
  expireLeases,
  failJob,
  failureRequeues,
  heartbeat,
  leaseStanding,
  releaseJob,
} from '../../jobs/state.ts';
import { afterExpiry, LEASE_CHECK_CALLS } from '../../jobs/lease-checks.ts';
import { INVOCATION_BUDGETS } from '../../jobs/invocations.ts';
import { CallBudget, metered } from '../../lib/metered.ts';
import { cycleLimitMessage, limitStop, stopStatement } from '../../jobs/limits.ts';
import { streamObject } from '../../lib/artifacts.ts';
import { AttemptResults, storeUpload } from '../../jobs/results.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { jsonBody } from '../../lib/body.ts';
import { BODY_CAPS, MAX_INTERNAL_JSON_BYTES } from '../../lib/limits.ts';
import { tooLarge } from '../../lib/multipart.ts';
import { json, NO_BODY, stream } from '../../middleware/door.ts';
import { bearerHash, fleetDoor, jobTokenSteps, leaseAgentTokenStep, leaseTokenLive, tokenLease, type InternalEnv } from './auth.ts';
import { claimWithCompletion } from './claim.ts';
import { CompleteRequestSchema, FailRequestSchema, HeartbeatRequestSchema, LeaseEndingSchema, LogChunkSchema } from './schemas.ts';

// Each route declares its door (fleetDoor, ./auth.ts), before anything else it does: the
// heartbeat and the completion resolve their token inside their own first batch (the
// completion with what its kind reads: two round trips in all, and a third for the
// agent's next job when it asks for it); every other callback reads the lease and its
// job first (fleetDoor.job). A path no route matches is a 404.
export const leaseInternalApi = new Hono<InternalEnv>();

/** Largest result file an agent may upload (a proof or a baseline). */
export const MAX_RESULT_BYTES = 1024 * 1024 * 1024;

const superseded = () => new ApiError(409, 'This lease was superseded: the job was handed to another agent after the lease expired');
const ended = (outcome: string) => new ApiError(409, `This lease already ended (${outcome})`);

/** Refuses unless the caller's lease is the job's current one. */
function requireCurrent(c: Context<InternalEnv>) {
  const standing = leaseStanding(c.get('lease'), c.get('job'));
  if (standing === 'superseded') throw superseded();
  if (standing === 'ended') throw ended(c.get('lease').outcome!);
}

/**
 * For a call that ends the lease: the stored answer when this very call already
 * ended it (a retry), 409 when the lease ended otherwise or was superseded, null to proceed.
 */
function repeatOf(c: Context<InternalEnv>, ...outcomes: string[]): Response | null {
  const lease = c.get('lease');
  if (lease.outcome && outcomes.includes(lease.outcome) && lease.response) return c.json(lease.response, 200);
  requireCurrent(c);
  return null;
}

// ---------------------------------------------------------------------------

leaseInternalApi.post(
  '/heartbeat',
  fleetDoor.jobInBatch(json(BODY_CAPS.agentReport)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', HeartbeatRequestSchema, validationHook),
  async (c) => {
    const tokenHash = await bearerHash(c);
    const body = c.req.valid('json');
    const settings = fleetSettings(c.env);
    const beat = await heartbeat(
      c.get('db'),
      tokenHash,
      { phase: body.phase, num_instructions: body.metrics?.num_instructions, cells_used: body.metrics?.cells_used },
      settings,
    );
    switch (beat.standing) {
      case 'unknown':
        throw new ApiError(401, 'Invalid job token');
      case 'ended':
        throw ended(beat.outcome);
      case 'superseded':
        throw superseded();
      case 'over': {
        // Renewed to its bound and no further: the lease ends as a lost one does (requeued
        // with attempt + 1, or failed after MAX_ATTEMPTS), now rather than at the next look.
        const expired = await expireLeases(c.get('db'), settings, Date.now(), { jobId: beat.jobId, leaseId: beat.leaseId });
        c.executionCtx.waitUntil(afterExpiry(metered(c.env, new CallBudget(LEASE_CHECK_CALLS, 'lease over')), expired));
        throw new ApiError(
          409,
          `This lease is over: it reached its maximum lifetime (${Math.round(settings.maxLeaseMs / 1000)} s from its claim) and the job went back to the queue`,
        );
      }
      case 'current':
        return c.json({ cancel: beat.cancel, lease_expires_at: beat.leaseExpiresAt } satisfies HeartbeatResponse, 200);
    }
  },
);

// A read-only look at the lease between heartbeats: cancel requests reach the agent
// within a second or so without a D1 write (docs/contributors.md "How jobs run").
// A job past its deadline or cost limit reads as canceled too (src/jobs/limits.ts): the
// agent stops it and reports /canceled, which records why.
leaseInternalApi.get('/status', fleetDoor.job(NO_BODY), (c) => {
  requireCurrent(c);
  const job = c.get('job');
  const lease = c.get('lease');
  return c.json(
    { cancel: job.cancel_requested || limitStop(job, lease, fleetSettings(c.env), Date.now()) !== null } satisfies LeaseStatusResponse,
    200,
  );
});

/** The statement that stops the job at a limit it reached by now (src/jobs/limits.ts), for the batch that ends its lease; none while within them. */
function stopAtLimit(c: Context<InternalEnv>, now = Date.now()): Statement[] {
  const stop = limitStop(c.get('job'), c.get('lease'), fleetSettings(c.env), now);
  return stop ? [stopStatement(c.get('db'), c.get('lease'), stop.reason, stop.at)] : [];
}

leaseInternalApi.get('/artifacts/:name', fleetDoor.job(NO_BODY), async (c) => {
  requireCurrent(c);
  // The keys were worked out at claim and kept with the lease (src/jobs/state.ts claimJob).
  const { artifacts } = c.get('lease');
  const name = c.req.param('name');
  const key = Object.hasOwn(artifacts, name) ? artifacts[name] : undefined;
  const obj = typeof key === 'string' && key ? await c.env.ARTIFACTS.get(key) : null;
  if (!obj) throw new ApiError(404, `This job has no artifact '${c.req.param('name')}'`);
  return streamObject(obj, 'application/octet-stream');
});

/** Whether `name` is a result of this job's kind. */
const isResultOfJob = (c: Context<InternalEnv>, name: string): name is ResultName =>
  (contractOf(c.get('job').kind).results as readonly string[]).includes(name);

const noSuchResult = (c: Context<InternalEnv>, name: string, status: 404 | 422) =>
  new ApiError(status, `A ${c.get('job').kind} job has no result '${name}'`);

/** What an ending's last log chunk puts into its batch, and whether the log is whole with it (nothing left to compact). */
interface LastChunk {
  before: Statement[];
  whole: boolean;
}

/**
 * The last log chunk an ending call carries (protocol LeaseEnding): its object is
 * written now and its row update goes into the ending's batch, so the log and the
 * ending land together. A chunk that is not the next one is dropped. An ending that
 * finishes the job (`finishes`) and carries its whole log (or finds it empty) writes it
 * as the compacted log straight away (src/jobs/logs.ts stageWholeLog): nothing is left
 * to compact after the response.
 */
async function lastLogChunk(c: Context<InternalEnv>, chunk: LogChunk | undefined, finishes: boolean): Promise<LastChunk> {
  const job = c.get('job');
  const lease = c.get('lease');
  const position = { seq: job.log_seq, bytes: job.log_bytes, truncated: job.log_truncated };
  if (finishes) {
    const whole = await stageWholeLog(c.get('db'), c.env.ARTIFACTS, job.id, lease.id, chunk, position, tenantLimits(c.env));
    if (whole) return { before: [whole.record], whole: true };
  }
  if (!chunk) return { before: [], whole: false };
  const staged = await stageLogChunk(c.get('db'), c.env.ARTIFACTS, job.id, chunk, position, tenantLimits(c.env));
  if (staged.result.kind === 'out-of-order')
    console.warn(
      JSON.stringify({
        level: 'warn',
        msg: 'last log chunk out of order; dropped',
        job_id: job.id,
        seq: chunk.seq,
        expected_seq: staged.result.expectedSeq,
      }),
    );
  // Past the log's cap the chunk is dropped and the ending writes the truncation marker.
  return { before: staged.append ? [staged.append.chunk, staged.append.position] : [], whole: false };
}

/**
 * After an ending that finished the job (not one that requeued it): its log can no
 * longer grow, so it is compacted into one object, after the response, as far as its
 * budget goes (src/jobs/invocations.ts endingCompaction: most logs; the sweep finishes a
 * longer one, and retries a failure).
 */
function compactLogWhen(c: Context<InternalEnv>, finished: boolean, log: LastChunk): void {
  if (!finished || log.whole) return;
  const m = metered(c.env, new CallBudget(INVOCATION_BUDGETS.endingCompaction.calls, 'ending compaction'));
  c.executionCtx.waitUntil(compactAfterEnding(m, [c.get('job').id], tenantLimits(c.env)));
}

leaseInternalApi.put('/results/:name', fleetDoor.job(stream(MAX_RESULT_BYTES)), async (c) => {
  requireCurrent(c);
  const name = c.req.param('name');
  if (!isResultOfJob(c, name)) throw noSuchResult(c, name, 404);
  const length = Number(c.req.header('content-length') ?? NaN);
  if (!Number.isInteger(length)) throw new ApiError(411, 'Content-Length is required: results are streamed straight to storage');
  if (length > MAX_RESULT_BYTES) throw tooLarge(MAX_RESULT_BYTES);
  // To an object of this upload's own, never the one a record serves (src/jobs/results.ts):
  // the completion that accepts it names it; a lease that stopped being current meanwhile
  // stored nothing anybody will read.
  const stored = await storeUpload(c.get('db'), c.env.ARTIFACTS, c.get('lease'), name, c.req.raw.body, length);
  if (stored === 'superseded') throw superseded();
  return c.json({ stored: name, size: stored.size, sha256: stored.sha256 }, 200);
});

leaseInternalApi.post(
  '/logs',
  fleetDoor.job(json(BODY_CAPS.fleet)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', LogChunkSchema, validationHook),
  async (c) => {
    requireCurrent(c);
    const chunk = c.req.valid('json');
    const job = c.get('job');
    const r = await appendLogChunk(c.get('db'), c.env.ARTIFACTS, job.id, chunk, tenantLimits(c.env), {
      seq: job.log_seq,
      bytes: job.log_bytes,
      truncated: job.log_truncated,
    });
    if (r.kind === 'capped') throw new ApiError(413, r.detail);
    if (r.kind === 'out-of-order')
      return c.json(
        {
          detail: `Log chunk out of order: expected seq ${r.expectedSeq} at offset ${r.expectedOffset}`,
          expected_seq: r.expectedSeq,
          expected_offset: r.expectedOffset,
        },
        409,
      );
    return c.json({ accepted: r.kind }, 200);
  },
);

leaseInternalApi.post(
  '/complete',
  // Its token is checked in its own first batch (with what the completion reads: one round
  // trip), as the heartbeat's is; the door reads it only when this isolate did not issue it.
  fleetDoor.jobInBatch(json(BODY_CAPS.fleet)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', CompleteRequestSchema, validationHook),
  async (c) => {
    const body = c.req.valid('json');
    const db = c.get('db');
    const hash = await bearerHash(c);
    const opening = contractOf(body.kind).opening?.(db, { hash, live: leaseTokenLive }, body);
    const first = await batchByName(db, {
      ...jobTokenSteps(db, hash),
      opening: opening?.steps,
      agentToken: body.next_claim && leaseAgentTokenStep(db, hash),
    });
    const { lease, job } = tokenLease(first);
    c.set('lease', lease);
    c.set('job', job);
    // A completion can end as `failed` (a commit whose keys do not match its config).
    // A repeat's answer is the stored one: a next claim is made once, by the call that ended the lease.
    const repeat = repeatOf(c, 'completed', 'failed', 'canceled');
    if (repeat) return repeat;
    if (body.kind !== job.kind) throw new ApiError(422, `This is a ${job.kind} job, not ${body.kind}`);
    if (body.next_claim && body.next_claim.agent_id !== lease.agent_id)
      throw new ApiError(422, 'next_claim.agent_id is not the agent that holds this lease');
    // After the completion stands: the claim's job and token go in this answer only, never in the stored one.
    const withNext = async (answer: object) => {
      if (!body.next_claim) return answer;
      const next = await claimWithCompletion(c, first.agentToken?.[0]?.token_hash, body.next_claim);
      return next === undefined ? answer : { ...answer, next };
    };
    const settings = fleetSettings(c.env);
    const response = { status: 'completed' };
    // Results sent inline are stored only if the completion accepts them, each as an object of its own (src/jobs/results.ts).
    for (const name of Object.keys(body.results ?? {})) if (!isResultOfJob(c, name)) throw noSuchResult(c, name, 422);
    const results = new AttemptResults(db, c.env.ARTIFACTS, lease, body.results ?? {});
    const opened = opening && first.opening ? opening.opened(first.opening, results, job) : undefined;
    // The last log chunk is written while the completion reads and checks its results: neither waits for the other.
    const [log, checked] = await Promise.all([
      lastLogChunk(c, body.log, true),
      contractOf(job.kind).completion(
        { db, job, results, artifacts: c.env.ARTIFACTS, devProofSecret: c.env.DEV_PROOF_SECRET, opened },
        body,
      ),
    ]);
    // A job that crossed its deadline or cost limit since its last heartbeat ends Failed, not Succeeded.
    const before = [...log.before, ...results.settleStatements(), ...stopAtLimit(c)];
    if ('fail' in checked) {
      // A well-formed report that cannot stand (a commit whose keys are not its config's): the job fails for good.
      const failed = { status: 'failed', detail: checked.fail };
      const r = await failJob(db, lease, job, { message: checked.fail, retryable: false }, failed, settings, { before });
      if (!r.applied) throw superseded();
      enqueueAfterResponse(c, r.deliveries);
      compactLogWhen(c, true, log);
      return c.json(await withNext(r.outcome === 'canceled' ? CANCELED_RESPONSE : failed), 200);
    }
    const { outcome, deliveries } = await completeJob(db, lease, { kind: job.kind, done: checked.done } as Completion, response, settings, {
      before,
      accepted: results.acceptedIds,
    });
    if (!outcome) throw superseded();
    enqueueAfterResponse(c, deliveries);
    compactLogWhen(c, true, log);
    // Canceled meanwhile: the result is dropped, as the cancel's answer promised.
    return c.json(await withNext(outcome === 'canceled' ? CANCELED_RESPONSE : response), 200);
  },
);

leaseInternalApi.post(
  '/fail',
  fleetDoor.job(json(BODY_CAPS.fleet)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', FailRequestSchema, validationHook),
  async (c) => {
    const repeat = repeatOf(c, 'failed', 'canceled');
    if (repeat) return repeat;
    const body = c.req.valid('json');
    const db = c.get('db');
    const job = c.get('job');
    const lease = c.get('lease');
    // The answer must not depend on what it decides (a retry must get the same one),
    // so it is computed first and stored with the lease.
    const settings = fleetSettings(c.env);
    const response = { status: failureRequeues(job, body, settings) ? 'requeued' : 'failed' };
    // The engine stopped at the job's cycle limit: the service words the error, and the run so far is charged (src/jobs/limits.ts).
    const now = Date.now();
    const atCycleLimit =
      body.limit && job.cycle_limit !== null && body.limit.reached >= job.cycle_limit
        ? [stopStatement(db, lease, cycleLimitMessage(body.limit.reached, job.cycle_limit), now)]
        : [];
    const log = await lastLogChunk(c, body.log, response.status === 'failed');
    const before = [...log.before, ...(atCycleLimit.length ? atCycleLimit : stopAtLimit(c, now))];
    const r = await failJob(db, lease, job, { message: body.error, retryable: body.retryable }, response, settings, { before, now });
    if (!r.applied) throw superseded();
    enqueueAfterResponse(c, r.deliveries);
    if (r.outcome === 'requeued') c.executionCtx.waitUntil(notifyJob(c.env, { job_id: job.id, kind: job.kind }));
    compactLogWhen(c, r.outcome !== 'requeued', log);
    return c.json(r.outcome === 'canceled' ? CANCELED_RESPONSE : response, 200);
  },
);

// The body (the last log chunk) is optional: an empty one is `{}`.
leaseInternalApi.post(
  '/canceled',
  fleetDoor.job(json(BODY_CAPS.fleet)),
  jsonBody(MAX_INTERNAL_JSON_BYTES, { optional: true }),
  zValidator('json', LeaseEndingSchema, validationHook),
  async (c) => {
    const repeat = repeatOf(c, 'canceled');
    if (repeat) return repeat;
    // Not canceled, but past a limit (the status check said cancel): stopped now, for that reason.
    const atLimit = c.get('job').cancel_requested ? [] : stopAtLimit(c);
    if (!c.get('job').cancel_requested && atLimit.length === 0) throw new ApiError(409, 'This job was not canceled');
    const log = await lastLogChunk(c, c.req.valid('json').log, true);
    const before = [...log.before, ...atLimit];
    const { applied, deliveries } = await acknowledgeCancel(c.get('db'), c.get('lease'), CANCELED_RESPONSE, fleetSettings(c.env), {
      before,
    });
    if (!applied) throw superseded();
    enqueueAfterResponse(c, deliveries);
    compactLogWhen(c, true, log);
    return c.json(CANCELED_RESPONSE, 200);
  },
);

leaseInternalApi.post(
  '/release',
  fleetDoor.job(json(BODY_CAPS.fleet)),
  jsonBody(MAX_INTERNAL_JSON_BYTES, { optional: true }),
  zValidator('json', LeaseEndingSchema, validationHook),
  async (c) => {
    const repeat = repeatOf(c, 'released', 'canceled');
    if (repeat) return repeat;
    const db = c.get('db');
    const job = c.get('job');
    const lease = c.get('lease');
    const response = { status: 'requeued' };
    // Requeued (unless canceled meanwhile): the log goes on with the next attempt.
    const log = await lastLogChunk(c, c.req.valid('json').log, false);
    const { outcome, deliveries } = await releaseJob(db, lease, job, response, fleetSettings(c.env), { before: log.before });
    if (!outcome) throw superseded();
    if (outcome === 'requeued') c.executionCtx.waitUntil(notifyJob(c.env, { job_id: job.id, kind: job.kind }));
    enqueueAfterResponse(c, deliveries);
    compactLogWhen(c, outcome === 'canceled', log);
    return c.json(outcome === 'canceled' ? CANCELED_RESPONSE : response, 200);
  },
);
