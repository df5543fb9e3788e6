// Lookups of the caller's records that more than one route module needs. Every
// lookup is scoped to the caller's organization: another organization's id is 404.
import { and, asc, count, desc, eq, max, sql, sum, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { configs, programs, projects, proofs } from '../db/schema.ts';
import { notFound } from './errors.ts';
import { programRecord, projectRecord } from './records.ts';
import { paginate } from './schemas.ts';

const programColumns = { program: programs, project_name: projects.name, highlighted: projects.highlighted_program_id, config: configs };

export function toRecord(r: { program: typeof programs.$inferSelect; project_name: string; highlighted: string | null; config: typeof configs.$inferSelect }) {
  return programRecord(r.program, { name: r.project_name, highlighted_program_id: r.highlighted }, r.config);
}

/** One page of the caller's programs matching `filter`, newest first, as records. */
export async function listPrograms(db: Db, orgId: string, filter: SQL | undefined, page: number, pageSize: number) {
  const where = and(eq(programs.org_id, orgId), filter);
  const [rows, [{ total }]] = await Promise.all([
    db
      .select(programColumns)
      .from(programs)
      .innerJoin(projects, eq(projects.id, programs.project_id))
      .innerJoin(configs, eq(configs.id, programs.config_id))
      .where(where)
      .orderBy(desc(programs.created_at), desc(programs.id))
      .limit(pageSize)
      .offset((page - 1) * pageSize),
    db.select({ total: count() }).from(programs).where(where) as Promise<{ total: number }[]>,
  ]);
  return paginate(rows.map(toRecord), total, page, pageSize);
}

/** The caller's program, or 404 (also for other organizations' programs). */
export async function findProgram(db: Db, orgId: string, id: string) {
  const row = await db
    .select(programColumns)
    .from(programs)
    .innerJoin(projects, eq(projects.id, programs.project_id))
    .innerJoin(configs, eq(configs.id, programs.config_id))
    .where(and(eq(programs.id, id), eq(programs.org_id, orgId)))
    .get();
  if (!row) throw notFound('Program');
  return row;
}

/** The caller's project row, or undefined (other organizations' projects included). */
export async function findProject(db: Db, orgId: string, id: string) {
  return db
    .select()
    .from(projects)
    .where(and(eq(projects.id, id), eq(projects.org_id, orgId)))
    .get();
}

/** A config by id (configs are service-wide), or undefined. */
export async function findConfig(db: Db, id: string) {
  return db.select().from(configs).where(eq(configs.id, id)).get();
}

/** Per-project totals over its programs, for the records. */
const projectStats = (db: Db) =>
  db
    .select({
      project_id: programs.project_id,
      program_count: count().as('program_count'),
      total_proofs_run: sum(programs.proofs_run).mapWith(Number).as('total_proofs_run'),
      last_active_at: max(programs.last_active_at).as('last_active_at'),
    })
    .from(programs)
    .groupBy(programs.project_id)
    .as('stats');

export interface ProjectQuery {
  page: number;
  pageSize: number;
  /** Only projects whose name contains this (case-insensitive). */
  search?: string;
  sortBy?: 'created_at' | 'name' | 'last_active_at';
  sortOrder?: 'asc' | 'desc';
}

/** A page of the caller's projects with their program totals, and how many match in all. */
export async function projectPage(db: Db, orgId: string, q: ProjectQuery, id?: string) {
  const stats = projectStats(db);
  const where = and(
    eq(projects.org_id, orgId),
    id ? eq(projects.id, id) : undefined,
    // instr() rather than LIKE: the caller's text is matched literally, % and _ included.
    q.search ? sql`instr(lower(${projects.name}), lower(${q.search})) > 0` : undefined,
  );
  const lastActive = sql`coalesce(${stats.last_active_at}, '')`;
  const key = q.sortBy === 'name' ? projects.name : q.sortBy === 'last_active_at' ? lastActive : projects.created_at;
  const dir = q.sortOrder === 'asc' ? asc : desc;
  const [rows, [{ total }]] = await Promise.all([
    db
      .select({
        project: projects,
        program_count: sql<number>`coalesce(${stats.program_count}, 0)`,
        total_proofs_run: sql<number>`coalesce(${stats.total_proofs_run}, 0)`,
        last_active_at: stats.last_active_at,
      })
      .from(projects)
      .leftJoin(stats, eq(stats.project_id, projects.id))
      .where(where)
      .orderBy(dir(key), dir(projects.id))
      .limit(q.pageSize)
      .offset((q.page - 1) * q.pageSize),
    db.select({ total: count() }).from(projects).where(where) as Promise<{ total: number }[]>,
  ]);
  const items = rows.map((r) =>
    projectRecord(r.project, {
      program_count: Number(r.program_count),
      total_proofs_run: Number(r.total_proofs_run),
      last_active_at: r.last_active_at ?? null,
    }),
  );
  return paginate(items, total, q.page, q.pageSize);
}

/** The caller's proof row, or 404 (also for other organizations' proofs). */
export async function findProof(db: Db, orgId: string, id: string) {
  const row = await db
    .select()
    .from(proofs)
    .where(and(eq(proofs.id, id), eq(proofs.org_id, orgId)))
    .get();
  if (!row) throw notFound('Proof');
  return row;
}
