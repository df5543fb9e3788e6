// Why a queued job waits (docs/callers.md "Why a job waits"): what the record of a queued proof
// or execution says in `waiting_reason` and what the sweep keeps so that the record's
// read costs one seek, however long the queue. The reasons: WAITING_REASONS (src/db/enums.ts).
//
// The sweep (src/jobs/sweep.ts) decides, once a minute per queue lane, whether some
// online agent could take the lane's jobs (they share engine, config and GPU count, so
// the answer is the lane's) or whether its organization's quotas hold them (quotaHold),
// and writes it on the lane (queue_lanes.waiting_code, waiting_reason, unservable_since:
// for want of an agent only) only when it changes. A record's read joins its
// job's lane by primary key (src/features/runs/data.ts runStateSql). A lane that no online
// agent could take for UNSERVABLE_EVENT_SECONDS raises `proof.unservable` /
// `execution.unservable` once per job (announceUnservable), a bounded batch per run.
import { and, eq, gt, inArray, isNotNull, lte, sql } from 'drizzle-orm';
import { gpusUsed } from 'prover-agent/protocol';
import { batchByName } from '../db/batch.ts';
import type { CallBudget } from '../lib/metered.ts';
import type { Db } from '../db/client.ts';
import { WAITING_REASONS, type WaitingReason } from '../db/enums.ts';
import { jobs, queueLanes, webhookDeliveries, webhookEndpoints } from '../db/schema.ts';
import type { JobRow } from './kinds/contract.ts';
import type { QuotaDefaults } from './quotas.ts';
import { unsentDeliveries, type DeliveryRef } from './webhooks.ts';

export { WAITING_REASONS, type WaitingReason };

export interface LiveAgent {
  gpus: number;
  engines: string[];
  configs: string[];
}

/**
 * Why none of `live` can run `job`, as a code and a sentence, or null when one can: the
 * rule claims apply in SQL (nextJobFor, src/jobs/state.ts), told in words.
 */
export function unservableReason(
  job: Pick<JobRow, 'engine' | 'config_id' | 'num_gpus'>,
  live: LiveAgent[],
): { code: WaitingReason; detail: string } | null {
  if (live.length === 0) return { code: 'no_agent', detail: 'no prover agent is online' };
  const engine = live.filter((a) => a.engines.includes(job.engine));
  if (engine.length === 0) return { code: 'no_agent', detail: `no online agent runs the '${job.engine}' engine` };
  const config = engine.filter((a) => a.configs.length === 0 || a.configs.includes(job.config_id));
  if (config.length === 0) return { code: 'no_agent', detail: `no online agent serves config ${job.config_id}` };
  const needed = gpusUsed(job.engine, job.num_gpus);
  if (needed === 0) return null;
  const most = Math.max(...config.map((a) => a.gpus));
  if (most < needed)
    return {
      code: 'not_enough_gpus',
      detail: `the job needs ${needed} GPU${needed === 1 ? '' : 's'} (of the ${job.num_gpus} it asked for); the largest online agent for its config has ${most}`,
    };
  return null;
}

/** What quotaHold() reads of an organization (its counters and own quotas; null quotas: the defaults). */
export interface OrgRunning {
  running_jobs: number;
  running_gpus: number;
  max_active_jobs: number | null;
  max_gpus: number | null;
}

/**
 * Why the claim holds a lane's jobs for its organization's quotas (src/jobs/state.ts
 * nextJobFor, the same rule told in words), or null when it does not: its running jobs
 * are at max_active_jobs, or its running GPUs leave less than the job's under max_gpus.
 */
export function quotaHold(org: OrgRunning, gpus: number, defaults: QuotaDefaults): { code: WaitingReason; detail: string } | null {
  const maxJobs = org.max_active_jobs ?? defaults.maxActiveJobs;
  const maxGpus = org.max_gpus ?? defaults.maxGpus;
  if (org.running_jobs >= maxJobs)
    return {
      code: 'org_quota',
      detail: `its organization runs ${org.running_jobs} jobs and its max_active_jobs quota is ${maxJobs}`,
    };
  if (org.running_gpus + gpus > maxGpus)
    return {
      code: 'org_quota',
      detail: `its organization's running jobs hold ${org.running_gpus} GPUs, its max_gpus quota is ${maxGpus} and the job needs ${gpus}`,
    };
  return null;
}

