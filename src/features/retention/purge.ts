// The second half of a deletion (src/features/retention/data.ts; every copy: copies.ts):
// an archived record's line is rewritten as its tombstone, the R2 objects a purge row
// names are deleted, then (one batch) the row and its log's index rows.
// Safe to run again at any point and alongside another run: deleting an object that
// is gone is a no-op, and a row is deleted only once every object it names is. A run
// that fails counts a failure of the row (src/jobs/sweep-items.ts) and leaves it for the
// sweep, which takes the oldest rows in line first, PURGE_SWEEP_BATCH per run at most,
// each only while its budget fits PURGE_MAX_CALLS more.
// Two passes: the first (right after the response) deletes the objects but keeps a row
// younger than PURGE_SETTLE_MS; the sweep's pass after it deletes whatever a log
// compaction that was already running when the record was deleted wrote since (it
// takes seconds; none starts after: data.ts stopCompaction), then the row.
import { and, asc, eq, inArray, lt, sql } from 'drizzle-orm';
import { BudgetSpent, type CallBudget, type Metered } from '../../lib/metered.ts';
import { idList, inLine, recordFailures, settleFailures } from '../../jobs/sweep-items.ts';
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
/**
 * The calls of a purge of a record whose prefix and log have under 1,000 objects each: the
 * listings of its prefix and its log, one bulk delete, its D1 batch (an archived record's
 * line rewrite takes a read and a write more). A longer log takes a listing and a delete
 * more per 1,000 objects; a purge the budget cuts short is simply purged again later
 * (deleting an object that is gone is a no-op).
 */
export const PURGE_CALLS = 4;

/** A purge row's item name in sweep_failures. */
const itemOf = (row: Pick<PurgeRow, 'subject_kind' | 'subject_id'>) => `${row.subject_kind}:${row.subject_id}`;

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

/**
 * Purges one row: its objects, then the row. `failed` (and a failure counted) when R2 or D1
 * failed; `stopped` when the invocation's budget ran out part way (not a failure: the row
 * stays, to be purged again).
 */
export async function purgeRow(
  db: Db,
  bucket: R2Bucket,
  row: PurgeRow,
  now = Date.now(),
  settleMs = PURGE_SETTLE_MS,
): Promise<'done' | 'failed' | 'stopped'> {
  const pk = and(eq(purges.subject_kind, row.subject_kind), eq(purges.subject_id, row.subject_id));
  try {
    if (row.archive_key) await eraseArchivedLine(db, bucket, row.archive_key, row.subject_id);
    const keys = await objectsOf(bucket, row);
    for (let i = 0; i < keys.length; i += 1000) await bucket.delete(keys.slice(i, i + 1000)); // R2 deletes at most 1,000 keys per call
    if (now - row.created_at < settleMs) return 'done'; // the sweep's pass finishes it
    await batchByName(db, {
      logIndex: row.log_job_id ? db.delete(jobLogChunks).where(eq(jobLogChunks.job_id, row.log_job_id)) : undefined,
      done: db.delete(purges).where(pk),
      failures: settleFailures(db, 'purge', [itemOf(row)]),
    });
    return 'done';
  } catch (err) {
    if (err instanceof BudgetSpent) return 'stopped';
    await recordFailures(db, 'purge', [itemOf(row)], err, now);
    return 'failed';
  }
}

/**
 * Purges the rows of the subjects just deleted (after the response: a failure is left to
 * the sweep): a request's own deletion, or, given `budget` (which `db` and `bucket` are
 * metered by: purgeSubjectsWithin), as many as it fits.
 */
async function purgeSubjects(
  db: Db,
  bucket: R2Bucket,
  kind: DeletableKind,
  ids: readonly string[],
  settleMs = PURGE_SETTLE_MS,
  budget?: CallBudget,
): Promise<void> {
  if (ids.length === 0 || (budget && !budget.fits(1 + PURGE_CALLS))) return;
  const rows = await db
    .select()
    .from(purges)
    .where(and(eq(purges.subject_kind, kind), inArray(purges.subject_id, idList(ids))));
  for (const row of rows) {
    if (budget && !budget.fits(PURGE_CALLS)) return;
    if ((await purgeRow(db, bucket, row, Date.now(), settleMs)) === 'stopped') return;
  }
}

/** purgeSubjects() within `m`'s budget (the retention sweep's first pass). */
export const purgeSubjectsWithin = (m: Metered, kind: DeletableKind, ids: readonly string[], settleMs = PURGE_SETTLE_MS) =>
  purgeSubjects(m.db, m.bucket, kind, ids, settleMs, m.budget);

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

/**
 * The sweep's part: the oldest pending purges in line (purges_age; not waiting out a
 * failure, src/jobs/sweep-items.ts), PURGE_SWEEP_BATCH at most, each while `budget` fits
 * PURGE_CALLS more. Answers how many were finished.
 */
export async function sweepPurges(
  { db, bucket, budget }: Metered,
  now = Date.now(),
  settleMs = PURGE_SETTLE_MS,
  limit = PURGE_SWEEP_BATCH,
): Promise<number> {
  if (!budget.fits(1 + PURGE_CALLS)) return 0;
  const rows = await db
    .select()
    .from(purges)
    .where(and(lt(purges.created_at, now - settleMs), inLine('purge', sql`${purges.subject_kind} || ':' || ${purges.subject_id}`, now)))
    .orderBy(asc(purges.created_at))
    .limit(limit);
  let done = 0;
  for (const row of rows) {
    if (!budget.fits(PURGE_CALLS)) break;
    const r = await purgeRow(db, bucket, row, now, settleMs);
    if (r === 'stopped') break;
    if (r === 'done') done++;
  }
  return done;
}
