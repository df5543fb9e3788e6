// Recording and announcing background jobs. D1 is the source of truth: a job row is
// written in the same D1 batch as the record it works for, and only after that batch
// commits is a notice sent on the queue. A notice that is lost (send failed, message
// dropped) only delays the job: the cron sweep re-notifies jobs left queued
// (src/jobs/sweep.ts), so nothing is stranded. Every job counts against its
// organization's quotas (src/jobs/quotas.ts).
import type { BatchItem } from 'drizzle-orm/batch';
import type { Db } from '../db/client.ts';
import { ArtifactBatch } from '../lib/artifacts.ts';
import { ApiError } from '../lib/errors.ts';
import { jobs, type JobKind } from '../db/schema.ts';
import { checkQuota, isQuotaRefusal, orgIdWithinQuota, orgUsage, quotaDefaults, quotaExceeded, type QuotaDefaults } from './quotas.ts';
import { gpusUsed } from './state.ts';
import type { Env, JobNotice } from '../env.ts';

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
 * The insert for a job row, to run in the same batch as its subject's insert; it
 * fails the batch when the job is over its organization's quotas (isQuotaRefusal).
 */
export function insertJob(db: Db, job: NewJob, quotas: QuotaDefaults, now = Date.now()) {
  const id = crypto.randomUUID();
  const query = db.insert(jobs).values({
    id,
    kind: job.kind,
    subject_id: job.subjectId,
    org_id: orgIdWithinQuota(job.orgId, gpusUsed(job.engine, job.numGpus), quotas),
    config_id: job.configId,
    engine: job.engine,
    priority: job.priority,
    num_gpus: job.numGpus,
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

/**
 * Commits a job-creating batch, or refuses it with the 429 of the quota it would
 * exceed. A refusal whose quota has room by the time it is explained (a job ended
 * meanwhile) is tried once more.
 */
async function commitWithinQuota(db: Db, batch: [BatchItem<'sqlite'>, ...BatchItem<'sqlite'>[]], orgId: string, gpus: number, quotas: QuotaDefaults) {
  for (let attempt = 1; ; attempt++) {
    try {
      await db.batch(batch);
      return;
    } catch (err) {
      if (!isQuotaRefusal(err)) throw err;
      const refusal = quotaExceeded(await orgUsage(db, orgId, quotas), gpus);
      if (refusal) throw refusal;
      if (attempt === 2) throw new ApiError(429, 'Quota exceeded: your organization reached a quota while this request was stored; submit it again');
    }
  }
}

/**
 * The one write path of every request that creates a job, for the caller's
 * organization `orgId`. An organization at its job quota is refused (429) before
 * anything is read or stored. Then `store` writes the request's objects to R2 and
 * returns what the rows need; then the rows `build` makes and the job row are
 * committed in one D1 batch, which the quotas can still refuse as a whole; then the
 * notice is sent. If anything fails before the batch commits, every object written is
 * deleted: no row without its objects, no object without its row, no notice for a
 * job that was not recorded.
 */
export async function submitJob<T>(
  env: Env,
  db: Db,
  orgId: string,
  store: (artifacts: ArtifactBatch) => Promise<T>,
  build: (stored: T) => { job: NewJob; rows: BatchItem<'sqlite'>[] },
): Promise<T> {
  const quotas = quotaDefaults(env);
  await checkQuota(db, orgId, 0, quotas);
  const artifacts = new ArtifactBatch(env.ARTIFACTS);
  let jobId: string;
  let kind: JobKind;
  let stored: T;
  try {
    stored = await store(artifacts);
    const { job, rows } = build(stored);
    const insert = insertJob(db, job, quotas);
    await commitWithinQuota(db, [insert.query, ...rows], job.orgId, gpusUsed(job.engine, job.numGpus), quotas);
    jobId = insert.id;
    kind = job.kind;
  } catch (err) {
    await artifacts.rollback();
    throw err;
  }
  await notifyJob(env, { job_id: jobId, kind });
  return stored;
}
