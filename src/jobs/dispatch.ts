// Recording and announcing background jobs. D1 is the source of truth: a job row is
// written in the same D1 batch as the record it works for, and only after that batch
// commits is a notice sent on the queue. A notice that is lost (send failed, message
// dropped) only delays the job: the cron sweep re-notifies jobs left queued
// (src/jobs/sweep.ts), so nothing is stranded. Every job counts against its
// organization's quotas (src/jobs/quotas.ts); proofs and executions against its
// monthly budget too (src/jobs/budgets.ts). A request's side of it (its Context, its
// artifacts, its stored answer) is src/features/runs/submit.ts.
import { sql } from 'drizzle-orm';
import type { Caller } from '../app-env.ts';
import { batchByName, type Statement } from '../db/batch.ts';
import type { Db } from '../db/client.ts';
import { gpusUsed, type JobKind } from 'prover-agent/protocol';
import { jobs } from '../db/schema.ts';
import { orgOfKey } from '../middleware/auth.ts';
import { orgIdIfAllowed, quotaExceeded, withinQuota, type OrgUsage, type QuotaDefaults } from './quotas.ts';
import type { ApiError, ValidationError } from '../lib/errors.ts';
import type { Env, JobNotice } from '../env.ts';
import { limitColumns, limitedKind, overCeiling, withinCeilings, type JobLimits } from './limits.ts';
import { contractOf } from './kinds/index.ts';
import { budgetRefusal, isBudgeted, monthOf, withinBudget } from './budgets.ts';

/** Priority of jobs callers wait on interactively (program commits, verifications). */
export const INTERACTIVE_PRIORITY = 10;
/** Default priority of proofs and executions when the caller gives none (1..10, 10 highest). */
export const DEFAULT_PRIORITY = 5;

export interface NewJob {
  kind: JobKind;
  subjectId: string;
  orgId: string;
  configId: string;
  engine: string;
  priority: number;
  numGpus: number;
  /** The request's limits (src/jobs/limits.ts); absent ones take the organization's defaults. */
  limits?: JobLimits;
}

/**
 * SQL true while the caller's credentials still stand: an API key not revoked, nor its
 * creator demoted below submitting jobs, meanwhile (console callers were checked already).
 */
function callerStillAllowed(caller: Caller): ReturnType<typeof sql> {
  return caller.keyHash ? sql`(${orgOfKey(caller.keyHash, 'jobs.submit')} = ${caller.orgId})` : sql`1`;
}

/**
 * The insert for a job row, to run in the same batch as its subject's insert; it
 * fails the batch (isRefusedJobInsert) when the caller's key was revoked meanwhile or
 * the job is over its organization's quotas.
 */
export function insertJob(db: Db, job: NewJob, caller: Caller, quotas: QuotaDefaults, now = Date.now()) {
  const id = crypto.randomUUID();
  const gpus = gpusUsed(job.engine, job.numGpus);
  // Only the kinds callers put limits on (proofs, executions): the organization's limits
  // must not reach a program's commit or a verification, whose subjects no limit can end
  // (src/jobs/limits.ts fails and stops only limited kinds' subjects).
  const limits = limitedKind(contractOf(job.kind)) ? limitColumns(job.orgId, job.limits, now) : undefined;
  const allowed = [callerStillAllowed(caller), withinQuota(job.orgId, gpus, quotas)];
  // A proof or execution names limits within its organization's ceilings (src/jobs/limits.ts),
  // and reserves its cost limit within its monthly budget (src/jobs/budgets.ts), as they stand now.
  const ceilings = limits && withinCeilings(job.orgId, job.limits);
  if (ceilings) allowed.push(ceilings);
  if (isBudgeted(job.kind)) allowed.push(withinBudget(job.orgId, monthOf(now), limits?.cost_limit ?? sql`NULL`));
  const query = db.insert(jobs).values({
    id,
    kind: job.kind,
    subject_id: job.subjectId,
    org_id: orgIdIfAllowed(job.orgId, sql`(${sql.join(allowed, sql` AND `)})`),
    config_id: job.configId,
    engine: job.engine,
    priority: job.priority,
    num_gpus: job.numGpus,
    gpus_used: gpus,
    queued_at: now,
    notified_at: now,
    ...limits,
  });
  return { id, query };
}

/**
 * Sends the queue notice for a recorded job. Failure is logged, not raised: the job
 * is already durable and the sweep will notify it again.
 */
export async function notifyJob(env: Env, notice: JobNotice): Promise<void> {
  try {
    await env.JOBS.send(notice, { contentType: 'json' });
  } catch (err) {
    console.error(JSON.stringify({ level: 'warn', msg: 'queue send failed; the sweep will retry', ...notice, error: String(err) }));
  }
}

/** notifyJob() for many jobs: one send per 100 notices (a queue's batch at most). */
export async function notifyJobs(env: Env, notices: readonly JobNotice[]): Promise<void> {
  for (let i = 0; i < notices.length; i += 100) {
    const chunk = notices.slice(i, i + 100);
    try {
      await env.JOBS.sendBatch(chunk.map((body) => ({ body, contentType: 'json' as const })));
    } catch (err) {
      console.error(
        JSON.stringify({
          level: 'warn',
          msg: 'queue send failed; the sweep will retry',
          jobs: chunk.map((n) => n.job_id),
          error: String(err),
        }),
      );
    }
  }
}

/**
 * Why `usage` (the organization's, from the request's first read or its re-read) refuses
 * a job of `kind` holding `gpus` GPUs with the request's `limits`: 422 for a limit over
 * its organization's ceiling (src/jobs/limits.ts), 429 at a quota, 403 when its monthly
 * budget does not admit the job's reservation (src/jobs/budgets.ts); null when none does.
 * Without `kind` (before the job is known), the job quota only.
 */
export function refusalOf(usage: OrgUsage, gpus: number, kind?: JobKind, limits?: JobLimits): ApiError | ValidationError | null {
  const ceilings = kind && usage.ceilings && limitedKind(contractOf(kind)) ? usage.ceilings : undefined;
  return (
    (ceilings ? overCeiling(ceilings, limits) : null) ??
    quotaExceeded(usage, gpus) ??
    (kind ? budgetRefusal(usage.budget, kind, limits?.costLimit ?? ceilings?.costLimit ?? null) : null)
  );
}

/**
 * Refuses a request that would create a job while its organization is already at its
 * job quota (429), or a job of `kind` with `limits` over its organization's ceilings
 * (422) or that its monthly budget does not admit (403), before its body is stored
 * (refusalOf); `usage` comes from the request's first read.
 */
export function refuseOverQuota(usage: OrgUsage | undefined, kind?: JobKind, limits?: JobLimits): void {
  const refusal = usage && refusalOf(usage, 0, kind, limits);
  if (refusal) throw refusal;
}

/**
 * Commits a job with its subject's `rows` (and whatever else must stand or fall with
 * them, such as a stored answer) in one D1 batch, and answers the job's id. The job's
 * insert re-checks the caller's key and the quotas inside the batch: when either no
 * longer holds, the whole batch fails (isRefusedJobInsert) and nothing is written.
 */
export async function recordJob(db: Db, job: NewJob, caller: Caller, quotas: QuotaDefaults, rows: readonly Statement[]): Promise<string> {
  const insert = insertJob(db, job, caller, quotas);
  await batchByName(db, { job: insert.query, rows });
  return insert.id;
}
