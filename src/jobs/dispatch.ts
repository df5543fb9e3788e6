// Recording and announcing background jobs. D1 is the source of truth: a job row is
// written in the same D1 batch as the record it works for, and only after that batch
// commits is a notice sent on the queue. A notice that is lost (send failed, message
// dropped) only delays the job: the cron sweep re-notifies jobs left queued
// (src/jobs/sweep.ts), so nothing is stranded.
import type { BatchItem } from 'drizzle-orm/batch';
import type { Db } from '../db/client.ts';
import { ArtifactBatch } from '../lib/artifacts.ts';
import { jobs, type JobKind } from '../db/schema.ts';
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

/** The insert for a job row, to run in the same batch as its subject's insert. */
export function insertJob(db: Db, job: NewJob, now = Date.now()) {
  const id = crypto.randomUUID();
  const query = db.insert(jobs).values({
    id,
    kind: job.kind,
    subject_id: job.subjectId,
    org_id: job.orgId,
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
 * The one write path of every request that creates a job. `store` writes the
 * request's objects to R2 and returns what the rows need; then the rows `build`
 * makes and the job row are committed in one D1 batch; then the notice is sent.
 * If anything fails before the batch commits, every object written is deleted: no
 * row without its objects, no object without its row, no notice for a job that
 * was not recorded.
 */
export async function submitJob<T>(
  env: Env,
  db: Db,
  store: (artifacts: ArtifactBatch) => Promise<T>,
  build: (stored: T) => { job: NewJob; rows: BatchItem<'sqlite'>[] },
): Promise<T> {
  const artifacts = new ArtifactBatch(env.ARTIFACTS);
  let jobId: string;
  let kind: JobKind;
  let stored: T;
  try {
    stored = await store(artifacts);
    const { job, rows } = build(stored);
    const insert = insertJob(db, job);
    await db.batch([insert.query, ...rows]);
    jobId = insert.id;
    kind = job.kind;
  } catch (err) {
    await artifacts.rollback();
    throw err;
  }
  await notifyJob(env, { job_id: jobId, kind });
  return stored;
}
