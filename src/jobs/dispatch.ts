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
import { preparedSteps } from '../db/prepared.ts';
import type { Db } from '../db/client.ts';
import { gpusUsed, type JobKind } from 'prover-agent/protocol';
import { jobs } from '../db/schema.ts';
import { orgOfKey } from '../middleware/auth.ts';
import { orgIdIfAllowed, quotaExceeded, withinQuota, type OrgUsage, type QuotaDefaults } from './quotas.ts';
import type { ApiError, ValidationError } from '../lib/errors.ts';
import type { Env, JobNotice } from '../env.ts';
import { LIMIT_KEYS, limitColumns, limitedKind, overCeiling, withinCeilings, type JobLimits } from './limits.ts';
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

/** A job row's values, which its prepared insert (jobInsert) is filled with: the job's own, and those it is checked with. */
interface JobInsertValues extends Omit<NewJob, 'limits'> {
  [value: string]: unknown;
  id: string;
  gpus: number;
  now: number;
  month: string;
  /** The caller's API key's hash ('' for a console caller, checked already). */
  keyHash: string;
  cycleLimit: number | null;
  costLimit: number | null;
  deadlineSeconds: number | null;
  /** Which limits the request names (withinCeilings checks them), in LIMITS' order. */
  named: (keyof JobLimits)[];
  quotas: QuotaDefaults;
}

/**
 * The insert for a job row, built once per shape (src/db/prepared.ts): its kind (only
 * proofs and executions take limits and a budget), whether an API key sent it, the limits
 * it names and the quotas' defaults. It fails its batch (isRefusedJobInsert) when the
 * caller's key was revoked meanwhile, or its creator demoted below submitting (a console
 * caller was checked already), or the job is over its organization's quotas, ceilings or
 * monthly budget as they stand in the statement.
 */
const jobInsert = preparedSteps(
  (v: JobInsertValues) => `${v.kind} ${v.keyHash !== ''} ${v.named.join(',')} ${v.quotas.maxActiveJobs} ${v.quotas.maxGpus}`,
  (db, p, v) => {
    // Only the kinds callers put limits on (proofs, executions): the organization's limits
    // must not reach a program's commit or a verification, whose subjects no limit can end
    // (src/jobs/limits.ts fails and stops only limited kinds' subjects).
    const limits = limitedKind(contractOf(v.kind))
      ? limitColumns(p.orgId, { cycleLimit: p.cycleLimit, costLimit: p.costLimit, deadlineSeconds: p.deadlineSeconds }, p.now)
      : undefined;
    const allowed = [
      v.keyHash !== '' ? sql`(${orgOfKey(p.keyHash, 'jobs.submit')} = ${p.orgId})` : sql`1`,
      withinQuota(p.orgId, p.gpus, v.quotas),
    ];
    // A proof or execution names limits within its organization's ceilings (src/jobs/limits.ts),
    // and reserves its cost limit within its monthly budget (src/jobs/budgets.ts), as they stand now.
    const ceilings = limits && withinCeilings(p.orgId, Object.fromEntries(v.named.map((key) => [key, p[key]])));
    if (ceilings) allowed.push(ceilings);
    if (isBudgeted(v.kind)) allowed.push(withinBudget(p.orgId, p.month, limits?.cost_limit ?? sql`NULL`));
    return {
      job: db.insert(jobs).values({
        id: p.id,
        kind: p.kind,
        subject_id: p.subjectId,
        org_id: orgIdIfAllowed(p.orgId, sql`(${sql.join(allowed, sql` AND `)})`),
        config_id: p.configId,
        engine: p.engine,
        priority: p.priority,
        num_gpus: p.numGpus,
        gpus_used: p.gpus,
        queued_at: p.now,
        notified_at: p.now,
        ...limits,
      }),
    };
  },
);

/**
 * The insert for a job row, to run in the same batch as its subject's insert; it
 * fails the batch (isRefusedJobInsert) when the caller's key was revoked meanwhile or
 * the job is over its organization's quotas (jobInsert).
 */
export function insertJob(db: Db, job: NewJob, caller: Caller, quotas: QuotaDefaults, now = Date.now()) {
  const id = crypto.randomUUID();
  const { job: query } = jobInsert(db, {
    id,
    kind: job.kind,
    subjectId: job.subjectId,
    orgId: job.orgId,
    configId: job.configId,
    engine: job.engine,
    priority: job.priority,
    numGpus: job.numGpus,
    gpus: gpusUsed(job.engine, job.numGpus),
    now,
    month: monthOf(now),
    keyHash: caller.keyHash ?? '',
    cycleLimit: job.limits?.cycleLimit ?? null,
    costLimit: job.limits?.costLimit ?? null,
    deadlineSeconds: job.limits?.deadlineSeconds ?? null,
    named: LIMIT_KEYS.filter((key) => job.limits?.[key] !== undefined),
    quotas,
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
