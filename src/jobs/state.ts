// The job state machine, in one place.
//
// A job row (table `jobs`) is what the fleet claims: queued → leased → done. Each
// job works for one subject record that callers read (a program, proof, verification
// or execution), and the subject moves with it. What the subject of each kind looks
// like in each state, what its claim hands over and how it completes is the kind's
// own module (src/jobs/kinds/); this module applies them and never switches on a kind.
//
// Every transition is one D1 batch (a transaction). Each statement re-checks the
// state it starts from in its WHERE clause (the job's status and current lease id),
// so concurrent agents, callers and the sweep can never apply a transition twice,
// move a record backwards, or act on a superseded lease. Invariant: a subject is in
// its `queued` state exactly while its job row is `queued`.
//
// What a job's status changes move with it (its organization's running, active and
// GPU counters, its queue lane's count and head) is kept by triggers in the same
// transaction (migrations/0005_counters.sql), so no transition here counts rows and
// a claim is one seek per engine or config whatever the backlog (claimJob).
//
// Webhooks: the subjects' terminal states insert delivery rows by triggers
// (migrations/0006_webhooks.sql), in the same transaction. Every batch here that can
// end a subject reads back, as its last read, the deliveries its triggers just made
// (unsentDeliveries), and returns them for its caller to send (enqueueDeliveries,
// src/jobs/webhooks.ts): no extra round trip, and nothing sent for a change that did
// not commit. Whatever is not sent (a failed send, a crash) the sweep sends later.
//
// Cancel: once a caller's cancel of a running job is recorded (`cancel_requested`),
// every way its lease can end (complete, fail, release, the agent's acknowledgement,
// expiry) ends the subject Canceled, charged only up to `cancel_requested_at`. Each
// ending carries both outcomes, guarded by the flag, so the one that applies is
// decided inside the same transaction as the cancel it races with.
import { and, eq, getTableColumns, getTableName, inArray, is, isNull, lt, Placeholder, sql, SQL } from 'drizzle-orm';
import { PROVE_PHASES, type JobKind, type ProvePhase } from 'prover-agent/protocol';
import { alias, type SQLiteTable } from 'drizzle-orm/sqlite-core';
import { batchByName, type Statement } from '../db/batch.ts';
import { preparedSteps, type Placeholders } from '../db/prepared.ts';
import type { Db } from '../db/client.ts';
import {
  agentTokens,
  configIdentity,
  configs,
  jobs,
  leases,
  organizations,
  programs,
  proofs,
  queueLanes,
  type ProofState,
} from '../db/schema.ts';
import { ALL_JOB_KINDS, contractOf, type Completion } from './kinds/index.ts';
import { updateSubjects, type JobKindContract, type JobRow } from './kinds/contract.ts';
import { proofJob } from './kinds/proof.ts';
import { chargedCost, limitedKind, rateSql, stopOnHeartbeat, stopReasonSql } from './limits.ts';
import { rateOf, type MachineRates } from './rates.ts';
import { DEFAULT_QUOTAS, type QuotaDefaults } from './quotas.ts';
import { unsentDeliveries, type DeliveryRef } from './webhooks.ts';
import { acceptStatement } from './results.ts';

/** Fleet tunables, from the Worker's vars (docs/operators.md "Configuration"). */
export interface FleetSettings {
  /** A lease not renewed by a heartbeat within this many ms expires. */
  leaseTtlMs: number;
  /** Longest a lease can be renewed for, counted from its claim (FLEET_DEFAULTS.MAX_LEASE_SECONDS). */
  maxLeaseMs: number;
  /** Claims per job (including ones lost with their agent) before it fails for good. */
  maxAttempts: number;
  /** Retryable engine failures the job may have before it fails for good. */
  maxRetries: number;
  /** USD per GPU-hour by machine type (MACHINE_RATES: ./rates.ts parseMachineRates). */
  machineRates: MachineRates;
  /** The quotas' defaults (ORG_MAX_*): a claim holds an organization's jobs at them (nextJobFor). Absent: DEFAULT_QUOTAS. */
  quotas?: QuotaDefaults;
}

const isoNow = (ms: number) => new Date(ms).toISOString();

/**
 * The webhook deliveries the batch's triggers made for the subjects of jobs matching
 * `jobWhere`, and the budget.threshold events of their organizations (subject: the
 * organization, migrations/0016_budgets_estimates.sql); run it before the jobs stop matching.
 */
const deliveriesOf = (db: Db, jobWhere: SQL | undefined) =>
  unsentDeliveries(
    db,
    sql`(SELECT ${jobs.subject_id} FROM ${jobs} WHERE ${jobWhere} UNION ALL SELECT ${jobs.org_id} FROM ${jobs} WHERE ${jobWhere})`,
  );

// ---------------------------------------------------------------------------
// Claim

export interface AgentCapabilities {
  agentId: string;
  /** The machine type the agent declares: its token's, or it claims nothing. */
  machineType: string;
  /** GPUs free on the agent right now, as it declares them (held to its token's max_gpus). */
  gpus: number;
  engines: string[];
  /** Config ids served; empty = every config of its engines. */
  configs: string[];
}

/**
 * The next job the fleet should run for the claiming agent (ClaimValues: what it declares,
 * its agent token's hash), as SQL (its id, or null): fair share first (the organization with the
 * fewest running jobs for its share_weight; among equals, the one served least
 * recently), then priority and age within the organization. Each queue lane
 * (queue_lanes) keeps its own next job and its organization's standing, so this is one
 * seek of a lane index per config the agent may serve (or per engine, when it serves
 * every config of its engines) and the best of those few lanes: the same cost at a
 * thousand queued jobs or a million.
 *
 * What the agent may serve is what it declares intersected with its token's scope
 * (agent_tokens.engines/configs, null configs = every config of its engines), worked
 * out here, inside the claim's statement: a host cannot widen its token by declaring
 * more, and the token is read by its unique hash in the same round trip. So is what it
 * may hold (agent_tokens.machine_type, max_gpus, max_leases, the operator's word): a
 * token of another machine type than the declared one serves nothing; a token whose live
 * leases are at its max_leases serves nothing; and a job is taken only if its GPUs fit
 * both the GPUs declared free and what the token's live leases leave of its max_gpus.
 * What they hold is the token's own counters (held_leases, held_gpus: kept by triggers
 * on leases, migrations/0023_fleet_authority.sql, in the transaction that starts or ends
 * a lease), read here in the statement that writes the claim: D1 runs one at a time, so
 * concurrent claims never take a token past its limits, and a claim costs the same
 * whatever the token holds.
 */
