// The scheduled sweep (cron, every minute): nothing may be stranded.
// - Leases whose agent stopped heartbeating are expired and their jobs requeued (each
//   lease's own check does this within seconds, src/jobs/lease-checks.ts; the sweep
//   catches what a lost check message would leave).
// - A queue lane whose next job has waited past RENOTIFY_AFTER_SECONDS since its last
//   notice gets a fresh notice for it, so a lost message delays a job but never strands
//   it; but only when some live agent could serve it: a lane nobody can serve is not
//   bounced around, it waits and says why in its next job's logs (once per distinct
//   reason). Per lane, not per job: a million queued jobs cost the sweep what their
//   lanes cost, and an agent woken by a notice claims whatever is next for it anyway.
// - Webhook deliveries whose attempt is overdue get a fresh queue message, and old
//   finished ones are deleted (src/jobs/webhooks.ts sweepWebhooks).
// - Queued jobs past their deadline fail (src/jobs/limits.ts); a lane no agent could take
//   since UNSERVABLE_EVENT_SECONDS announces its jobs once (src/jobs/waiting.ts).
// - Idempotency keys older than 24 h are deleted, in bounded batches (src/middleware/idempotency/store.ts).
// - Finished jobs' logs whose compaction is pending (it failed, or its Worker died) are
//   compacted, stage by stage (src/jobs/logs.ts compactPendingLogs), and garbage result
//   uploads deleted (src/jobs/results.ts sweepResultUploads): each a part of its own of the
//   cron's budget (sweepParts).
//
// All within the budget it is handed (src/jobs/invocations.ts): each unit of work (a
// round of expiries, a lane, an announcement) is taken only while the budget fits it,
// and what is left waits for the next run, which finds it again (nothing here is lost
// by stopping between units).
import { and, eq, gte, isNotNull, isNull, lt, sql } from 'drizzle-orm';
import { batchByName } from '../db/batch.ts';
import { agents, jobs, organizations, queueLanes } from '../db/schema.ts';
import type { JobNotice } from '../env.ts';
import { deleteExpiredKeys, IDEMPOTENCY_SWEEP_BATCHES } from '../middleware/idempotency/store.ts';
import { meteredPart, type Metered } from '../lib/metered.ts';
import { notifyJobs } from './dispatch.ts';
import { appendServiceLog, compactPendingLogs } from './logs.ts';
import { INVOCATION_BUDGETS } from './invocations.ts';
import { sweepResultUploads, UPLOAD_SWEEP_CALLS } from './results.ts';
import { fleetSettings, tenantLimits } from './settings.ts';
import { expireLeases, type JobRow } from './state.ts';
import { afterExpiry } from './lease-checks.ts';
import { enqueueDeliveries, sweepWebhooks } from './webhooks.ts';
import { failQueuedPastDeadline } from './limits.ts';
import { announceUnservable, quotaHold, unservableReason, type LiveAgent } from './waiting.ts';

/**
 * Why none of `live` can run `job`, or null when one can (src/jobs/waiting.ts
 * unservableReason, in words).
 */
export function whyUnservable(job: Pick<JobRow, 'engine' | 'config_id' | 'num_gpus'>, live: LiveAgent[]): string | null {
  return unservableReason(job, live)?.detail ?? null;
}

/** Lanes looked at per sweep, at most. */
const SWEEP_LANES = 500;
/** The calls of a round of expiries before its log lines: the expired jobs' read, their batch, their notices, their webhooks. */
const EXPIRY_ROUND_CALLS = 5;
/** The most calls one lane costs: its batch, and a line in its job's log (a read, a write, a batch). */
const LANE_CALLS = 4;
/** What the sweep keeps for its steps after the lanes: their notices, deadlines, webhooks' sends, idempotency keys. */
const AFTER_LANES_CALLS = 8 + IDEMPOTENCY_SWEEP_BATCHES;

/**
 * The cron's sweep (see the top of this module), within `m`'s budget. The parts that are
 * R2 work item by item run in sweepParts().
 */
