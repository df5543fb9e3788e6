// Paging helpers every list shares: one page of an ordered query and the list's total
// (a counter on the organization's row, or a count capped at COUNT_CAP for a search),
// read as two statements of the batch the request already runs, and the `{items,
// pagination}` answer made from what they read. `Org` is how a statement names the
// caller's organization: its id, or SQL for the API key's organization (src/middleware/
// auth.ts asCaller), so another organization's id finds nothing, exactly like an id that
// does not exist (404).
import { eq, sql, type SQL } from 'drizzle-orm';
import type { SQLiteSelect } from 'drizzle-orm/sqlite-core';
import type { Db } from '../db/client.ts';
import { organizations } from '../db/schema.ts';
import { notFound } from './errors.ts';
import { paginate } from './schemas.ts';

export type Org = string | SQL<string>;

/**
 * Most rows a filtered list counts for its `total` (a search has no counter to read):
 * past it, `total` says this many and the pages go on.
 */
export const COUNT_CAP = 10_000;

/** A counter of the caller's organization. */
export const orgCounter = (db: Db, org: Org, column: SQL | typeof organizations.program_count) =>
  sql<number>`coalesce((${db.select({ n: column }).from(organizations).where(eq(organizations.id, org))}), 0)`;

/** How many rows `query` selects, counting at most COUNT_CAP of them. */
export const cappedCount = (query: { limit(n: number): unknown }) => sql<number>`(SELECT count(*) FROM ${query.limit(COUNT_CAP)})`;

/** Page `page` (from 1) of an ordered query, `pageSize` rows. */
export const inPage = <T extends SQLiteSelect>(query: T, page: number, pageSize: number) =>
  query.limit(pageSize).offset((page - 1) * pageSize);

/** The statement reading a list's `total` as one row (`{ total }`). */
export const totalQuery = (db: Db, total: SQL<number>) => db.select({ total }).from(sql`(SELECT 1)`);

/**
 * The statements of one page of a list, by name for batchByName (src/db/batch.ts), alone
 * or spread into a larger record: `rows`, page `page` of `rows` (ordered, made
 * `.$dynamic()`), and `total`, the list's total (a counter, or a count, capped for a
 * search) as one row. pageAnswer() makes the answer of what they read.
 */
export const pageQuery = <T extends SQLiteSelect>(db: Db, rows: T, total: SQL<number>, page: number, pageSize: number) => ({
  rows: inPage(rows, page, pageSize),
  total: totalQuery(db, total),
});

/** What a list's two statements read: its page of rows and its total as one row. */
export interface PageRead<R> {
  rows: R[];
  total: { total: number }[];
}

/** A list's answer, `{items, pagination}`, from the rows and total pageQuery() read. */
export const pageAnswer = <R, T>({ rows, total: [counted] }: PageRead<R>, toItem: (row: R) => T, page: number, pageSize: number) =>
  paginate(rows.map(toItem), Number(counted?.total ?? 0), page, pageSize);

/** The first row, or 404 naming `what`. */
export function one<T>(rows: T[], what: string): T {
  if (!rows[0]) throw notFound(what);
  return rows[0];
}
