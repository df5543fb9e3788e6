// The archive (docs/contributors.md "What D1 keeps, and past one database"): finished
// proofs and executions older than ARCHIVE_AFTER_DAYS (30) leave D1 for R2, as NDJSON
// people can query (DuckDB, jq, a notebook): one line per record, the record's D1 row
// as every read selects it (its columns by name, its run state) with its job's row
// under `job`, in objects
//
//   archive/{org}/{proofs|executions}/{yyyy-mm-dd}/{object}.ndjson
//
// one per organization, kind and day of creation per sweep batch (a day's records are
// the folder's objects). Plain NDJSON, not gzip: an object is at most ARCHIVE_BATCH
// records (a few hundred KB), a read by id reads one whole object and scans it, and any
// tool reads it as it is.
//
// Crash-safe in three steps, each one D1 batch or one R2 write:
//   1. plan: an `archive_objects` row names the object's records (`pending_ids`);
//   2. write: the object is written from the records' rows as they are now;
//   3. finish: one batch marks the object written, inserts each record's stub
//      (`archived`: id → object) and deletes the records' rows, their job and its log
//      index rows, all conditional on the object still being pending and on no record
//      having changed since it was read (a DELETE in between turns it into a tombstone).
// A crash after 1 or 2 leaves the object pending: the next run writes the same object
// (same key) from the same records again and finishes it; a record changed in between
// is written as it is now. An object whose write fails counts a failure and waits, then
// is set aside (src/jobs/sweep-items.ts): the others go on. A record is in one object
// only (a run plans new objects only once no pending object is in line, and never of a
// record a pending object names) and never lost (its row goes in the batch that records
// its stub).
//
// Reads by id (src/features/runs/routes.ts) select the record and its stub in the
// request's one batch: a live record answers as before; an archived one costs one R2
// read, checked against the caller's organization by the stub's object (another
// organization's id is 404 as ever). Lists show D1's records only. DELETE of an archived
// record (deleteArchived) purges its objects as a live record's, tombstones its stub and
// rewrites its line as the tombstone (eraseArchivedLine): no archive object keeps what a
// deletion erases (copies.ts). Billing figures live in counters (usage_daily, budgets,
// the program's counts), which no deletion touches.
//
// An organization that set a retention keeps its live records in D1 until the retention
// sweep has deleted their files (tombstones are archived): the archive never holds a
// record whose files a retention still has to delete.
import { and, eq, exists, inArray, isNotNull, isNull, lt, or, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { batchByName } from '../../db/batch.ts';
import { PROOF_TERMINAL_STATES } from '../../db/enums.ts';
import { archived, archiveObjects, executions, jobLogChunks, jobs, organizations, proofs, purges } from '../../db/schema.ts';
import { artifactKey, servedProofKey } from '../../lib/artifact-keys.ts';
import { attemptKeysSql } from '../../jobs/results.ts';
import type { NamedActor } from '../accounts/audit.ts';
import { deletionAudit, endDeliveries, ERASED } from './copies.ts';
import type { Org } from '../../lib/pages.ts';
import { BudgetSpent, type Metered } from '../../lib/metered.ts';
import { inLine, recordFailures, settleFailures } from '../../jobs/sweep-items.ts';
import { executionColumns } from '../executions/data.ts';
import { proofColumns } from '../proofs/data.ts';
import { EXECUTION_TERMINAL_STATUSES } from './data.ts';

export type ArchiveKind = (typeof archiveObjects.$inferSelect)['kind'];

/** Records of each kind the sweep plans into objects per run, at most. */
export const ARCHIVE_BATCH = 200;
/** Objects a run writes at most (each one R2 write, one D1 read and one D1 batch). */
export const ARCHIVE_OBJECTS_PER_RUN = 20;
/** ARCHIVE_AFTER_DAYS's default. */
export const ARCHIVE_AFTER_DAYS = 30;

/** ARCHIVE_AFTER_DAYS in ms (fractions allowed, for a local stack's benchmark; negative or unset: the default). */
export const archiveAfterMs = (env: { ARCHIVE_AFTER_DAYS?: string }) => {
  const d = env.ARCHIVE_AFTER_DAYS === undefined || env.ARCHIVE_AFTER_DAYS === '' ? NaN : Number(env.ARCHIVE_AFTER_DAYS);
  return (Number.isFinite(d) && d >= 0 ? d : ARCHIVE_AFTER_DAYS) * 86_400_000;
};

const KINDS = {
  proof: {
    table: proofs,
    columns: proofColumns,
    job: 'proof',
    terminal: inArray(proofs.state, [...PROOF_TERMINAL_STATES]),
  },
  execution: {
    table: executions,
    columns: executionColumns,
    job: 'execute',
    terminal: inArray(executions.status, [...EXECUTION_TERMINAL_STATUSES]),
  },
} as const;

/** An archived record's stub as read (ArchiveStub): the object holding it, and its deletion. */
export const archiveStubColumns = {
  object_id: archiveObjects.id,
  org_id: archiveObjects.org_id,
  kind: archiveObjects.kind,
  day: archiveObjects.day,
  deleted_at: archived.deleted_at,
  deleted_by: archived.deleted_by,
};

/** The stub of the caller's archived record `id` of `kind`, and the object holding it (no row: not archived, or not the caller's). */
export const archivedQuery = (db: Db, org: Org, kind: ArchiveKind, id: string) =>
  db
    .select(archiveStubColumns)
    .from(archived)
    .innerJoin(archiveObjects, eq(archiveObjects.id, archived.object_id))
    .where(and(eq(archived.id, id), eq(archiveObjects.org_id, org), eq(archiveObjects.kind, kind)));

type ObjectName = { object_id: number; org_id: string; kind: ArchiveKind; day: string };
export type ArchiveStub = ObjectName & { deleted_at: string | null; deleted_by: string | null };
const keyOf = (o: ObjectName) => artifactKey.archiveObject(o.org_id, o.kind, o.day, o.object_id);

/** The line of record `id` in an archive object's text (its id first: found by prefix, the others not parsed). */
const lineOf = (text: string, id: string) => text.split('\n').findIndex((line) => line.startsWith(`{"id":${JSON.stringify(id)},`));

/**
 * The archived record `id` as its D1 read answered it (with `job`), from its object;
 * undefined if the object lacks it. A record deleted once archived is its tombstone: the
 * stub's `deleted_at` and `deleted_by`, what a tombstone erases gone (copies.ts ERASED),
 * whether or not its purge has rewritten the line yet (eraseArchivedLine).
 */
export async function readArchived<Row>(bucket: R2Bucket, stub: ArchiveStub, id: string): Promise<Row | undefined> {
  const object = await bucket.get(keyOf(stub));
  if (!object) return undefined;
  const lines = (await object.text()).split('\n');
  const at = lineOf(lines.join('\n'), id);
  if (at < 0) return undefined;
  const row = JSON.parse(lines[at]) as Row & { deleted_at: string | null };
  return stub.deleted_at ? { ...row, ...ERASED, deleted_at: stub.deleted_at, deleted_by: stub.deleted_by } : row;
}

/** Conditional writes an erasure tries before it fails (to be retried by the sweep): each loses only to another rewrite of the object. */
const ERASE_TRIES = 5;

/**
 * A deleted archived record's line, rewritten as its tombstone (the purge's part,
 * src/features/retention/purge.ts): what a tombstone erases gone (copies.ts ERASED), its
 * stub's `deleted_at` and `deleted_by` in. The object is rewritten whole, on the
 * condition that it is still the version read (R2's etag precondition), so two deletions
 * in one object never undo each other; a line already erased is left as it is. Throws
 * when it keeps losing (the purge counts an attempt and the sweep retries).
 */
export async function eraseArchivedLine(db: Db, bucket: R2Bucket, key: string, id: string): Promise<void> {
  const [stub] = await db
    .select({ deleted_at: archived.deleted_at, deleted_by: archived.deleted_by })
    .from(archived)
    .where(eq(archived.id, id));
  if (!stub?.deleted_at) return;
  for (let i = 0; i < ERASE_TRIES; i++) {
    const object = await bucket.get(key);
    if (!object) return;
    const text = await object.text();
    const at = lineOf(text, id);
    if (at < 0) return;
    const lines = text.split('\n');
    const row = JSON.parse(lines[at]) as Record<string, unknown>;
    const tombstone = { ...row, ...ERASED, deleted_at: stub.deleted_at, deleted_by: stub.deleted_by };
    if (JSON.stringify(tombstone) === lines[at]) return;
    lines[at] = JSON.stringify(tombstone);
    const put = await bucket.put(key, lines.join('\n'), {
      httpMetadata: object.httpMetadata,
      onlyIf: { etagMatches: object.etag },
    });
    if (put) return;
  }
  throw new Error(`archive object ${key}: its line of ${id} lost ${ERASE_TRIES} conditional writes in a row`);
}

/** What an archived record's deletion reads of its line: its job (its log). */
type ArchivedFiles = {
  id: string;
  deleted_at: string | null;
  job: { id: string } | null;
  child_proof_keys?: string[];
  proof_files?: string[];
  proof_objects?: Record<string, { key: string }> | null;
};

/**
 * DELETE of an archived record (src/features/retention/api.ts), once the request's batch
 * found its stub (the caller's): as for a live record (copies.ts), one batch writes the
 * audit entry, inserts the purge row (its prefix, its job's log as its line names it,
 * and its archive object, whose line the purge rewrites as the tombstone), ends its
 * webhook deliveries and tombstones the stub (who and when), all conditional on the stub
 * not being deleted yet; the rest goes after the response (purgeAfterResponse). Answers
 * the record as it now reads, and whether this request deleted it; undefined when the
 * object lacks it.
 */
export async function deleteArchived<Row>(
  db: Db,
  bucket: R2Bucket,
  stub: ArchiveStub,
  id: string,
  by: NamedActor,
  now = Date.now(),
): Promise<{ row: Row; deleted: boolean } | undefined> {
  const line = await readArchived<Row & ArchivedFiles>(bucket, stub, id);
  if (!line) return undefined;
  if (line.deleted_at) return { row: line, deleted: false };
  const keys =
    stub.kind === 'proof'
      ? {
          input: artifactKey.proofInput(id),
          children: line.child_proof_keys ?? [],
          proofs: (line.proof_files ?? []).map((kind) =>
            servedProofKey({ id, proof_files: line.proof_files ?? [], proof_objects: line.proof_objects ?? null }, kind),
          ),
        }
      : { input: artifactKey.executionInput(id) };
  const live = and(eq(archived.id, id), isNull(archived.deleted_at));
  const stillLive = exists(
    db
      .select({ one: sql`1` })
      .from(archived)
      .where(live),
  );
  const { tombstone, stubs } = await batchByName(db, {
    audit: deletionAudit(db, stub.kind, by, { table: archived, id: archived.id, org: stub.org_id }, live, sql`json_object('archived', 1)`),
    purge: db
      .insert(purges)
      .select(
        db
          .select({
            subject_kind: sql<ArchiveKind>`${stub.kind}`.as('subject_kind'),
            subject_id: archived.id,
            org_id: sql<string>`${stub.org_id}`.as('org_id'),
            // With the files its job's attempts stored that it does not name (src/jobs/results.ts), if any are left.
            keys: sql`json_set(${JSON.stringify(keys)}, '$.attempts', json(${attemptKeysSql(sql`${line.job?.id ?? null}`)}))`.as('keys'),
            log_job_id: sql<string | null>`${line.job?.id ?? null}`.as('log_job_id'),
            created_at: sql<number>`${now}`.as('created_at'),
            archive_key: sql<string>`${keyOf(stub)}`.as('archive_key'),
          })
          .from(archived)
          .where(live),
      )
      .onConflictDoNothing(),
    deliveries: endDeliveries(db, stub.kind, id, stillLive),
    tombstone: db
      .update(archived)
      .set({ deleted_at: iso(now), deleted_by: by.name })
      .where(live)
      .returning({ id: archived.id }),
    stubs: db.select({ deleted_at: archived.deleted_at, deleted_by: archived.deleted_by }).from(archived).where(eq(archived.id, id)),
  });
  const [after] = stubs;
  return {
    row: { ...line, ...ERASED, deleted_at: after?.deleted_at ?? iso(now), deleted_by: after?.deleted_by ?? null },
    deleted: tombstone.length === 1,
  };
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Up to `limit` records of `kind` to archive: finished, older than the archive's cutoff
 * (created and ended), and, for an organization with a retention, older than it too and
 * tombstoned already. Driven by the organizations (a CROSS JOIN, never reordered), each
 * seeking its records by creation in `proofs_org` / `executions_org`: the rows a run
 * steps over are the old unfinished ones (jobs end long before) and, for an organization
 * with a retention, its retention's backlog.
 */
export function toArchive(db: Db, kind: ArchiveKind, now: number, afterMs: number, limit: number) {
  const { table, terminal } = KINDS[kind];
  const cutoff = iso(now - afterMs);
  const orgCutoff = sql`min(${cutoff}, coalesce(strftime('%Y-%m-%dT%H:%M:%fZ', ${iso(now)}, '-' || ${organizations.retention_days} || ' days'), ${cutoff}))`;
  return db
    .select({ id: table.id, org_id: table.org_id, day: sql<string>`substr(${table.created_at}, 1, 10)` })
    .from(organizations)
    .crossJoin(table)
    .where(
      and(
        eq(table.org_id, organizations.id),
        lt(table.created_at, orgCutoff),
        terminal,
        isNotNull(table.terminated_at),
        lt(table.terminated_at, orgCutoff),
        or(isNull(organizations.retention_days), isNotNull(table.deleted_at)),
        // Not while its log's compaction is pending: that needs the job's row and its index
        // rows (src/jobs/logs.ts). Named in full: drizzle writes a subquery's columns unqualified.
        sql`NOT EXISTS (SELECT 1 FROM ${jobs} j WHERE j.kind = ${KINDS[kind].job} AND j.subject_id = ${sql.identifier(`${kind}s`)}.id
          AND j.log_store IN ('chunks', 'compacted'))`,
        // Not one a pending object (waiting out a failure, or set aside) already names.
        sql`NOT EXISTS (SELECT 1 FROM ${archiveObjects} o, json_each(o.pending_ids) p
          WHERE o.written_at IS NULL AND p.value = ${sql.identifier(`${kind}s`)}.id)`,
      ),
    )
    .limit(limit);
}

type Pending = typeof archiveObjects.$inferSelect;

/** The ids of a JSON array parameter, as a subquery (one bound parameter, however many ids: D1 binds at most 100). */
const idsOf = (ids: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;

/**
 * Writes one pending object from its records' rows as they are now, then finishes it
 * (see the header): true when it is done, false when a record changed in between (it
 * stays pending; the next run writes it again).
 */
async function writeObject(db: Db, bucket: R2Bucket, o: Pending, now: number): Promise<boolean> {
  const { table, columns, job } = KINDS[o.kind];
  const ids = o.pending_ids ?? [];
  const { rows, jobRows } = await batchByName(db, {
    rows: db
      .select(columns())
      .from(table)
      .where(and(inArray(table.id, idsOf(ids)), eq(table.org_id, o.org_id))),
    jobRows: db
      .select()
      .from(jobs)
      .where(and(eq(jobs.kind, job), inArray(jobs.subject_id, idsOf(ids)))),
  });
  const jobOf = new Map(jobRows.map((j) => [j.subject_id, j]));
  // The id first, so a read by id finds its line by prefix without parsing the others.
  // (Every read selects `id` first: table columns in their order.)
  const lines = rows.map((r) => JSON.stringify({ ...r, job: jobOf.get(r.id) ?? null }));
  const written = rows.map((r) => ({ id: r.id, deleted_at: r.deleted_at }));
  await bucket.put(keyOf({ object_id: o.id, org_id: o.org_id, kind: o.kind, day: o.day }), lines.join('\n') + '\n', {
    httpMetadata: { contentType: 'application/x-ndjson' },
  });
  const writtenJson = JSON.stringify(written);
  const writtenIds = sql`(SELECT json_extract(value, '$.id') FROM json_each(${writtenJson}))`;
  // Every statement after the first is conditional on the first having finished this object now.
  const finished = sql`EXISTS (SELECT 1 FROM ${archiveObjects} WHERE ${archiveObjects.id} = ${o.id} AND ${archiveObjects.written_at} = ${now})`;
  const changed = sql`EXISTS (SELECT 1 FROM json_each(${writtenJson}) w JOIN ${table} r ON r.id = json_extract(w.value, '$.id')
    WHERE r.deleted_at IS NOT json_extract(w.value, '$.deleted_at'))`;
  const { done } = await batchByName(db, {
    done: db
      .update(archiveObjects)
      .set({ written_at: now, pending_ids: null })
      .where(and(eq(archiveObjects.id, o.id), isNull(archiveObjects.written_at), sql`NOT ${changed}`))
      .returning({ id: archiveObjects.id }),
    stubs: db
      .insert(archived)
      .select(
        db
          .select({
            id: sql<string>`json_extract(value, '$.id')`.as('id'),
            object_id: sql<number>`${o.id}`.as('object_id'),
            deleted_at: sql<string | null>`NULL`.as('deleted_at'),
            deleted_by: sql<string | null>`NULL`.as('deleted_by'),
          })
          .from(sql`json_each(${writtenJson})`)
          .where(finished),
      )
      .onConflictDoNothing(),
    chunks: db.delete(jobLogChunks).where(
      and(
        inArray(
          jobLogChunks.job_id,
          db
            .select({ id: jobs.id })
            .from(jobs)
            .where(and(eq(jobs.kind, job), inArray(jobs.subject_id, writtenIds))),
        ),
        finished,
      ),
    ),
    jobs: db.delete(jobs).where(and(eq(jobs.kind, job), inArray(jobs.subject_id, writtenIds), eq(jobs.status, 'done'), finished)),
    records: db.delete(table).where(and(inArray(table.id, writtenIds), finished)),
    // An object that failed before and is written now leaves the sweep's failures.
    failures: settleFailures(db, 'archive', [String(o.id)]),
  });
  return done.length === 1;
}

/** The calls of one object's write: its records' read, its R2 write, the batch that finishes it. */
export const ARCHIVE_OBJECT_CALLS = 3;

/**
 * One run of the archive, within `m`'s budget: finishes the objects left pending and in
 * line (a crash, a record changed while it was written; not one waiting out a failure or
 * set aside), then, if none is left, plans and writes new ones: at most ARCHIVE_BATCH
 * records of each kind in at most ARCHIVE_OBJECTS_PER_RUN objects.
 */
export async function sweepArchive(
  { db, bucket, budget }: Metered,
  now = Date.now(),
  afterMs = ARCHIVE_AFTER_DAYS * 86_400_000,
  limit = ARCHIVE_BATCH,
): Promise<{ archived: number; objects: number }> {
  let records = 0;
  let objects = 0;
  /** Writes the objects while the budget fits them; answers how many are left pending. */
  const write = async (list: Pending[]) => {
    let left = 0;
    for (const o of list) {
      if (!budget.fits(ARCHIVE_OBJECT_CALLS)) return left + 1;
      try {
        if (await writeObject(db, bucket, o, now)) {
          records += o.pending_ids?.length ?? 0;
          objects++;
        } else left++;
      } catch (err) {
        if (err instanceof BudgetSpent) return left + 1;
        await recordFailures(db, 'archive', [String(o.id)], err, now);
      }
    }
    return left;
  };
  if (!budget.fits(1 + ARCHIVE_OBJECT_CALLS)) return { archived: 0, objects: 0 };
  const pending = await db
    .select()
    .from(archiveObjects)
    .where(and(isNull(archiveObjects.written_at), inLine('archive', sql`cast(${archiveObjects.id} AS text)`, now)))
    .orderBy(archiveObjects.id)
    .limit(ARCHIVE_OBJECTS_PER_RUN);
  if ((await write(pending)) > 0 || pending.length === ARCHIVE_OBJECTS_PER_RUN) return { archived: records, objects };
  if (!budget.fits(2 + ARCHIVE_OBJECT_CALLS)) return { archived: records, objects };

  const { proof, execution } = await batchByName(db, {
    proof: toArchive(db, 'proof', now, afterMs, limit),
    execution: toArchive(db, 'execution', now, afterMs, limit),
  });
  const groups = new Map<string, { org_id: string; kind: ArchiveKind; day: string; ids: string[] }>();
  for (const [kind, rows] of [
    ['proof', proof],
    ['execution', execution],
  ] as const)
    for (const r of rows) {
      const name = `${r.org_id}/${kind}/${r.day}`;
      const group = groups.get(name) ?? groups.set(name, { org_id: r.org_id, kind, day: r.day, ids: [] }).get(name)!;
      group.ids.push(r.id);
    }
  // No more objects than the budget can write this run (the others are planned by a later one).
  const writable = Math.floor((budget.left - 1) / ARCHIVE_OBJECT_CALLS);
  const planned = [...groups.values()].slice(0, Math.min(ARCHIVE_OBJECTS_PER_RUN - pending.length, writable));
  if (!planned.length) return { archived: records, objects };
  // One insert per object (D1 binds at most 100 parameters a statement), all in one batch.
  const { rows } = await batchByName(db, {
    rows: planned.map((g) =>
      db.insert(archiveObjects).values({ org_id: g.org_id, kind: g.kind, day: g.day, pending_ids: g.ids, created_at: now }).returning(),
    ),
  });
  await write(rows.flat());
  return { archived: records, objects };
}
