// The proofs' schemas. The console's proof records live here (they came out of
// lib/console-records.ts, which was accounts' and the console's alike); free of Worker
// APIs, as the console's browser client takes its types from it (src/console/ui/api-types.ts).
import { z } from '@hono/zod-openapi';
import { ProofRecord } from '../../lib/records.ts';
import { MessageResponse } from '../../lib/schemas.ts';

export const ConsoleProof = ProofRecord.extend({ program_name: z.string(), project_id: z.string(), project_name: z.string() }).openapi('ConsoleProof');

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
