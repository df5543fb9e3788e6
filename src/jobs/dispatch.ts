// Recording and announcing background jobs. D1 is the source of truth: a job row is
// written in the same D1 batch as the record it works for, and only after that batch
// commits is a notice sent on the queue. A notice that is lost (send failed, message
// dropped) only delays the job: the cron sweep re-notifies jobs left queued
// (src/jobs/sweep.ts), so nothing is stranded. Every job counts against its
// organization's quotas (src/jobs/quotas.ts); proofs and executions against its
// monthly budget too (src/jobs/budgets.ts).
import type { BatchItem } from 'drizzle-orm/batch';
import { sql } from 'drizzle-orm';
import type { Context } from 'hono';
import type { AppEnv, Caller } from '../app-env.ts';
import type { Db } from '../db/client.ts';
import { gpusUsed, type JobKind } from 'prover-agent/protocol';
import { jobs } from '../db/schema.ts';
import { ArtifactBatch } from '../lib/artifacts.ts';
import { ApiError } from '../lib/errors.ts';
import { isLostClaim } from '../lib/idempotency.ts';
import { keyRefusal, orgOfKey } from '../middleware/auth.ts';
import { answerStatements, claimLost } from '../middleware/idempotency.ts';
import { isRefusedJobInsert, orgIdIfAllowed, orgUsageQuery, quotaDefaults, quotaExceeded, withinQuota, type OrgUsage, type QuotaDefaults } from './quotas.ts';
import type { Env, JobNotice } from '../env.ts';
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

/** The caller's organization usage, for the request's first read (src/middleware/auth.ts asCaller). */
export function usageQuery(c: Context<AppEnv>, org: ReturnType<typeof sql>) {
  return orgUsageQuery(c.var.db, org, quotaDefaults(c.env));
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
 * Why a job-creating batch was refused, read on the primary: 401 when the caller's key
 * was revoked while the request was on its way, 403 when its creator was demoted below
 * submitting, the 429 of the quota it would exceed, or null when none holds any more
 * (a job ended meanwhile: try again).
 */
async function explainRefusal(c: Context<AppEnv>, gpus: number, kind: JobKind): Promise<ApiError | null> {
  const caller = c.var.caller;
  const refusal = caller.keyHash ? await keyRefusal(c) : null;
  if (refusal) return refusal;
  const [usage] = await orgUsageQuery(c.var.sessions.primary(), caller.orgId, quotaDefaults(c.env));
  return usage ? (quotaExceeded(usage, gpus) ?? budgetRefusal(usage.budget, kind)) : null;
}

/** What a job-creating request answers once its rows are committed (stored under its Idempotency-Key, if it sent one). */
export interface CreatedAnswer {
  status: 200 | 201;
  body: { id: string };
}

/**
 * The one write path of every request that creates a job, for the authenticated
 * caller (c.var.caller). `store` writes the request's objects to R2 and returns what
 * the rows need; then the rows `build` makes and the job row are committed in one D1
 * batch on the primary, which re-checks the caller's key and the quotas inside it and
 * can still refuse as a whole; then the notice is sent. If anything fails before the
 * batch commits, every object written is deleted: no row without its objects, no
 * object without its row, no notice for a job that was not recorded. A request with an
 * Idempotency-Key stores `answer` in the same batch, which commits only while the
 * request holds its key (src/middleware/idempotency.ts): no record without its stored
 * answer, no stored answer without its record.
 */
export async function submitJob<T>(
  c: Context<AppEnv>,
  store: (artifacts: ArtifactBatch) => Promise<T>,
  build: (stored: T) => { job: NewJob; rows: BatchItem<'sqlite'>[] },
  answer: CreatedAnswer,
): Promise<T> {
  const { db, caller } = c.var;
  const quotas = quotaDefaults(c.env);
  const artifacts = new ArtifactBatch(c.env.ARTIFACTS);
  let jobId: string;
  let kind: JobKind;
  let stored: T;
  try {
    stored = await store(artifacts);
    const { job, rows } = build(stored);
    const answerRows = await answerStatements(c, answer.status, answer.body);
    const gpus = gpusUsed(job.engine, job.numGpus);
    for (let attempt = 1; ; attempt++) {
      const insert = insertJob(db, job, caller, quotas);
      try {
        await db.batch([insert.query, ...rows, ...answerRows(db, caller.orgId)]);
        jobId = insert.id;
        break;
      } catch (err) {
        if (isLostClaim(err)) throw claimLost();
        if (!isRefusedJobInsert(err)) throw err;
        const refusal = await explainRefusal(c, gpus, job.kind);
        if (refusal) throw refusal;
        if (attempt === 2) throw new ApiError(429, 'Quota exceeded: your organization reached a quota while this request was stored; submit it again');
      }
    }
    kind = job.kind;
  } catch (err) {
    await artifacts.rollback();
    throw err;
  }
  await notifyJob(c.env, { job_id: jobId, kind });
  return stored;
}
