// Job limits (docs/callers.md "Job limits"): a proof's or execution's cycle limit, cost limit
// (micro-USD, the unit of the record's `cost`) and deadline (seconds from submission,
// queue time included), from the request or else its organization's, kept on the job
// row (jobs.cycle_limit, cost_limit, deadline_at).
//
// The organization's value of each is one value, both the default and the ceiling
// (issue 29 finding 7: a default any key could lift was no limit): a request may name
// less, never more (422, overCeiling), and the job row's insert refuses a limit over the
// ceiling as it is when the insert runs (withinCeilings), so a ceiling lowered while a
// request was on its way still holds.
//
// What a job is charged never passes its cost limit, however it ends (finding 8: a job
// failed at its cycle limit was charged its whole lease): every statement that writes a
// cost writes chargedCost(), and a trigger refuses any other (migrations/0025_ceilings.sql).
//
// Who enforces what:
// - cycles: the engine, while it runs (the claim hands the limit over, protocol
//   ClaimedJob.cycle_limit); the agent reports /fail with the figure reached
//   (FailRequest.limit) and the Worker words the error.
// - cost: a lease's cost is its time × GPUs × the machine type's rate (leaseCost,
//   ./state.ts), so the Worker knows it at every heartbeat, status check and ending
//   without asking the agent: the first one at or past the limit stops the job, charged
//   up to the moment the limit was reached.
// - deadline: a queued job past it fails in the sweep (failQueuedPastDeadline, a bounded
//   batch per run over a partial index); a running one is stopped at its next heartbeat
//   or status check, charged up to the deadline.
// A stopped running job goes through the cancel machinery (./state.ts): cancel_requested
// with `stop_reason` set, so every way its lease can end (the agent's acknowledgement,
// a result or failure that crossed the stop, an expired lease) ends it Failed with that
// message and the cost up to `cancel_requested_at`.
import { and, eq, getTableColumns, inArray, isNotNull, lt, sql, type SQL } from 'drizzle-orm';
import { batchByName } from '../db/batch.ts';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { Db } from '../db/client.ts';
import { jobs, leases, organizations } from '../db/schema.ts';
import { ValidationError, type ValidationIssue } from '../lib/errors.ts';
import { ALL_JOB_KINDS } from './kinds/index.ts';
import { updateSubjects, type JobKindContract, type JobRow } from './kinds/contract.ts';
import { unsentDeliveries, type DeliveryRef } from './webhooks.ts';
import { rateOf, type MachineRates } from './rates.ts';

/** What cost needs of the fleet's settings (./state.ts FleetSettings; not imported: state.ts imports this module). */
type FleetSettings = { machineRates: MachineRates };
type LeaseRow = typeof leases.$inferSelect;

/** A request's limits (absent: the organization's default, if any). */
export interface JobLimits {
  cycleLimit?: number;
  costLimit?: number;
  deadlineSeconds?: number;
}

/** The organization's limits, each the default and the ceiling of a request's own (null: none). */
export interface LimitCeilings {
  cycleLimit: number | null;
  costLimit: number | null;
  deadlineSeconds: number | null;
}

/** Each limit: its name in requests (the query parameter), in JobLimits and LimitCeilings, and its organization column. */
const LIMITS = [
  { param: 'cycle_limit', key: 'cycleLimit', column: organizations.default_cycle_limit },
  { param: 'cost_limit', key: 'costLimit', column: organizations.default_cost_limit },
  { param: 'deadline_seconds', key: 'deadlineSeconds', column: organizations.default_deadline_seconds },
] as const;

/** The limits a request may name, in LIMITS' order. */
export const LIMIT_KEYS = LIMITS.map(({ key }) => key);

/**
 * The 422 for the limits a request names over its organization's ceilings (naming
 * each ceiling and the figure asked), or null when all are within them.
 */
