// The fleet's schemas: the internal protocol's requests (the types they check are the
// fleet protocol's, `prover-agent/protocol`, so the two cannot drift apart silently) and
// the console's fleet view. The console's browser client takes the view's type from here
// (type-only, src/console/ui/api-types.ts).
import { z } from '@hono/zod-openapi';
import {
  MAX_INLINE_RESULT_BYTES,
  PROOF_TYPES,
  PROVE_PHASES,
  type ClaimRequest,
  type CompleteRequest,
  type FailRequest,
  type HeartbeatRequest,
  type LeaseEnding,
  type LeaveRequest,
  type LogChunk,
  type NextClaim,
  type PresenceRequest,
  type QueueAckRequest,
  type QueuePullRequest,
} from 'prover-agent/protocol';
import { MAX_AGENT_GPUS, MAX_MACHINE_TYPE_LENGTH } from '../../lib/limits.ts';
import { utf8Bytes } from '../../lib/bytes.ts';

const id = z.string().min(1).max(200);
const hex32 = z.string().regex(/^0x[0-9a-f]{64}$/i, 'expected 0x and 64 hex digits');
const count = z.number().int().min(0).max(Number.MAX_SAFE_INTEGER);
const metrics = z.object({
  num_instructions: count.optional(),
  cells_used: count.optional(),
  num_segments: count.optional(),
  total_cycle: count.optional(),
  total_tick: count.optional(),
});
const proofType = z.enum(PROOF_TYPES);
const hexOrNull = z
  .string()
  .regex(/^(0x)?[0-9a-fA-F]*$/)
  .max(1 << 20)
  .nullable();

const capabilities = {
  agent_id: id,
  name: z.string().min(1).max(200),
  // What the host says it is and has: its agent token's machine type, GPUs up to the token's (src/jobs/state.ts nextJobFor).
  machine_type: z.string().min(1).max(MAX_MACHINE_TYPE_LENGTH),
  gpus: z.number().int().min(0).max(MAX_AGENT_GPUS),
  engines: z.array(z.string().min(1).max(50)).min(1).max(10),
  // Bounded so a claim's statement stays under D1's 100 bound parameters.
  configs: z.array(id).max(50),
};

export const PresenceRequestSchema = z.object(capabilities) satisfies z.ZodType<PresenceRequest>;
export const LeaveRequestSchema = z.object({ agent_id: id }) satisfies z.ZodType<LeaveRequest>;

/** Cloudflare Queues' own bounds on a pull (batch_size 1-100, visibility up to 12 hours). */
export const QueuePullSchema = z.object({
  batch_size: z.number().int().min(1).max(100).default(5),
  visibility_timeout_ms: z
    .number()
    .int()
    .min(0)
    .max(12 * 3600_000)
    .default(30_000),
}) satisfies z.ZodType<QueuePullRequest, unknown>;
const leaseRef = z.object({ lease_id: z.string().min(1).max(200) });
export const QueueAckSchema = z.object({
  acks: z.array(leaseRef).max(100).default([]),
  retries: z
    .array(leaseRef.extend({ delay_seconds: z.number().int().min(0).max(43_200).optional() }))
    .max(100)
    .default([]),
}) satisfies z.ZodType<QueueAckRequest, unknown>;

export const ClaimRequestSchema = z.object({
  ...capabilities,
  hint_job_id: id.nullish(),
}) satisfies z.ZodType<ClaimRequest>;

export const HeartbeatRequestSchema = z.object({
  phase: z.enum(PROVE_PHASES).optional(),
  metrics: metrics.optional(),
}) satisfies z.ZodType<HeartbeatRequest>;

export const LogChunkSchema = z.object({
  seq: count,
  offset: count,
  text: z.string().max(1 << 20),
}) satisfies z.ZodType<LogChunk>;

/** The attempt's last log chunk, which any call that ends a lease may carry. */
export const LeaseEndingSchema = z.object({ log: LogChunkSchema.optional() }) satisfies z.ZodType<LeaseEnding>;

/** Inline results: JSON text, MAX_INLINE_RESULT_BYTES together at most (bigger ones are PUT first). */
const inlineResults = z
  .object({ baseline: z.string(), app: z.string(), stark: z.string(), evm: z.string() })
  .partial()
  .strict()
  .refine((r) => Object.values(r).reduce((n, text) => n + utf8Bytes(text).byteLength, 0) <= MAX_INLINE_RESULT_BYTES, {
    message: `inline results may hold ${MAX_INLINE_RESULT_BYTES} bytes together; PUT bigger ones to /lease/results/{name} first`,
  });

/** A claim made with a completion (protocol NextClaim): the agent's capabilities, no queue notice. */
const NextClaimSchema = z.object(capabilities) satisfies z.ZodType<NextClaim>;

const completion = { ...LeaseEndingSchema.shape, results: inlineResults.optional(), next_claim: NextClaimSchema.optional() };

export const CompleteRequestSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('commit'), app_exe_commit: hex32, app_vm_commit: hex32, ...completion }),
  z.object({ kind: z.literal('proof'), proofs: z.array(proofType).min(1), public_values: hexOrNull, metrics, ...completion }),
  z.object({ kind: z.literal('verify'), verified: z.boolean(), reason: z.string().max(10_000).nullable(), ...completion }),
  z.object({
    kind: z.literal('execute'),
    exit_code: z.number().int(),
    public_values: hexOrNull,
    error: z.string().max(100_000).nullable(),
    metrics,
    ...completion,
  }),
]) satisfies z.ZodType<CompleteRequest>;

export const FailRequestSchema = LeaseEndingSchema.extend({
  error: z.string().min(1).max(100_000),
  retryable: z.boolean(),
  limit: z.object({ name: z.literal('cycle_limit'), reached: z.number().int().nonnegative() }).optional(),
}) satisfies z.ZodType<FailRequest>;

// ---------------------------------------------------------------------------
// The console's fleet view (GET /console/v1/fleet)

export const FleetResponse = z
  .object({
    agents: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        machine_type: z.string(),
        gpus: z.number().int(),
        engines: z.array(z.string()),
        configs: z.array(z.string()),
        last_seen_at: z.string(),
        stale: z.boolean(),
      }),
    ),
    queued: z.array(
      z.object({
        engine: z.string(),
        config_id: z.string(),
        jobs: z.number().int(),
        oldest_queued_at: z.string(),
        oldest_age_seconds: z.number().int(),
      }),
    ),
    /** Live agent tokens: what each lets its agents claim (configs null: every config of its engines) and hold. */
    tokens: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        engines: z.array(z.string()),
        configs: z.array(z.string()).nullable(),
        machine_type: z.string().openapi({ description: 'What its hosts are billed as (MACHINE_RATES); a host must declare it as it is' }),
        max_gpus: z.number().int().openapi({ description: 'The most GPUs its live leases hold together' }),
        max_leases: z.number().int().openapi({ description: 'The most leases (running jobs) it holds at once' }),
        created_at: z.string(),
      }),
    ),
    running: z.number().int(),
  })
  .openapi('ConsoleFleet');
