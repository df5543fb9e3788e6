// Statements that read the caller's records, for the batch a request reads in (one
// D1 round trip: src/middleware/auth.ts asCaller). Every statement is scoped to the
// caller's organization (`org`: its id, or SQL for the API key's organization):
// another organization's id finds nothing, exactly like an id that does not exist
// (404). Programs and projects read theirs in src/features/{programs,projects}/data.ts;
// the paging helpers are src/lib/pages.ts.
import { and, eq, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { configs, executions, jobs, proofs, verifications } from '../db/schema.ts';
import { one, type Org } from './pages.ts';

// ---------------------------------------------------------------------------
// Proofs, executions, verifications, configs.

export const proofQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(proofs)
    .where(and(eq(proofs.id, id), eq(proofs.org_id, org)));

export const executionQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(executions)
    .where(and(eq(executions.id, id), eq(executions.org_id, org)));

export const verificationQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(verifications)
    .where(and(eq(verifications.id, id), eq(verifications.org_id, org)));

/** A config by id (configs are service-wide). */
export const configQuery = (db: Db, id: string) => db.select().from(configs).where(eq(configs.id, id));

/** The id of the job working for a subject (its logs are the job's). */
export const jobOfSubject = (db: Db, kind: 'proof' | 'execute', subject: SQL | string) =>
  db
    .select({ id: jobs.id, log_bytes: jobs.log_bytes, log_truncated: jobs.log_truncated, log_store: jobs.log_store })
    .from(jobs)
    .where(and(eq(jobs.kind, kind), eq(jobs.subject_id, subject)));


// ---------------------------------------------------------------------------
// For routes whose caller is already checked (the console's): the lookups run alone.

/** The organization's proof, or 404. */
export async function findProof(db: Db, org: Org, id: string) {
  return one(await proofQuery(db, org, id), 'Proof');
}
