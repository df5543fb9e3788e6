// The budget's statements (docs/teams.md "Budgets"): an organization's limits, this month's
// usage (counters, migrations/0016_budgets_estimates.sql) and the notices crossed, read
// in one batch; and the upsert that sets the limits, in the same batch as its audit
// entry and the read-back (its triggers notice at once a limit set below this month's usage).
import { and, asc, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { batchByName } from '../../db/batch.ts';
import { budgetNotices, budgets, budgetUsage, organizations } from '../../db/schema.ts';
import { auditEntry, type Actor } from '../accounts/audit.ts';
import type { z } from '@hono/zod-openapi';
import type { BudgetRecord } from './schemas.ts';

export interface BudgetLimits {
  monthly_cost: number | null;
  monthly_gpu_hours: number | null;
}

/** The reads behind a BudgetRecord, for a batch. */
export function budgetReads(db: Db, orgId: string, month: string) {
  return {
    budget: db.select().from(budgets).where(eq(budgets.org_id, orgId)),
    reserved: db.select({ cost: organizations.reserved_cost }).from(organizations).where(eq(organizations.id, orgId)),
    usage: db
      .select()
      .from(budgetUsage)
      .where(and(eq(budgetUsage.org_id, orgId), eq(budgetUsage.month, month))),
    notices: db
      .select()
      .from(budgetNotices)
      .where(and(eq(budgetNotices.org_id, orgId), eq(budgetNotices.month, month)))
      .orderBy(asc(budgetNotices.created_at), asc(budgetNotices.metric), asc(budgetNotices.threshold)),
  };
}

type Reads = {
  budget: (typeof budgets.$inferSelect)[];
  reserved: { cost: number }[];
  usage: (typeof budgetUsage.$inferSelect)[];
  notices: (typeof budgetNotices.$inferSelect)[];
};

/** The record budgetReads() read. */
export function budgetRecord(month: string, { budget: [b], reserved: [r], usage: [u], notices }: Reads): z.infer<typeof BudgetRecord> {
  const usedCost = u?.cost ?? 0;
  const reservedCost = r?.cost ?? 0;
  const usedGpuHours = Math.round(((u?.gpu_ms ?? 0) / 3_600_000) * 1000) / 1000;
  const cost = b?.monthly_cost ?? null;
  const gpuHours = b?.monthly_gpu_hours ?? null;
  return {
    month,
    monthly_cost: cost,
    monthly_gpu_hours: gpuHours,
    updated_at: b?.updated_at ?? null,
    updated_by: b?.updated_by ?? null,
    used_cost: usedCost,
    reserved_cost: reservedCost,
    used_gpu_hours: usedGpuHours,
    // The same comparison as withinBudget() (src/jobs/budgets.ts) for a job reserving nothing, on the same counters.
    submissions_refused:
      (cost !== null && usedCost + reservedCost >= cost) || (gpuHours !== null && (u?.gpu_ms ?? 0) >= gpuHours * 3_600_000),
    notices: notices.map((n) => ({ metric: n.metric, threshold: n.threshold, used: n.used, budget: n.budget, created_at: n.created_at })),
  };
}

export async function readBudget(db: Db, orgId: string, month: string) {
  return budgetRecord(month, await batchByName(db, budgetReads(db, orgId, month)));
}

/** Sets the organization's limits (both: an absent one is none), audited, and reads the budget back, in one batch. */
export async function setBudget(db: Db, orgId: string, limits: BudgetLimits, actor: Actor, month: string) {
  const values = {
    monthly_cost: limits.monthly_cost,
    monthly_gpu_hours: limits.monthly_gpu_hours,
    updated_by: actor.userId ?? actor.email,
  };
  const results = await batchByName(db, {
    set: db
      .insert(budgets)
      .values({ org_id: orgId, ...values })
      .onConflictDoUpdate({ target: budgets.org_id, set: { ...values, updated_at: new Date().toISOString() } }),
    audit: auditEntry(db, orgId, actor, 'budget.update', orgId, { ...limits }),
    ...budgetReads(db, orgId, month),
  });
  return budgetRecord(month, results);
}
