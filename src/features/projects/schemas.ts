// A project as callers read it (interface section 2) and the requests the project
// routes take. Schemas only, no statements: the console's browser client takes its
// types from here (src/console/ui/api-types.ts).
import { z } from '@hono/zod-openapi';
import type { projects } from '../../db/schema.ts';
import { Timestamp, Uuid } from '../../lib/schemas.ts';

type Row<T extends { $inferSelect: unknown }> = T['$inferSelect'];

export const ProjectRecord = z
  .object({
    id: z.string(),
    name: z.string(),
    created_at: Timestamp,
    created_by: z.string(),
    program_count: z.number().int(),
    total_proofs_run: z.number().int(),
    last_active_at: Timestamp.nullable(),
    highlighted_program_id: z.string().nullable(),
  })
  .openapi('Project');

/** A project as callers read it; its totals are counters on its row (kept by triggers, migrations/0005_counters.sql). */
export function projectRecord(p: Row<typeof projects>): z.infer<typeof ProjectRecord> {
  return {
    id: p.id,
    name: p.name,
    created_at: p.created_at,
    created_by: p.created_by,
    program_count: p.program_count,
    total_proofs_run: p.total_proofs_run,
    last_active_at: p.last_active_at,
    highlighted_program_id: p.highlighted_program_id,
  };
}

export const ProjectParams = z.object({ project_id: Uuid('project_id') });

export const CreateProjectBody = z
  .union([z.string(), z.object({ name: z.string() })])
  .openapi('CreateProject', { description: 'The project name as a JSON string (what the published client sends), or {"name": "..."}' });