export function overCeiling(ceilings: LimitCeilings, limits: JobLimits | undefined): ValidationError | null {
  const issues: ValidationIssue[] = [];
  for (const { param, key } of LIMITS) {
    const asked = limits?.[key];
    const ceiling = ceilings[key];
    if (asked !== undefined && ceiling !== null && asked > ceiling)
      issues.push({
        loc: ['query', param],
        msg: `Value error, ${param} ${asked} is over your organization's ceiling of ${ceiling}: a request may ask for less, never more (its owners and admins set the ceiling)`,
        type: 'value_error',
      });
  }
  return issues.length ? new ValidationError(issues) : null;
}

/**
 * SQL true while each limit the request names is within its organization's ceiling as
 * the job row's insert reads it; undefined when it names none (nothing to check, no read).
 */
export function withinCeilings(orgId: string, limits: { [K in keyof JobLimits]?: number | null } | undefined): SQL | undefined {
  const named = LIMITS.filter(({ key }) => limits?.[key] !== undefined);
  if (!named.length) return undefined;
  const each = named.map(({ key, column }) => sql`(${column} IS NULL OR ${column} >= ${limits![key]!})`);
  return sql`EXISTS (SELECT 1 FROM ${organizations} WHERE ${organizations.id} = ${orgId} AND ${sql.join(each, sql` AND `)})`;
}

/**
 * What a job is charged for `cost` (micro-USD, SQL or a figure) when it ends: at most
 * its cost limit (`costLimit`, the job row's column as the statement reads it).
 */
export const chargedCost = (cost: SQL | number, costLimit: SQL | SQLiteColumn): SQL<number> =>
  sql<number>`min(${cost}, coalesce(${costLimit}, ${cost}))`;

/** The kinds callers put limits on: those whose subject has a `cost` (proofs, executions). */
export const limitedKind = (k: Pick<JobKindContract, 'subject'>) => 'cost' in getTableColumns(k.subject.table);

/**
 * The limit columns of a new job row: the request's own (withinCeilings checks it in the
 * same insert), else its organization's, read inside the insert (no read of their own).
 */
export function limitColumns(orgId: string, limits: { [K in keyof JobLimits]?: number | null } | undefined, now: number) {
  const orgDefault = (column: SQLiteColumn) => sql`(SELECT ${column} FROM ${organizations} WHERE ${organizations.id} = ${orgId})`;
  const own = (v: number | null | undefined) => sql`${v ?? null}`;
  return {
    cycle_limit: sql<number | null>`coalesce(${own(limits?.cycleLimit)}, ${orgDefault(organizations.default_cycle_limit)})`,
    cost_limit: sql<number | null>`coalesce(${own(limits?.costLimit)}, ${orgDefault(organizations.default_cost_limit)})`,
    deadline_at: sql<
      number | null
    >`${now} + 1000 * coalesce(${own(limits?.deadlineSeconds)}, ${orgDefault(organizations.default_deadline_seconds)})`,
  };
}

/** The error message of a job that reached its cycle limit. */
export const cycleLimitMessage = (reached: number, limit: number) =>
  `Cycle limit reached: the job ran ${reached} cycles before it was stopped; its cycle_limit is ${limit}`;

/** Epoch ms of a job's submission, from its created_at (ISO text), in SQL. */
const submittedMs = sql`CAST(round((julianday(${jobs.created_at}) - 2440587.5) * 86400000) AS INTEGER)`;

/** The deadline's message for a job still `doing` (queued, running) at its deadline, in SQL. */
const deadlineMessageSql = (doing: string) =>
  sql<string>`printf('Deadline passed: the job was still ${sql.raw(doing)} at its deadline, %d s after its submission (deadline_at %s)', CAST(round((${jobs.deadline_at} - ${submittedMs}) / 1000.0) AS INTEGER), strftime('%Y-%m-%dT%H:%M:%SZ', ${jobs.deadline_at} / 1000, 'unixepoch'))`;