/** Jobs announced unservable per lane and sweep run, at most. */
const ANNOUNCE_PER_LANE = 50;
/** The calls of one lane's announcement: its jobs' read, and the batch that records it. */
const ANNOUNCE_LANE_CALLS = 2;

/** The webhook event of a job kind that can be unservable (proofs, executions). */
const UNSERVABLE_EVENT = { proof: ['proof', 'proof.unservable'], execute: ['execution', 'execution.unservable'] } as const;

/**
 * Raises `proof.unservable` / `execution.unservable` for the jobs of lanes no online
 * agent could take since `before` (epoch ms) that were queued by then and not announced
 * yet (queued_at past the lane's unservable_announced_to): once per job, at most
 * ANNOUNCE_PER_LANE per lane and run, two calls a lane while `budget` fits them. The
 * lanes announced longest ago go first, so a run the budget cuts short leaves the others
 * for the next one. Returns the deliveries to send.
 */
export async function announceUnservable(db: Db, before: number, lanes: number, budget: CallBudget): Promise<DeliveryRef[]> {
  if (!budget.fits(1 + ANNOUNCE_LANE_CALLS)) return [];
  const stuck = await db
    .select({
      org_id: queueLanes.org_id,
      engine: queueLanes.engine,
      config_id: queueLanes.config_id,
      gpus_used: queueLanes.gpus_used,
      announced_to: queueLanes.unservable_announced_to,
    })
    .from(queueLanes)
    .where(and(isNotNull(queueLanes.head_job_id), isNotNull(queueLanes.unservable_since), lte(queueLanes.unservable_since, before)))
    .orderBy(sql`coalesce(${queueLanes.unservable_announced_to}, 0)`)
    .limit(lanes);
  const deliveries: DeliveryRef[] = [];
  for (const lane of stuck) {
    if (!budget.fits(ANNOUNCE_LANE_CALLS)) break;
    const due = await db
      .select({ id: jobs.id, kind: jobs.kind, subject_id: jobs.subject_id, queued_at: jobs.queued_at })
      .from(jobs)
      .where(
        and(
          eq(jobs.status, 'queued'),
          eq(jobs.engine, lane.engine),
          eq(jobs.config_id, lane.config_id),
          eq(jobs.org_id, lane.org_id),
          eq(jobs.gpus_used, lane.gpus_used),
          gt(jobs.queued_at, lane.announced_to ?? 0),
          lte(jobs.queued_at, before),
        ),
      )
      .orderBy(jobs.queued_at)
      .limit(ANNOUNCE_PER_LANE);
    const subjects = due.filter((j): j is typeof j & { kind: keyof typeof UNSERVABLE_EVENT } => j.kind in UNSERVABLE_EVENT);
    const last = due.at(-1)?.queued_at ?? before;
    const inserts = subjects.map((j) => {
      const [subjectKind, event] = UNSERVABLE_EVENT[j.kind];
      return db.insert(webhookDeliveries).select(
        sql`SELECT 'msg_' || lower(hex(randomblob(16))), e.org_id, e.id, ${event}, ${subjectKind}, ${j.subject_id}, ${nowIsoSql}, NULL, 'pending', 0, 0, ${Date.now()}, NULL
          FROM ${webhookEndpoints} e WHERE e.org_id = ${lane.org_id} AND NOT e.disabled
            AND (e.events IS NULL OR EXISTS (SELECT 1 FROM json_each(e.events) x WHERE x.value = ${event}))`,
      );
    });
    const r = await batchByName(db, {
      inserts,
      watermark: db
        .update(queueLanes)
        .set({ unservable_announced_to: due.length < ANNOUNCE_PER_LANE ? before : last })
        .where(
          and(
            eq(queueLanes.org_id, lane.org_id),
            eq(queueLanes.engine, lane.engine),
            eq(queueLanes.config_id, lane.config_id),
            eq(queueLanes.gpus_used, lane.gpus_used),
          ),
        ),
      deliveries: subjects.length
        ? unsentDeliveries(
            db,
            db
              .select({ id: jobs.subject_id })
              .from(jobs)
              .where(
                inArray(
                  jobs.id,
                  subjects.map((j) => j.id),
                ),
              ),
          )
        : undefined,
    });
    deliveries.push(...((r.deliveries ?? []) as DeliveryRef[]));
  }
  return deliveries;
}

const nowIsoSql = sql`strftime('%Y-%m-%dT%H:%M:%fZ','now')`;
