// The records callers read (interface section 2, client-conventions "Fields the client
// parses"): zod schemas for the OpenAPI document and the functions that build them
// from D1 rows. Field order follows the interface. Proofs', executions' and
// verifications' are in their features' schemas.ts (src/features/).
import { z } from '@hono/zod-openapi';
import type { configs, programs, projects } from '../db/schema.ts';

type Row<T extends { $inferSelect: unknown }> = T['$inferSelect'];

const ts = z.string().openapi({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' });

export const ProgramRecord = z
  .object({
    id: z.string(),
    created_at: ts,
    status: z.enum(['ready', 'processing', 'not_ready', 'error', 'failed']),
    name: z.string(),
    created_by: z.string(),
    last_active_at: ts,
    launched_at: ts.nullable(),
    terminated_at: ts.nullable(),
    config_uuid: z.string(),
    program_hash: z.string().openapi({ description: 'SHA-256 of the ELF, hex' }),
    openvm_config: z.string().openapi({ description: 'openvm_version of the program’s config' }),
    cells_used: z.number().int(),
    proofs_run: z.number().int(),
    commit_sha: z.string(),
    default_num_gpus: z.number().int(),
    project_id: z.string(),
    project_name: z.string(),
    project_highlighted_program_id: z.string(),
    error_message: z.string(),
  })
  .openapi('Program');

export function programRecord(
  p: Row<typeof programs>,
  project: Pick<Row<typeof projects>, 'name' | 'highlighted_program_id'>,
  config: Pick<Row<typeof configs>, 'openvm_version'>,
): z.infer<typeof ProgramRecord> {
  return {
    id: p.id,
    created_at: p.created_at,
    status: p.status,
    name: p.name,
    created_by: p.created_by,
    last_active_at: p.last_active_at,
    launched_at: p.launched_at,
    terminated_at: p.terminated_at,
    config_uuid: p.config_id,
    program_hash: p.program_hash,
    openvm_config: config.openvm_version,
    cells_used: p.cells_used,
    proofs_run: p.proofs_run,
    commit_sha: p.commit_sha,
    default_num_gpus: p.default_num_gpus,
    project_id: p.project_id,
    project_name: project.name,
    project_highlighted_program_id: project.highlighted_program_id ?? p.id,
    error_message: p.error_message,
  };
}

export const ProjectRecord = z
  .object({
    id: z.string(),
    name: z.string(),
    created_at: ts,
    created_by: z.string(),
    program_count: z.number().int(),
    total_proofs_run: z.number().int(),
    last_active_at: ts.nullable(),
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