/**
 * The rate (USD per GPU-hour) of the machine type `machineType` (SQL), as leaseCost() reads
 * settings.machineRates (unknown: 0). The card is written into the statement's text, not
 * bound: D1 binds at most 100 parameters a statement, and a completion's batch names the
 * card in two costs, so a card of 20 machine types bound as parameters failed every
 * completion. Its names and rates are the operator's, checked by parseMachineRates (./rates.ts).
 */
export function rateSql(settings: FleetSettings, machineType: SQL): SQL {
  const { byType, other } = settings.machineRates;
  const otherwise = sqlNumber(other ?? 0);
  return byType.size
    ? sql`CASE ${machineType} ${sql.join([...byType].map(([type, r]) => sql`WHEN ${sqlString(type)} THEN ${sqlNumber(r)} `))}ELSE ${otherwise} END`
    : otherwise;
}

/** A finite number as a SQL literal. */
const sqlNumber = (n: number): SQL => {
  if (!Number.isFinite(n)) throw new Error(`not a finite rate: ${n}`);
  return sql.raw(String(n));
};

/** A string as a SQL literal (SQLite: a quote is doubled; nothing else is special). */
const sqlString = (s: string): SQL => {
  if (s.includes('\0')) throw new Error('a machine type with a NUL character');
  return sql.raw(`'${s.replaceAll("'", "''")}'`);
};

/**
 * For the leased job being updated (a statement on `jobs`): the epoch ms at which its
 * current lease reached its cost limit (null: no limit, or a free machine type). Cost
 * grows linearly with time (leaseCost), so the moment is exact, and a job stopped a
 * heartbeat later is charged no more than its limit.
 */
function costLimitReachedAtSql(settings: FleetSettings): SQL<number | null> {
  const perMs = sql`(max(1, l.gpus) * ${rateSql(settings, sql`l.machine_type`)} * 1000000.0 / 3600000.0)`;
  return sql<
    number | null
  >`(SELECT CASE WHEN ${jobs.cost_limit} IS NULL OR ${perMs} <= 0 THEN NULL ELSE l.claimed_at + CAST(${jobs.cost_limit} / ${perMs} AS INTEGER) END
    FROM ${leases} l WHERE l.id = ${jobs.lease_id})`;
}

/**
 * The columns a heartbeat sets on its (leased) job so that a job past its deadline or
 * cost limit is stopped: nothing changes for one within both, or already stopping.
 */
export function stopOnHeartbeat(settings: FleetSettings, now: number) {
  const costAt = costLimitReachedAtSql(settings);
  const deadlinePassed = sql`(${jobs.deadline_at} IS NOT NULL AND ${jobs.deadline_at} <= ${now})`;
  const costReached = sql`(${costAt} IS NOT NULL AND ${costAt} <= ${now})`;
  const stopping = sql`(NOT ${jobs.cancel_requested} AND (${deadlinePassed} OR ${costReached}))`;
  const reason = sql`CASE WHEN ${deadlinePassed} THEN ${deadlineMessageSql('running')}
    ELSE printf('Cost limit reached: the job had cost %d (micro-USD) when it was stopped; its cost_limit is %d', ${jobs.cost_limit}, ${jobs.cost_limit}) END`;
  return {
    stop_reason: sql`CASE WHEN ${stopping} THEN ${reason} ELSE ${jobs.stop_reason} END`,
    cancel_requested_at: sql`CASE WHEN ${stopping} THEN CASE WHEN ${deadlinePassed} THEN min(${now}, ${jobs.deadline_at}) ELSE min(${now}, ${costAt}) END ELSE ${jobs.cancel_requested_at} END`,
    cancel_requested: sql`(${jobs.cancel_requested} OR ${stopping})`,
  };
}

