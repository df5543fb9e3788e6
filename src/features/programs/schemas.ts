// A program as callers read it (interface section 2, client-conventions "Fields the
// client parses"; field order follows the interface), the console's detail of one, and
// the requests the program routes take. Schemas only, no statements: the console's
// browser client takes its types from here (src/console/ui/api-types.ts).
import { z } from '@hono/zod-openapi';
import type { configs, programs, projects } from '../../db/schema.ts';
import { ConfigId, queryInt, safeName, Timestamp, Uuid } from '../../lib/schemas.ts';

type Row<T extends { $inferSelect: unknown }> = T['$inferSelect'];

export const ProgramRecord = z
  .object({
    id: z.string(),
    created_at: Timestamp,
    status: z.enum(['ready', 'processing', 'not_ready', 'error', 'failed']),
    name: z.string(),
    created_by: z.string(),
    last_active_at: Timestamp,
    launched_at: Timestamp.nullable(),
    terminated_at: Timestamp.nullable(),
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
    deleted_at: Timestamp.optional().openapi({
      description:
        'Present only on a deleted record (DELETE, or the organization’s retention): when its files went. The record stays with its billing figures.',
    }),
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
    ...(p.deleted_at ? { deleted_at: p.deleted_at } : {}),
  };
}

// ---------------------------------------------------------------------------
// The console's detail of one program

export const ProgramDetail = ProgramRecord.extend({
  artifacts: z.object({
    elf_size: z.number().int(),
    vmexe_size: z.number().int(),
    app_exe_commit: z.string().nullable(),
    app_vm_commit: z.string(),
    engine: z.string(),
  }),
  proof_states: z.record(z.string(), z.number().int()).openapi({ description: 'How many of its proofs are in each state' }),
}).openapi('ConsoleProgramDetail');

// ---------------------------------------------------------------------------
// Requests

export const ProgramParams = z.object({ program_id: Uuid('program_id') });

/** POST /v1/programs: everything but the files, which the multipart body carries. */
export const RegisterQuery = z.object({
  config_id: ConfigId,
  program_name: safeName(z.string().max(256)).optional(),
  commit_sha: z.string().max(256).optional(),
  project_id: z.uuid().optional(),
  project_name: safeName(z.string().max(256)).optional(),
  default_num_gpus: queryInt(1, 10000, 8, 'Default GPU count for proofs of this program'),
});

export const UpdateProgramBody = z
  .object({
    project_id: z.uuid().optional().openapi({ description: 'Move the program to this project (one of yours)' }),
    name: safeName(z.string().min(1).max(256)).optional().openapi({ description: 'Rename the program' }),
    program_name: safeName(z.string().min(1).max(256)).optional().openapi({ description: 'Alias of name' }),
  })
  .openapi('UpdateProgram');
