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
import { configs, executions, jobs, organizations, programs, projects, proofs, queueLanes, verifications } from '../db/schema.ts';
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
// Proofs, executions, verifications, configs.

/** Other organizations' lanes looked at for a queued job's jobs_ahead, at most. */
const AHEAD_LANES = 100;
/** Jobs of its own lane counted ahead of a queued job, at most (per range below). */
const AHEAD_CAP = 1000;

/**
 * A proof's or execution's limits and, while it is queued, why it waits (README "Why a
 * job waits"), as JSON text for runFields() (src/lib/records.ts): one correlated
 * subquery of the record's read, so still one D1 read. Its job by its unique
 * (kind, subject_id), its lane by primary key (what the sweep found, src/jobs/waiting.ts),
 * its own organization's jobs ahead of it by three bounded ranges of the jobs_lane index
 * (higher priority; same priority and older; same instant, lower id: each at most
 * AHEAD_CAP rows), and the queued counts of up to AHEAD_LANES other organizations' lanes
 * on its config (queue_lanes_by_config). Nothing grows with the backlog past those caps.
 */
export function runStateSql(kind: 'proof' | 'execute', table: 'proofs' | 'executions') {
  // Named in full: drizzle writes a column of the selected table unqualified, which inside this subquery would be the job's.
  const subjectId = sql`${sql.identifier(table)}.${sql.identifier('id')}`;
  const lane = `x.status = 'queued' AND x.org_id = j.org_id AND x.engine = j.engine AND x.config_id = j.config_id AND x.gpus_used = j.gpus_used`;
  const count = (range: string) => sql.raw(`(SELECT count(*) FROM (SELECT 1 FROM jobs x WHERE ${lane} AND ${range} LIMIT ${AHEAD_CAP}))`);
  return sql<string | null>`(SELECT json_object(
      'cycle_limit', j.cycle_limit, 'cost_limit', j.cost_limit, 'deadline_at', j.deadline_at,
      'queued', j.status = 'queued', 'code', l.waiting_code, 'detail', l.waiting_reason,
      'ahead', CASE WHEN j.status = 'queued' THEN ${count('x.priority > j.priority')} + ${count('x.priority = j.priority AND x.queued_at < j.queued_at')} + ${count('x.priority = j.priority AND x.queued_at = j.queued_at AND x.id < j.id')} END,
      'others', CASE WHEN j.status = 'queued' THEN (SELECT json_group_array(o.queued) FROM (SELECT o.queued FROM ${queueLanes} o
        WHERE o.config_id = j.config_id AND o.head_job_id IS NOT NULL AND o.engine = j.engine AND o.org_id <> j.org_id LIMIT ${sql.raw(String(AHEAD_LANES))}) o) END)
    FROM ${jobs} j LEFT JOIN ${queueLanes} l ON l.org_id = j.org_id AND l.engine = j.engine AND l.config_id = j.config_id AND l.gpus_used = j.gpus_used
    WHERE j.kind = ${kind} AND j.subject_id = ${subjectId})`;
}

/** A proof's columns and its run state (runStateSql), as every read of proof records selects them. */
export const proofColumns = () => ({ ...getTableColumns(proofs), run_state: runStateSql('proof', 'proofs').as('run_state') });
/** An execution's columns and its run state (runStateSql). */
export const executionColumns = () => ({ ...getTableColumns(executions), run_state: runStateSql('execute', 'executions').as('run_state') });

export const proofQuery = (db: Db, org: Org, id: string) =>
  db
    .select(proofColumns())
    .from(proofs)
    .where(and(eq(proofs.id, id), eq(proofs.org_id, org)));

export const executionQuery = (db: Db, org: Org, id: string) =>
  db
    .select(executionColumns())
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

/** The first row, or 404 naming `what`. */
export function one<T>(rows: T[], what: string): T {
  if (!rows[0]) throw notFound(what);
  return rows[0];
}


// ---------------------------------------------------------------------------
// For routes whose caller is already checked (the console's): the lookups run alone.

/** The organization's proof, or 404. */
export async function findProof(db: Db, org: Org, id: string) {
  return one(await proofQuery(db, org, id), 'Proof');
}

/** The organization's program with its project and config, or 404. */
export async function findProgram(db: Db, org: Org, id: string) {
  return requireProgram(await db.batch(programQuery(db, org, id)));
}

/** One page of a program's proofs, as drizzle types it (the shape programRunsQuery() answers with). */
const runsOf = (db: Db) => db.select(proofColumns()).from(proofs).limit(1).offset(0);

/**
 * The statements reading a page of a program's proofs or executions, newest first, and
 * the program's counter of them (the list's total; no row for another organization's
 * program). Read the answer with runsPage().
 */
export function programRunsQuery<T extends typeof proofs | typeof executions>(db: Db, org: Org, programId: string, table: T, page: number, pageSize: number) {
  const counter = table === proofs ? programs.proof_count : programs.execution_count;
  const rows = inPage(
    db
      .select(table === proofs ? proofColumns() : (executionColumns() as unknown as ReturnType<typeof proofColumns>))
      .from(table as typeof proofs) // the two tables share the columns used here; the row type is T's (below)
      .where(and(eq(table.program_id, programId), eq(table.org_id, org)))
      .orderBy(desc(table.created_at), desc(table.id))
      .$dynamic(),
    page,
    pageSize,
  );
  return [
    db.select({ total: counter }).from(programs).where(ownProgram(org, programId)),
    rows as unknown as Omit<ReturnType<typeof runsOf>, 'then'> & { _: { result: T['$inferSelect'][] } },
  ] as const;
}

/** The page programRunsQuery() read, as records: 404 when the program is not the caller's. */
export function runsPage<R, T>([[program], rows]: readonly [{ total: number }[], R[]], toRecord: (row: R) => T, page: number, pageSize: number) {
  if (!program) throw notFound('Program');
  return paginate(rows.map(toRecord), program.total, page, pageSize);
}
