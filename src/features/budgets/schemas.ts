// The budget's records: what GET/PUT /console/v1/orgs/{org_id}/budget answer and take,
// and the data of the budget.threshold webhook event (docs/teams.md "Budgets").
import { z } from '@hono/zod-openapi';
import { BUDGET_METRICS, BUDGET_THRESHOLDS } from '../../db/schema.ts';

const Metric = z.enum(BUDGET_METRICS).openapi({
  description: '`cost`: spend in micro-USD (the unit of the records’ `cost`); `gpu_hours`: GPU time of the organization’s leases',
});
const Threshold = z
  .number()
  .int()
  .openapi({ description: `% of the limit: one of ${BUDGET_THRESHOLDS.join(', ')}` });

export const BudgetNotice = z
  .object({
    metric: Metric,
    threshold: Threshold,
    used: z.number().openapi({ description: 'Usage when the threshold was crossed, in the metric’s unit' }),
    budget: z.number().openapi({ description: 'The limit then, in the metric’s unit' }),
    created_at: z.string(),
  })
  .openapi('BudgetNotice');

export const BudgetRecord = z
  .object({
    month: z.string().openapi({ description: 'The calendar month (UTC) the usage is for, YYYY-MM', example: '2026-11' }),
    monthly_cost: z.number().int().nullable().openapi({ description: 'Spending limit per month in micro-USD; null: none' }),
    monthly_gpu_hours: z.number().nullable().openapi({ description: 'GPU-hour limit per month; null: none' }),
    updated_at: z.string().nullable(),
    updated_by: z.string().nullable(),
    used_cost: z
      .number()
      .int()
      .openapi({ description: 'Spent this month, micro-USD: the cost of the proofs and executions that ended in it' }),
    reserved_cost: z.number().int().openapi({
      description:
        'Reserved now, micro-USD: the cost limits of its queued and running proofs and executions, each released when the job ends and is charged (at most its limit)',
    }),
    used_gpu_hours: z.number().openapi({ description: 'GPU-hours of the leases that ended this month' }),
    submissions_refused: z.boolean().openapi({
      description:
        'Whether a limit is reached (spend plus reservations, for the spending limit): new proofs and executions are then refused (403) until the month ends, jobs end or the budget is raised; a job whose cost limit is more than what is left is refused too',
    }),
    notices: z.array(BudgetNotice).openapi({ description: 'The thresholds crossed this month, once each, oldest first' }),
  })
  .openapi('Budget');

const Positive = (what: string) =>
  z
    .number()
    .positive()
    .nullable()
    .optional()
    .openapi({ description: `${what}; null or absent: no such limit` });

export const BudgetBody = z
  .object({
    monthly_cost: Positive('Spending limit per calendar month (UTC) in micro-USD, a whole number (1000000 = $1)').pipe(
      z.number().int().max(Number.MAX_SAFE_INTEGER).nullable().optional(),
    ),
    monthly_gpu_hours: Positive('GPU-hour limit per calendar month (UTC)').pipe(z.number().max(1e9).nullable().optional()),
  })
  .strict()
  .openapi('BudgetBody');

/** The data of a budget.threshold event (rendered by migrations/0016_budgets_estimates.sql). */
export const BudgetThresholdData = z
  .object({
    org_id: z.string(),
    month: z.string().openapi({ example: '2026-11' }),
    metric: Metric,
    threshold: Threshold,
    used: z.number(),
    budget: z.number(),
    submissions_refused: z.boolean().openapi({ description: 'True at 100 %: new proofs and executions are refused' }),
  })
  .openapi('BudgetThreshold');
