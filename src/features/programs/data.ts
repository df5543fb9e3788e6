// The statements reading and writing the caller's programs, for the batch a request
// reads in (one D1 round trip: src/middleware/auth.ts asCaller) or writes in, and the
// answers made of what they read. Every statement is scoped to the caller's
// organization (`org`): another organization's id finds nothing, exactly like an id
// that does not exist (404).
//
// Statements batched together never join tables whose columns share names: D1 returns
// a batch's rows as objects keyed by column name, so such a join would lose columns.
// A program's project and config are read by statements of their own instead.
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { SQLiteSelect } from 'drizzle-orm/sqlite-core';
import type { Caller } from '../../app-env.ts';
import { batchByName, type Statement } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { configs, programs, projects } from '../../db/schema.ts';
import { INTERACTIVE_PRIORITY, type NewJob } from '../../jobs/dispatch.ts';
import { artifactKey } from '../../lib/artifact-keys.ts';
import { notFound } from '../../lib/errors.ts';
import { inPage, pageAnswer, pageQuery, type Org } from '../../lib/pages.ts';
import { highlightIfNone, rehighlightAfterMove } from '../projects/data.ts';
import { programRecord } from './schemas.ts';

type ProgramRow = typeof programs.$inferSelect;
type ProjectRow = typeof projects.$inferSelect;
type ConfigRow = typeof configs.$inferSelect;

// ---------------------------------------------------------------------------
// One program: the row, its project and its config.

const ownProgram = (org: Org, id: string) => and(eq(programs.id, id), eq(programs.org_id, org));
const programColumn = (db: Db, org: Org, id: string, column: typeof programs.project_id | typeof programs.config_id) =>
  sql`(${db.select({ v: column }).from(programs).where(ownProgram(org, id))})`;

/** The statements reading one of the caller's programs, by name; programOf() makes the answer. */
export function programQuery(db: Db, org: Org, id: string) {
  return {
    program: db.select().from(programs).where(ownProgram(org, id)),
    project: db
      .select()
      .from(projects)
      .where(eq(projects.id, programColumn(db, org, id, programs.project_id))),
    config: db
      .select()
      .from(configs)
      .where(eq(configs.id, programColumn(db, org, id, programs.config_id))),
  };
}

/** programQuery() without the project: what a submission runs (the program and its config), one statement fewer. */
export function programToRunQuery(db: Db, org: Org, id: string) {
  const { program, config } = programQuery(db, org, id);
  return { program, config };
}

/** The program and config programToRunQuery() read, or 404. */
export function requireProgramToRun({ program: [program], config: [config] }: Pick<ProgramRead, 'program' | 'config'>) {
  if (!program || !config) throw notFound('Program');
  return { program, config };
}

/** What programQuery() read. */
export interface ProgramRead {
  program: ProgramRow[];
  project: ProjectRow[];
  config: ConfigRow[];
}

export interface FoundProgram {
  program: ProgramRow;
  project: ProjectRow;
  config: ConfigRow;
}

/** The program programQuery() read, or undefined. */
export function programOf({ program: [program], project: [project], config: [config] }: ProgramRead): FoundProgram | undefined {
  return program && project && config ? { program, project, config } : undefined;
}

/** The program programQuery() read, or 404. */
export function requireProgram(read: ProgramRead): FoundProgram {
  const found = programOf(read);
  if (!found) throw notFound('Program');
  return found;
}

export const toRecord = (r: FoundProgram) => programRecord(r.program, r.project, r.config);

/** For routes whose caller is already checked (the console's): the organization's program with its project and config, alone in its batch, or 404. */
export async function findProgram(db: Db, org: Org, id: string): Promise<FoundProgram> {
  return requireProgram(await batchByName(db, programQuery(db, org, id)));
}

// ---------------------------------------------------------------------------
// Pages of programs

/**
 * The statements reading one page of the caller's programs matching `filter`, newest
 * first (`rows`), their projects and configs, and its `total` (a counter row, or a
 * capped count for a search).
 */
export function programPageQuery(db: Db, org: Org, filter: SQL | undefined, page: number, pageSize: number, total: SQL<number>) {
  const where = and(eq(programs.org_id, org), filter);
  const ordered = <T extends SQLiteSelect>(query: T) => query.where(where).orderBy(desc(programs.created_at), desc(programs.id));
  // The page's projects and configs, by the same page of ids (an IN over at most a page).
  const pageColumn = (column: typeof programs.project_id | typeof programs.config_id) =>
    inPage(ordered(db.select({ id: column }).from(programs).$dynamic()), page, pageSize);
  return {
    ...pageQuery(db, ordered(db.select().from(programs).$dynamic()), total, page, pageSize),
    projects: db
      .select()
      .from(projects)
      .where(inArray(projects.id, pageColumn(programs.project_id))),
    configs: db
      .select()
      .from(configs)
      .where(inArray(configs.id, pageColumn(programs.config_id))),
  };
}

