// Monthly budgets at submission (docs/teams.md "Budgets"): an organization whose spend (or
// GPU time) this calendar month (UTC) reached its budget gets no new proofs or
// executions, the two kinds of job that charge a `cost`; program registrations and
// verifications still run, and jobs already queued or running finish. Read from the
// counters (budget_usage, kept by triggers as jobs end, migrations/0016_budgets_estimates.sql),
// never summed.
//
// Reservations (issue 29 finding 8: checked against finished spend only, racing
// submissions overspent): a proof or execution reserves its cost limit (its own, else its
// organization's) from its insert until it ends, when its charge (at most that limit,
// src/jobs/limits.ts chargedCost) replaces it (organizations.reserved_cost, kept by
// triggers, migrations/0025_ceilings.sql). A job is admitted only while this month's
// spend + what live jobs reserve + its own limit stays within the cost budget. A job
// with no cost limit reserves nothing (an estimate would need the cycles, unknown until
// it runs, and would bound nothing): it is admitted while some budget is left, and is
// charged what it costs, as before; a budget is a hard ceiling only over jobs with a cost
// limit, which the organization's limit gives every job that names none.
//
// Enforced where quotas are (src/jobs/quotas.ts, src/jobs/dispatch.ts): in the request's
// first read, before its files are stored, and again by the job row's conditional insert
// in the submission's batch (D1 runs a batch as one transaction, one at a time), so
// concurrent submissions cannot together reserve past the budget; no extra round trip.
import { sql, type SQL } from 'drizzle-orm';
import type { JobKind } from 'prover-agent/protocol';
import { budgets, budgetUsage, organizations } from '../db/schema.ts';
import { ApiError } from '../lib/errors.ts';

/** The kinds of job a reached budget refuses: the ones whose records carry a cost. */
export const BUDGETED_KINDS: readonly JobKind[] = ['proof', 'execute'];

export const isBudgeted = (kind: JobKind) => BUDGETED_KINDS.includes(kind);

/** The calendar month (UTC) of epoch ms `ms`, as budget_usage keys it: `YYYY-MM`. */
export const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

/** An organization's budget and its standing this month (budgetStateSql), in the limits' units. */
export interface BudgetState {
  /** Its limits (null: none): micro-USD, GPU-hours. */
  cost: number | null;
  gpu_hours: number | null;
  /** Spent this month (micro-USD), GPU time of this month's leases (ms), and what its live jobs reserve (micro-USD). */
  used: number;
  gpu_ms: number;
  reserved: number;
  month: string;
}

/**
 * SQL true while organization `org` may take one more job reserving `reservation`
 * (micro-USD, SQL; NULL: none) in `month`: its spend, its live jobs' reservations and
 * this one's stay within its cost budget (a job reserving nothing needs 1 left), and its
 * GPU time is under its GPU-hour budget.
 */
export function withinBudget(org: string | SQL, month: string, reservation: SQL): SQL {
  return sql`NOT EXISTS (SELECT 1 FROM ${budgets} b JOIN ${organizations} o ON o.id = b.org_id
    LEFT JOIN ${budgetUsage} u ON u.org_id = b.org_id AND u.month = ${month}
    WHERE b.org_id = ${org} AND (coalesce(u.cost, 0) + o.reserved_cost + max(coalesce(${reservation}, 0), 1) > b.monthly_cost
      OR coalesce(u.gpu_ms, 0) >= b.monthly_gpu_hours * 3600000.0))`;
}

/**
 * Organization `org`'s budget and standing in `month` as a JSON text (BudgetState), or
 * null when it has no budget: a scalar for the request's first read (orgUsageQuery),
 * primary-key seeks.
 */
export function budgetStateSql(org: string | SQL, month: string): SQL<string | null> {
  return sql<string | null>`(SELECT json_object('cost', b.monthly_cost, 'gpu_hours', b.monthly_gpu_hours, 'used', coalesce(u.cost, 0),
      'gpu_ms', coalesce(u.gpu_ms, 0), 'reserved', o.reserved_cost, 'month', ${month})
    FROM ${budgets} b JOIN ${organizations} o ON o.id = b.org_id LEFT JOIN ${budgetUsage} u ON u.org_id = b.org_id AND u.month = ${month}
    WHERE b.org_id = ${org})`;
}

/** Micro-USD as dollars, for messages: $1.00; an amount under a cent keeps its digits ($0.0045, not $0.00). */
export function usd(micro: number): string {
  const dollars = micro / 1_000_000;
  return dollars !== 0 && Math.abs(dollars) < 0.01 ? `$${dollars.toFixed(6).replace(/0+$/, '')}` : `$${dollars.toFixed(2)}`;
}

/**
 * The 403 for a job of `kind` reserving `reservation` (its cost limit, micro-USD; null:
 * none) that its organization's budget (`state`: budgetStateSql's text) does not admit,
 * as withinBudget() decides, or null. 403, not 429: waiting does not help (only the next
 * month, an owner or admin raising the budget, or jobs ending, does), and clients retry 429s.
 */
export function budgetRefusal(state: string | null | undefined, kind: JobKind, reservation: number | null = null): ApiError | null {
  if (!state || !isBudgeted(kind)) return null;
  const b = JSON.parse(state) as BudgetState;
  let figures: string;
  let reserved = '';
  if (b.cost !== null && b.used + b.reserved + Math.max(reservation ?? 0, 1) > b.cost) {
    figures = `${usd(b.used)} of its ${usd(b.cost)} monthly spending budget`;
    if (b.reserved > 0 || reservation)
      reserved = ` Reserved by queued and running jobs' cost limits: ${usd(b.reserved)}; this job's cost_limit: ${reservation ?? 'none'} (micro-USD).`;
  } else if (b.gpu_hours !== null && b.gpu_ms >= b.gpu_hours * 3_600_000)
    figures = `${Math.round(b.gpu_ms / 3_600) / 1000} of its ${b.gpu_hours} GPU-hour monthly budget`;
  else return null;
  return new ApiError(
    403,
    `Budget reached: your organization has used ${figures} for ${b.month} (UTC); new proofs and executions are refused until the month ends or an owner or admin raises the budget. Jobs already queued or running finish.${reserved}`,
  );
}
