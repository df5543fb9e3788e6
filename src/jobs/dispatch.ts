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
import type { Env, JobNotice } from '../env.ts';
import { limitColumns, limitedKind, type JobLimits } from './limits.ts';
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
  const query = db.insert(jobs).values({
    id,
    kind: job.kind,
    subject_id: job.subjectId,
    // A proof or execution also needs its organization under its monthly budget (src/jobs/budgets.ts).
    org_id: orgIdIfAllowed(
      job.orgId,
      sql`(${callerStillAllowed(caller)} AND ${withinQuota(job.orgId, gpus, quotas)}${isBudgeted(job.kind) ? sql` AND ${withinBudget(job.orgId, monthOf(now))}` : sql``})`,
    ),
    config_id: job.configId,
    engine: job.engine,
    priority: job.priority,
    num_gpus: job.numGpus,
    gpus_used: gpus,
    queued_at: now,
    notified_at: now,
    // Only the kinds callers put limits on (proofs, executions): the organization's defaults
    // must not reach a program's commit or a verification, whose subjects no limit can end
    // (src/jobs/limits.ts fails and stops only limited kinds' subjects).
    ...(limitedKind(contractOf(job.kind)) ? limitColumns(job.orgId, job.limits, now) : {}),
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
 * Refuses (429) a request that would create a job while its organization is already at
 * its job quota, or (403) a job of `kind` its reached monthly budget refuses
 * (src/jobs/budgets.ts), before its body is read; `usage` comes from the request's first read.
 */
export function refuseOverQuota(usage: OrgUsage | undefined, kind?: JobKind): void {
  const refusal = usage && (quotaExceeded(usage, 0) ?? (kind ? budgetRefusal(usage.budget, kind) : null));
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