/** Why the running `job` must stop now (its deadline or cost limit), and from when it is charged no more; null: it runs on. */
export function limitStop(job: JobRow, lease: LeaseRow, settings: FleetSettings, now: number): { reason: string; at: number } | null {
  if (job.cancel_requested) return null;
  if (job.deadline_at !== null && job.deadline_at <= now) {
    const seconds = Math.round((job.deadline_at - Date.parse(job.created_at)) / 1000);
    return {
      reason: `Deadline passed: the job was still running at its deadline, ${seconds} s after its submission (deadline_at ${new Date(job.deadline_at).toISOString().replace(/\.\d+Z$/, 'Z')})`,
      at: job.deadline_at,
    };
  }
  if (job.cost_limit !== null) {
    const rate = rateOf(settings.machineRates, lease.machine_type) ?? 0;
    const perMs = (Math.max(1, lease.gpus) * rate * 1_000_000) / 3_600_000;
    if (perMs > 0) {
      const at = lease.claimed_at + Math.floor(job.cost_limit / perMs);
      if (at <= now)
        return {
          reason: `Cost limit reached: the job had cost ${job.cost_limit} (micro-USD) when it was stopped; its cost_limit is ${job.cost_limit}`,
          at,
        };
    }
  }
  return null;
}

/**
 * Stops the running job of `lease` for `reason`, charged until `at`: the statement to
 * run first in the batch that ends its lease (or alone), after which the lease ends as a
 * canceled one does, but Failed with `reason` (./state.ts cancelSubjects).
 */
export function stopStatement(db: Db, lease: Pick<LeaseRow, 'id'>, reason: string, at: number) {
  return db
    .update(jobs)
    .set({ cancel_requested: true, cancel_requested_at: at, stop_reason: reason })
    .where(and(eq(jobs.lease_id, lease.id), eq(jobs.status, 'leased'), eq(jobs.cancel_requested, false)));
}

/** The job's stop_reason, for the subject row being updated (SQL). */
export const stopReasonSql = (k: JobKindContract) =>
  sql`(SELECT j.stop_reason FROM ${jobs} j WHERE j.kind = ${k.kind} AND j.subject_id = ${k.subject.table.id})`;

/** Queued jobs failed per sweep run, at most (D1 binds at most 100 parameters). */
const DEADLINE_BATCH = 90;

/**
 * Fails queued jobs whose deadline passed, up to DEADLINE_BATCH of them (a seek of
 * jobs_deadline; the next run takes the rest), charged nothing (they never ran).
 * Returns how many, and the webhook deliveries their ends made.
 */
export async function failQueuedPastDeadline(db: Db, now: number): Promise<{ failed: number; deliveries: DeliveryRef[] }> {
  const ids = (
    await db
      .select({ id: jobs.id })
      .from(jobs)
      .where(and(eq(jobs.status, 'queued'), isNotNull(jobs.deadline_at), lt(jobs.deadline_at, now)))
      .limit(DEADLINE_BATCH)
  ).map((r) => r.id);
  if (ids.length === 0) return { failed: 0, deliveries: [] };
  const due = and(inArray(jobs.id, ids), eq(jobs.status, 'queued'), lt(jobs.deadline_at, now));
  const at = new Date(now).toISOString();
  const r = await batchByName(db, {
    subjects: ALL_JOB_KINDS.filter(limitedKind).map((k) => {
      const message = sql`(SELECT ${deadlineMessageSql('queued')} FROM ${jobs} WHERE ${jobs.kind} = ${k.kind} AND ${jobs.subject_id} = ${k.subject.table.id})`;
      return updateSubjects(db, k, due, { ...k.subject.failed(at, ''), error_message: message });
    }),
    deliveries: unsentDeliveries(db, db.select({ id: jobs.subject_id }).from(jobs).where(due)),
    ended: db.update(jobs).set({ status: 'done', notified_at: now }).where(due).returning({ id: jobs.id }),
  });
  return { failed: r.ended.length, deliveries: r.deliveries };
}
