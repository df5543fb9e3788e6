// Job limits over HTTP (README "Job limits"): the optional query parameters of
// POST /v1/proofs and POST /v1/executions, and the fields every proof and execution
// record gains (its limits, and why it waits while queued: src/jobs/waiting.ts).
import { z } from '@hono/zod-openapi';
import { runsOnText } from 'prover-agent/protocol';
import { WAITING_REASONS } from '../../db/enums.ts';
import { optionalQueryInt } from '../../lib/schemas.ts';

/** Largest limit accepted: beyond it a limit means nothing (and stays a safe integer in SQL). */
const MAX_LIMIT = Number.MAX_SAFE_INTEGER;
/** A deadline of up to 30 days. */
const MAX_DEADLINE_SECONDS = 30 * 24 * 3600;

/** The limit parameters, named as the routes' other optional parameters are (snake_case query integers). */
export const LimitsQuery = z.object({
  cycle_limit: optionalQueryInt(
    1,
    MAX_LIMIT,
    'Most cycles the guest may run; past it the job stops and ends Failed. Default: the organization’s, else none',
  ),
  cost_limit: optionalQueryInt(
    1,
    MAX_LIMIT,
    'Most the job may cost, in the unit of the record’s `cost` (micro-USD); reaching it stops the job (Failed), charged the limit. Default: the organization’s, else none',
  ),
  deadline_seconds: optionalQueryInt(
    1,
    MAX_DEADLINE_SECONDS,
    'Seconds from submission (queue time included) by which the job must have finished; past it a queued job fails and a running one is stopped (Failed). Default: the organization’s, else none',
  ),
});

export const limitsOf = (q: z.infer<typeof LimitsQuery>) => ({
  cycleLimit: q.cycle_limit,
  costLimit: q.cost_limit,
  deadlineSeconds: q.deadline_seconds,
});