export async function sweep(
  m: Metered,
  now = Date.now(),
): Promise<{
  requeued: number;
  renotified: number;
  waiting: number;
  pastDeadline: number;
  unservableAnnounced: number;
  webhooksRequeued: number;
  webhooksDeleted: number;
  idempotencyKeysDeleted: number;
}> {
  const { db, env, budget } = m;
  const settings = fleetSettings(env);
  const requeued: { id: string; kind: string }[] = [];
  // Expiries take at most half of the budget, their log lines included: the lanes get the rest.
  const expiring = meteredPart(m, Math.floor(budget.left / 2), 'lease expiries');
  for (let round = 0; round < 20 && expiring.budget.fits(EXPIRY_ROUND_CALLS); round++) {
    const expired = await expireLeases(expiring.db, settings, now);
    await afterExpiry(expiring, expired);
    requeued.push(...expired.requeued);
    if (expired.requeued.length + expired.failed.length === 0) break;
  }
  const webhooks = await sweepWebhooks(db, env, now);

  const live: LiveAgent[] = await db
    .select({ gpus: agents.gpus, engines: agents.engines, configs: agents.configs })
    .from(agents)
    .where(and(gte(agents.last_seen_at, now - settings.agentStaleMs), isNull(agents.left_at)));
  const stale = await db
    .select({
      org_id: queueLanes.org_id,
      engine: queueLanes.engine,
      config_id: queueLanes.config_id,
      gpus_used: queueLanes.gpus_used,
      job_id: jobs.id,
      kind: jobs.kind,
      num_gpus: jobs.num_gpus,
      job_reason: jobs.waiting_reason,
      lane_code: queueLanes.waiting_code,
      org: {
        running_jobs: organizations.running_jobs,
        running_gpus: organizations.running_gpus,
        max_active_jobs: organizations.max_active_jobs,
        max_gpus: organizations.max_gpus,
      },
    })
    .from(queueLanes)
    .innerJoin(jobs, eq(jobs.id, queueLanes.head_job_id))
    .innerJoin(organizations, eq(organizations.id, queueLanes.org_id))
    .where(and(isNotNull(queueLanes.head_job_id), eq(jobs.status, 'queued'), lt(jobs.notified_at, now - settings.renotifyAfterMs)))
    .limit(SWEEP_LANES);
  let waiting = 0;
  const notices: JobNotice[] = [];
  // Room kept for the notices' sends (one per 100) and what follows the lanes.
  const reserve = AFTER_LANES_CALLS + Math.ceil(stale.length / 100);
  for (const lane of stale) {
    const unservable = unservableReason({ engine: lane.engine, config_id: lane.config_id, num_gpus: lane.num_gpus }, live);
    const why = unservable ?? quotaHold(lane.org, lane.gpus_used, settings.quotas);
    const reason = why?.detail ?? null;
    const laneKey = and(
      eq(queueLanes.org_id, lane.org_id),
      eq(queueLanes.engine, lane.engine),
      eq(queueLanes.config_id, lane.config_id),
      eq(queueLanes.gpus_used, lane.gpus_used),
    );
    if (reason) {
      waiting++;
      if (reason !== lane.job_reason || why!.code !== lane.lane_code) {
        // A lane the budget leaves is still stale at the next run, which takes it then.
        if (!budget.fits(LANE_CALLS + reserve)) continue;
        await batchByName(db, {
          job: db
            .update(jobs)
            .set({ waiting_reason: reason })
            .where(and(eq(jobs.id, lane.job_id), eq(jobs.status, 'queued'))),
          lane: db
            .update(queueLanes)
            .set({
              waiting_reason: reason,
              waiting_code: why!.code,
              // Only a lane no agent can take is announced unservable; a quota's hold ends by itself.
              unservable_since: unservable ? sql`coalesce(${queueLanes.unservable_since}, ${now})` : null,
            })
            .where(laneKey),
        });
        await appendServiceLog(
          db,
          env.ARTIFACTS,
          lane.job_id,
          unservable
            ? `Waiting: ${reason}. The job stays queued until an agent that can run it is online.`
            : `Waiting: ${reason}. The job stays queued until its organization's running jobs fit the quota.`,
          tenantLimits(env),
        );
      }
      continue;
    }
    if (!budget.fits(LANE_CALLS + reserve)) continue;
    await batchByName(db, {
      job: db
        .update(jobs)
        .set({ notified_at: now })
        .where(and(eq(jobs.id, lane.job_id), eq(jobs.status, 'queued'))),
      lane: db.update(queueLanes).set({ waiting_reason: null, waiting_code: null, unservable_since: null }).where(laneKey),
    });
    notices.push({ job_id: lane.job_id, kind: lane.kind });
  }
  await notifyJobs(env, notices);
  // Job limits and waiting (src/jobs/limits.ts, src/jobs/waiting.ts): queued jobs past their
  // deadline fail; jobs no agent could take for UNSERVABLE_EVENT_SECONDS are announced once.
  const pastDeadline = budget.fits(4) ? await failQueuedPastDeadline(db, now) : { failed: 0, deliveries: [] };
  const announcing = meteredPart(m, budget.left - (AFTER_LANES_CALLS - 4), 'unservable lanes');
  const unservable = await announceUnservable(announcing.db, now - settings.unservableEventMs, SWEEP_LANES, announcing.budget);
  await enqueueDeliveries(env, [...pastDeadline.deliveries, ...unservable]);
  const idempotencyKeysDeleted = budget.fits(IDEMPOTENCY_SWEEP_BATCHES) ? await deleteExpiredKeys(db, now) : 0;
  return {
    requeued: requeued.length,
    renotified: notices.length,
    waiting,
    pastDeadline: pastDeadline.failed,
    unservableAnnounced: unservable.length,
    ...webhooks,
    idempotencyKeysDeleted,
  };
}

/**
 * The cron's item-by-item R2 work beside the sweep, each within its own part of the
 * cron's budget (src/jobs/invocations.ts): pending log compactions, then garbage result
 * uploads. Each item that fails is counted and waits (src/jobs/sweep-items.ts).
 */
export async function sweepParts(m: Metered, now = Date.now()): Promise<{ logsCompacted: number; uploadsDeleted: number }> {
  const { parts } = INVOCATION_BUDGETS.cron;
  const logsCompacted = await compactPendingLogs(meteredPart(m, parts.compaction, 'compaction'), tenantLimits(m.env), now);
  const uploads = meteredPart(m, parts.uploads, 'uploads');
  let uploadsDeleted = 0;
  for (let n = -1; n !== 0 && uploads.budget.fits(UPLOAD_SWEEP_CALLS);)
    uploadsDeleted += n = await sweepResultUploads(uploads.db, uploads.bucket, uploads.budget, now);
  return { logsCompacted, uploadsDeleted };
}