function nextJobFor(p: Placeholders<ClaimValues>, namesConfigs: boolean, quotas: QuotaDefaults = DEFAULT_QUOTAS): SQL<string | null> {
  const withinQuota = withinRunningQuota('lane', quotas);
  // Written out rather than built: the correlated LIMIT 1 per key is what makes it a seek
  // (queue_lanes_by_config / queue_lanes_by_engine, whose WHERE this repeats).
  const order = (t: string) =>
    sql.raw(`${t}.share_key, ${t}.last_claimed_at, ${t}.head_priority DESC, ${t}.head_queued_at, ${t}.head_job_id`);
  const seek = (keyColumn: 'config_id' | 'engine', keys: SQL) => sql`SELECT (
      SELECT lane.rowid FROM ${queueLanes} lane
      WHERE ${sql.raw(`lane.${keyColumn}`)} = wanted.key AND lane.head_job_id IS NOT NULL
        AND lane.engine IN (SELECT engine FROM allowed_engines) AND lane.gpus_used <= (SELECT room FROM scope) AND ${withinQuota}
      ORDER BY ${order('lane')} LIMIT 1) AS lane_rowid FROM (${keys}) AS wanted`;
  const tokenConfigs = sql`(SELECT configs FROM scope)`;
  // Configs named by the agent (a JSON list) that its token allows; or, naming none, the
  // token's own configs; or, when neither names any, every config of the allowed engines (by engine).
  const lanes = namesConfigs
    ? seek(
        'config_id',
        sql`SELECT value AS key FROM json_each(${p.configs}) WHERE ${tokenConfigs} IS NULL OR value IN (SELECT value FROM json_each(${tokenConfigs}))`,
      )
    : sql`${seek('config_id', sql`SELECT value AS key FROM json_each(${tokenConfigs})`)} UNION ALL ${seek('engine', sql`SELECT engine AS key FROM allowed_engines WHERE ${tokenConfigs} IS NULL`)}`;
  // The token, if its machine type is the declared one; `room`: the GPUs a job may use, null when its leases are at their most.
  return sql<string | null>`(WITH
      scope AS (SELECT ${agentTokens.engines} AS engines, ${agentTokens.configs} AS configs,
          CASE WHEN ${agentTokens.held_leases} < ${agentTokens.max_leases} THEN min(${p.gpus}, ${agentTokens.max_gpus} - ${agentTokens.held_gpus}) END AS room
        FROM ${agentTokens} WHERE ${agentTokens.token_hash} = ${p.agentTokenHash} AND ${agentTokens.revoked_at} IS NULL AND ${agentTokens.machine_type} = ${p.machineType}),
      allowed_engines AS (SELECT value AS engine FROM json_each((SELECT engines FROM scope)) WHERE value IN (SELECT value FROM json_each(${p.engines}))),
      best_lanes AS (${lanes})
    SELECT lane.head_job_id FROM best_lanes JOIN ${queueLanes} lane ON lane.rowid = best_lanes.lane_rowid
    ORDER BY ${order('lane')} LIMIT 1)`;
}

/**
 * SQL true while the organization of `t` (a queue lane or a job, by its alias: org_id,
 * gpus_used) may start one more of its jobs: an organization at a quota by what it runs
 * has its jobs held (docs/callers.md "Why a job waits", org_quota). Never held while queued +
 * running fit the quota, as submissions keep them, so only once an operator lowers a
 * quota below what it has. Integers written in: D1 binds at most 100 parameters, and the
 * claim repeats this per config.
 */
const withinRunningQuota = (t: 'lane' | 'jobs', quotas: QuotaDefaults = DEFAULT_QUOTAS) =>
  sql.raw(`EXISTS (SELECT 1 FROM organizations o WHERE o.id = ${t}.org_id
    AND o.running_jobs < coalesce(o.max_active_jobs, ${Math.trunc(quotas.maxActiveJobs)})
    AND o.running_gpus + ${t}.gpus_used <= coalesce(o.max_gpus, ${Math.trunc(quotas.maxGpus)}))`);

/** What an agent token allows its agents to serve (agent_tokens.engines/configs). */
export interface TokenScope {
  engines: string[];
  /** Null: every config of its engines. */
  configs: string[] | null;
}

/** The claiming agent token as the claim found it (before its own lease): its scope, limits and what its live leases hold. */
export interface ClaimingToken extends TokenScope {
  machine_type: string;
  max_gpus: number;
  max_leases: number;
  held_leases: number;
  held_gpus: number;
}

/**
 * What a host holding `token` may still take now, declaring `declaredGpus` free: null
 * when its live leases are at the token's max_leases, else the GPUs a job may use
 * (nextJobFor's `room`, for answers that explain a claim).
 */
export const roomOf = (token: ClaimingToken, declaredGpus: number): { gpus: number } | null =>
  token.held_leases < token.max_leases ? { gpus: Math.min(declaredGpus, token.max_gpus - token.held_gpus) } : null;

/** Whether a token with `scope` lets its agents run a job of `engine` under `config`. */
export const scopeAllows = (scope: TokenScope, job: { engine: string; config_id: string }) =>
  scope.engines.includes(job.engine) && (scope.configs === null || scope.configs.includes(job.config_id));

export interface ClaimOutcome {
  /** Null when the agent token is unknown or revoked (nothing was claimed); else what it allows and holds. */
  scope: ClaimingToken | null;
  job: JobRow | null;
  /** The new lease's input files ({name: R2 key}), worked out by the claim. */
  lease: Pick<LeaseRow, 'artifacts'> | null;
  /** What the agent is handed of the job's config (src/features/fleet/claim.ts describeClaim). */
  config: Pick<typeof configs.$inferSelect, keyof typeof configIdentity> | null;
  /** The program it works on, as the agent is handed it. */
  program: Pick<typeof programs.$inferSelect, 'id' | 'app_exe_commit'> | null;
  /** The subject record, for a kind whose claim hands some of it over (its contract's claim.subject). */
  subject: unknown;
  /** The hinted job as it stands after the claim, if a hint was given. */
  hinted: (Pick<JobRow, 'id' | 'status' | 'engine' | 'config_id' | 'num_gpus' | 'gpus_used'> & { held_by_quota: boolean }) | null;
}

