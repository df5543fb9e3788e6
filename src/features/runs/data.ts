// The statements proofs and executions share: the job working for a run (its logs are
// the job's) and a page of a program's runs with the program's counter of them.
import { and, desc, eq, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { executions, jobs, programs, proofs } from '../../db/schema.ts';
import { notFound } from '../../lib/errors.ts';
import { inPage, type Org } from '../../lib/pages.ts';
import { paginate } from '../../lib/schemas.ts';

/** The id of the job working for a subject (its logs are the job's). */
export const jobOfSubject = (db: Db, kind: 'proof' | 'execute', subject: SQL | string) =>
  db
    .select({ id: jobs.id, log_bytes: jobs.log_bytes, log_truncated: jobs.log_truncated, log_store: jobs.log_store })
    .from(jobs)
    .where(and(eq(jobs.kind, kind), eq(jobs.subject_id, subject)));

/** One page of a program's proofs, as drizzle types it (the shape programRunsQuery() answers with). */
const runsOf = (db: Db) => db.select().from(proofs).limit(1).offset(0);

/**
 * The statements reading a page of a program's proofs or executions, newest first, and
 * the program's counter of them (the list's total; no row for another organization's
 * program). Read the answer with runsPage().
 */
export function programRunsQuery<T extends typeof proofs | typeof executions>(db: Db, org: Org, programId: string, table: T, page: number, pageSize: number) {
  const counter = table === proofs ? programs.proof_count : programs.execution_count;
  const rows = inPage(
    db
      .select()
      .from(table as typeof proofs) // the two tables share the columns used here; the row type is T's (below)
      .where(and(eq(table.program_id, programId), eq(table.org_id, org)))
      .orderBy(desc(table.created_at), desc(table.id))
      .$dynamic(),
    page,
    pageSize,
  );
  return [
    db.select({ total: counter }).from(programs).where(and(eq(programs.id, programId), eq(programs.org_id, org))),
    rows as unknown as Omit<ReturnType<typeof runsOf>, 'then'> & { _: { result: T['$inferSelect'][] } },
  ] as const;
}

/** The page programRunsQuery() read, as records: 404 when the program is not the caller's. */
export function runsPage<R, T>([[program], rows]: readonly [{ total: number }[], R[]], toRecord: (row: R) => T, page: number, pageSize: number) {
  if (!program) throw notFound('Program');
  return paginate(rows.map(toRecord), program.total, page, pageSize);
}
