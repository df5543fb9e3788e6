// The second half of a deletion (src/features/retention/data.ts; every copy: copies.ts):
// an archived record's line is rewritten as its tombstone, the R2 objects a purge row
// names are deleted, then (one batch) the row and its log's index rows.
// Safe to run again at any point and alongside another run: deleting an object that
// is gone is a no-op, and a row is deleted only once every object it names is. A run
// that fails counts an attempt on the row and leaves it for the sweep, which takes the
// oldest rows first, PURGE_SWEEP_BATCH per run.
// Two passes: the first (right after the response) deletes the objects but keeps a row
// younger than PURGE_SETTLE_MS; the sweep's pass after it deletes whatever a log
// compaction that was already running when the record was deleted wrote since (it
// takes seconds; none starts after: data.ts stopCompaction), then the row.
import { and, asc, eq, inArray, lt, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { batchByName } from '../../db/batch.ts';
import { jobLogChunks, purges } from '../../db/schema.ts';
import { artifactKey } from '../../lib/artifact-keys.ts';
import { eraseArchivedLine } from './archive.ts';
import type { DeletableKind } from './data.ts';

type PurgeRow = typeof purges.$inferSelect;

/** Purge rows the cron sweep finishes per run: each costs an R2 list of its log and one bulk delete per 1,000 objects. */
export const PURGE_SWEEP_BATCH = 25;
/** How long a purge row outlives its first pass (see above). */
export const PURGE_SETTLE_MS = 60_000;

/**
 * PURGE_SETTLE_MS, or the PURGE_SETTLE_SECONDS var (at least a second): the e2e tests
 * set it low so that a deletion's purge finishes at the next sweep, not a minute later.
 */
export const purgeSettleMs = (env: { PURGE_SETTLE_SECONDS?: string } | undefined) => {
  const s = Number(env?.PURGE_SETTLE_SECONDS);
  return env?.PURGE_SETTLE_SECONDS !== undefined && Number.isFinite(s) && s >= 1 ? s * 1000 : PURGE_SETTLE_MS;
};
/** Objects one purge lists at most (a log is capped at LOG_MAX_CHUNKS and its marker, a record's prefix at a few files per attempt: far below). */
const MAX_LISTED = 20_000;

/** Every string leaf of the row's `keys` JSON: the object keys it names. */
export function keysOf(value: unknown): string[] {
  if (typeof value === 'string') return value ? [value] : [];
  if (Array.isArray(value)) return value.flatMap(keysOf);
  if (value && typeof value === 'object') return Object.values(value).flatMap(keysOf);
  return [];
}

/** Appends the keys of the objects under `prefix` (up to MAX_LISTED keys in all). */
async function listInto(bucket: R2Bucket, prefix: string, keys: string[]): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix, cursor, limit: 1000 });
    keys.push(...page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor && keys.length < MAX_LISTED);
}

/**
 * Every object a purge row names now (copies.ts): its keys, everything under its
 * record's prefix (listed: each attempt's uploads, named in a row or not), its log's
 * chunks (listed) and compacted object.
 */
async function objectsOf(bucket: R2Bucket, row: PurgeRow): Promise<string[]> {
  const keys = keysOf(row.keys);
  await listInto(bucket, artifactKey.recordPrefix(row.subject_kind, row.subject_id), keys);
  if (!row.log_job_id) return keys;
  keys.push(artifactKey.jobLogCompacted(row.log_job_id));
  await listInto(bucket, artifactKey.jobLogPrefix(row.log_job_id), keys);
  return keys;
}

/** Purges one row: its objects, then the row. False (and an attempt counted) when R2 failed. */
export async function purgeRow(db: Db, bucket: R2Bucket, row: PurgeRow, now = Date.now(), settleMs = PURGE_SETTLE_MS): Promise<boolean> {
  const pk = and(eq(purges.subject_kind, row.subject_kind), eq(purges.subject_id, row.subject_id));
  try {
    if (row.archive_key) await eraseArchivedLine(db, bucket, row.archive_key, row.subject_id);
    const keys = await objectsOf(bucket, row);
    for (let i = 0; i < keys.length; i += 1000) await bucket.delete(keys.slice(i, i + 1000)); // R2 deletes at most 1,000 keys per call
    if (now - row.created_at < settleMs) return true; // the sweep's pass finishes it
    await batchByName(db, {
      logIndex: row.log_job_id ? db.delete(jobLogChunks).where(eq(jobLogChunks.job_id, row.log_job_id)) : undefined,
      done: db.delete(purges).where(pk),
    });
    return true;
  } catch (err) {
    console.error(
      JSON.stringify({
        level: 'error',
        msg: 'purge failed; the sweep retries it',
        subject_kind: row.subject_kind,
        subject_id: row.subject_id,
        error: String(err),
      }),
    );
    await db
      .update(purges)
      .set({ attempts: sql`${purges.attempts} + 1` })
      .where(pk)
      .catch(() => undefined);
    return false;
  }
}

/** Purges the rows of the subjects just deleted (after the response: a failure is left to the sweep). */
export async function purgeSubjects(
  db: Db,
  bucket: R2Bucket,
  kind: DeletableKind,
  ids: readonly string[],
  settleMs = PURGE_SETTLE_MS,
): Promise<void> {
  if (ids.length === 0) return;
  const rows = await db
    .select()
    .from(purges)
    .where(and(eq(purges.subject_kind, kind), inArray(purges.subject_id, [...ids])));
  for (const row of rows) await purgeRow(db, bucket, row, Date.now(), settleMs);
}

/** Runs purgeSubjects() after the response (or at once, without an execution context). */
export function purgeAfterResponse(
  c: { executionCtx: { waitUntil(p: Promise<unknown>): void }; env: { PURGE_SETTLE_SECONDS?: string } | undefined },
  db: Db,
  bucket: R2Bucket,
  kind: DeletableKind,
  ids: readonly string[],
): void {
  const purging = purgeSubjects(db, bucket, kind, ids, purgeSettleMs(c.env)).catch((err) =>
    console.error(JSON.stringify({ level: 'error', msg: 'purge failed', error: String(err) })),
  );
  try {
    c.executionCtx.waitUntil(purging);
  } catch {
    // No execution context (a test calling app.request directly): it runs on its own.
  }
}

/** The sweep's part: the oldest PURGE_SWEEP_BATCH pending purges (purges_age), finished. Answers how many were. */
export async function sweepPurges(
  db: Db,
  bucket: R2Bucket,
  limit = PURGE_SWEEP_BATCH,
  now = Date.now(),
  settleMs = PURGE_SETTLE_MS,
): Promise<number> {
  const rows = await db
    .select()
    .from(purges)
    .where(lt(purges.created_at, now - settleMs))
    .orderBy(asc(purges.created_at))
    .limit(limit);
  let done = 0;
  for (const row of rows) if (await purgeRow(db, bucket, row, now, settleMs)) done++;
  return done;
}
