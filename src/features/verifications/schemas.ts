// Verifications' record (interface section 2), as the public API and the console answer it.
import { z } from '@hono/zod-openapi';
import type { verifications } from '../../db/schema.ts';
import { Timestamp } from '../../lib/schemas.ts';
import { TombstoneFields, tombstoneOf } from '../retention/schemas.ts';

export type VerificationRow = typeof verifications.$inferSelect;

export const VerificationRecord = z
  .object({
    id: z.string(),
    created_at: Timestamp,
    result: z.enum(['processing', 'verified', 'failed']),
    proof_type: z.enum(['stark', 'evm']),
    program_uuid: z.string().nullable().openapi({ description: 'Null for an EVM proof checked against a config alone' }),
    config_id: z.string(),
    error_message: z.string(),
    ...TombstoneFields,
  })
  .openapi('Verification');

export function verificationRecord(v: VerificationRow): z.infer<typeof VerificationRecord> {
  return {
    id: v.id,
    created_at: v.created_at,
    result: v.result,
    proof_type: v.proof_type === 'evm' ? 'evm' : 'stark',
    program_uuid: v.program_id,
    config_id: v.config_id,
    error_message: v.error_message,
    ...tombstoneOf(v),
  };
}