const ts = z.string().openapi({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' });

/** What a proof or execution record says of its limits and, while queued, of its wait. */
export const RunLimitFields = {
  cycle_limit: z
    .number()
    .int()
    .nullable()
    .openapi({ description: 'Its cycle limit (the request’s, or its organization’s default); null: none' }),
  cost_limit: z.number().int().nullable().openapi({ description: 'Its cost limit, in the unit of `cost`; null: none' }),
  deadline_at: ts.nullable().openapi({ description: 'When it must have finished (submission + deadline_seconds); null: no deadline' }),
  waiting_reason: z.enum(WAITING_REASONS).nullable().openapi({
    description:
      'While queued, why it is not running: `no_agent` (no online agent runs its engine or serves its config), `not_enough_gpus` (none has the GPUs it needs), `org_quota` / `org_budget` (its organization is at a quota or budget that holds it), `jobs_ahead` (servable, behind `jobs_ahead` jobs), `starting` (servable and next); null once it runs',
  }),
  waiting_detail: z.string().nullable().openapi({ description: 'The reason in words, when the service found one (as its logs say it)' }),
  jobs_ahead: z.number().int().nullable().openapi({
    description:
      'While queued: about how many jobs the agents that can take it will run first (its organization’s ahead of it in its queue lane, at most 1000 counted, plus a turn each for other organizations queued on its config); null once it runs',
  }),
  estimated_start_at: ts.nullable().openapi({
    description:
      'While queued, when it is likely to start, where the fleet’s measured rates allow (null otherwise; `estimated_start_detail` says why). Computed as now + (the time left to the jobs running on its config + `jobs_ahead` × the mean proving time of its config and GPU count) ÷ the number of those running jobs (at least 1): the mean is that of every succeeded proof the fleet measured for the config and GPU count (proving_rates, README "Estimates"), whatever their size, and executions ahead count as proofs, so it is rough: trust it as an order of magnitude, more as `estimated_start_detail`’s count of measured proofs grows',
  }),
  estimated_start_detail: z.string().nullable().openapi({
    description:
      'While queued, how `estimated_start_at` was made (how many measured proofs it rests on, the mean, the jobs running and ahead), or why there is none: its waiting reason keeps it from starting at all, or no proof of its config and GPU count has succeeded yet; null once it runs',
  }),
};

/** A record's run state as its read selects it (src/features/runs/data.ts runStateSql): JSON text, or absent/null when no job row answers. */
export type RunState = { run_state?: string | null };

/**
 * The limits and waiting fields of a proof or execution record (RunLimitFields) from its
 * run state. jobs_ahead adds, to its own organization's jobs ahead in its lane, about one
 * turn per job ahead of it (and its own) for each other organization queued on its
 * config: fair share serves organizations in turn.
 */
export function runFields(row: RunState): { [K in keyof typeof RunLimitFields]: z.infer<(typeof RunLimitFields)[K]> } {
  const r = row.run_state
    ? (JSON.parse(row.run_state) as {
        cycle_limit: number | null;
        cost_limit: number | null;
        deadline_at: number | null;
        queued: number;
        code: string | null;
        detail: string | null;
        ahead: number | null;
        others: number[] | null;
        gpus: number;
        now: number;
        rate: [number, number] | null;
        running: [number, number | null] | null;
      })
    : null;
  const queued = !!r?.queued;
  const own = r?.ahead ?? 0;
  const others = queued && r?.others ? r.others.reduce((sum, q) => sum + Math.min(q, own + 1), 0) : 0;
  const ahead = own + others;
  const code = (r?.code ?? null) as z.infer<typeof RunLimitFields.waiting_reason>;
  const start = queued && r ? estimatedStart(r, code, ahead) : { at: null, detail: null };
  return {
    cycle_limit: r?.cycle_limit ?? null,
    cost_limit: r?.cost_limit ?? null,
    deadline_at: r?.deadline_at != null ? new Date(r.deadline_at).toISOString() : null,
    waiting_reason: queued ? (code ?? (ahead > 0 ? 'jobs_ahead' : 'starting')) : null,
    waiting_detail: queued ? (r?.detail ?? null) : null,
    jobs_ahead: queued ? ahead : null,
    estimated_start_at: start.at,
    estimated_start_detail: start.detail,
  };
}

/** Waiting reasons under which a job does not start however fast the fleet works. */
const HELD: readonly (string | null)[] = ['no_agent', 'not_enough_gpus', 'org_quota', 'org_budget'];

/**
 * When a queued job is likely to start (RunLimitFields.estimated_start_at says how), from
 * its run state's rates (the count and total proving ms of the succeeded proofs of its
 * config and GPU count) and running jobs (how many, and their time left at that mean).
 */
function estimatedStart(
  r: { gpus: number; now: number; rate: [number, number] | null; running: [number, number | null] | null },
  code: string | null,
  ahead: number,
): { at: string | null; detail: string } {
  if (HELD.includes(code)) return { at: null, detail: `No estimate: it cannot start while its waiting reason (${code}) holds` };
  const [measured, totalMs] = r.rate ?? [0, 0];
  const what = `proof of its config on ${runsOnText(r.gpus)}`;
  if (!measured) return { at: null, detail: `No estimate: no ${what} has succeeded on the fleet yet` };
  const meanMs = totalMs / measured;
  const [running, leftMs] = r.running ?? [0, 0];
  const slots = Math.max(1, running);
  const waitMs = ((leftMs ?? 0) + ahead * meanMs) / slots;
  const s = (ms: number) => `${Math.round(ms / 100) / 10} s`;
  return {
    at: new Date(r.now + Math.round(waitMs)).toISOString(),
    detail: `From ${measured} succeeded ${what} (mean ${s(meanMs)}): ${running} running on its config with about ${s(leftMs ?? 0)} left between them, ${ahead} ahead, ${slots} at a time`,
  };
}

// ---------------------------------------------------------------------------
// The organization's limits on the console (GET/PUT /console/v1/orgs/{org_id}/limits).

const defaultLimit = (max: number, what: string) =>
  z
    .number()
    .int()
    .min(1)
    .max(max)
    .nullable()
    .optional()
    .openapi({ description: `${what}; null or absent: none` });

export const OrgLimitsBody = z
  .object({
    default_cycle_limit: defaultLimit(MAX_LIMIT, 'The cycle limit of its proofs and executions that name none'),
    default_cost_limit: defaultLimit(MAX_LIMIT, 'Their cost limit, micro-USD (the unit of `cost`)'),
    default_deadline_seconds: defaultLimit(MAX_DEADLINE_SECONDS, 'Their deadline, seconds from submission (at most 30 days)'),
  })
  .strict()
  .openapi('OrgLimitsBody', { description: 'Sets all three defaults (an absent one is none); a request’s own limit wins' });

export const OrgLimitsRecord = z
  .object({
    default_cycle_limit: z.number().int().nullable().openapi({ description: 'Its jobs’ default cycle limit; null: none' }),
    default_cost_limit: z.number().int().nullable().openapi({ description: 'Their default cost limit, micro-USD; null: none' }),
    default_deadline_seconds: z.number().int().nullable().openapi({ description: 'Their default deadline, seconds; null: none' }),
    max_active_jobs: z
      .number()
      .int()
      .openapi({ description: 'Quota: most queued or running jobs (its own, else ORG_MAX_ACTIVE_JOBS); the operator sets it' }),
    max_gpus: z.number().int().openapi({ description: 'Quota: most GPUs its queued or running jobs hold (its own, else ORG_MAX_GPUS)' }),
    active_jobs: z.number().int().openapi({ description: 'Its queued or running jobs now' }),
    held_gpus: z.number().int().openapi({ description: 'GPUs its queued or running jobs hold now' }),
    running_jobs: z.number().int().openapi({ description: 'Its running jobs now' }),
    running_gpus: z
      .number()
      .int()
      .openapi({ description: 'GPUs its running jobs hold now: at a quota, queued jobs wait (`waiting_reason` `org_quota`)' }),
  })
  .openapi('OrgLimits', { description: 'The organization’s default job limits, its quotas and its usage of them (README "Job limits")' });
