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
import type { Env, LeaseCheck } from '../env.ts';
import type { Metered } from '../lib/metered.ts';
import { appendServiceLog, SERVICE_LINE_CALLS } from './logs.ts';
import { notifyJobs } from './dispatch.ts';
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
export async function checkLease(m: Metered, check: LeaseCheck, now = Date.now()): Promise<'ended' | 'renewed' | 'expired'> {
  const { env } = m;
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
    await afterExpiry({ ...m, db: sessions.primary() }, expired);
    if (expired.requeued.length || expired.failed.length) return 'expired';
    job = await read(sessions.primary()); // renewed after all: the replica was behind
  }
  if (!job || job.status !== 'leased' || job.lease_id !== check.lease_id) return 'ended';
  await scheduleLeaseCheck(env, check, job.lease_expires_at ?? now, now);
  return 'renewed';
}

/** The most calls one lease check makes: its read, the expiry, what follows it (afterExpiry, one job), the primary's re-read, the next check's send. */
export const LEASE_CHECK_CALLS = 10;

/**
 * What follows expireLeases(), here and in the cron sweep: a fresh queue notice for each
 * requeued job, its webhooks, and a line in each job's log saying what happened (the
 * agent's own lines may not have reached the service before it went silent), each line
 * while `m`'s budget fits it (the line is what a short budget drops first). The failed
 * jobs' logs end with that line; the sweep compacts them (src/jobs/logs.ts compactPendingLogs).
 */
export async function afterExpiry(m: Metered, expired: Awaited<ReturnType<typeof expireLeases>>): Promise<void> {
  const { env, db, budget } = m;
  await notifyJobs(
    env,
    expired.requeued.map((j) => ({ job_id: j.id, kind: j.kind })),
  );
  await enqueueDeliveries(env, expired.deliveries);
  const why = 'The prover running this attempt stopped answering and its lease expired';
  const lines = [
    ...expired.requeued.map((j) => ({ id: j.id, line: `${why}: queued again for another prover.` })),
    ...expired.failed.map((id) => ({ id, line: `${why}.` })),
  ];
  let dropped = 0;
  for (const { id, line } of lines) {
    if (!budget.fits(SERVICE_LINE_CALLS)) {
      dropped++;
      continue;
    }
    await appendServiceLog(db, env.ARTIFACTS, id, line, tenantLimits(env));
  }
  if (dropped)
    console.warn(JSON.stringify({ level: 'warn', msg: 'lease expiry lines not written: the invocation’s budget is spent', jobs: dropped }));
}

/**
 * The queue() handler's part for LEASE_CHECKS: each look, retried by the queue if it
 * fails, while `m`'s budget fits another (LEASE_CHECK_CALLS); the messages it leaves come
 * back a second later.
 */
export async function runLeaseChecks(messages: readonly Message<unknown>[], m: Metered): Promise<void> {
  for (const msg of messages) {
    if (!m.budget.fits(LEASE_CHECK_CALLS)) {
      msg.retry({ delaySeconds: 1 });
      continue;
    }
    try {
      await checkLease(m, msg.body as LeaseCheck);
      msg.ack();
    } catch (err) {
      console.error(JSON.stringify({ level: 'error', msg: 'lease check failed; retrying', body: msg.body, error: String(err) }));
      msg.retry({ delaySeconds: 1 });
    }
  }
}
