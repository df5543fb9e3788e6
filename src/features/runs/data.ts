// The statements proofs and executions share: the job working for a run (its logs are
// the job's), a page of a program's runs with the program's counter of them, and what a
// run's event stream reads (src/features/runs/events.ts): its record with its job's log
// position, in one statement.
import { and, eq, sql, type SQL } from 'drizzle-orm';
import type { RunnableQuery } from 'drizzle-orm/runnable-query';
import type { Db } from '../../db/client.ts';
import { jobs, leases, programs, provingRates, queueLanes } from '../../db/schema.ts';
import { notFound } from '../../lib/errors.ts';
import type { Org } from '../../lib/pages.ts';
import { paginate } from '../../lib/schemas.ts';

/** The kinds of job that work for a run: a proof's, an execution's. */
export type RunJobKind = 'proof' | 'execute';

/** The id of the job working for a subject (its logs are the job's). */
export const jobOfSubject = (db: Db, kind: RunJobKind, subject: SQL | string) =>
  db
    .select({ id: jobs.id, log_bytes: jobs.log_bytes, log_truncated: jobs.log_truncated, log_store: jobs.log_store })
    .from(jobs)
    .where(and(eq(jobs.kind, kind), eq(jobs.subject_id, subject)));

/**
 * The statements reading a page of a program's runs (`rows`: the run kind's own page,
 * newest first) and the program's counter of them (`program`: the list's total; no
 * row for another organization's program), by name for one batch. runsPage() reads them.
 */
export const programRuns = <Rows>(
  db: Db,
  org: Org,
  programId: string,
  counter: typeof programs.proof_count | typeof programs.execution_count,
  rows: Rows,
) => ({
  program: db
    .select({ total: counter })
    .from(programs)
    .where(and(eq(programs.id, programId), eq(programs.org_id, org))),
  rows,
});

/** The page programRuns() read, as records: 404 when the program is not the caller's. */
export function runsPage<R, T>(
  { program: [program], rows }: { program: { total: number }[]; rows: R[] },
  toRecord: (row: R) => T,
  page: number,
  pageSize: number,
) {
  if (!program) throw notFound('Program');
  return paginate(rows.map(toRecord), program.total, page, pageSize);
}

// ---------------------------------------------------------------------------
// Event streams: what a run kind tells its stream.

/** The job's log position, as columns of the record's row (names no record column has). */
export interface LogPosition {
  log_job_id: string | null;
  log_bytes: number | null;
}

/** The least a streamed record's row has: the stream reads its log by it. */
export type SubjectRow = LogPosition;

/** One statement answering rows of `R` (a drizzle builder: awaited, in a batch, or `.all()`). */
export type SubjectQuery<R> = RunnableQuery<R[], 'sqlite'> & PromiseLike<R[]> & { all(): Promise<R[]> };

/** A kind of record that has an event stream. */
export interface EventSubject<R extends SubjectRow = SubjectRow> {
  /** As errors name it ("Proof not found"). */
  name: string;
  /** One statement: the record and its job's log position, scoped to `org`. */
  query(db: Db, org: SQL<string>, id: string): SubjectQuery<R>;
  /** The record as its GET returns it, and whether it is final. */
  record(row: R): { json: string; terminal: boolean };
}

/**
 * The job's log position as columns of the record's row. The record's id is named with
 * its table: drizzle writes columns of a one-table select unqualified, which inside the
 * subquery would name the job's own id. A deleted record has no log (its deletion purges
 * it, src/features/retention/copies.ts): its length is 0, so a stream of it ends at once
 * with its tombstone (issue 29 finding 12), never waiting for bytes that are gone.
 */
export const logPosition = (kind: RunJobKind, table: 'proofs' | 'executions') => {
  const column = (name: string) => sql`${sql.identifier(table)}.${sql.identifier(name)}`;
  const subjectId = column('id');
  return {
    log_job_id: sql<string | null>`(SELECT ${jobs.id} FROM ${jobs} WHERE ${jobs.kind} = ${kind} AND ${jobs.subject_id} = ${subjectId})`.as(
      'log_job_id',
    ),
    log_bytes: sql<number | null>`(CASE WHEN ${column('deleted_at')} IS NOT NULL THEN 0 ELSE
      (SELECT ${jobs.log_bytes} FROM ${jobs} WHERE ${jobs.kind} = ${kind} AND ${jobs.subject_id} = ${subjectId}) END)`.as('log_bytes'),
  };
};

/** Now, epoch ms, in SQL (D1's clock: the same instant the rest of the statement sees). */
const nowMs = sql.raw(`CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)`);