// The claim's tables, named for what they are: the claimed job, the program it works
// on and each kind's subject. A kind's subject is joined only onto a job of its kind; a
// kind whose subject is the program (a commit) reads it as the claimed program.
const claimedJob = alias(jobs, 'claimed_job');
const claimedProgram = alias(programs, 'claimed_program');
const claimedKinds = ALL_JOB_KINDS.map((kind) => {
  const subject = kind.subject.table === programs ? null : alias(kind.subject.table, `claimed_${kind.subjectNoun}`);
  const tables = {
    job: getTableColumns(claimedJob),
    program: getTableColumns(claimedProgram),
    subject: getTableColumns(subject ?? claimedProgram),
  };
  return { kind, subject, tables };
});
const isClaimedKind = (kind: JobKind) => sql`${claimedJob.kind} = ${sql.raw(`'${kind}'`)}`;
/** What each kind's claim says (`part`), chosen by the claimed job's kind. */
const byClaimedKind = (part: (c: (typeof claimedKinds)[number]) => SQL, otherwise = sql``) =>
  sql`CASE ${claimedJob.kind} ${sql.join(
    claimedKinds.map((c) => sql`WHEN ${sql.raw(`'${c.kind.kind}'`)} THEN ${part(c)}`),
    sql` `,
  )} ${otherwise}END`;
/** The program the claimed job works on, whatever its kind (null: an EVM proof checked against a config alone). */
const claimedProgramId = byClaimedKind((c) => c.kind.claim.programId(c.tables));
/** The claimed job's input files as a JSON object {name: R2 key} (leases.artifacts). */
const claimedInputs = byClaimedKind((c) => c.kind.claim.inputs(c.tables), sql`ELSE '{}' `);

/** `table AS name`, where `named` (alias(table, name)) reads its columns. */
const as = (table: SQLiteTable, named: SQLiteTable) => sql`${table} AS ${sql.identifier(getTableName(named))}`;

/** The claimed job and its subject: each kind's subject joins only a job of its kind. */
const claimedJobAndSubject = sql`${as(jobs, claimedJob)} ${sql.join(
  claimedKinds.flatMap(({ kind, subject }) =>
    subject
      ? [sql`LEFT JOIN ${as(kind.subject.table, subject)} ON ${isClaimedKind(kind.kind)} AND ${subject.id} = ${claimedJob.subject_id}`]
      : [],
  ),
  sql` `,
)}`;

/** The program the claimed job works on, joined onto claimedJobAndSubject. */
const programOfClaimed = eq(claimedProgram.id, claimedProgramId);

/** A claim's values, which its prepared batch (claimSteps) is filled with. */
interface ClaimValues {
  [value: string]: unknown;
  leaseId: string;
  leaseTokenHash: string;
  agentTokenHash: string;
  /** The job the agent's queue notice named, or '' for none. */
  hintJobId: string;
  now: number;
  nowIso: string;
  leaseExpiresAt: number;
  agentId: string;
  machineType: string;
  gpus: number;
  /** JSON lists of what the agent declares it serves. */
  engines: string;
  configs: string;
}

/**
 * The claim's batch, built once per shape (whether the agent names configs; the quotas'
 * defaults, written in) and filled with each claim's values (src/db/prepared.ts): the
 * agent token is checked inside it, the job leased and its subject moved to running, the
 * lease recorded with the job's input files, and everything the agent needs to run it
 * read back, together with the state of the job its queue notice named.
 */
