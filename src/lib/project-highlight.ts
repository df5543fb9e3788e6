// A project's highlighted program: the one every program of the project reports as
// `project_highlighted_program_id`. It is the first program registered into the
// project until that program moves away, when the oldest remaining one takes over.
// Kept on the project row (one value for all its programs) by these statements,
// which run in the same batch as the write that adds or moves a program.
import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { programs, projects } from '../db/schema.ts';

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
