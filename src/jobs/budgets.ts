// Monthly budgets at submission (README "Budgets"): an organization whose spend (or
// GPU time) this calendar month (UTC) reached its budget gets no new proofs or
// executions, the two kinds of job that charge a `cost`; program registrations and
// verifications still run, and jobs already queued or running finish. Read from the
// counters (budget_usage, kept by triggers as jobs end, migrations/0016_budgets_estimates.sql),
// never summed. Enforced where quotas are (src/jobs/quotas.ts, src/jobs/dispatch.ts):
// in the request's first read, before its files are stored, and again by the job row's
// conditional insert in the submission's batch, so no extra round trip.
import { sql, type SQL } from 'drizzle-orm';
import type { JobKind } from 'prover-agent/protocol';
import { budgets, budgetUsage } from '../db/schema.ts';
import { ApiError } from '../lib/errors.ts';

/** The kinds of job a reached budget refuses: the ones whose records carry a cost. */
export const BUDGETED_KINDS: readonly JobKind[] = ['proof', 'execute'];

export const isBudgeted = (kind: JobKind) => BUDGETED_KINDS.includes(kind);

/** The calendar month (UTC) of epoch ms `ms`, as budget_usage keys it: `YYYY-MM`. */
export const monthOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

/** A budget the organization reached this month: which limit, its figure and the usage (in the limit's unit). */
export interface BudgetReached {
  metric: 'cost' | 'gpu_hours';
  budget: number;
  used: number;
  month: string;
}

/** SQL true while organization `org` has reached no budget in `month`. */
export function withinBudget(org: string | SQL, month: string): SQL {
  return sql`NOT EXISTS (SELECT 1 FROM ${budgets} b JOIN ${budgetUsage} u ON u.org_id = b.org_id AND u.month = ${month}
    WHERE b.org_id = ${org} AND (u.cost >= b.monthly_cost OR u.gpu_ms >= b.monthly_gpu_hours * 3600000.0))`;
}

/**
 * The budget organization `org` reached in `month`, as a JSON text (BudgetReached), or
 * null: a scalar for the request's first read (orgUsageQuery), two primary-key seeks.
 */
export function budgetReachedSql(org: string | SQL, month: string): SQL<string | null> {
  return sql<string | null>`(SELECT CASE
      WHEN u.cost >= b.monthly_cost THEN json_object('metric', 'cost', 'budget', b.monthly_cost, 'used', u.cost, 'month', u.month)
      WHEN u.gpu_ms >= b.monthly_gpu_hours * 3600000.0 THEN json_object('metric', 'gpu_hours', 'budget', b.monthly_gpu_hours, 'used', round(u.gpu_ms / 3600000.0, 3), 'month', u.month)
    END FROM ${budgets} b JOIN ${budgetUsage} u ON u.org_id = b.org_id AND u.month = ${month} WHERE b.org_id = ${org})`;
}

/** Micro-USD as dollars, for messages: $1.00; an amount under a cent keeps its digits ($0.0045, not $0.00). */
export function usd(micro: number): string {
  const dollars = micro / 1_000_000;
  return dollars !== 0 && Math.abs(dollars) < 0.01 ? `$${dollars.toFixed(6).replace(/0+$/, '')}` : `$${dollars.toFixed(2)}`;
}

/**
 * The 403 for a job of `kind` while the organization's budget is reached (`reached`:
 * budgetReachedSql's text), or null. 403, not 429: waiting does not help (only the
 * next month, or an owner or admin raising the budget, does), and clients retry 429s.
 */
export function budgetRefusal(reached: string | null | undefined, kind: JobKind): ApiError | null {
  if (!reached || !isBudgeted(kind)) return null;
  const b = JSON.parse(reached) as BudgetReached;
  const figures =
    b.metric === 'cost'
      ? `${usd(b.used)} of its ${usd(b.budget)} monthly spending budget`
      : `${b.used} of its ${b.budget} GPU-hour monthly budget`;
  return new ApiError(
    403,
    `Budget reached: your organization has used ${figures} for ${b.month} (UTC); new proofs and executions are refused until the month ends or an owner or admin raises the budget. Jobs already queued or running finish.`,
  );
}
