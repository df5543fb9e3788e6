// Per-organization quotas: at most `max_active_jobs` queued-or-running jobs and
// `max_gpus` GPUs held by them (what gpusUsed() says each job runs on), per
// organization (`npm run admin -- set-org-limits`), else the ORG_MAX_* vars. Both are
// read from the organization's counters (active_jobs, held_gpus; kept by triggers in
// the transaction of every job change, migrations/0005_counters.sql), never counted.
// Enforced where every job is created (submitJob, src/jobs/dispatch.ts): a check in the
// request's first read, before its files are stored, then the job row's insert is
// itself conditional on both quotas, so concurrent submissions can never overshoot
// them together.
import { eq, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { organizations } from '../db/schema.ts';
import type { Env } from '../env.ts';
import { ApiError, isRefusedInsert } from '../lib/errors.ts';
import { budgetStateSql, monthOf } from './budgets.ts';
import type { LimitCeilings } from './limits.ts';

export interface QuotaDefaults {
  maxActiveJobs: number;
  maxGpus: number;
}

/** The quotas of an organization that has none of its own, when ORG_MAX_ACTIVE_JOBS / ORG_MAX_GPUS are not set. */
export const DEFAULT_QUOTAS: QuotaDefaults = { maxActiveJobs: 1000, maxGpus: 256 };

export function quotaDefaults(env: Env): QuotaDefaults {
  const int = (v: string | undefined, fallback: number) => (v !== undefined && /^\d+$/.test(v.trim()) ? Number(v) : fallback);
  return {
    maxActiveJobs: int(env.ORG_MAX_ACTIVE_JOBS, DEFAULT_QUOTAS.maxActiveJobs),
    maxGpus: int(env.ORG_MAX_GPUS, DEFAULT_QUOTAS.maxGpus),
  };
}

/** SQL true while one more job holding `gpus` GPUs fits both of the organization's quotas. */
export function withinQuota(orgId: string, gpus: number, defaults: QuotaDefaults): SQL {
  return sql`EXISTS (SELECT 1 FROM ${organizations} WHERE ${organizations.id} = ${orgId}
    AND ${organizations.active_jobs} < coalesce(${organizations.max_active_jobs}, ${defaults.maxActiveJobs})
    AND ${organizations.held_gpus} + ${gpus} <= coalesce(${organizations.max_gpus}, ${defaults.maxGpus}))`;
}

export interface OrgUsage {
  activeJobs: number;
  gpus: number;
  maxActiveJobs: number;
  maxGpus: number;
  /** Its monthly budget and standing, as budgetStateSql() says (src/jobs/budgets.ts), or null: none. */
  budget?: string | null;
  /** Its jobs' limits, the ceilings of a request's own (src/jobs/limits.ts). */
  ceilings?: LimitCeilings;
}

/** The organization's usage and limits: one row, for a batch (`org` may be SQL, e.g. the API key's organization). */
export function orgUsageQuery(db: Db, org: string | SQL, defaults: QuotaDefaults, month = monthOf(Date.now())) {
  return db
    .select({
      activeJobs: organizations.active_jobs,
      gpus: organizations.held_gpus,
      maxActiveJobs: sql<number>`coalesce(${organizations.max_active_jobs}, ${defaults.maxActiveJobs})`.as('max_active_jobs_limit'),
      maxGpus: sql<number>`coalesce(${organizations.max_gpus}, ${defaults.maxGpus})`.as('max_gpus_limit'),
      budget: budgetStateSql(org, month).as('budget_state'),
      ceilings: {
        cycleLimit: organizations.default_cycle_limit,
        costLimit: organizations.default_cost_limit,
        deadlineSeconds: organizations.default_deadline_seconds,
      },
    })
    .from(organizations)
    .where(eq(organizations.id, org));
}

/** The 429 for the quota a job holding `gpus` GPUs would exceed, or null when it fits. */
export function quotaExceeded(usage: OrgUsage, gpus: number): ApiError | null {
  if (usage.activeJobs >= usage.maxActiveJobs)
    return new ApiError(
      429,
      `Quota exceeded: max_active_jobs allows ${usage.maxActiveJobs} queued or running jobs per organization and yours has ${usage.activeJobs}; submit again when some have finished (or cancel some)`,
    );
  if (usage.gpus + gpus > usage.maxGpus)
    return new ApiError(
      429,
      `Quota exceeded: max_gpus allows ${usage.maxGpus} GPUs held by an organization's queued or running jobs and yours hold ${usage.gpus}; this job needs ${gpus} more`,
    );
  return null;
}

/**
 * The value of a new job row's `org_id`: the organization while `allowed` holds (the
 * caller's key is still live, the job fits its quotas), else NULL, which fails the NOT
 * NULL constraint and with it the whole batch (D1 runs a batch as one transaction), so
 * nothing of the request is stored.
 */
export function orgIdIfAllowed(orgId: string, allowed: SQL): SQL {
  return sql`CASE WHEN ${allowed} THEN ${orgId} END`;
}

/** Whether a batch failed on orgIdIfAllowed()'s NULL. */
export const isRefusedJobInsert = (err: unknown) => isRefusedInsert(err, 'jobs');