/** Other organizations' lanes looked at for a queued job's jobs_ahead, at most. */
const AHEAD_LANES = 100;
/** Jobs of its own lane counted ahead of a queued job, at most. */
const AHEAD_CAP = 1000;
/** Running jobs looked at for a queued job's estimated start, at most (the fleet's size bounds them anyway). */
const RUNNING_CAP = 1000;

/**
 * A proof's or execution's limits and, while it is queued, why it waits (docs/callers.md "Why a
 * job waits"), as JSON text for runFields() (src/features/limits/schemas.ts): one
 * correlated subquery of the record's read, so still one D1 read. Its job by its unique
 * (kind, subject_id), its lane by primary key (what the sweep found, src/jobs/waiting.ts),
 * its own organization's jobs ahead of it by two ranges of the jobs_lane index that stop
 * at the job (at most AHEAD_CAP rows each, AHEAD_CAP counted), and the queued counts of
 * up to AHEAD_LANES other organizations' lanes on its config (queue_lanes_by_config).
 * For its estimated start (runFields): the proving rates of its config and GPU count
 * (proving_rates, a few rows by primary-key prefix) and the jobs running on its config
 * and engine now, at most RUNNING_CAP of them (jobs_leased_config,
 * migrations/0020_queue.sql), each with its lease's claim time by primary key: how many,
 * and the time left to them at the rates' mean. Nothing grows
 * with the backlog past those caps.
 */
export function runStateSql(kind: RunJobKind, table: 'proofs' | 'executions') {
  // Named in full: drizzle writes a column of the selected table unqualified, which inside this subquery would be the job's.
  const subjectId = sql`${sql.identifier(table)}.${sql.identifier('id')}`;
  // Ahead of the job in its lane, in the order claims take them (the jobs_lane index's):
  // the lane's higher priorities, then its own priority's jobs before it, (queued_at, id)
  // being one row-value range there. Two ranges that stop at the job, each capped.
  const lane = `x.status = 'queued' AND x.org_id = j.org_id AND x.engine = j.engine AND x.config_id = j.config_id AND x.gpus_used = j.gpus_used`;
  const count = (range: string) => `(SELECT count(*) FROM (SELECT 1 FROM jobs x WHERE ${lane} AND ${range} LIMIT ${AHEAD_CAP}))`;
  const ahead = sql.raw(
    `min(${AHEAD_CAP}, ${count('x.priority > j.priority')} + ${count('x.priority = j.priority AND (x.queued_at, x.id) < (j.queued_at, j.id)')})`,
  );
  return sql<string | null>`(SELECT json_object(
      'cycle_limit', j.cycle_limit, 'cost_limit', j.cost_limit, 'deadline_at', j.deadline_at,
      'queued', j.status = 'queued', 'code', l.waiting_code, 'detail', l.waiting_reason,
      'ahead', CASE WHEN j.status = 'queued' THEN ${ahead} END,
      'others', CASE WHEN j.status = 'queued' THEN (SELECT json_group_array(o.queued) FROM (SELECT o.queued FROM ${queueLanes} o
        WHERE o.config_id = j.config_id AND o.head_job_id IS NOT NULL AND o.engine = j.engine AND o.org_id <> j.org_id LIMIT ${sql.raw(String(AHEAD_LANES))}) o) END,
      'gpus', j.gpus_used, 'now', ${nowMs},
      'rate', CASE WHEN j.status = 'queued' THEN (SELECT json_array(sum(r.jobs), sum(r.proving_ms)) FROM ${provingRates} r
        WHERE r.config_id = j.config_id AND r.gpus = j.gpus_used AND r.jobs > 0) END,
      'running', CASE WHEN j.status = 'queued' THEN (SELECT json_array(count(*), sum(max(0, m.ms - (${nowMs} - l.claimed_at))))
        FROM (SELECT x.lease_id FROM ${jobs} x WHERE x.status = 'leased' AND x.engine = j.engine AND x.config_id = j.config_id LIMIT ${sql.raw(String(RUNNING_CAP))}) x
        JOIN ${leases} l ON l.id = x.lease_id,
        (SELECT sum(r.proving_ms) / sum(r.jobs) AS ms FROM ${provingRates} r WHERE r.config_id = j.config_id AND r.gpus = j.gpus_used AND r.jobs > 0) m) END)
    FROM ${jobs} j LEFT JOIN ${queueLanes} l ON l.org_id = j.org_id AND l.engine = j.engine AND l.config_id = j.config_id AND l.gpus_used = j.gpus_used
    WHERE j.kind = ${kind} AND j.subject_id = ${subjectId})`;
}
