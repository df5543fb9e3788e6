// Every place a record's data lives, and what its deletion does to each
// (docs/callers.md "Deleting records"). One list, COPIES, read by the code that
// deletes and by the test that walks every record kind × every kind of copy
// (test/worker/deletion.test.ts). Every deletion goes through here, however it comes: a
// caller's DELETE (/v1 or the console), the retention sweep, a program's deletion taking
// its verifications with it, a record already moved to the archive.
//
// In the deletion's one D1 batch (src/features/retention/data.ts, archive.ts), all
// conditional on the record being deletable as the batch runs:
//   audit       an audit entry naming who deleted it (deletionAudit);
//   purge row   what is left to delete outside D1 (purges: the record's R2 prefix, its
//               job's log, its archive object), so a crash loses nothing;
//   deliveries  the stored payloads of webhook deliveries about it erased, pending ones
//               ended unsent (endDeliveries);
//   row         the row becomes a tombstone: what the caller stored in it erased
//               (ERASED), its billing figures kept, `deleted_at` and `deleted_by` set.
// Then (src/features/retention/purge.ts, right after the response, else the cron sweep):
//   objects     every R2 object under the record's prefix (artifactKey.recordPrefix),
//               listed, so what no row names goes too: each attempt's uploads, a result
//               of a job that failed after uploading it;
//   log         its job's log chunks (listed), its compacted log, their index rows;
//   archive     its NDJSON line in the archive object, rewritten as its tombstone
//               (archive.ts eraseArchivedLine): the object keeps the record's billing
//               figures, never its public values.
// Its event streams end at once: a deleted record has no log (runs/data.ts logPosition).
import { sql, type SQL } from 'drizzle-orm';
import type { AnySQLiteColumn } from 'drizzle-orm/sqlite-core';
import { ulid } from 'ulid';
import type { Db } from '../../db/client.ts';
import {
  auditLog,
  nowIso,
  webhookDeliveries,
  type archived,
  type executions,
  type programs,
  type proofs,
  type verifications,
} from '../../db/schema.ts';
import type { NamedActor } from '../accounts/audit.ts';

export const RECORD_KINDS = ['proof', 'execution', 'program', 'verification'] as const;
export type RecordKind = (typeof RECORD_KINDS)[number];

/** The kinds of copy a record's data has, and what a deletion leaves of each. */
export const COPY_KINDS = {
  row: 'D1 row: a tombstone (deleted_at, deleted_by, state and billing figures); public values erased',
  objects: 'R2 objects under its prefix, every attempt’s: deleted (listed, named in a row or not)',
  log: 'its job’s log (R2 chunks and compacted object, D1 index rows): deleted',
  archive: 'its archive line (NDJSON in R2): rewritten as its tombstone; its stub says who and when',
  deliveries: 'stored webhook payloads about it: erased; pending deliveries end unsent',
  stream: 'its event streams: end at once with the tombstone',
  verifications: 'its verifications (uploads of its proofs): deleted with it, each a tombstone',
  audit: 'the audit log: an entry names who deleted it and when',
} as const;
export type CopyKind = keyof typeof COPY_KINDS;

/**
 * Where each kind of record keeps its data. Proofs and executions are archived after
 * ARCHIVE_AFTER_DAYS and stream their runs; a program's uploaded proofs are checked by
 * verifications of it; webhooks tell of all four (program.ready, proof.*, execution.*,
 * verification.*).
 */
export const COPIES: Record<RecordKind, readonly CopyKind[]> = {
  proof: ['row', 'objects', 'log', 'archive', 'deliveries', 'stream', 'audit'],
  execution: ['row', 'objects', 'log', 'archive', 'deliveries', 'stream', 'audit'],
  program: ['row', 'objects', 'log', 'deliveries', 'verifications', 'audit'],
  verification: ['row', 'objects', 'log', 'deliveries', 'audit'],
};

/** What a tombstone erases of what the caller stored in its row (the rest is billing, state and when). */
export const ERASED = { public_values: null } as const;

export type RecordTable = typeof proofs | typeof executions | typeof programs | typeof verifications;

/** Rows an audit entry is written from: a record's table, or an archived record's stub (its organization given). */
export interface AuditedRows {
  table: RecordTable | typeof archived;
  id: AnySQLiteColumn;
  org: AnySQLiteColumn | string;
}
/** A record table's rows, for deletionAudit. */
export const recordRows = (table: RecordTable): AuditedRows => ({ table, id: table.id, org: table.org_id });

/**
 * The audit entry of the deletion of the rows `where` selects (one per row), inserted
 * from the rows themselves before their tombstone is set: an entry exactly when the
 * batch deletes, in the record's organization. `detail` is JSON, as SQL over the row.
 */
export function deletionAudit(db: Db, kind: RecordKind, by: NamedActor, rows: AuditedRows, where: SQL | undefined, detail?: SQL) {
  // Every column of audit_log, in order (an insert from a select names them all). The
  // id: a ulid (it sorts by time), and the record's id after it, as one statement may
  // delete many rows.
  return db.insert(auditLog).select(
    sql`SELECT ${ulid()} || '.' || ${rows.id}, ${rows.org}, ${by.userId}, ${by.name}, ${`${kind}.delete`}, ${rows.id},
        ${detail ?? sql`'{}'`}, ${nowIso} FROM ${rows.table} WHERE ${where}`,
  );
}

/**
 * The webhook deliveries about the records `subjectIds` names (one id, or SQL: a
 * parenthesized subquery of ids), while `guard` holds: their stored payloads (a copy of the record as GET
 * answered it, public values and all) erased, and those still pending ended unsent, so
 * nothing about the record leaves the service after its deletion. A delivery whose
 * attempt is in flight records nothing after this (its batch needs it pending).
 */
export function endDeliveries(db: Db, kind: RecordKind, subjectIds: SQL | string, guard: SQL) {
  const d = webhookDeliveries;
  const pending = sql`${d.status} = 'pending'`;
  return db
    .update(d)
    .set({
      payload: null,
      status: sql`CASE WHEN ${pending} THEN 'failed' ELSE ${d.status} END`,
      last_error: sql`CASE WHEN ${pending} THEN ${`Not sent: the ${kind} was deleted`} ELSE ${d.last_error} END`,
    })
    .where(
      sql`${d.subject_kind} = ${kind} AND ${d.subject_id} IN ${typeof subjectIds === 'string' ? sql`(${subjectIds})` : subjectIds} AND ${guard}`,
    );
}