const claimSteps = preparedSteps(
  (v: ClaimValues & { quotas: QuotaDefaults }) => `${v.configs !== '[]'} ${v.quotas.maxActiveJobs} ${v.quotas.maxGpus}`,
  (db, p, v) => {
    const mine = eq(jobs.lease_id, p.leaseId);
    const tokenLive = sql`EXISTS (SELECT 1 FROM ${agentTokens} WHERE ${agentTokens.token_hash} = ${p.agentTokenHash} AND ${agentTokens.revoked_at} IS NULL)`;
    const claimedUnder = eq(claimedJob.lease_id, p.leaseId);
    const subjectOf = (kind: JobKind) =>
      db
        .select({ id: jobs.subject_id })
        .from(jobs)
        .where(and(mine, eq(jobs.kind, kind)));
    return {
      scope: db
        .select({
          engines: agentTokens.engines,
          configs: agentTokens.configs,
          machine_type: agentTokens.machine_type,
          max_gpus: agentTokens.max_gpus,
          max_leases: agentTokens.max_leases,
          held_leases: agentTokens.held_leases,
          held_gpus: agentTokens.held_gpus,
        })
        .from(agentTokens)
        .where(and(eq(agentTokens.token_hash, p.agentTokenHash), isNull(agentTokens.revoked_at))),
      job: db
        .update(jobs)
        .set({
          status: 'leased',
          lease_id: sql`${p.leaseId}`,
          lease_expires_at: sql`${p.leaseExpiresAt}`,
          agent_id: sql`${p.agentId}`,
          machine_type: sql`${p.machineType}`,
          attempt: sql`${jobs.attempt} + 1`,
          waiting_reason: null,
        })
        .where(and(eq(jobs.id, nextJobFor(p, v.configs !== '[]', v.quotas)), eq(jobs.status, 'queued'), tokenLive))
        .returning(),
      // The job and its subject are a FROM clause drizzle does not see into: their columns are read as SQL.
      newLease: db.insert(leases).select(
        db
          .select({
            id: sql`${p.leaseId}`.as('id'),
            job_id: sql`${claimedJob.id}`.as('job_id'),
            attempt: sql`${claimedJob.attempt}`.as('attempt'),
            agent_id: sql`${p.agentId}`.as('agent_id'),
            token_hash: sql`${p.leaseTokenHash}`.as('token_hash'),
            gpus: sql`${claimedJob.gpus_used}`.as('gpus'),
            machine_type: sql`${p.machineType}`.as('machine_type'),
            claimed_at: sql`${p.now}`.as('claimed_at'),
            ended_at: sql`NULL`.as('ended_at'),
            outcome: sql`NULL`.as('outcome'),
            response: sql`NULL`.as('response'),
            artifacts: claimedInputs.as('artifacts'),
            agent_token_id: sql`(SELECT ${agentTokens.id} FROM ${agentTokens} WHERE ${agentTokens.token_hash} = ${p.agentTokenHash})`.as(
              'agent_token_id',
            ),
          })
          .from(claimedJobAndSubject)
          .leftJoin(claimedProgram, programOfClaimed)
          .where(claimedUnder),
      ),
      subjectsRunning: ALL_JOB_KINDS.map((k) => updateSubjects(db, k, mine, k.subject.running(p.nowIso, p.machineType))),
      // Fair share's tie-break: the organization served least recently goes first next time.
      orgServed: db
        .update(organizations)
        .set({ last_claimed_at: sql`${p.now}` })
        .where(inArray(organizations.id, db.select({ id: jobs.org_id }).from(jobs).where(mine))),
      kindsOwn: ALL_JOB_KINDS.flatMap((k) => k.claim.alsoOnClaim?.(db, mine) ?? []),
      lease: db.select({ artifacts: leases.artifacts }).from(leases).where(eq(leases.id, p.leaseId)),
      // What the agent is handed, no more (a config's TOML, a program's names stay here).
      config: db
        .select(configIdentity)
        .from(configs)
        .where(eq(configs.id, sql`(SELECT ${jobs.config_id} FROM ${jobs} WHERE ${mine})`)),
      program: db
        .select({ id: claimedProgram.id, app_exe_commit: claimedProgram.app_exe_commit })
        .from(claimedJobAndSubject)
        .innerJoin(claimedProgram, programOfClaimed)
        .where(claimedUnder),
      // The subject records the kinds' claims hand some of over (the one of the claimed job's kind answers).
      subjects: ALL_JOB_KINDS.flatMap((k) =>
        k.claim.subject
          ? [
              db
                .select()
                .from(k.subject.table)
                .where(inArray(k.subject.table.id, subjectOf(k.kind))),
            ]
          : [],
      ),
      hinted: db
        .select({
          id: jobs.id,
          status: jobs.status,
          engine: jobs.engine,
          config_id: jobs.config_id,
          num_gpus: jobs.num_gpus,
          gpus_used: jobs.gpus_used,
          // Held by its organization's quota (org_quota): not the agent's to take now, whatever it serves.
          held_by_quota: sql<boolean>`NOT ${withinRunningQuota('jobs', v.quotas)}`.mapWith(Boolean),
        })
        .from(jobs)
        .where(eq(jobs.id, p.hintJobId)),
    };
  },
);

/** Claims the next job for the agent (nextJobFor) in one batch, one D1 round trip (claimSteps). */
export async function claimJob(
  db: Db,
  caps: AgentCapabilities,
  lease: { id: string; tokenHash: string },
  agent: { tokenHash: string; hintJobId?: string | null },
  settings: FleetSettings,
  now = Date.now(),
): Promise<ClaimOutcome> {
  const claimed = await batchByName(
    db,
    claimSteps(db, {
      leaseId: lease.id,
      leaseTokenHash: lease.tokenHash,
      agentTokenHash: agent.tokenHash,
      hintJobId: agent.hintJobId ?? '',
      now,
      nowIso: isoNow(now),
      leaseExpiresAt: now + settings.leaseTtlMs,
      agentId: caps.agentId,
      machineType: caps.machineType,
      gpus: Math.trunc(caps.gpus),
      engines: JSON.stringify(caps.engines),
      configs: JSON.stringify(caps.configs),
      quotas: settings.quotas ?? DEFAULT_QUOTAS,
    }),
  );
  return {
    scope: claimed.scope[0] ?? null,
    job: claimed.job[0] ?? null,
    lease: claimed.lease[0] ?? null,
    config: claimed.config[0] ?? null,
    program: claimed.program[0] ?? null,
    subject: claimed.subjects.find((rows) => rows.length > 0)?.[0] ?? null,
    hinted: agent.hintJobId ? (claimed.hinted[0] ?? null) : null,
  };
}

// ---------------------------------------------------------------------------
// Callbacks on a lease

export type LeaseRow = typeof leases.$inferSelect;
export type { JobRow };

/** Why a callback on this lease may not act: superseded, or already ended. */
export function leaseStanding(lease: LeaseRow, job: JobRow | undefined): 'current' | 'ended' | 'superseded' {
  if (lease.outcome) return 'ended';
  if (!job || job.lease_id !== lease.id || job.status !== 'leased') return 'superseded';
  return 'current';
}

/**
 * What only a running job needs, cleared whenever it stops running (ends, or goes back to
 * the queue): its lease's expiry and the agent holding it (the lease row keeps who ran it
 * and on what, until the sweep; docs/contributors.md "What D1 keeps, and past one database"). `lease_id`
 * stays on an ended job until its lease is swept (src/features/retention/sweep.ts).
 */
const OFF_AGENT = { lease_expires_at: null, agent_id: null, machine_type: null };

const currentLease = (leaseId: string) => and(eq(jobs.lease_id, leaseId), eq(jobs.status, 'leased'));

export type HeartbeatOutcome =
  | { standing: 'unknown' }
  | { standing: 'ended'; outcome: string }
  | { standing: 'superseded' }
  | { standing: 'over'; jobId: string; leaseId: string }
  | { standing: 'current'; cancel: boolean; leaseExpiresAt: number };

/**
 * Renews the lease of the job token `tokenHash` and moves its proof forward (never
 * back) to `phase`, in one batch: the token is resolved inside it (a job token whose
 * agent token was revoked resolves to nothing), and a read of the lease says why
 * nothing was renewed when nothing was (unknown token, lease ended or superseded, or
 * over: it reached settings.maxLeaseMs from its claim, which no renewal passes; the
 * caller then expires it, src/features/fleet/lease.ts).
 */
