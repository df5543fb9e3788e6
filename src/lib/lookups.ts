// Statements that read the caller's records, for the batch a request reads in (one
// D1 round trip: src/middleware/auth.ts asCaller), and the functions that turn
// their rows into records. Every statement is scoped to the caller's organization
// (`org`: its id, or SQL for the API key's organization): another organization's id
// finds nothing, exactly like an id that does not exist (404).
//
// Statements batched together never join tables whose columns share names: D1 returns
// a batch's rows as objects keyed by column name, so such a join would lose columns.
// A program's project and config are read by statements of their own instead.
import { and, asc, desc, eq, getTableColumns, inArray, sql, type SQL } from 'drizzle-orm';
import type { SQLiteSelect } from 'drizzle-orm/sqlite-core';
import type { Db } from '../db/client.ts';
import { configs, organizations, programs, projects } from '../db/schema.ts';
import { notFound } from './errors.ts';
import { programRecord, projectRecord } from './records.ts';
import { paginate } from './schemas.ts';

export type Org = string | SQL<string>;
type ProgramRow = typeof programs.$inferSelect;
type ProjectRow = typeof projects.$inferSelect;
type ConfigRow = typeof configs.$inferSelect;

/**
 * Most rows a filtered list counts for its `total` (a search has no counter to read):
 * past it, `total` says this many and the pages go on.
 */
export const COUNT_CAP = 10_000;

// ---------------------------------------------------------------------------
// Programs: the row, its project and its config.

const ownProgram = (org: Org, id: string) => and(eq(programs.id, id), eq(programs.org_id, org));
const programColumn = (db: Db, org: Org, id: string, column: typeof programs.project_id | typeof programs.config_id) =>
  sql`(${db.select({ v: column }).from(programs).where(ownProgram(org, id))})`;

/** The statements reading one of the caller's programs; programOf() makes the answer. */
export function programQuery(db: Db, org: Org, id: string) {
  return [
    db.select().from(programs).where(ownProgram(org, id)),
    db.select().from(projects).where(eq(projects.id, programColumn(db, org, id, programs.project_id))),
    db.select().from(configs).where(eq(configs.id, programColumn(db, org, id, programs.config_id))),
  ] as const;
}

export interface FoundProgram {
  program: ProgramRow;
  project: ProjectRow;
  config: ConfigRow;
}

/** The program programQuery() read, or undefined. */
export function programOf([p, project, config]: readonly [ProgramRow[], ProjectRow[], ConfigRow[]]): FoundProgram | undefined {
  return p[0] && project[0] && config[0] ? { program: p[0], project: project[0], config: config[0] } : undefined;
}

/** The program programQuery() read, or 404. */
export function requireProgram(rows: readonly [ProgramRow[], ProjectRow[], ConfigRow[]]): FoundProgram {
  const found = programOf(rows);
  if (!found) throw notFound('Program');
  return found;
}

export const toRecord = (r: FoundProgram) => programRecord(r.program, r.project, r.config);

/**
 * The statements reading one page of the caller's programs matching `filter`, newest
 * first, and its total (`total`: a counter row, or a capped count for a search).
 */
export function programPageQuery(db: Db, org: Org, filter: SQL | undefined, page: number, pageSize: number, total: SQL<number>) {
  const where = and(eq(programs.org_id, org), filter);
  const ordered = <T extends SQLiteSelect>(query: T) => query.where(where).orderBy(desc(programs.created_at), desc(programs.id));
  const [rows, counted] = pageQuery(db, ordered(db.select().from(programs).$dynamic()), total, page, pageSize);
  // The page's projects and configs, by the same page of ids (an IN over at most a page).
  const pageColumn = (column: typeof programs.project_id | typeof programs.config_id) => inPage(ordered(db.select({ id: column }).from(programs).$dynamic()), page, pageSize);
  return [
    rows,
    db.select().from(projects).where(inArray(projects.id, pageColumn(programs.project_id))),
    db.select().from(configs).where(inArray(configs.id, pageColumn(programs.config_id))),
    counted,
  ] as const;
}

