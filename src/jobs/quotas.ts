// Per-organization quotas: at most `max_active_jobs` queued-or-running jobs and
// `max_gpus` GPUs held by them (what gpusUsed() says each job runs on), per
// organization (`npm run admin -- set-org-limits`), else the ORG_MAX_* vars. Enforced
// where every job is created (submitJob, src/jobs/dispatch.ts): a cheap check before
// the request's files are stored, then the job row's insert itself is conditional on
// both quotas, so concurrent submissions can never overshoot them together.
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import { jobs, organizations } from '../db/schema.ts';
import type { Env } from '../env.ts';
import { ApiError } from '../lib/errors.ts';
import { gpusUsedSql } from './state.ts';

export const QUOTA_DEFAULTS = { ORG_MAX_ACTIVE_JOBS: 1000, ORG_MAX_GPUS: 256 };

export interface QuotaDefaults {
  maxActiveJobs: number;
  maxGpus: number;
}

export function quotaDefaults(env: Env): QuotaDefaults {
  const int = (v: string | undefined, fallback: number) => (v !== undefined && /^\d+$/.test(v.trim()) ? Number(v) : fallback);
  return { maxActiveJobs: int(env.ORG_MAX_ACTIVE_JOBS, QUOTA_DEFAULTS.ORG_MAX_ACTIVE_JOBS), maxGpus: int(env.ORG_MAX_GPUS, QUOTA_DEFAULTS.ORG_MAX_GPUS) };
}

const active = (orgId: string) => and(eq(jobs.org_id, orgId), inArray(jobs.status, ['queued', 'leased']));

/** The organization's limits, in SQL (its own, else the defaults). */
function limitsSql(orgId: string, defaults: QuotaDefaults) {
  const own = (column: SQLiteColumn) => sql`(SELECT ${column} FROM ${organizations} WHERE ${organizations.id} = ${orgId})`;
  return {
    maxActiveJobs: sql<number>`coalesce(${own(organizations.max_active_jobs)}, ${defaults.maxActiveJobs})`,
    maxGpus: sql<number>`coalesce(${own(organizations.max_gpus)}, ${defaults.maxGpus})`,
  };
}

const activeJobsSql = (orgId: string) => sql<number>`(SELECT count(*) FROM ${jobs} WHERE ${active(orgId)})`;
const heldGpusSql = (orgId: string) => sql<number>`(SELECT coalesce(sum(${gpusUsedSql}), 0) FROM ${jobs} WHERE ${active(orgId)})`;

/** SQL true while one more job holding `gpus` GPUs fits both of the organization's quotas. */
export function withinQuota(orgId: string, gpus: number, defaults: QuotaDefaults): SQL {
  const limits = limitsSql(orgId, defaults);
  return sql`(${activeJobsSql(orgId)} < ${limits.maxActiveJobs} AND ${heldGpusSql(orgId)} + ${gpus} <= ${limits.maxGpus})`;
}

export interface OrgUsage {
  activeJobs: number;
  gpus: number;
  maxActiveJobs: number;
  maxGpus: number;
}

export async function orgUsage(db: Db, orgId: string, defaults: QuotaDefaults): Promise<OrgUsage> {
  const limits = limitsSql(orgId, defaults);
  const row = await db
    .select({ activeJobs: activeJobsSql(orgId), gpus: heldGpusSql(orgId), maxActiveJobs: limits.maxActiveJobs, maxGpus: limits.maxGpus })
    .from(sql`(SELECT 1)`)
    .get();
  return { activeJobs: Number(row!.activeJobs), gpus: Number(row!.gpus), maxActiveJobs: Number(row!.maxActiveJobs), maxGpus: Number(row!.maxGpus) };
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

/** Refuses with 429 when one more job holding `gpus` GPUs is over a quota right now. */
export async function checkQuota(db: Db, orgId: string, gpus: number, defaults: QuotaDefaults): Promise<void> {
  const refusal = quotaExceeded(await orgUsage(db, orgId, defaults), gpus);
  if (refusal) throw refusal;
}

/**
 * The value of a new job row's `org_id`: the organization while the job fits its
 * quotas, else NULL, which fails the NOT NULL constraint and with it the whole batch
 * (D1 runs a batch as one transaction), so nothing of the request is stored.
 */
export function orgIdWithinQuota(orgId: string, gpus: number, defaults: QuotaDefaults): SQL {
  return sql`CASE WHEN ${withinQuota(orgId, gpus, defaults)} THEN ${orgId} END`;
}

/** Whether a batch failed on orgIdWithinQuota()'s NULL. */
export function isQuotaRefusal(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (/NOT NULL constraint failed: jobs\.org_id/.test(e.message)) return true;
  return false;
}