export async function heartbeat(
  db: Db,
  tokenHash: string,
  update: { phase?: ProvePhase; num_instructions?: number; cells_used?: number },
  settings: FleetSettings,
  now = Date.now(),
): Promise<HeartbeatOutcome> {
  const expires = now + settings.leaseTtlMs;
  const tokenLive = sql`EXISTS (SELECT 1 FROM ${agentTokens} WHERE ${agentTokens.id} = ${leases.agent_token_id} AND ${agentTokens.revoked_at} IS NULL)`;
  const bound = sql`${leases.claimed_at} + ${settings.maxLeaseMs}`;
  const leaseOfToken = sql`(SELECT ${leases.id} FROM ${leases} WHERE ${leases.token_hash} = ${tokenHash} AND ${leases.outcome} IS NULL AND ${tokenLive} AND ${bound} > ${now})`;
  const mine = and(eq(jobs.lease_id, leaseOfToken), eq(jobs.status, 'leased'));
  const proofSet: Record<string, unknown> = {};
  if (update.num_instructions !== undefined) proofSet.num_instructions = update.num_instructions;
  if (update.cells_used !== undefined) proofSet.cells_used = update.cells_used;
  const proofUpdates = [];
  if (update.phase) {
    const earlier = PROVE_PHASES.slice(0, PROVE_PHASES.indexOf(update.phase));
    // Forward only, and never out of Canceling.
    if (earlier.length) proofUpdates.push(updateSubjects(db, proofJob, mine, { state: update.phase }, inArray(proofs.state, earlier)));
  }
  if (Object.keys(proofSet).length) proofUpdates.push(updateSubjects(db, proofJob, mine, proofSet));
  const { standing, renewed } = await batchByName(db, {
    standing: db
      .select({
        lease_id: leases.id,
        job_id: leases.job_id,
        outcome: leases.outcome,
        job_status: jobs.status,
        job_lease: jobs.lease_id,
        over: sql<number>`${bound} <= ${now}`,
      })
      .from(leases)
      .leftJoin(jobs, eq(jobs.id, leases.job_id))
      .where(and(eq(leases.token_hash, tokenHash), tokenLive)),
    // Renewed before the subject updates, which match the same lease: their order does not matter.
    // Never past the lease's bound, so the last renewal expires it there.
    renewed: db
      .update(jobs)
      // A job past its deadline or cost limit is stopped here (src/jobs/limits.ts): the answer says cancel.
      .set({
        lease_expires_at: sql`min(${expires}, (SELECT ${bound} FROM ${leases} WHERE ${leases.id} = ${jobs.lease_id}))`,
        ...stopOnHeartbeat(settings, now),
      })
      .where(mine)
      .returning({ cancel: jobs.cancel_requested, lease_expires_at: jobs.lease_expires_at }),
    proof: proofUpdates,
  });
  const row = renewed[0];
  if (row) return { standing: 'current', cancel: !!row.cancel, leaseExpiresAt: row.lease_expires_at! };
  const lease = standing[0];
  if (!lease) return { standing: 'unknown' };
  if (lease.outcome) return { standing: 'ended', outcome: lease.outcome };
  if (lease.job_status !== 'leased' || lease.job_lease !== lease.lease_id) return { standing: 'superseded' };
  if (lease.over) return { standing: 'over', jobId: lease.job_id, leaseId: lease.lease_id };
  return { standing: 'superseded' };
}

/** Ends the lease with `outcome`; the statements run in the same batch as the caller's. */
function endLease(db: Db, lease: LeaseRow, outcome: string, response: Record<string, unknown>, now: number) {
  return db
    .update(leases)
    .set({ outcome, ended_at: now, response })
    .where(and(eq(leases.id, lease.id), isNull(leases.outcome)));
}

/** What a lease ending answers when the job was canceled meanwhile (the agent stops; nothing is retried). */
export const CANCELED_RESPONSE = { status: 'canceled' } as const;

/** Whether the job of `lease` has a cancel request, as of the statement that reads it. */
const cancelRequestedOf = (lease: LeaseRef) => sql`(SELECT ${jobs.cancel_requested} FROM ${jobs} WHERE ${jobs.id} = ${lease.job_id})`;

/** A lease as the statements that end it name it (a placeholder's value in a prepared batch). */
type LeaseRef = Pick<LeaseRow, 'id' | 'job_id'>;

/**
 * Ends the lease with `outcome` and `response`, or as `canceled` when the job's cancel
 * was recorded before this batch: the stored answer is the one that applied.
 */
function endLeaseUnlessCanceled(db: Db, lease: LeaseRef, outcome: string, response: Record<string, unknown>, now: number) {
  const canceled = cancelRequestedOf(lease);
  return db
    .update(leases)
    .set({
      outcome: sql`CASE WHEN ${canceled} THEN 'canceled' ELSE ${outcome} END`,
      ended_at: now,
      response: sql`CASE WHEN ${canceled} THEN ${sql.param(CANCELED_RESPONSE, leases.response)} ELSE ${sql.param(response, leases.response)} END`,
    })
    .where(and(eq(leases.id, lease.id), isNull(leases.outcome)));
}

/** Micro-USD for a lease that ran until `now` (docs/callers.md "Cost"). GPU-less engines bill one unit. */
export function leaseCost(lease: LeaseRow, settings: FleetSettings, now: number): number {
  // A lease claimed before machine types were the token's may name any type: one the card does not know is charged nothing.
  const rate = rateOf(settings.machineRates, lease.machine_type) ?? 0;
  const hours = Math.max(0, now - lease.claimed_at) / 3_600_000;
  return Math.round(hours * Math.max(1, lease.gpus) * rate * 1_000_000);
}

/**
 * leaseCost() in SQL of the current lease of the job working for the subject row
 * being updated, charged until the caller's cancel (or `now`, if earlier), at most its
 * cost limit (chargedCost).
 */
