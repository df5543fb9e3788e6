// Estimates before proving (README "Estimates"): from the rolling rates the fleet
// measured (proving_rates: counters per config, machine type, GPUs held and proof type,
// kept by a trigger as each proof succeeds, migrations/0016_budgets_estimates.sql),
// the proving time and cost of a proof of an execution's run. The rates of the
// execution's config are read in the request's one batch (a handful of rows: one per
// machine type, GPU count and proof type); the estimate is a least-squares line
// through the measured (cycles, seconds) and (cycles, cost) points, or their ratio while
// the cycles do not yet vary; with no measured proof it says so instead of inventing one.
import { and, desc, eq, sql, type SQL } from 'drizzle-orm';
import type { z } from '@hono/zod-openapi';
import { gpusUsed, runsOnText } from 'prover-agent/protocol';
import type { Db } from '../../db/client.ts';
import { configs, executions, programs, provingRates } from '../../db/schema.ts';
import type { EstimateQuery, ProvingEstimate } from './schemas.ts';

type Org = string | SQL<string>;
type RatesRow = typeof provingRates.$inferSelect;

/** The execution's program's config, engine and default GPUs: one row, for the request's batch. */
export const estimateBasisQuery = (db: Db, org: Org, executionId: string) =>
  db
    .select({ config_id: programs.config_id, engine: configs.engine, default_num_gpus: programs.default_num_gpus })
    .from(executions)
    .innerJoin(programs, eq(programs.id, executions.program_id))
    .innerJoin(configs, eq(configs.id, programs.config_id))
    .where(and(eq(executions.id, executionId), eq(executions.org_id, org)));

/** Every rates row of the execution's config (few: machine types × GPU counts × proof types). */
export const ratesQuery = (db: Db, org: Org, executionId: string) =>
  db
    .select()
    .from(provingRates)
    .where(
      eq(
        provingRates.config_id,
        sql`(SELECT ${programs.config_id} FROM ${executions} JOIN ${programs} ON ${programs.id} = ${executions.program_id} WHERE ${executions.id} = ${executionId} AND ${executions.org_id} = ${org})`,
      ),
    );

/**
 * y at x on the least-squares line through n points with these sums; the ratio
 * sy/sx × x when the points do not determine a rising line (one point, equal cycles,
 * or a falling fit from noise).
 */
export function fitAt(n: number, sx: number, sy: number, sxx: number, sxy: number, x: number): number {
  const den = n * sxx - sx * sx;
  if (n >= 2 && den > 1e-9 * n * sxx) {
    const b = (n * sxy - sx * sy) / den;
    const a = (sy - b * sx) / n;
    if (b >= 0) return Math.max(0, a + b * x);
  }
  return sx > 0 ? (sy / sx) * x : sy / n;
}

export interface EstimateBasis {
  config_id: string;
  engine: string;
  default_num_gpus: number;
}

/** The estimate of proving `cycles` (null: the run measured none) as `q` asks, from the config's rates rows. */
export function estimateOf(
  basis: EstimateBasis,
  rows: RatesRow[],
  cycles: number | null,
  q: z.infer<typeof EstimateQuery>,
): z.infer<typeof ProvingEstimate> {
  const numGpus = q.num_gpus ?? basis.default_num_gpus;
  const proofType = q.proof_type ?? 'stark';
  const gpus = gpusUsed(basis.engine, numGpus);
  const none = (reason: string, jobs = 0) => ({
    num_gpus: numGpus,
    gpus_used: gpus,
    proof_type: proofType,
    machine_type: null,
    based_on_jobs: jobs,
    proving_seconds: null,
    cost: null,
    reason,
  });
  if (cycles === null) return none('No estimate: the execution has not measured its cycles (it has not succeeded yet)');
  const candidates = rows.filter(
    (r) =>
      r.gpus === gpus && r.proof_type === proofType && (q.machine_type === undefined || r.machine_type === q.machine_type) && r.jobs > 0,
  );
  const best = candidates.sort((a, b) => b.jobs - a.jobs || a.machine_type.localeCompare(b.machine_type))[0];
  const what = `${proofType} proof of config ${basis.config_id} on ${runsOnText(gpus)}${q.machine_type ? ` on machine type ${q.machine_type}` : ''}`;
  if (!best) return none(`No estimate: no ${what} has succeeded on the fleet yet`);
  const ms = fitAt(best.jobs, best.cycles, best.proving_ms, best.cycles_sq, best.cycles_ms, cycles);
  const cost = fitAt(best.jobs, best.cycles, best.cost, best.cycles_sq, best.cycles_cost, cycles);
  return {
    num_gpus: numGpus,
    gpus_used: gpus,
    proof_type: proofType,
    machine_type: best.machine_type,
    based_on_jobs: best.jobs,
    proving_seconds: Math.round(ms) / 1000,
    cost: Math.round(cost),
    reason: `From ${best.jobs} succeeded ${what} on ${best.machine_type} (${best.jobs >= 2 ? 'a line through their cycles, time and cost' : 'its time and cost per cycle'})`,
  };
}

// ---------------------------------------------------------------------------
// By program (the console's program page): its latest succeeded execution's cycles.

export const programBasisQuery = (db: Db, org: Org, programId: string) =>
  db
    .select({ config_id: programs.config_id, engine: configs.engine, default_num_gpus: programs.default_num_gpus })
    .from(programs)
    .innerJoin(configs, eq(configs.id, programs.config_id))
    .where(and(eq(programs.id, programId), eq(programs.org_id, org)));

export const programRatesQuery = (db: Db, org: Org, programId: string) =>
  db
    .select()
    .from(provingRates)
    .where(
      eq(
        provingRates.config_id,
        sql`(SELECT ${programs.config_id} FROM ${programs} WHERE ${programs.id} = ${programId} AND ${programs.org_id} = ${org})`,
      ),
    );

/** The program's latest succeeded execution (one walk back along executions_program). */
export const latestRunQuery = (db: Db, org: Org, programId: string) =>
  db
    .select({ id: executions.id, num_instructions: executions.num_instructions, total_cycle: executions.total_cycle })
    .from(executions)
    .where(and(eq(executions.program_id, programId), eq(executions.org_id, org), eq(executions.status, 'succeeded')))
    .orderBy(desc(executions.created_at))
    .limit(1);

/** Whether a GET of an execution asks for an estimate (any of EstimateQuery's parameters). */
export const asksEstimate = (q: z.infer<typeof EstimateQuery>) =>
  q.num_gpus !== undefined || q.proof_type !== undefined || q.machine_type !== undefined;
