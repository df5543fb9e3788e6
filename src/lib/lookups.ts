// Lookups of the caller's records that more than one route module needs. Every
// lookup is scoped to the caller's organization: another organization's id is 404.
import { and, count, desc, eq, type SQL } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { configs, programs, projects } from '../db/schema.ts';
import { notFound } from './errors.ts';
import { programRecord } from './records.ts';
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
