// Recovery in seconds with an idle fleet that polls nothing. Every claim schedules a
// look at its lease for the moment it would expire: a message on the Worker's own
// queue (LEASE_CHECKS), delivered after `delaySeconds` to this Worker's queue()
// handler. The look finds the lease renewed (its agent is alive: the next look is
// scheduled for the new expiry), ended (nothing to do), or expired (its agent died:
// the job goes back to the queue with a fresh notice, attempt + 1). So a dead agent's
// job is claimable within about a second of its lease running out, at the cost of one
// queue message and one replica read per running job per lease period, and nothing at
// all while nothing runs. The cron sweep (src/jobs/sweep.ts) still expires whatever a
// lost message would leave behind, within a minute.
import { eq } from 'drizzle-orm';
import { RequestSessions } from '../db/sessions.ts';
import { jobs } from '../db/schema.ts';
import type { Db } from '../db/client.ts';
import type { Env, LeaseCheck } from '../env.ts';
import { appendServiceLog, compactAfterEnding, COMPACT_SWEEP_BATCH } from './logs.ts';
import { notifyJob } from './dispatch.ts';
import { fleetSettings, tenantLimits } from './settings.ts';
import { expireLeases } from './state.ts';
import { enqueueDeliveries } from './webhooks.ts';

export const isLeaseCheck = (body: unknown): body is LeaseCheck =>
  !!body && typeof body === 'object' && (body as { type?: unknown }).type === 'lease-check';

/** Seconds until a lease expiring at `expiresAt` can be seen expired (queue delays are whole seconds). */
const delayUntil = (expiresAt: number, now: number) => Math.max(1, Math.ceil((expiresAt - now + 250) / 1000));

/** Schedules the look at a lease for when it expires. A failed send is logged: the cron sweep covers it. */
export async function scheduleLeaseCheck(env: Env, check: Omit<LeaseCheck, 'type'>, expiresAt: number, now = Date.now()): Promise<void> {
  try {
    await env.LEASE_CHECKS.send({ type: 'lease-check', ...check }, { contentType: 'json', delaySeconds: delayUntil(expiresAt, now) });
  } catch (err) {
    console.error(JSON.stringify({ level: 'warn', msg: 'lease check not scheduled; the sweep covers it', ...check, error: String(err) }));
  }
}

/** One look at a lease (see the top of this module). */
export async function checkLease(env: Env, check: LeaseCheck, now = Date.now()): Promise<'ended' | 'renewed' | 'expired'> {
  // A replica may be behind: an "expired" it shows is confirmed by the conditional write on the primary.
  const sessions = new RequestSessions(env.DB, 'first-unconstrained');
  const read = (db: typeof sessions.db) =>
    db
      .select({ status: jobs.status, lease_id: jobs.lease_id, lease_expires_at: jobs.lease_expires_at })
      .from(jobs)
      .where(eq(jobs.id, check.job_id))
      .get();
  let job = await read(sessions.db);
  if (job?.status === 'leased' && job.lease_id === check.lease_id && (job.lease_expires_at ?? 0) < now) {
    const settings = fleetSettings(env);
    const expired = await expireLeases(sessions.primary(), settings, now, { jobId: check.job_id, leaseId: check.lease_id });
    await afterExpiry(env, sessions.primary(), expired);
    if (expired.requeued.length || expired.failed.length) return 'expired';
    job = await read(sessions.primary()); // renewed after all: the replica was behind
  }
  if (!job || job.status !== 'leased' || job.lease_id !== check.lease_id) return 'ended';
  await scheduleLeaseCheck(env, check, job.lease_expires_at ?? now, now);
  return 'renewed';
}

/**
 * What follows expireLeases(), here and in the cron sweep: a fresh queue notice for each
 * requeued job, its webhooks, and a line in each job's log saying what happened (the
 * agent's own lines may not have reached the service before it went silent).
 */
export async function afterExpiry(env: Env, db: Db, expired: Awaited<ReturnType<typeof expireLeases>>): Promise<void> {
  for (const j of expired.requeued) await notifyJob(env, { job_id: j.id, kind: j.kind });
  await enqueueDeliveries(env, expired.deliveries);
  const why = 'The prover running this attempt stopped answering and its lease expired';
  await Promise.all([
    ...expired.requeued.map((j) =>
      appendServiceLog(db, env.ARTIFACTS, j.id, `${why}: queued again for another prover.`, tenantLimits(env)),
    ),
    ...expired.failed.map((id) => appendServiceLog(db, env.ARTIFACTS, id, `${why}.`, tenantLimits(env))),
  ]);
  // Their logs end with that line: the failed jobs' logs can be compacted now, a bounded
  // few here (the sweep expires up to 90 at once); the sweep compacts the rest.
  await compactAfterEnding(db, env.ARTIFACTS, expired.failed.slice(0, COMPACT_SWEEP_BATCH), tenantLimits(env));
}

/** The queue() handler's part for LEASE_CHECKS: each look, retried by the queue if it fails. */
export async function runLeaseChecks(messages: readonly Message<unknown>[], env: Env): Promise<void> {
  for (const m of messages) {
    try {
      await checkLease(env, m.body as LeaseCheck);
      m.ack();
    } catch (err) {
      console.error(JSON.stringify({ level: 'error', msg: 'lease check failed; retrying', body: m.body, error: String(err) }));
      m.retry({ delaySeconds: 1 });
    }
  }
}