function canceledCostSql(kind: JobKindContract, settings: FleetSettings, now: number): SQL {
  const rate = rateSql(settings, sql`l.machine_type`);
  // A job canceled before it ran has no lease: charged nothing (0, never NULL: migrations/0023_fleet_authority.sql).
  const cost = sql`CAST(round(max(0, min(${now}, coalesce(j.cancel_requested_at, ${now})) - l.claimed_at) / 3600000.0 * max(1, l.gpus) * ${rate} * 1000000) AS INTEGER)`;
  return sql`coalesce((SELECT ${chargedCost(cost, sql`j.cost_limit`)}
    FROM ${jobs} j JOIN ${leases} l ON l.id = j.lease_id WHERE j.kind = ${kind.kind} AND j.subject_id = ${kind.subject.table.id}), 0)`;
}

/**
 * The subject updates that end canceled jobs matching `jobWhere` (each kind's
 * `canceled` state: a proof Canceled, an execution `canceled`; other kinds, which
 * callers cannot cancel, `failed`), charged for their lease until the cancel. A kind
 * callers put limits on ends Failed instead when the service stopped it at one
 * (src/jobs/limits.ts), saying which: one statement per kind, which decides per row.
 */
function cancelSubjects(
  db: Db,
  jobWhere: SQL,
  settings: FleetSettings,
  now: number,
  { at = isoNow(now), kinds = ALL_JOB_KINDS }: { at?: string; kinds?: readonly JobKindContract[] } = {},
) {
  return kinds.map((k) => {
    const cost = canceledCostSql(k, settings, now);
    const canceled = k.subject.canceled(at, cost);
    if (!limitedKind(k)) return updateSubjects(db, k, jobWhere, canceled);
    const stopped = { ...k.subject.failed(at, ''), error_message: stopReasonSql(k), cost };
    // One statement rather than one per case: each update of a subject's state compiles its
    // table's triggers, most of a statement's cost to SQLite (`npm run bench:dispatch`).
    return updateSubjects(db, k, jobWhere, eitherSet(k.subject.table, sql`${stopReasonSql(k)} IS NOT NULL`, stopped, canceled));
  });
}

/**
 * The SET of an update that writes `ifTrue` where `condition` holds of the row and
 * `ifFalse` elsewhere, column by column; a column only one of them names keeps its value
 * in the other case.
 */
function eitherSet(table: SQLiteTable, condition: SQL, ifTrue: Record<string, unknown>, ifFalse: Record<string, unknown>) {
  const columns = getTableColumns(table);
  const valueOf = (set: Record<string, unknown>, name: string) => {
    if (!Object.hasOwn(set, name)) return columns[name];
    const value = set[name];
    return is(value, SQL) || is(value, Placeholder) ? value : sql.param(value, columns[name]);
  };
  return Object.fromEntries(
    [...new Set([...Object.keys(ifTrue), ...Object.keys(ifFalse)])].map((name) => [
      name,
      // The same value either way (the cost, the time) is written once.
      Object.hasOwn(ifTrue, name) && ifTrue[name] === ifFalse[name]
        ? ifTrue[name]
        : sql`CASE WHEN ${condition} THEN ${valueOf(ifTrue, name)} ELSE ${valueOf(ifFalse, name)} END`,
    ]),
  );
}

/**
 * Options of the calls that end a lease. `before`: statements run first in the same
 * batch (the attempt's last log chunk, src/jobs/logs.ts stageLogChunk), so what the
 * agent sends with its report lands with it or not at all.
 */
export interface EndingOptions {
  now?: number;
  before?: Statement[];
}

/**
 * Completes the job of a current lease; its subject reaches its success (or reported)
 * end state, unless the job was canceled first: then it ends Canceled and the result is
 * dropped, as the cancel's answer promised. Returns how it ended, or null when the
 * lease is no longer current.
 */
export async function completeJob(
  db: Db,
  lease: LeaseRow,
  done: Completion,
  response: Record<string, unknown>,
  settings: FleetSettings,
  { now = Date.now(), before = [], accepted = [] }: EndingOptions & { accepted?: readonly string[] } = {},
): Promise<{ outcome: 'completed' | 'canceled' | null; deliveries: DeliveryRef[] }> {
  const current = currentLease(lease.id);
  const mine = and(current, eq(jobs.cancel_requested, false));
  const at = isoNow(now);
  // Never past the job's cost limit, however the lease ran (src/jobs/limits.ts chargedCost).
  const cost = chargedCost(
    leaseCost(lease, settings, now),
    sql`(SELECT ${jobs.cost_limit} FROM ${jobs} WHERE ${jobs.id} = ${lease.job_id})`,
  );
  const subject = contractOf(done.kind).complete(db, mine, done.done, { now: at, cost });
  const ending = completionSteps(db, { leaseId: lease.id, jobId: lease.job_id, kind: done.kind, now, nowIso: at, response, settings });
  // The subject updates are guarded by the lease, so they must run before the job
  // row stops being `leased`.
  const { deliveries, job } = await batchByName(db, {
    before,
    subject,
    // The uploads the subject now names (`accepted`, src/jobs/results.ts) leave the garbage list with it.
    accepted: acceptStatement(db, accepted, mine),
    ...ending,
  });
  const row = job[0];
  return { outcome: row ? (row.canceled ? 'canceled' : 'completed') : null, deliveries };
}

/** The machine rates a statement writes in (rateSql): part of a prepared ending's shape. */
const ratesKey = (settings: FleetSettings) => JSON.stringify([[...settings.machineRates.byType], settings.machineRates.other]);

/**
 * What a completion's batch does after its subject's own update, the same text for every
 * completion (src/db/prepared.ts): a job canceled meanwhile ends its subject Canceled; the
 * lease ends (as canceled, then); the deliveries its triggers made are read back; and the
 * job is done.
 */
const completionSteps = preparedSteps(
  (v: {
    leaseId: string;
    jobId: string;
    kind: JobKind;
    now: number;
    nowIso: string;
    response: Record<string, unknown>;
    settings: FleetSettings;
  }) => `${v.kind} ${ratesKey(v.settings)}`,
  (db, p, v) => {
    const lease = { id: p.leaseId, job_id: p.jobId };
    const now = p.now;
    const current = currentLease(lease.id);
    const canceled = and(current, eq(jobs.cancel_requested, true))!;
    return {
      // The job's own kind only: another kind's statements could match no subject of it.
      canceled: cancelSubjects(db, canceled, v.settings, now, { at: p.nowIso, kinds: [contractOf(v.kind)] }),
      lease: endLeaseUnlessCanceled(db, lease, 'completed', p.response, now),
      deliveries: deliveriesOf(db, current),
      job: db
        .update(jobs)
        .set({ status: 'done', ...OFF_AGENT })
        .where(current)
        .returning({ canceled: jobs.cancel_requested }),
    };
  },
);

