// A job-creating request's side of dispatch (src/jobs/dispatch.ts keeps the D1 part:
// the job's insert, its quota and key checks, the notice): the caller's usage for the
// request's first read, the request's objects in R2, its stored answer under its
// Idempotency-Key, and why a refused batch was refused. Every route that creates a job
// (programs, proofs, executions, verifications) submits through submitJob().
import type { SQL } from 'drizzle-orm';
import type { Context } from 'hono';
import { gpusUsed, type JobKind } from 'prover-agent/protocol';
import type { AppEnv } from '../../app-env.ts';
import type { Statement } from '../../db/batch.ts';
import { notifyJob, recordJob, refusalOf, type NewJob } from '../../jobs/dispatch.ts';
import { isRefusedJobInsert, orgUsageQuery, quotaDefaults, type QuotaDefaults } from '../../jobs/quotas.ts';
import { monthOf } from '../../jobs/budgets.ts';
import { preparedSteps } from '../../db/prepared.ts';
import type { Action } from '../../auth/permissions.ts';
import { programToRunQuery } from '../programs/data.ts';
import { ArtifactBatch } from '../../lib/artifacts.ts';
import { ApiError, failedWith } from '../../lib/errors.ts';
import { PROGRAM_DELETED_RAISE } from '../retention/data.ts';
import { declaredAction, keyRefusal, orgOfKey } from '../../middleware/auth.ts';
import { answerStatements, claimLost } from '../../middleware/idempotency/index.ts';
import { isLostClaim } from '../../middleware/idempotency/store.ts';

/**
 * A proof's or an execution's first read (asCaller's route statements): the program to
 * run, its config and the organization's usage, scoped to the key's organization for the
 * route's action. Built once per action and quota defaults (src/db/prepared.ts): a
 * submission is the service's most frequent write.
 */
const programToRunSteps = preparedSteps(
  (v: { keyHash: string; programId: string; month: string; action: Action; quotas: QuotaDefaults }) =>
    `${v.action} ${v.quotas.maxActiveJobs} ${v.quotas.maxGpus}`,
  (db, p, v) => {
    const org = orgOfKey(p.keyHash, v.action);
    return {
      ...programToRunQuery(db, org, p.programId),
      usage: orgUsageQuery(db, org, v.quotas, p.month),
    };
  },
);

/** programToRunSteps for the request, as asCaller builds its route statements. */
export const programToRunRead = (c: Context<AppEnv>, programId: string) => () =>
  programToRunSteps(c.get('db'), {
    keyHash: c.get('apiKeyHash'),
    programId,
    month: monthOf(Date.now()),
    action: declaredAction(c),
    quotas: quotaDefaults(c.env),
  });

/** The caller's organization usage, for the request's first read (src/middleware/auth.ts asCaller). */
export function usageQuery(c: Context<AppEnv>, org: SQL<string>) {
  return orgUsageQuery(c.get('db'), org, quotaDefaults(c.env));
}

/**
 * Why a job-creating batch was refused, read on the primary: 401 when the caller's key
 * was revoked while the request was on its way, 403 when its creator was demoted below
 * submitting, else what refusalOf() says of the job (a ceiling lowered meanwhile: 422; a
 * quota: 429; a budget that no longer admits its reservation: 403), or null when none
 * holds any more (a job ended meanwhile: try again).
 */
async function explainRefusal(c: Context<AppEnv>, gpus: number, job: NewJob): Promise<Error | null> {
  const caller = c.get('caller');
  const refusal = caller.keyHash ? await keyRefusal(c) : null;
  if (refusal) return refusal;
  const [usage] = await orgUsageQuery(c.get('sessions').primary(), caller.orgId, quotaDefaults(c.env));
  return usage ? refusalOf(usage, gpus, job.kind, job.limits) : null;
}

/** What a job-creating request answers once its rows are committed (stored under its Idempotency-Key, if it sent one). */
export interface CreatedAnswer {
  status: 200 | 201;
  body: { id: string };
}

/**
 * The one write path of every request that creates a job, for the authenticated
 * caller (c.get('caller')). `store` writes the request's objects to R2 and returns what
 * the rows need; then the rows `build` makes and the job row are committed in one D1
 * batch on the primary, which re-checks the caller's key and the quotas inside it and
 * can still refuse as a whole; then the notice is sent. If anything fails before the
 * batch commits, every object written is deleted: no row without its objects, no
 * object without its row, no notice for a job that was not recorded. A request with an
 * Idempotency-Key stores `answer` in the same batch, which commits only while the
 * request holds its key (src/middleware/idempotency/): no record without its stored
 * answer, no stored answer without its record.
 */
export async function submitJob<T>(
  c: Context<AppEnv>,
  store: (artifacts: ArtifactBatch) => Promise<T>,
  build: (stored: T) => { job: NewJob; rows: Statement[] },
  answer: CreatedAnswer,
): Promise<T> {
  const db = c.get('db');
  const caller = c.get('caller');
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
      try {
        jobId = await recordJob(db, job, caller, quotas, [...rows, ...answerRows(db, caller.orgId)]);
        break;
      } catch (err) {
        if (isLostClaim(err)) throw claimLost();
        if (failedWith(err, PROGRAM_DELETED_RAISE)) throw new ApiError(409, 'The program was deleted while this request was stored');
        if (!isRefusedJobInsert(err)) throw err;
        const refusal = await explainRefusal(c, gpus, job);
        if (refusal) throw refusal;
        if (attempt === 2)
          throw new ApiError(429, 'Quota exceeded: your organization reached a quota while this request was stored; submit it again');
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
