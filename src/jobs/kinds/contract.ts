// What every job kind's module says about its kind (src/jobs/kinds/{commit,proof,
// verify,execute}.ts), and the few pieces they share. The state machine
// (src/jobs/state.ts), the claim (src/features/fleet/claim.ts) and the lease callbacks
// (src/features/fleet/lease.ts) ask the registry (./index.ts) and never switch on a kind.
import { and, eq, inArray, type AnyColumn, type SQL } from 'drizzle-orm';
import type { BatchItem } from 'drizzle-orm/batch';
import type { SQLiteColumn, SQLiteTable } from 'drizzle-orm/sqlite-core';
import type { ClaimedJob, CompleteRequest, JobKind, ResultName } from 'prover-agent/protocol';
import type { Db } from '../../db/client.ts';
import type { BatchResults, Steps } from '../../db/batch.ts';
import type { AttemptResults } from '../results.ts';
import { jobs, programs } from '../../db/schema.ts';

export type JobRow = typeof jobs.$inferSelect;

/**
 * The tables a claim reads, as its one query names them (src/jobs/state.ts claimJob):
 * the claimed job, the program it works on, and the kind's subject (for a kind whose
 * subject is the program, the claimed program itself).
 */
export interface Claimed<Subject extends Columns = Columns> {
  job: ColumnsOf<typeof jobs>;
  program: ColumnsOf<typeof programs>;
  subject: Subject;
}

type Columns = Record<string, AnyColumn>;

/** A table's columns, under whatever name a query gives the table (a kind's claim names its subject's: `Claimed<ColumnsOf<typeof proofs>>`). */
export type ColumnsOf<T extends SQLiteTable> = { [K in keyof T['_']['columns']]: AnyColumn };

/** How the kind's subject record (what callers read) looks in each state of its job. */
export interface SubjectStates {
  table: SQLiteTable & { id: SQLiteColumn };
  /** Back in the queue (after a lost lease or a retry). */
  queued: Record<string, unknown>;
  /** Claimed by an agent. */
  running: (now: string, machineType: string) => Record<string, unknown>;
  /** Failed for good. */
  failed: (now: string, message: string) => Record<string, unknown>;
  /** Ended by a caller's cancel, charged `cost` (SQL: the lease up to the cancel). */
  canceled: (now: string, cost: SQL) => Record<string, unknown>;
  /** Where the subject may be when the job fails or is requeued (never out of a terminal state). */
  active: SQL;
}

/** What a claim of the kind hands over: worked out in the claim's own batch (one D1 round trip). */
export interface ClaimHandover<Row> {
  /** The program the job works on (SQL; null: an EVM proof checked against a config alone). */
  programId(claimed: Claimed): SQL;
  /**
   * The job's input files as a JSON object {name: R2 key} (SQL), in the order the agent
   * fetches them: kept with the lease (leases.artifacts), so a download looks up
   * nothing but its lease.
   */
  inputs(claimed: Claimed): SQL;
  /**
   * Whether an input file is one other jobs use too (a program's ELF, VMEXE and
   * baseline, a deferred child proof). Each is written once before any job that reads
   * it can be claimed and never rewritten, so its key names the same bytes for as
   * long as it exists, and agents may keep it between jobs (ClaimedJob.shared_artifacts).
   */
  isShared(name: string): boolean;
  /** Statements of the kind's own that run with the claim, for the job matching `mine`. */
  alsoOnClaim?(db: Db, mine: SQL): BatchItem<'sqlite'>[];
  /** The subject record, read back with the claim when the agent needs some of it. */
  subject?: {
    table: SQLiteTable & { id: SQLiteColumn };
    describe(row: Row): Partial<Pick<ClaimedJob, 'proof' | 'execution' | 'verification'>>;
  };
}

/** What a lease callback knows while it checks a completion. */
export interface CompletionContext {
  db: Db;
  job: JobRow;
  /**
   * The attempt's results (sent inline with the call, or uploaded by its lease before:
   * src/jobs/results.ts): the completion reads them, and accepts the ones its record
   * will serve (the record names each accepted object and its digest).
   */
  results: AttemptResults;
  /** Where results are stored, and the deployment's DEV_PROOF_SECRET: dev proofs are sealed and checked at completion (src/jobs/dev-proofs.ts). */
  artifacts: R2Bucket;
  devProofSecret: string | undefined;
  /** What the kind's opening read in the callback's first batch (CompletionOpening.opened), if it has one. */
  opened?: unknown;
}

/**
 * The job token's lease as the statements of a callback's first batch find it, before it
 * is known: the `leases` row whose token_hash is `hash` (the request's job token's), while
 * `live` holds of it (SQL of that row alone, the same for every request: its agent token
 * not revoked).
 */
export interface ByToken {
  hash: string;
  live: SQL;
}

/**
 * What a completion of a kind reads, and reserves, in the callback's first batch, beside
 * the lease and job that batch finds by the job token (src/features/fleet/lease.ts
 * /complete): one round trip where reading the lease first and then these took two.
 */
export interface CompletionOpening {
  steps: Steps;
  /** Once the batch ran and its lease is current: what completion() is handed as `opened`. */
  opened(results: BatchResults<Steps>, attempt: AttemptResults, job: JobRow): unknown;
}

export interface JobKindContract<K extends JobKind = JobKind, Done = unknown, Row = unknown> {
  kind: K;
  /** What callers call the subject (logs, messages, the claim's name for its table). */
  subjectNoun: string;
  subject: SubjectStates;
  claim: ClaimHandover<Row>;
  /** The results an agent may upload for a job of the kind (PUT /lease/results/{name}, or inline with /complete). */
  results: readonly ResultName[];
  /**
   * Reads the agent's report (POST /lease/complete): what to record, or why the job
   * fails for good instead (the report was well formed but cannot stand). Throws an
   * ApiError for a report the agent must send again (a missing result).
   */
  completion(ctx: CompletionContext, report: Extract<CompleteRequest, { kind: K }>): Promise<{ done: Done } | { fail: string }>;
  /** The statements a completion reads in the callback's first batch (CompletionOpening); none: completion() reads its own. */
  opening?(db: Db, byToken: ByToken, report: Extract<CompleteRequest, { kind: K }>): CompletionOpening;
  /**
   * The statements that record `done` on the subject of the jobs matching `mine`, in the
   * ending's batch; `cost` is what it is charged (SQL: the lease, at most its cost limit).
   */
  complete(db: Db, mine: SQL | undefined, done: Done, at: { now: string; cost: SQL<number> }): BatchItem<'sqlite'>[];
}

/** Updates the subject of every job of `kind` matching `jobWhere`, if the subject is still active. */
export function updateSubjects(
  db: Db,
  contract: Pick<JobKindContract, 'kind' | 'subject'>,
  jobWhere: SQL | undefined,
  set: Record<string, unknown>,
  subjectWhere?: SQL,
) {
  const s = contract.subject;
  const subjectIds = db
    .select({ id: jobs.subject_id })
    .from(jobs)
    .where(and(eq(jobs.kind, contract.kind), jobWhere));
  return db
    .update(s.table)
    .set(set)
    .where(and(inArray(s.table.id, subjectIds), s.active, subjectWhere));
}