/** Whether failJob() will put the job back in the queue rather than fail it. */
export function failureRequeues(job: JobRow, failure: { retryable: boolean }, settings: FleetSettings): boolean {
  return failure.retryable && job.retries < settings.maxRetries && job.attempt < settings.maxAttempts && !job.cancel_requested;
}

/**
 * Fails the current attempt. A retryable failure (an infrastructure error on the
 * agent) requeues the job while its retry budget lasts; anything else, or an
 * exhausted budget, fails the subject with `message`. A job canceled meanwhile ends
 * Canceled instead.
 */
export async function failJob(
  db: Db,
  lease: LeaseRow,
  job: JobRow,
  failure: { message: string; retryable: boolean },
  response: Record<string, unknown>,
  settings: FleetSettings,
  { now = Date.now(), before = [] }: EndingOptions = {},
): Promise<{ outcome: 'requeued' | 'failed' | 'canceled'; applied: boolean; deliveries: DeliveryRef[] }> {
  const current = currentLease(lease.id);
  const mine = and(current, eq(jobs.cancel_requested, false));
  const canceled = and(current, eq(jobs.cancel_requested, true))!;
  const requeue = failureRequeues(job, failure, settings);
  const kind = contractOf(job.kind);
  const message = failure.retryable && !requeue ? `${failure.message} (gave up after ${job.retries + 1} failed attempts)` : failure.message;
  const { deliveries, job: ended } = await batchByName(db, {
    before,
    subject: updateSubjects(db, kind, mine, requeue ? kind.subject.queued : kind.subject.failed(isoNow(now), message)),
    canceled: cancelSubjects(db, canceled, settings, now, { kinds: [kind] }),
    lease: endLeaseUnlessCanceled(db, lease, 'failed', response, now),
    deliveries: deliveriesOf(db, current),
    job: db
      .update(jobs)
      .set(
        requeue
          ? {
              status: sql`CASE WHEN ${jobs.cancel_requested} THEN 'done' ELSE 'queued' END`,
              lease_id: sql`CASE WHEN ${jobs.cancel_requested} THEN ${jobs.lease_id} ELSE NULL END`,
              ...OFF_AGENT,
              retries: sql`${jobs.retries} + CASE WHEN ${jobs.cancel_requested} THEN 0 ELSE 1 END`,
              notified_at: now,
            }
          : { status: 'done', ...OFF_AGENT },
      )
      .where(current)
      .returning({ canceled: jobs.cancel_requested }),
  });
  const row = ended[0];
  return { outcome: row?.canceled ? 'canceled' : requeue ? 'requeued' : 'failed', applied: !!row, deliveries };
}

/** The agent stopped the job on a cancel request: Canceling → Canceled, charged until the cancel. */
export async function acknowledgeCancel(
  db: Db,
  lease: LeaseRow,
  response: Record<string, unknown>,
  settings: FleetSettings,
  { now = Date.now(), before = [] }: EndingOptions = {},
) {
  const mine = and(currentLease(lease.id), eq(jobs.cancel_requested, true))!;
  const { deliveries, job } = await batchByName(db, {
    before,
    canceled: cancelSubjects(db, mine, settings, now),
    lease: endLease(db, lease, 'canceled', response, now),
    deliveries: deliveriesOf(db, mine),
    job: db
      .update(jobs)
      .set({ status: 'done', ...OFF_AGENT })
      .where(mine)
      .returning({ id: jobs.id }),
  });
  return { applied: job.length === 1, deliveries };
}

/**
 * The agent gives the job back unfinished (shutting down): it is requeued at once
 * for another agent, without touching its retry budget; a canceled job ends Canceled.
 */
export async function releaseJob(
  db: Db,
  lease: LeaseRow,
  job: JobRow,
  response: Record<string, unknown>,
  settings: FleetSettings,
  { now = Date.now(), before = [] }: EndingOptions = {},
) {
  const current = currentLease(lease.id);
  const canceled = and(current, eq(jobs.cancel_requested, true))!;
  const { deliveries, job: ended } = await batchByName(db, {
    before,
    subject: updateSubjects(db, contractOf(job.kind), and(current, eq(jobs.cancel_requested, false)), contractOf(job.kind).subject.queued),
    canceled: cancelSubjects(db, canceled, settings, now),
    lease: endLeaseUnlessCanceled(db, lease, 'released', response, now),
    deliveries: deliveriesOf(db, current),
    job: db
      .update(jobs)
      .set({
        status: sql`CASE WHEN ${jobs.cancel_requested} THEN 'done' ELSE 'queued' END`,
        lease_id: sql`CASE WHEN ${jobs.cancel_requested} THEN ${jobs.lease_id} ELSE NULL END`,
        ...OFF_AGENT,
        notified_at: now,
      })
      .where(current)
      .returning({ canceled: jobs.cancel_requested }),
  });
  const row = ended[0];
  return { outcome: row ? (row.canceled ? ('canceled' as const) : ('requeued' as const)) : null, deliveries };
}

// ---------------------------------------------------------------------------
// Lost leases

/** Leases expired per call of expireLeases() without `only` (D1 binds at most 100 parameters). */
const EXPIRE_BATCH = 90;

/**
 * Requeues jobs whose lease expired (its agent died or lost its host), up to EXPIRE_BATCH
 * of them (the sweep calls again while there are more), or only
 * the one lease `only` names if it did, with the next claim as attempt+1; the job's
 * retry budget is not charged. After `maxAttempts` claims the job fails, saying why.
 * Returns the requeued job ids, which need a fresh queue notice.
 */
