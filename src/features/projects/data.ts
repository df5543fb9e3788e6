// The statements reading the caller's projects, for the batch a request reads in (one
// D1 round trip: src/middleware/auth.ts asCaller), and the answers made of what they
// read. A project's totals are counters on its row (kept by triggers,
// migrations/0005_counters.sql). Every statement is scoped to the caller's organization:
// another organization's id finds nothing, exactly like an id that does not exist (404).
import { and, asc, desc, eq, isNull, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { apiKeys, organizations, programs, projects } from '../../db/schema.ts';
import { cappedCount, orgCounter, pageAnswer, pageQuery, type Org, type PageRead } from '../../lib/pages.ts';
import { keyCreatedBy } from '../../middleware/auth.ts';
import { projectRecord } from './schemas.ts';

type ProjectRow = typeof projects.$inferSelect;

/** One of the caller's projects (no row when it is not theirs). */
export const projectQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(projects)
    .where(and(eq(projects.id, id), eq(projects.org_id, org)));

/** How many programs one of the caller's projects has (its counter; 0 when it is not theirs), as a list's total. */
export const projectProgramCount = (db: Db, org: Org, id: string) =>
  sql<number>`coalesce((${db
    .select({ n: projects.program_count })
    .from(projects)
    .where(and(eq(projects.id, id), eq(projects.org_id, org)))}), 0)`;

export interface ProjectQuery {
  page: number;
  pageSize: number;
  /** Only projects whose name contains this (case-insensitive). */
  search?: string;
  sortBy?: 'created_at' | 'name' | 'last_active_at';
  sortOrder?: 'asc' | 'desc';
}

/** The statements reading a page of the caller's projects and how many match in all (`{ rows, total }`). */
export function projectPageQuery(db: Db, org: Org, q: ProjectQuery) {
  const where = and(
    eq(projects.org_id, org),
    // instr() rather than LIKE: the caller's text is matched literally, % and _ included.
    q.search ? sql`instr(lower(${projects.name}), lower(${q.search})) > 0` : undefined,
  );
  const key =
    q.sortBy === 'name'
      ? projects.name
      : q.sortBy === 'last_active_at'
        ? sql`coalesce(${projects.last_active_at}, '')`
        : projects.created_at;
  const dir = q.sortOrder === 'asc' ? asc : desc;
  const total = q.search
    ? cappedCount(
        db
          .select({ one: sql`1` })
          .from(projects)
          .where(where),
      )
    : orgCounter(db, org, sql`${organizations.project_count}`);
  return pageQuery(db, db.select().from(projects).where(where).orderBy(dir(key), dir(projects.id)).$dynamic(), total, q.page, q.pageSize);
}

/** The page projectPageQuery() read, as records. */
export const projectPage = (read: PageRead<ProjectRow>, q: Pick<ProjectQuery, 'page' | 'pageSize'>) =>
  pageAnswer(read, projectRecord, q.page, q.pageSize);

/**
 * The insert of a new project for the API key `keyHash`, in the organization `org`
 * (orgOfKey(): NULL for a dead key or one that may not manage projects, which fails
 * the insert and with it the batch, so nothing is stored); its creator is the key's owner, its name beside it (keyCreatedBy).
 */
export function insertProject(db: Db, org: Org, keyHash: string, id: string, name: string) {
  const owner = sql<string>`(SELECT ${keyCreatedBy} FROM ${apiKeys} WHERE ${apiKeys.key_hash} = ${keyHash} AND ${apiKeys.revoked_at} IS NULL)`;
  return db.insert(projects).values({ id, org_id: org, name, created_by: owner });
}

// ---------------------------------------------------------------------------
// A project's highlighted program: the one every program of the project reports as
// `project_highlighted_program_id`. It is the first program registered into the
// project until that program moves away, when the oldest remaining one takes over.
// Kept on the project row (one value for all its programs) by these statements,
// which run in the same batch as the write that adds or moves a program.

/** Highlights `programId` in a project that has no highlighted program yet. */
export function highlightIfNone(db: Db, projectId: string, programId: string) {
  return db
    .update(projects)
    .set({ highlighted_program_id: programId })
    .where(and(eq(projects.id, projectId), isNull(projects.highlighted_program_id)));
}

/** After `programId` left `projectId`: if it was highlighted there, the oldest remaining program is (or none). */
export function rehighlightAfterMove(db: Db, projectId: string, programId: string) {
  const oldest = db
    .select({ id: programs.id })
    .from(programs)
    .where(eq(programs.project_id, projectId))
    .orderBy(asc(programs.created_at), asc(programs.id))
    .limit(1);
  return db
    .update(projects)
    .set({ highlighted_program_id: sql`(${oldest})` })
    .where(and(eq(projects.id, projectId), eq(projects.highlighted_program_id, programId)));
}
