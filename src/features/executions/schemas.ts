// Executions' record (interface section 2), as the public API and the console answer it.
import { z } from '@hono/zod-openapi';
import type { executions } from '../../db/schema.ts';
import { Timestamp } from '../../lib/schemas.ts';
import { ProvingEstimate } from '../estimates/schemas.ts';
import { RunLimitFields, runFields, type RunState } from '../limits/schemas.ts';
import { TombstoneFields, tombstoneOf } from '../retention/schemas.ts';

/** An execution's row, with its run state when the read selected it (executionColumns, ./data.ts). */
export type ExecutionRow = typeof executions.$inferSelect & RunState;

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
} as const satisfies Record<ExecutionRow['status'], (typeof EXECUTION_STATUS_NAMES)[number]>;

export const ExecutionRecord = z
  .object({
    id: z.string(),
    created_at: Timestamp,
    status: z.enum(EXECUTION_STATUS_NAMES),
    program_uuid: z.string(),
    created_by: z.string(),
    mode: z.string(),
    error_message: z.string().nullable(),
    launched_at: Timestamp.nullable(),
    terminated_at: Timestamp.nullable(),
    public_values: z.string().nullable(),
    cost: z.number().int().nullable(),
    num_segments: z.number().int().nullable(),
    total_cycle: z.number().int().nullable(),
    total_tick: z.number().int().nullable(),
    num_instructions: z.number().int().nullable(),
    ...RunLimitFields,
    ...TombstoneFields,
  })
  .openapi('Execution');

export function executionRecord(e: ExecutionRow): z.infer<typeof ExecutionRecord> {
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
    ...runFields(e),
    ...tombstoneOf(e),
  };
}

/** An execution on its console page: the record and, always, the estimate of proving its run (docs/callers.md "Estimates"). */
export const ConsoleExecution = ExecutionRecord.extend({ estimate: ProvingEstimate }).openapi('ConsoleExecution');