/** The page programPageQuery() read, as records. */
export function programPage([rows, projectRows, configRows, counted]: readonly [ProgramRow[], ProjectRow[], ConfigRow[], { total: number }[]], page: number, pageSize: number) {
  const project = new Map(projectRows.map((p) => [p.id, p]));
  const config = new Map(configRows.map((c) => [c.id, c]));
  return pageAnswer([rows, counted], (p) => programRecord(p, project.get(p.project_id)!, config.get(p.config_id)!), page, pageSize);
}

// ---------------------------------------------------------------------------
// Counters and capped counts, as the `total` of a list.

/** A counter of the caller's organization. */
export const orgCounter = (db: Db, org: Org, column: SQL | typeof organizations.program_count) =>
  sql<number>`coalesce((${db.select({ n: column }).from(organizations).where(eq(organizations.id, org))}), 0)`;

/** How many rows `query` selects, counting at most COUNT_CAP of them. */
export const cappedCount = (query: { limit(n: number): unknown }) => sql<number>`(SELECT count(*) FROM ${query.limit(COUNT_CAP)})`;

// ---------------------------------------------------------------------------
// Pages: every list answers one page of its rows and its total.

/** Page `page` (from 1) of an ordered query, `pageSize` rows. */
export const inPage = <T extends SQLiteSelect>(query: T, page: number, pageSize: number) => query.limit(pageSize).offset((page - 1) * pageSize);

/**
 * The statements of one page of a list, for one batch: page `page` of `rows` (ordered,
 * made `.$dynamic()`) and the list's `total` (a counter, or a count, capped for a
 * search) as one row. pageAnswer() makes the answer of what they read.
 */
export const pageQuery = <T extends SQLiteSelect>(db: Db, rows: T, total: SQL<number>, page: number, pageSize: number) =>
  [inPage(rows, page, pageSize), db.select({ total }).from(sql`(SELECT 1)`)] as const;

/** A list's answer, `{items, pagination}`, from the rows and total pageQuery() read. */
export const pageAnswer = <R, T>([rows, [counted]]: readonly [R[], { total: number }[]], toItem: (row: R) => T, page: number, pageSize: number) =>
  paginate(rows.map(toItem), Number(counted?.total ?? 0), page, pageSize);

// ---------------------------------------------------------------------------
// Projects: their records carry their totals (counters on the row).

export const projectQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(projects)
    .where(and(eq(projects.id, id), eq(projects.org_id, org)));

export interface ProjectQuery {
  page: number;
  pageSize: number;
  /** Only projects whose name contains this (case-insensitive). */
  search?: string;
  sortBy?: 'created_at' | 'name' | 'last_active_at';
  sortOrder?: 'asc' | 'desc';
}

/** The statements reading a page of the caller's projects and how many match in all. */
export function projectPageQuery(db: Db, org: Org, q: ProjectQuery) {
  const where = and(
    eq(projects.org_id, org),
    // instr() rather than LIKE: the caller's text is matched literally, % and _ included.
    q.search ? sql`instr(lower(${projects.name}), lower(${q.search})) > 0` : undefined,
  );
  const key = q.sortBy === 'name' ? projects.name : q.sortBy === 'last_active_at' ? sql`coalesce(${projects.last_active_at}, '')` : projects.created_at;
  const dir = q.sortOrder === 'asc' ? asc : desc;
  const total = q.search
    ? cappedCount(db.select({ one: sql`1` }).from(projects).where(where))
    : orgCounter(db, org, sql`${organizations.project_count}`);
  return pageQuery(db, db.select().from(projects).where(where).orderBy(dir(key), dir(projects.id)).$dynamic(), total, q.page, q.pageSize);
}

export const projectPage = (read: readonly [ProjectRow[], { total: number }[]], q: Pick<ProjectQuery, 'page' | 'pageSize'>) => pageAnswer(read, projectRecord, q.page, q.pageSize);

// ---------------------------------------------------------------------------

/** The first row, or 404 naming `what`. */
export function one<T>(rows: T[], what: string): T {
  if (!rows[0]) throw notFound(what);
  return rows[0];
}


// ---------------------------------------------------------------------------
// For routes whose caller is already checked (the console's): the lookups run alone.

/** The organization's program with its project and config, or 404. */
export async function findProgram(db: Db, org: Org, id: string) {
  return requireProgram(await db.batch(programQuery(db, org, id)));
}

