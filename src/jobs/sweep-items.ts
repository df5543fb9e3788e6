// The sweep's items that fail (docs/contributors.md "Work per invocation"): a log compaction
// (src/jobs/logs.ts), a purge (src/features/retention/purge.ts), a result upload's
// garbage (src/jobs/results.ts), an archive object (src/features/retention/archive.ts).
// Each failure is counted on the item (sweep_failures: attempts, the last error, when),
// and the item waits out a delay that doubles with each attempt (a minute, two, four...,
// at most an hour) before the sweep tries it again; after SWEEP_MAX_ATTEMPTS it is set
// aside and no longer tried. So an item that keeps failing (an object R2 will not
// delete, a log it cannot read) never stays first in line: each part's candidates
// leave out the items waiting or set aside (inLine), and the rest go on. The operator
// sees them (`npm run admin -- list-sweep-failures`) and puts one back in line
// (`retry-sweep-item`), which deletes its row. An item that succeeds loses its row.
import { and, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { AnySQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { Db } from '../db/client.ts';
import { SWEEP_ITEM_KINDS, sweepFailures } from '../db/schema.ts';

export type SweepItemKind = (typeof SWEEP_ITEM_KINDS)[number];

/** Failed attempts after which an item is set aside. */
export const SWEEP_MAX_ATTEMPTS = 8;
/** The wait after the first failure; it doubles with each one, up to SWEEP_RETRY_MAX_MS. */
export const SWEEP_RETRY_FIRST_MS = 60_000;
export const SWEEP_RETRY_MAX_MS = 3_600_000;

/** The wait after `attempts` failures. */
export const retryDelayMs = (attempts: number) => Math.min(SWEEP_RETRY_FIRST_MS * 2 ** Math.max(0, attempts - 1), SWEEP_RETRY_MAX_MS);

/** A list of ids as one bound parameter (D1 binds at most 100 a statement), for IN. */
export const idList = (ids: readonly string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;

/**
 * Whether the sweep may try item `item` (SQL: a column or value) of `kind` now: it has
 * no failure, or its wait is over and it is not set aside. For a candidate query's WHERE:
 * one primary-key seek per candidate.
 */
export const inLine = (kind: SweepItemKind, item: SQL | AnySQLiteColumn, now: number) =>
  sql`NOT EXISTS (SELECT 1 FROM ${sweepFailures} f WHERE f.kind = ${kind} AND f.item = ${item}
    AND (f.set_aside_at IS NOT NULL OR f.failed_at > ${now} - min(${SWEEP_RETRY_FIRST_MS} * (1 << (f.attempts - 1)), ${SWEEP_RETRY_MAX_MS})))`;

/**
 * Counts a failure of each item (its first, or one more), setting it aside at
 * SWEEP_MAX_ATTEMPTS; logged. Never throws (the sweep goes on with the rest).
 */
export async function recordFailures(db: Db, kind: SweepItemKind, items: readonly string[], err: unknown, now = Date.now()): Promise<void> {
  if (items.length === 0) return;
  const error = String(err instanceof Error ? err.message : err).slice(0, 500);
  try {
    const rows = await db
      .insert(sweepFailures)
      .select(
        db
          .select({
            kind: sql<SweepItemKind>`${kind}`.as('kind'),
            item: sql<string>`value`.as('item'),
            attempts: sql<number>`1`.as('attempts'),
            last_error: sql<string>`${error}`.as('last_error'),
            failed_at: sql<number>`${now}`.as('failed_at'),
            set_aside_at: sql<number | null>`NULL`.as('set_aside_at'),
          })
          .from(sql`json_each(${JSON.stringify(items)})`)
          // SQLite reads ON CONFLICT after a SELECT with no WHERE as the SELECT's own (a join's ON): the WHERE keeps it the upsert's.
          .where(sql`true`),
      )
      .onConflictDoUpdate({
        target: [sweepFailures.kind, sweepFailures.item],
        set: {
          attempts: sql`${sweepFailures.attempts} + 1`,
          last_error: error,
          failed_at: now,
          set_aside_at: sql`CASE WHEN ${sweepFailures.attempts} + 1 >= ${SWEEP_MAX_ATTEMPTS} THEN coalesce(${sweepFailures.set_aside_at}, ${now}) END`,
        },
      })
      .returning({ item: sweepFailures.item, attempts: sweepFailures.attempts, set_aside_at: sweepFailures.set_aside_at });
    for (const r of rows)
      console.error(
        JSON.stringify({
          level: 'error',
          msg: r.set_aside_at
            ? `sweep ${kind} failed ${r.attempts} times: set aside (npm run admin -- list-sweep-failures)`
            : `sweep ${kind} failed; retried later`,
          item: r.item,
          attempts: r.attempts,
          retry_in_ms: r.set_aside_at ? null : retryDelayMs(r.attempts),
          error,
        }),
      );
  } catch (e) {
    console.error(
      JSON.stringify({
        level: 'error',
        msg: `sweep ${kind} failed and its failure was not recorded`,
        items,
        error,
        record_error: String(e),
      }),
    );
  }
}

/** The statement that forgets the failures of items that succeeded, for the batch that records their success. */
export const settleFailures = (db: Db, kind: SweepItemKind, items: readonly string[]) =>
  items.length ? db.delete(sweepFailures).where(and(eq(sweepFailures.kind, kind), inArray(sweepFailures.item, idList(items)))) : undefined;
