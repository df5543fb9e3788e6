// Proofs' records: the public API's (interface section 2) and the console's (the same
// record with the names a page shows, its job's progress), and the answer to a cancel.
import { z } from '@hono/zod-openapi';
import { PROOF_TYPES } from 'prover-agent/protocol';
import { PROOF_STATES, type proofs } from '../../db/schema.ts';
import { MessageResponse, Timestamp } from '../../lib/schemas.ts';
import { RunLimitFields, runFields, type RunState } from '../limits/schemas.ts';
import { TombstoneFields, tombstoneOf } from '../retention/schemas.ts';

/** A proof's row, with its run state when the read selected it (proofColumns, ./data.ts). */
export type ProofRow = typeof proofs.$inferSelect & RunState;

export const ProofRecord = z
  .object({
    id: z.string(),
    created_at: Timestamp,
    state: z.enum(PROOF_STATES),
    proof_type: z.enum(PROOF_TYPES),
    program_uuid: z.string(),
    launched_at: Timestamp.nullable(),
    terminated_at: Timestamp.nullable(),
    created_by: z.string(),
    cells_used: z.number().int(),
    cost: z.number().int().openapi({ description: 'GPU-milliseconds × the machine type’s rate; see docs/callers.md “Cost”' }),
    machine_type: z.string(),
    num_gpus: z.number().int(),
    priority: z.number().int(),
    error_message: z.string(),
    proof_size: z.number().int(),
    num_instructions: z.number().int().nullable(),
    num_deferred_proofs: z.number().int(),
    ...RunLimitFields,
    ...TombstoneFields,
  })
  .openapi('Proof');

export function proofRecord(p: ProofRow): z.infer<typeof ProofRecord> {
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
    ...runFields(p),
    ...tombstoneOf(p),
  };
}

export const ConsoleProof = ProofRecord.extend({ program_name: z.string(), project_id: z.string(), project_name: z.string() }).openapi(
  'ConsoleProof',
);

export const ProofDetail = ConsoleProof.extend({
  job: z
    .object({
      status: z.enum(['queued', 'leased', 'done']),
      attempt: z.number().int(),
      waiting_reason: z.string().nullable(),
      log_bytes: z.number().int(),
      cancel_requested: z.boolean(),
    })
    .nullable(),
  files: z.array(z.string()).openapi({ description: 'Proof kinds ready to download' }),
}).openapi('ConsoleProofDetail');

export const CancelAnswer = MessageResponse.extend({ state: z.string() });

/** A proof file as the zkVM writes it, answered as stored (GET …/proof/{kind}). */
export const ProofFile = z.record(z.string(), z.unknown()).openapi('ProofFile');
export const PROOF_FILE_DESCRIPTION =
  'The proof file as the zkVM wrote it, streamed as stored and named `{kind}-proof.json` (Content-Disposition). A STARK proof is `VersionedVmStarkProof` JSON (`version`, `proof`, `user_pvs_proof`, `deferral_merkle_proofs`); an EVM proof has `version`, `app_exe_commit`, `app_vm_commit`, `user_public_values` and `proof_data`. 404 until the proof exists, and once its files were deleted.';
export const PROOF_FILE_EXAMPLE = { version: 'v2.0', proof: '0x0a1b2c…', user_pvs_proof: '0x3d4e5f…', deferral_merkle_proofs: null };