export async function expireLeases(
  db: Db,
  settings: FleetSettings,
  now = Date.now(),
  only?: { jobId: string; leaseId: string },
): Promise<{ requeued: { id: string; kind: JobKind }[]; failed: string[]; deliveries: DeliveryRef[] }> {
  // Which jobs first, by jobs_lease_expiry (it holds only leased jobs, never the backlog),
  // at most EXPIRE_BATCH at a time; then the batch names them by id, so every statement
  // in it is a primary-key lookup whatever else the query planner might prefer.
  const ids = only
    ? [only.jobId]
    : (
        await db
          .select({ id: jobs.id })
          .from(jobs)
          .where(and(eq(jobs.status, 'leased'), lt(jobs.lease_expires_at, now)))
          .limit(EXPIRE_BATCH)
      ).map((r) => r.id);
  if (ids.length === 0) return { requeued: [], failed: [], deliveries: [] };
  const expired = and(
    inArray(jobs.id, ids),
    eq(jobs.status, 'leased'),
    lt(jobs.lease_expires_at, now),
    only ? eq(jobs.lease_id, only.leaseId) : undefined,
  );
  const exhausted = and(expired, sql`${jobs.attempt} >= ${settings.maxAttempts}`, eq(jobs.cancel_requested, false));
  const retry = and(expired, sql`${jobs.attempt} < ${settings.maxAttempts}`, eq(jobs.cancel_requested, false));
  const canceled = and(expired, eq(jobs.cancel_requested, true));
  const at = isoNow(now);
  const giveUp = `Gave up after ${settings.maxAttempts} attempts: each time the prover running the job stopped answering before it finished`;
  const { deliveries, jobs: rows } = await batchByName(db, {
    leases: db
      .update(leases)
      .set({ outcome: 'expired', ended_at: now })
      .where(
        and(
          isNull(leases.outcome),
          inArray(
            leases.id,
            db
              .select({ id: sql<string>`${jobs.lease_id}` })
              .from(jobs)
              .where(expired),
          ),
        ),
      ),
    exhausted: ALL_JOB_KINDS.map((k) => updateSubjects(db, k, exhausted, k.subject.failed(at, giveUp))),
    retried: ALL_JOB_KINDS.map((k) => updateSubjects(db, k, retry, k.subject.queued)),
    canceled: cancelSubjects(db, canceled!, settings, now),
    deliveries: deliveriesOf(db, expired),
    jobs: db
      .update(jobs)
      .set({
        status: sql`CASE WHEN ${jobs.cancel_requested} OR ${jobs.attempt} >= ${settings.maxAttempts} THEN 'done' ELSE 'queued' END`,
        lease_id: null,
        ...OFF_AGENT,
        notified_at: now,
      })
      .where(expired)
      .returning({ id: jobs.id, kind: jobs.kind, status: jobs.status }),
  });
  return {
    requeued: rows.filter((r) => r.status === 'queued').map(({ id, kind }) => ({ id, kind })),
    failed: rows.filter((r) => r.status === 'done').map((r) => r.id),
    deliveries,
  };
}

// ---------------------------------------------------------------------------
// Cancel (from the API)

export type CancelOutcome =
  | { kind: 'canceled' } // was Queued: stopped at once
  | { kind: 'canceling' } // running: it will end Canceled, charged until now; its agent stops it (docs/contributors.md "How jobs run")
  | { kind: 'already-canceling' }
  | { kind: 'terminal'; state: ProofState };

/**
 * The statements that cancel a proof of organization `org` (an id, or SQL naming the
 * API key's): Queued → Canceled at once; running → Canceling, which always ends
 * Canceled (see the top of this module). Both transitions are tried in order, each
 * guarded by the state it starts from, so at most one applies; then the proof's state
 * is read back. Run them as one batch by name (with whatever the caller's check adds)
 * and read the answer with cancelOutcome() and cancelDeliveries().
 */
export function cancelProofStatements(db: Db, proofId: string, org: string | SQL<string>, now = Date.now()) {
  const own = and(eq(proofs.id, proofId), eq(proofs.org_id, org));
  const proofJob = and(
    eq(jobs.kind, 'proof'),
    eq(jobs.subject_id, proofId),
    inArray(jobs.subject_id, db.select({ id: proofs.id }).from(proofs).where(own)),
  );
  return {
    queuedJobDone: db
      .update(jobs)
      .set({ status: 'done', cancel_requested: true, cancel_requested_at: now })
      .where(and(proofJob, eq(jobs.status, 'queued'))),
    canceled: db
      .update(proofs)
      .set({ state: 'Canceled', terminated_at: isoNow(now) })
      .where(and(own, eq(proofs.state, 'Queued')))
      .returning({ id: proofs.id }),
    runningJobAsked: db
      .update(jobs)
      .set({ cancel_requested: true, cancel_requested_at: now })
      .where(and(proofJob, eq(jobs.status, 'leased'), eq(jobs.cancel_requested, false))),
    canceling: db
      .update(proofs)
      .set({ state: 'Canceling' })
      .where(and(own, inArray(proofs.state, [...PROVE_PHASES])))
      .returning({ id: proofs.id }),
    current: db.select({ state: proofs.state }).from(proofs).where(own),
    // What a cancel of a queued proof emits (proof.canceled), for the caller to send.
    deliveries: unsentDeliveries(db, proofId, org),
  };
}

/** What cancelProofStatements() read, by name. */
interface CancelRead {
  canceled: { id: string }[];
  canceling: { id: string }[];
  current: { state: ProofState }[];
  deliveries: DeliveryRef[];
}

/** The webhook deliveries cancelProofStatements() read back, to send. */
export const cancelDeliveries = (read: Pick<CancelRead, 'deliveries'>): DeliveryRef[] => read.deliveries;

/**
 * What cancelProofStatements() did: canceled at once, canceling, already canceling, or
 * nothing (a proof that finished before the cancel was recorded is terminal: the
 * cancel changes nothing). Null when the organization has no such proof.
 */
export function cancelOutcome({
  canceled,
  canceling,
  current,
}: Pick<CancelRead, 'canceled' | 'canceling' | 'current'>): CancelOutcome | null {
  if (canceled.length) return { kind: 'canceled' };
  if (canceling.length) return { kind: 'canceling' };
  if (!current[0]) return null;
  if (current[0].state === 'Canceling') return { kind: 'already-canceling' };
  return { kind: 'terminal', state: current[0].state };
}
