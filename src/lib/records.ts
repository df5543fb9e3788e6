// The records callers read (interface section 2, client-conventions "Fields the client
// parses"): zod schemas for the OpenAPI document and the functions that build them
// from D1 rows. Field order follows the interface.
import { z } from '@hono/zod-openapi';
import type { configs, executions, programs, projects, proofs, verifications } from '../db/schema.ts';
import { PROOF_TYPES } from 'prover-agent/protocol';
import { PROOF_STATES } from '../db/schema.ts';

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
    deleted_at: ts.optional().openapi({ description: 'Present only on a deleted record (DELETE, or the organization’s retention): when its files went. The record stays with its billing figures.' }),
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

export const ProofRecord = z
  .object({
    id: z.string(),
    created_at: ts,
    state: z.enum(PROOF_STATES),
    proof_type: z.enum(PROOF_TYPES),
    program_uuid: z.string(),
    launched_at: ts.nullable(),
    terminated_at: ts.nullable(),
    created_by: z.string(),
    cells_used: z.number().int(),
    cost: z.number().int().openapi({ description: 'GPU-milliseconds × the machine type’s rate; see README “Cost”' }),
    machine_type: z.string(),
    num_gpus: z.number().int(),
    priority: z.number().int(),
    error_message: z.string(),
    proof_size: z.number().int(),
    num_instructions: z.number().int().nullable(),
    num_deferred_proofs: z.number().int(),
    deleted_at: ts.optional().openapi({ description: 'Present only on a deleted record (DELETE, or the organization’s retention): when its files went. The record stays with its billing figures.' }),
  })
  .openapi('Proof');

export function proofRecord(p: Row<typeof proofs>): z.infer<typeof ProofRecord> {
  return {
    id: p.id,
    created_at: p.created_at,
    state: p.state,
    proof_type: p.proof_type,
    program_uuid: p.program_id,
    launched_at: p.launched_at,
    terminated_at: p.terminated_at,
    created_by: p.created_by,
    cells_used: p.cells_used,
    cost: p.cost,
    machine_type: p.machine_type,
    num_gpus: p.num_gpus,
    priority: p.priority,
    error_message: p.error_message,
    proof_size: p.proof_size,
    num_instructions: p.num_instructions,
    num_deferred_proofs: p.num_deferred_proofs,
    ...(p.deleted_at ? { deleted_at: p.deleted_at } : {}),
  };
}

export const ConfigRecord = z
  .object({
    id: z.string(),
    created_at: ts,
    openvm_version: z.string(),
    stark_backend_version: z.string(),
    status: z.string(),
    active: z.boolean(),
    app_vm_commit: z.string(),
  })
  .openapi('Configuration');

export function configRecord(c: Row<typeof configs>): z.infer<typeof ConfigRecord> {
  return {
    id: c.id,
    created_at: c.created_at,
    openvm_version: c.openvm_version,
    stark_backend_version: c.stark_backend_version,
    status: c.status,
    active: c.active,
    app_vm_commit: c.app_vm_commit,
  };
}

export const VerificationRecord = z
  .object({
    id: z.string(),
    created_at: ts,
    result: z.enum(['processing', 'verified', 'failed']),
    proof_type: z.enum(['stark', 'evm']),
    program_uuid: z.string().nullable().openapi({ description: 'Null for an EVM proof checked against a config alone' }),
    config_id: z.string(),
    error_message: z.string(),
  })
  .openapi('Verification');

export function verificationRecord(v: Row<typeof verifications>): z.infer<typeof VerificationRecord> {
  return {
    id: v.id,
    created_at: v.created_at,
    result: v.result,
    proof_type: v.proof_type === 'evm' ? 'evm' : 'stark',
    program_uuid: v.program_id,
    config_id: v.config_id,
    error_message: v.error_message,
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

/**
 * Execution statuses as the published client spells them: its `run --wait` loop
 * (axiom-api-cli v2.0.0 crates/sdk/src/run.rs:285-403) ends on `Succeeded` or
 * `Failed` and polls forever on anything else. It has no canceled state, so a
 * canceled execution is `Failed` with error_message saying it was canceled.
 */
export const EXECUTION_STATUS_NAMES = ['Queued', 'InProgress', 'Succeeded', 'Failed'] as const;
const executionStatusName = {
  queued: 'Queued',
  running: 'InProgress',
  succeeded: 'Succeeded',
  failed: 'Failed',
  canceled: 'Failed',
} as const satisfies Record<Row<typeof executions>['status'], (typeof EXECUTION_STATUS_NAMES)[number]>;

export const ExecutionRecord = z
  .object({
    id: z.string(),
    created_at: ts,
    status: z.enum(EXECUTION_STATUS_NAMES),
    program_uuid: z.string(),
    created_by: z.string(),
    mode: z.string(),
    error_message: z.string().nullable(),
    launched_at: ts.nullable(),
    terminated_at: ts.nullable(),
    public_values: z.string().nullable(),
    cost: z.number().int().nullable(),
    num_segments: z.number().int().nullable(),
    total_cycle: z.number().int().nullable(),
    total_tick: z.number().int().nullable(),
    num_instructions: z.number().int().nullable(),
    deleted_at: ts.optional().openapi({ description: 'Present only on a deleted record (DELETE, or the organization’s retention): when its files went. The record stays with its billing figures.' }),
  })
  .openapi('Execution');

export function executionRecord(e: Row<typeof executions>): z.infer<typeof ExecutionRecord> {
  return {
    id: e.id,
    created_at: e.created_at,
    status: executionStatusName[e.status],
    program_uuid: e.program_id,
    created_by: e.created_by,
    mode: e.mode,
    error_message: e.status === 'canceled' && !e.error_message ? 'Canceled' : e.error_message,
    launched_at: e.launched_at,
    terminated_at: e.terminated_at,
    public_values: e.public_values,
    cost: e.cost,
    num_segments: e.num_segments,
    total_cycle: e.total_cycle,
    total_tick: e.total_tick,
    num_instructions: e.num_instructions,
    ...(e.deleted_at ? { deleted_at: e.deleted_at } : {}),
  };
}
