// Deleting a caller's records (docs/callers.md "Deleting records"): the statements
// that turn a proof, an execution, a program or a verification into a tombstone, and the
// record of the R2 objects it owned, still to delete (`purges`). Every copy of a record's
// data these reach is listed in copies.ts.
//
// A deletion is one D1 batch, conditional on the record being the caller's, not deleted
// yet and not running: it inserts the record's purge row (what it owns under R2, worked
// out in SQL from the row itself: src/lib/artifact-keys.ts names the objects) and sets
// `deleted_at`, in that order, so a crash after the batch has lost nothing (the purge
// row names every object) and a crash before it has changed nothing. The objects go
// after (src/features/retention/purge.ts), right after the response or else from the
// cron sweep, and the purge row last. The tombstone keeps every billing figure (cost,
// cycles, cells, GPU time in usage_daily); what the caller stored in D1 itself (public
// values, copies.ts ERASED) goes with the files. It says who deleted it (`deleted_by`),
// and the same batch writes the audit entry (copies.ts deletionAudit).
//
// Running work is refused (409), never cancelled on the caller's behalf: a running proof
// ends only when its agent acknowledges the cancel, which no batch can wait for, and a
// deletion that raced the agent's upload would leave the proof it uploaded behind. The
// caller cancels (POST …/cancel), then deletes.
import { and, eq, exists, inArray, isNull, ne, sql, type SQL } from 'drizzle-orm';
import type { AnySQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { Db } from '../../db/client.ts';
import { PROOF_TERMINAL_STATES } from '../../db/enums.ts';
import { executions, jobs, programs, proofs, purges, verifications } from '../../db/schema.ts';
import { artifactKey, keySql } from '../../lib/artifact-keys.ts';
import { PROOF_TYPES } from 'prover-agent/protocol';
import { attemptKeysSql } from '../../jobs/results.ts';
import type { NamedActor } from '../accounts/audit.ts';
import { deletionAudit, endDeliveries, ERASED, recordRows, type RecordTable } from './copies.ts';

export type Org = string | SQL<string>;
export type DeletableKind = (typeof purges.$inferSelect)['subject_kind'];

/**
 * The RAISE of the triggers that refuse a proof or an execution of a deleted program
 * (migrations/0017_retention.sql): a submission whose program read came before the
 * deletion and whose batch after fails with it, and answers 409 as the read would.
 */
export const PROGRAM_DELETED_RAISE = 'retention: the program was deleted';

/** An execution's statuses once it can run no more. */
export const EXECUTION_TERMINAL_STATUSES = ['succeeded', 'failed', 'canceled'] as const;

const isoAt = (now: number) => new Date(now).toISOString();

/**
 * The objects the subject's record names, and the files its job's attempts stored for
 * it that it does not (src/jobs/results.ts: an attempt that failed, was canceled or
 * superseded, a host's unsealed dev proof): each recorded before it was written, so the
 * purge names every stored one (attemptKeysSql); one still being written when the record
 * is deleted is the sweep's, which deletes it once its upload can no longer land.
 * A record finished before migrations/0022_results.sql may also have had late uploads
 * written at its fixed keys (the layout's proofOutput, programBaseline): for such a
 * record (no digest recorded) the purge names those keys too; deleting one that was
 * never stored is a no-op.
 */
const legacyResultKeys = (isLegacy: SQL, keys: string[]) =>
  sql`CASE WHEN ${isLegacy} THEN json(${JSON.stringify(keys)}) ELSE json('[]') END`;

/** The job of a subject, as SQL over the subject's own id column. */
const jobOf = (kind: 'proof' | 'execute' | 'commit' | 'verify', subjectId: SQL | AnySQLiteColumn) =>
  sql<string | null>`(SELECT ${jobs.id} FROM ${jobs} WHERE ${jobs.kind} = ${kind} AND ${jobs.subject_id} = ${subjectId})`;

/**
 * The purge row of the rows `where` selects from `table`: its keys as JSON (any string
 * leaf is an object key), and the job whose log goes with it.
 */
function purgeInsert(
  db: Db,
  kind: DeletableKind,
  table: typeof proofs | typeof executions | typeof programs | typeof verifications,
  keys: SQL,
  logJob: SQL<string | null>,
  where: SQL | undefined,
  now: number,
) {
  return db
    .insert(purges)
    .select(
      db
        .select({
          subject_kind: sql<DeletableKind>`${kind}`.as('subject_kind'),
          subject_id: table.id,
          org_id: table.org_id,
          keys: sql`${keys}`.as('keys'),
          log_job_id: sql`${logJob}`.as('log_job_id'),
          created_at: sql<number>`${now}`.as('created_at'),
          archive_key: sql<string | null>`NULL`.as('archive_key'),
        })
        .from(table)
        .where(where),
    )
    .onConflictDoNothing();
}

/**
 * No compaction of the deleted record's log starts after its deletion (src/jobs/logs.ts
 * compacts only `chunks` and `compacted` logs): one already running may still write its
 * object, which the purge's second pass deletes (src/features/retention/purge.ts).
 */
function stopCompaction(db: Db, kind: 'proof' | 'execute' | 'commit' | 'verify', subjectId: string | SQL, deletable: SQL) {
  const subject = typeof subjectId === 'string' ? eq(jobs.subject_id, subjectId) : sql`${jobs.subject_id} IN ${subjectId}`;
  return db
    .update(jobs)
    .set({ log_store: 'clean' })
    .where(and(eq(jobs.kind, kind), subject, inArray(jobs.log_store, ['chunks', 'compacted']), deletable));
}

/** SQL true while some row of `table` matches `where` (the guard of statements on other tables). */
const stillThere = (db: Db, table: RecordTable, where: SQL | undefined) =>
  exists(
    db
      .select({ one: sql`1` })
      .from(table)
      .where(where),
  );

/**
 * A record's tombstone, for its deletion's batch: deleted at `now` by `by` where `where`
 * holds, and a run's payload `erased` (ERASED); answers its id when it applied.
 */
const tombstone = (db: Db, table: RecordTable, where: SQL | undefined, by: NamedActor, now: number, erased: Partial<typeof ERASED> = {}) =>
  db
    .update(table)
    .set({ deleted_at: isoAt(now), deleted_by: by.name, ...erased })
    .where(where)
    .returning({ id: table.id });

/** The statements deleting the caller's proof, by `by`, for one batch; deletionOutcome() reads them. */
export function deleteProofStatements(db: Db, org: Org, id: string, by: NamedActor, now = Date.now()) {
  const own = and(eq(proofs.id, id), eq(proofs.org_id, org));
  const deletable = and(own, isNull(proofs.deleted_at), inArray(proofs.state, [...PROOF_TERMINAL_STATES]));
  return {
    audit: deletionAudit(db, 'proof', by, recordRows(proofs), deletable, sql`json_object('program_id', ${proofs.program_id})`),
    purge: purgeInsert(
      db,
      'proof',
      proofs,
      sql`json_object('input', ${keySql(artifactKey.proofInput, proofs.id)}, 'children', json(${proofs.child_proof_keys}),
        'proofs', (SELECT json_group_array(coalesce(json_extract(${proofs.proof_objects}, '$.' || file.value || '.key'), ${keySql(artifactKey.proofOutput, proofs.id, sql`file.value`)})) FROM json_each(${proofs.proof_files}) file),
        'attempts', json(${attemptKeysSql(jobOf('proof', proofs.id))}),
        'results', ${legacyResultKeys(
          sql`${proofs.proof_objects} IS NULL`,
          PROOF_TYPES.map((t) => artifactKey.proofOutput(id, t)),
        )})`,
      jobOf('proof', proofs.id),
      deletable,
      now,
    ),
    logStore: stopCompaction(db, 'proof', id, stillThere(db, proofs, deletable)),
    deliveries: endDeliveries(db, 'proof', id, stillThere(db, proofs, deletable)),
    tombstone: tombstone(db, proofs, deletable, by, now, ERASED),
    record: db.select().from(proofs).where(own),
  };
}

/** The statements deleting the caller's execution, by `by`, for one batch. */
export function deleteExecutionStatements(db: Db, org: Org, id: string, by: NamedActor, now = Date.now()) {
  const own = and(eq(executions.id, id), eq(executions.org_id, org));
  const deletable = and(own, isNull(executions.deleted_at), inArray(executions.status, [...EXECUTION_TERMINAL_STATUSES]));
  return {
    audit: deletionAudit(db, 'execution', by, recordRows(executions), deletable, sql`json_object('program_id', ${executions.program_id})`),
    purge: purgeInsert(
      db,
      'execution',
      executions,
      sql`json_object('input', ${keySql(artifactKey.executionInput, executions.id)})`,
      jobOf('execute', executions.id),
      deletable,
      now,
    ),
    logStore: stopCompaction(db, 'execute', id, stillThere(db, executions, deletable)),
    deliveries: endDeliveries(db, 'execution', id, stillThere(db, executions, deletable)),
    tombstone: tombstone(db, executions, deletable, by, now, ERASED),
    record: db.select().from(executions).where(own),
  };
}

/**
 * Whether some job of the program is queued or leased: its commit, or a proof, execution
 * or verification of it. It walks the organization's queued jobs (jobs_lane, at most its
 * active-jobs quota) and the fleet's leased ones (jobs_lease_expiry, at most the fleet's
 * capacity), never the program's history.
 */
const programBusy = (status: 'queued' | 'leased') => sql`EXISTS (
  SELECT 1 FROM ${jobs} WHERE ${jobs.status} = ${sql.raw(`'${status}'`)} AND ${jobs.org_id} = ${programs.org_id}
  ${status === 'leased' ? sql`AND ${jobs.lease_expires_at} IS NOT NULL` : sql``}
  AND (${jobs.subject_id} = ${programs.id}
    OR EXISTS (SELECT 1 FROM ${proofs} WHERE ${proofs.id} = ${jobs.subject_id} AND ${proofs.program_id} = ${programs.id})
    OR EXISTS (SELECT 1 FROM ${executions} WHERE ${executions.id} = ${jobs.subject_id} AND ${executions.program_id} = ${programs.id})
    OR EXISTS (SELECT 1 FROM ${verifications} WHERE ${verifications.id} = ${jobs.subject_id} AND ${verifications.program_id} = ${programs.id})))`;

/**
 * The statements deleting the caller's program (its ELF, VMEXE, baseline and commit
 * log), refused while any job of it is queued or running. Its proofs and executions are
 * records of their own: they stay, each deleted on its own request or by retention. Its
 * verifications go with it: each is an upload of one of its proofs, checked against the
 * baseline this deletes, kept for nothing else (verificationsOfProgram).
 */
export function deleteProgramStatements(db: Db, org: Org, id: string, by: NamedActor, now = Date.now()) {
  const own = and(eq(programs.id, id), eq(programs.org_id, org));
  const deletable = and(own, isNull(programs.deleted_at), sql`NOT ${programBusy('queued')}`, sql`NOT ${programBusy('leased')}`);
  const its = verificationsOfProgram(db, id, stillThere(db, programs, deletable));
  return {
    audit: deletionAudit(
      db,
      'program',
      by,
      recordRows(programs),
      deletable,
      sql`json_object('verifications', (SELECT count(*) FROM ${verifications} WHERE ${its.where}))`,
    ),
    verificationAudits: deletionAudit(
      db,
      'verification',
      by,
      recordRows(verifications),
      its.where,
      sql`json_object('program_id', ${verifications.program_id}, 'with_program', 1)`,
    ),
    verificationPurges: its.purge(now),
    verificationLogStores: its.logStore,
    verificationDeliveries: its.deliveries,
    verificationTombstones: its.tombstone(by, now),
    purge: purgeInsert(
      db,
      'program',
      programs,
      sql`json_object('elf', ${programs.elf_key}, 'vmexe', ${programs.vmexe_key}, 'baseline', ${programs.baseline_key},
        'attempts', json(${attemptKeysSql(jobOf('commit', programs.id))}),
        'results', ${legacyResultKeys(sql`${programs.baseline_sha256} IS NULL`, [artifactKey.programBaseline(id)])})`,
      jobOf('commit', programs.id),
      deletable,
      now,
    ),
    logStore: stopCompaction(db, 'commit', id, stillThere(db, programs, deletable)),
    deliveries: endDeliveries(db, 'program', id, stillThere(db, programs, deletable)),
    tombstone: tombstone(db, programs, deletable, by, now),
  };
}

/** A verification's purge row's keys: its uploaded proof (the rest of its prefix is listed). */
const verificationKeys = sql`json_object('proof', ${verifications.proof_key})`;

/**
 * The undeleted verifications of program `programId`, while `guard` holds (the program's
 * deletion in the same batch: verifications_program finds them): their purge rows,
 * deliveries and tombstones, the program's audit entry counting them. None is running:
 * the program's deletion is refused while a job of it is.
 */
function verificationsOfProgram(db: Db, programId: string, guard: SQL) {
  const where = and(eq(verifications.program_id, programId), isNull(verifications.deleted_at), guard)!;
  const ids = sql`(SELECT ${verifications.id} FROM ${verifications} WHERE ${where})`;
  return {
    where,
    purge: (now: number) => purgeInsert(db, 'verification', verifications, verificationKeys, jobOf('verify', verifications.id), where, now),
    logStore: stopCompaction(db, 'verify', ids, sql`1`),
    deliveries: endDeliveries(db, 'verification', ids, sql`1`),
    tombstone: (by: NamedActor, now: number) => tombstone(db, verifications, where, by, now),
  };
}

/**
 * The statements deleting the caller's verification, by `by`, for one batch: its uploaded
 * proof (and anything else under its prefix) and its job's log; refused (409) while it is
 * processing. The row stays as a tombstone with its result.
 */
export function deleteVerificationStatements(db: Db, org: Org, id: string, by: NamedActor, now = Date.now()) {
  const own = and(eq(verifications.id, id), eq(verifications.org_id, org));
  const deletable = and(own, isNull(verifications.deleted_at), ne(verifications.result, 'processing'));
  return {
    audit: deletionAudit(
      db,
      'verification',
      by,
      recordRows(verifications),
      deletable,
      sql`json_object('program_id', ${verifications.program_id})`,
    ),
    purge: purgeInsert(db, 'verification', verifications, verificationKeys, jobOf('verify', verifications.id), deletable, now),
    logStore: stopCompaction(db, 'verify', id, stillThere(db, verifications, deletable)),
    deliveries: endDeliveries(db, 'verification', id, stillThere(db, verifications, deletable)),
    tombstone: tombstone(db, verifications, deletable, by, now),
    record: db.select().from(verifications).where(own),
  };
}

export type DeletionOutcome<R> = { kind: 'missing' } | { kind: 'deleted'; row: R } | { kind: 'busy'; row: R };

/**
 * What a deletion batch did: the record is now a tombstone (just now, or by an earlier
 * request: a second DELETE answers the same), still busy (409), or not the caller's (404).
 */
export function deletionOutcome<R extends { deleted_at: string | null }>(row: R | undefined): DeletionOutcome<R> {
  if (!row) return { kind: 'missing' };
  return row.deleted_at ? { kind: 'deleted', row } : { kind: 'busy', row };
}
