// Usage of an organization per day and per project over a date range, from the daily
// rollup (usage_daily, kept by triggers: a proof counts when created, its instructions
// and cost when it ends, its GPU time as each lease ends), plus the GPU time so far of
// the leases still running: a year's range costs its days and the running jobs, not
// every proof in it. GPU-hours are the leases' GPUs × wall time, the same measure cost
// is billed on (docs/callers.md "Cost").
import { and, eq, gte, lte, sql, sum } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { jobs, leases, programs, projects, proofs, usageDaily } from '../../db/schema.ts';

/** Longest range one request may ask for. */
export const MAX_USAGE_DAYS = 366;
export const DAY_MS = 86_400_000;

interface Row {
  key: string;
  name?: string;
  proofs: number;
  instructions: number | null;
  gpu_ms: number | null;
  cost: number | null;
}
const totalsOf = (r: Row) => ({
  proofs: r.proofs,
  instructions: r.instructions ?? 0,
  gpu_hours: Math.round(((r.gpu_ms ?? 0) / 3_600_000) * 1000) / 1000,
  cost: r.cost ?? 0,
});

/** The usage of `orgId` from `from` to `to` (days, inclusive; `days` of them), as the console answers it. */
export async function usageOf(db: Db, orgId: string, from: string, to: string, days: number, now = Date.now()) {
  const inRange = and(eq(usageDaily.org_id, orgId), gte(usageDaily.day, from), lte(usageDaily.day, to));
  const totals = {
    proofs: sum(usageDaily.proofs).mapWith(Number),
    instructions: sum(usageDaily.instructions).mapWith(Number),
    gpu_ms: sum(usageDaily.gpu_ms).mapWith(Number),
    cost: sum(usageDaily.cost).mapWith(Number),
  };
  const { dayRows, projectRows, running } = await batchByName(db, {
    dayRows: db
      .select({ key: usageDaily.day, ...totals })
      .from(usageDaily)
      .where(inRange)
      .groupBy(usageDaily.day),
    // By each program's project as it is now (a moved program's usage moves with it).
    projectRows: db
      .select({ key: programs.project_id, project_name: projects.name, ...totals })
      .from(usageDaily)
      .innerJoin(programs, eq(programs.id, usageDaily.program_id))
      .innerJoin(projects, eq(projects.id, programs.project_id))
      .where(inRange)
      .groupBy(programs.project_id),
    // The GPU time so far of the proofs running now (their leases have not ended).
    running: db
      .select({
        day: sql<string>`substr(${proofs.created_at}, 1, 10)`.as('day'),
        project_id: programs.project_id,
        project_name: projects.name,
        gpu_ms: sql<number>`max(0, ${now} - ${leases.claimed_at}) * ${leases.gpus}`.as('gpu_ms'),
      })
      .from(jobs)
      .innerJoin(leases, eq(leases.id, jobs.lease_id))
      .innerJoin(proofs, eq(proofs.id, jobs.subject_id))
      .innerJoin(programs, eq(programs.id, proofs.program_id))
      .innerJoin(projects, eq(projects.id, programs.project_id))
      .where(
        and(
          eq(jobs.status, 'leased'),
          eq(jobs.kind, 'proof'),
          eq(jobs.org_id, orgId),
          gte(proofs.created_at, from),
          lte(proofs.created_at, to + 'T23:59:59.999Z'),
        ),
      ),
  });
  const byDay = new Map<string, Row>(dayRows.map((r) => [r.key, r]));
  const byProject = new Map<string, Row>(projectRows.map((r) => [r.key, { ...r, name: r.project_name }]));
  for (const r of running) {
    const d = byDay.get(r.day) ?? { key: r.day, proofs: 0, instructions: 0, gpu_ms: 0, cost: 0 };
    byDay.set(r.day, { ...d, gpu_ms: (d.gpu_ms ?? 0) + r.gpu_ms });
    const p = byProject.get(r.project_id) ?? { key: r.project_id, name: r.project_name, proofs: 0, instructions: 0, gpu_ms: 0, cost: 0 };
    byProject.set(r.project_id, { ...p, gpu_ms: (p.gpu_ms ?? 0) + r.gpu_ms });
  }
  // Every day of the range, zeros included, so a chart has an even x axis.
  const dayList = Array.from({ length: days }, (_, i) => {
    const date = new Date(Date.parse(from) + i * DAY_MS).toISOString().slice(0, 10);
    return { date, ...totalsOf(byDay.get(date) ?? { key: date, proofs: 0, instructions: 0, gpu_ms: 0, cost: 0 }) };
  });
  const add = (k: 'proofs' | 'instructions' | 'gpu_hours' | 'cost') => dayList.reduce((a, d) => a + d[k], 0);
  return {
    from,
    to,
    totals: {
      proofs: add('proofs'),
      instructions: add('instructions'),
      gpu_hours: Math.round(add('gpu_hours') * 1000) / 1000,
      cost: add('cost'),
    },
    days: dayList,
    projects: [...byProject.values()]
      .sort((a, b) => (b.cost ?? 0) - (a.cost ?? 0) || b.proofs - a.proofs)
      .map((r) => ({ project_id: r.key, project_name: r.name ?? '', ...totalsOf(r) })),
  };
}
