// What an estimate answers and how a caller names what to estimate (docs/callers.md "Estimates").
import { z } from '@hono/zod-openapi';
import { optionalQueryInt } from '../../lib/schemas.ts';

/**
 * GET /v1/executions/{id}'s optional parameters: the proof to estimate. The record
 * carries `estimate` only when one of them is given, so the record without them stays
 * exactly what the published client and the webhook events carry.
 */
export const EstimateQuery = z.object({
  // Parsed as every integer query parameter (src/lib/schemas.ts): z.coerce read `0x8` or `1e1` as GPUs.
  num_gpus: optionalQueryInt(1, 1024, 'GPUs the proof would ask for (default: the program’s default_num_gpus)'),
  proof_type: z
    .enum(['stark', 'evm'])
    .optional()
    .openapi({ description: 'The proof type to estimate (default stark, as the published client)' }),
  machine_type: z
    .string()
    .min(1)
    .max(64)
    .optional()
    .openapi({ description: 'Estimate for this agent machine type (default: the one the most proofs were measured on)' }),
});

export const ProvingEstimate = z
  .object({
    num_gpus: z.number().int().openapi({ description: 'As asked (or the program’s default)' }),
    gpus_used: z
      .number()
      .int()
      .openapi({ description: 'GPUs such a proof holds and is billed on (an openvm proof: 1; the dev engine: none)' }),
    proof_type: z.string(),
    machine_type: z.string().nullable().openapi({ description: 'The machine type the rates were measured on; null without an estimate' }),
    based_on_jobs: z.number().int().openapi({
      description: 'How many succeeded proofs of the program’s config, on this machine type, GPUs and proof type the estimate rests on',
    }),
    proving_seconds: z
      .number()
      .nullable()
      .openapi({ description: 'Estimated wall time of the proving attempt, seconds; null: no estimate' }),
    cost: z.number().int().nullable().openapi({ description: 'Estimated cost, micro-USD (the unit of `cost`); null: no estimate' }),
    reason: z.string().nullable().openapi({ description: 'Why there is no estimate, or how it was made' }),
  })
  .openapi('ProvingEstimate', {
    description: 'An estimate of proving this execution’s run, from what the fleet measured (docs/callers.md "Estimates")',
  });

/** The console's program page: the estimate of proving the program's latest succeeded execution. */
export const ProgramEstimate = z
  .object({
    execution_id: z
      .string()
      .nullable()
      .openapi({ description: 'The latest succeeded execution of the program, whose cycles are estimated; null: none yet' }),
    cycles: z.number().int().nullable(),
    estimate: ProvingEstimate,
  })
  .openapi('ProgramEstimate');