/** What programPageQuery() read. */
export interface ProgramPageRead {
  rows: ProgramRow[];
  projects: ProjectRow[];
  configs: ConfigRow[];
  total: { total: number }[];
}

/** The page programPageQuery() read, as records. */
export function programPage(read: ProgramPageRead, page: number, pageSize: number) {
  const project = new Map(read.projects.map((p) => [p.id, p]));
  const config = new Map(read.configs.map((c) => [c.id, c]));
  return pageAnswer(read, (p) => programRecord(p, project.get(p.project_id)!, config.get(p.config_id)!), page, pageSize);
}

/** What a registration knows once its files are stored (src/features/programs/files.ts). */
export interface StoredProgram {
  elfSize: number;
  elfSha256: string;
  elfFilename: string | undefined;
  vmexeSize: number;
  projectName: string | undefined;
}

/** What a registration asks for, from its query. */
export interface Registration {
  programId: string;
  config: Pick<ConfigRow, 'id' | 'engine'>;
  /** An existing project of the caller's, or none: a new one is made, named for the program. */
  projectId: string | undefined;
  programName: string | undefined;
  projectName: string | undefined;
  commitSha: string | undefined;
  defaultNumGpus: number;
}

/**
 * The rows of a registered program and the job that computes its commit, for
 * submitJob() (src/jobs/dispatch.ts), which commits them in one batch with the job row:
 * the program (into a new project, which highlights it, or an existing one, which
 * highlights it if it highlights none yet).
 */
export function registration(db: Db, caller: Caller, r: Registration, stored: StoredProgram): { job: NewJob; rows: Statement[] } {
  const now = new Date().toISOString();
  const projectId = r.projectId ?? crypto.randomUUID();
  const name = r.programName || stored.elfFilename || `program-${r.programId.slice(0, 8)}`;
  const program = newProgram(db, caller, r, stored, { projectId, name, now });
  return {
    // A new project goes in before its program (the program's foreign key needs it).
    rows: r.projectId
      ? [program, highlightIfNone(db, projectId, r.programId)]
      : [
          newProject(db, caller, { id: projectId, name: r.projectName || stored.projectName || name, highlighted: r.programId, now }),
          program,
        ],
    job: {
      kind: 'commit',
      subjectId: r.programId,
      orgId: caller.orgId,
      configId: r.config.id,
      engine: r.config.engine,
      priority: INTERACTIVE_PRIORITY,
      numGpus: 1,
    },
  };
}

function newProject(db: Db, caller: Caller, p: { id: string; name: string; highlighted: string; now: string }) {
  return db.insert(projects).values({
    id: p.id,
    org_id: caller.orgId,
    name: p.name,
    created_by: caller.owner,
    highlighted_program_id: p.highlighted,
    created_at: p.now,
  });
}

function newProgram(db: Db, caller: Caller, r: Registration, stored: StoredProgram, p: { projectId: string; name: string; now: string }) {
  return db.insert(programs).values({
    id: r.programId,
    org_id: caller.orgId,
    project_id: p.projectId,
    config_id: r.config.id,
    name: p.name,
    created_at: p.now,
    created_by: caller.owner,
    last_active_at: p.now,
    program_hash: stored.elfSha256,
    commit_sha: r.commitSha ?? '',
    default_num_gpus: r.defaultNumGpus,
    elf_key: artifactKey.programElf(r.programId),
    elf_size: stored.elfSize,
    vmexe_key: artifactKey.programVmexe(r.programId),
    vmexe_size: stored.vmexeSize,
  });
}

// ---------------------------------------------------------------------------
// Moving and renaming a program

/**
 * The change of one of the caller's programs (`from`: as it was read) and the record
 * as it then stands, by name, for one batch: the update, the re-highlight of the
 * project it left and the highlight in the one it joined (only when it moved), and
 * the program's read (programQuery()).
 */
export function updateProgram(db: Db, org: Org, from: ProgramRow, change: { projectId?: string; name?: string }) {
  const moved = change.projectId !== undefined && change.projectId !== from.project_id;
  return {
    update: db
      .update(programs)
      .set({ ...(change.projectId ? { project_id: change.projectId } : {}), ...(change.name ? { name: change.name } : {}) })
      .where(ownProgram(org, from.id)),
    leftProject: moved ? rehighlightAfterMove(db, from.project_id, from.id) : undefined,
    joinedProject: moved ? highlightIfNone(db, change.projectId!, from.id) : undefined,
    ...programQuery(db, org, from.id),
  };
}
