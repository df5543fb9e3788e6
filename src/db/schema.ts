// The whole D1 schema. Migrations under /migrations are generated from this file
// with `npm run db:generate` (drizzle-kit) and committed.
import { sql } from 'drizzle-orm';
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from 'drizzle-orm/sqlite-core';
import { JOB_KINDS, PROOF_TYPES } from 'prover-agent/protocol';
import { KEY_SCOPE_NAMES, PROOF_STATES, ROLES, WEBHOOK_DELIVERY_STATUSES, type WebhookEvent } from './enums.ts';

export {
  KEY_SCOPE_NAMES,
  PROOF_STATES,
  ROLES,
  WEBHOOK_DELIVERY_STATUSES,
  WEBHOOK_EVENTS,
  type KeyScope,
  type ProofState,
  type Role,
  type WebhookEvent,
} from './enums.ts';

/** Now, in SQL, as timestamp columns store it: ISO 8601 UTC with milliseconds. */
export const nowIso = sql<string>`(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`;

const createdAt = () => text('created_at').notNull().default(nowIso);

/** The owning organization: every caller-visible record has one. */
const orgId = () =>
  text('org_id')
    .notNull()
    .references(() => organizations.id);

export const organizations = sqliteTable(
  'organizations',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    created_at: createdAt(),
    /** Quota: most queued-or-running jobs at once; null = ORG_MAX_ACTIVE_JOBS (src/jobs/quotas.ts). */
    max_active_jobs: integer('max_active_jobs'),
    /** Quota: most GPUs its queued-or-running jobs hold at once; null = ORG_MAX_GPUS. */
    max_gpus: integer('max_gpus'),
    /** Fair share: its part of the fleet relative to other organizations' (claims, src/jobs/state.ts). */
    share_weight: integer('share_weight').notNull().default(1),
    /** Epoch ms of its latest claim: among equally loaded organizations, the least recently served goes first. */
    last_claimed_at: integer('last_claimed_at'),
    // Counters kept by triggers (migrations/0005_counters.sql; docs/contributors.md "What a claim costs") in
    // the same transaction as every change they count, so quotas, fair share and list totals
    // read one row instead of counting many.
    /** Its jobs now leased by an agent: its share of the fleet. */
    running_jobs: integer('running_jobs').notNull().default(0),
    /** Its queued or leased jobs (the max_active_jobs quota). */
    active_jobs: integer('active_jobs').notNull().default(0),
    /** GPUs its queued or leased jobs hold (jobs.gpus_used; the max_gpus quota). */
    held_gpus: integer('held_gpus').notNull().default(0),
    /** GPUs its leased jobs hold (a claim's hold under max_gpus; migrations/0020_queue.sql). */
    running_gpus: integer('running_gpus').notNull().default(0),
    project_count: integer('project_count').notNull().default(0),
    program_count: integer('program_count').notNull().default(0),
    proof_count: integer('proof_count').notNull().default(0),
    execution_count: integer('execution_count').notNull().default(0),
    verification_count: integer('verification_count').notNull().default(0),
    /** Its jobs' limits, each both the default and the ceiling of its proofs and executions (docs/callers.md "Job limits"; a request may ask for less, never more); null: none. */
    default_cycle_limit: integer('default_cycle_limit'),
    default_cost_limit: integer('default_cost_limit'),
    default_deadline_seconds: integer('default_deadline_seconds'),
    /**
     * The cost limits of its live (queued or running) jobs, reserved against its monthly
     * budget until each ends (src/jobs/budgets.ts; kept by triggers, migrations/0025_ceilings.sql).
     */
    reserved_cost: integer('reserved_cost').notNull().default(0),
    /** Days its proofs' and executions' files (inputs, logs, proofs) are kept after they finish; null = for good (src/features/retention). */
    retention_days: integer('retention_days'),
    /** Epoch ms the retention sweep last deleted something of it (null: never): the sweep serves the least recent first. */
    retention_swept_at: integer('retention_swept_at'),
  },
  (t) => [
    index('organizations_retention')
      .on(t.retention_swept_at, t.id)
      .where(sql`${t.retention_days} IS NOT NULL`),
  ],
);

/** API keys are stored only as SHA-256 hashes (hex) of the key. */
export const apiKeys = sqliteTable(
  'api_keys',
  {
    id: text('id').primaryKey(),
    org_id: orgId(),
    key_hash: text('key_hash').notNull(),
    /**
     * Who the key belongs to: its creator's email (a console key), or the label an operator
     * gave it. What the key makes records it, its name beside it (src/middleware/auth.ts keyActorLabel).
     */
    owner: text('owner').notNull(),
    created_at: createdAt(),
    revoked_at: text('revoked_at'),
    /** The key's first characters, shown in the console to tell keys apart (null for keys made before it). */
    prefix: text('prefix'),
    /** The console user who created it; null for operator-made keys. */
    user_id: text('user_id'),
    /** Updated at most once a minute (src/middleware/auth.ts). */
    last_used_at: text('last_used_at'),
    /** What it may do at most (src/auth/permissions.ts KEY_SCOPES), bounded further by its creator's current role. */
    scope: text('scope', { enum: KEY_SCOPE_NAMES }).notNull().default('full'),
    /** What its creator called it (null: no name). Never recorded alone (migrations/0024_accounts.sql). */
    name: text('name'),
  },
  (t) => [uniqueIndex('api_keys_key_hash').on(t.key_hash), index('api_keys_org').on(t.org_id, t.created_at)],
);

// ---------------------------------------------------------------------------
// The console: people, their memberships, sessions and the audit log.

/** A person who signs in to the console. Emails are stored lower-case. */
export const users = sqliteTable(
  'users',
  {
    id: text('id').primaryKey(), // usr_{ulid}
    email: text('email').notNull(),
    name: text('name').notNull().default(''),
    /** `pbkdf2-sha256$iterations$salt$hash` (src/features/accounts/password.ts); null until the user sets one. */
    password_hash: text('password_hash'),
    /** Service operators see the fleet page. */
    is_operator: integer('is_operator', { mode: 'boolean' }).notNull().default(false),
    created_at: createdAt(),
  },
  (t) => [uniqueIndex('users_email').on(t.email)],
);

/**
 * Who belongs to an organization, with which role: one row per person and organization
 * (memberships_org_user), and an organization always keeps an owner: triggers in
 * migrations/0013_invariants.sql abort any UPDATE of role or DELETE that would leave an
 * organization that has an owner with none, with LAST_OWNER_REFUSAL as the message.
 */
export const memberships = sqliteTable(
  'memberships',
  {
    org_id: orgId(),
    user_id: text('user_id')
      .notNull()
      .references(() => users.id),
    role: text('role', { enum: ROLES }).notNull(),
    created_at: createdAt(),
  },
  (t) => [uniqueIndex('memberships_org_user').on(t.org_id, t.user_id), index('memberships_user').on(t.user_id)],
);

/** The message of the memberships triggers' RAISE(ABORT) (migrations/0013_invariants.sql): the change would leave no owner. */
export const LAST_OWNER_REFUSAL = 'memberships: an organization keeps at least one owner';

/**
 * One-time secrets sent as links: an invitation to an organization, or the link that
 * sets a user's password (the first owner's, from `npm run admin -- create-user`).
 * Stored only as SHA-256 hashes; used once, then `used_at` is set.
 */
export const consoleLinks = sqliteTable(
  'console_links',
  {
    id: text('id').primaryKey(),
    /** invite: joins an organization; set_password: from the operator tool; password_reset: asked for by its email. */
    kind: text('kind', { enum: ['invite', 'set_password', 'password_reset'] }).notNull(),
    token_hash: text('token_hash').notNull(),
    email: text('email').notNull(),
    /** set_password, password_reset: whose password. */
    user_id: text('user_id'),
    /** invite: into which organization, with which role, from whom (their user id: an invitation dies with its inviter's right to grant the role). */
    org_id: text('org_id'),
    role: text('role', { enum: ROLES }),
    created_by: text('created_by'),
    created_at: createdAt(),
    expires_at: text('expires_at').notNull(),
    used_at: text('used_at'),
    revoked_at: text('revoked_at'),
  },
  (t) => [
    uniqueIndex('console_links_token').on(t.token_hash),
    index('console_links_org').on(t.org_id, t.kind),
    index('console_links_email').on(t.email, t.kind),
    index('console_links_created_by').on(t.org_id, t.created_by),
  ],
);

/**
 * Mail the local outbox sender "sent" (MAIL_SENDER = "outbox", `npm start` and the
 * tests; src/features/accounts/mail.ts): read at /console/outbox. Never written in production.
 */
export const mailOutbox = sqliteTable(
  'mail_outbox',
  {
    id: text('id').primaryKey(),
    to: text('to').notNull(),
    subject: text('subject').notNull(),
    text: text('text').notNull(),
    /** The one link the message carries, if any (what a developer or a test opens). */
    link: text('link'),
    created_at: createdAt(),
  },
  (t) => [index('mail_outbox_to').on(t.to, t.created_at)],
);

/**
 * A signed-in browser. Its refresh token (an HttpOnly cookie) is stored only hashed and
 * rotates on every use; a token of any earlier generation presented again (a stolen copy)
 * revokes the session (src/features/accounts/sessions.ts). Access tokens name their
 * session, so revoking it ends them too.
 */
export const consoleSessions = sqliteTable(
  'console_sessions',
  {
    id: text('id').primaryKey(),
    user_id: text('user_id')
      .notNull()
      .references(() => users.id),
    refresh_hash: text('refresh_hash').notNull(),
    /** The token rotated away last: how a token made before refresh tokens named their session is caught when replayed. */
    previous_refresh_hash: text('previous_refresh_hash'),
    created_at: createdAt(),
    rotated_at: text('rotated_at'),
    expires_at: text('expires_at').notNull(),
    revoked_at: text('revoked_at'),
    /** What signed in (its User-Agent, cut) and from where (its address), as its person sees their sessions. */
    user_agent: text('user_agent'),
    client_address: text('client_address'),
  },
  (t) => [uniqueIndex('console_sessions_refresh').on(t.refresh_hash), index('console_sessions_user').on(t.user_id)],
);

/** Password checks per account and client, per client and per account in the current window (src/features/accounts/signin-throttle.ts). */
export const signinThrottle = sqliteTable(
  'signin_throttle',
  {
    key: text('key').primaryKey(),
    failures: integer('failures').notNull(),
    window_started_at: integer('window_started_at').notNull(),
    /** The email the row counts for (null for a client's own row): a completed reset clears them all. */
    account: text('account'),
  },
  (t) => [
    index('signin_throttle_account')
      .on(t.account)
      .where(sql`${t.account} IS NOT NULL`),
  ],
);

/** Key and member changes, per organization, newest read first. */
export const auditLog = sqliteTable(
  'audit_log',
  {
    id: text('id').primaryKey(), // ulid: sorts by time
    org_id: orgId(),
    actor_user_id: text('actor_user_id'),
    actor: text('actor').notNull(),
    action: text('action').notNull(),
    target: text('target').notNull(),
    detail: text('detail', { mode: 'json' }).$type<Record<string, unknown>>().notNull().default({}),
    created_at: createdAt(),
  },
  (t) => [index('audit_log_org').on(t.org_id, t.id)],
);

/** Proving-system version sets. Service-wide: every organization may use an active config. */
export const configs = sqliteTable('configs', {
  id: text('id').primaryKey(), // cfg_{ulid}
  created_at: createdAt(),
  openvm_version: text('openvm_version').notNull(),
  stark_backend_version: text('stark_backend_version').notNull(),
  status: text('status').notNull().default('ready'),
  active: integer('active', { mode: 'boolean' }).notNull().default(true),
  app_vm_commit: text('app_vm_commit').notNull(),
  /** Which prover engine serves this config: `dev` or `openvm`. */
  engine: text('engine').notNull(),
  deferral_enabled: integer('deferral_enabled', { mode: 'boolean' }).notNull().default(false),
  public_values_bytes: integer('public_values_bytes').notNull().default(32),
  /**
   * The config's openvm.toml (its VM extensions), the one source agents prepare
   * their keys from (`prover-agent setup-config`) and callers download
   * (GET /v1/configs/{id}/config). Null for configs made without one.
   */
  openvm_toml: text('openvm_toml'),
});

/**
 * What a config is to the runs under it: its engine, its versions, the commit of the VM
 * its proofs are bound to, whether it defers and how many public values it reveals. What
 * a claim hands the agent (src/jobs/state.ts), and the first columns of the operator's list.
 */
export const configIdentity = {
  id: configs.id,
  engine: configs.engine,
  openvm_version: configs.openvm_version,
  stark_backend_version: configs.stark_backend_version,
  app_vm_commit: configs.app_vm_commit,
  deferral_enabled: configs.deferral_enabled,
  public_values_bytes: configs.public_values_bytes,
};

export const projects = sqliteTable(
  'projects',
  {
    id: text('id').primaryKey(),
    org_id: orgId(),
    name: text('name').notNull(),
    created_at: createdAt(),
    created_by: text('created_by').notNull(),
    highlighted_program_id: text('highlighted_program_id'),
    // Totals over its programs, kept by triggers (migrations/0005_counters.sql).
    program_count: integer('program_count').notNull().default(0),
    total_proofs_run: integer('total_proofs_run').notNull().default(0),
    /** The latest last_active_at of its programs; null while it has none. */
    last_active_at: text('last_active_at'),
  },
  (t) => [index('projects_org').on(t.org_id, t.created_at)],
);

export const programs = sqliteTable(
  'programs',
  {
    id: text('id').primaryKey(),
    org_id: orgId(),
    project_id: text('project_id')
      .notNull()
      .references(() => projects.id),
    config_id: text('config_id')
      .notNull()
      .references(() => configs.id),
    name: text('name').notNull(),
    status: text('status', { enum: ['not_ready', 'processing', 'ready', 'error', 'failed'] })
      .notNull()
      .default('not_ready'),
    created_at: createdAt(),
    created_by: text('created_by').notNull(),
    last_active_at: text('last_active_at').notNull(),
    launched_at: text('launched_at'),
    terminated_at: text('terminated_at'),
    program_hash: text('program_hash').notNull(),
    cells_used: integer('cells_used').notNull().default(0),
    proofs_run: integer('proofs_run').notNull().default(0),
    commit_sha: text('commit_sha').notNull().default(''),
    default_num_gpus: integer('default_num_gpus').notNull().default(8),
    error_message: text('error_message').notNull().default(''),
    elf_key: text('elf_key').notNull(),
    elf_size: integer('elf_size').notNull(),
    vmexe_key: text('vmexe_key').notNull(),
    vmexe_size: integer('vmexe_size').notNull(),
    /** Set by the commit job. */
    app_exe_commit: text('app_exe_commit'),
    /**
     * The baseline the program serves and its SHA-256 (hex), named by the completion
     * that accepted it (src/jobs/results.ts): an object no upload can overwrite. A
     * baseline committed before migrations/0022_results.sql has no digest and sits at
     * the fixed key programBaseline, which nothing writes any more.
     */
    baseline_key: text('baseline_key'),
    baseline_sha256: text('baseline_sha256'),
    /** Its proofs and executions, for list totals; kept by triggers (migrations/0005_counters.sql). */
    proof_count: integer('proof_count').notNull().default(0),
    execution_count: integer('execution_count').notNull().default(0),
    /** Set when deleted (src/features/retention): its objects are gone, the row stays as a tombstone. */
    deleted_at: text('deleted_at'),
    /** Who deleted it (src/features/retention/copies.ts: the console user, the API key's owner with the key, or `retention`). */
    deleted_by: text('deleted_by'),
  },
  (t) => [index('programs_org').on(t.org_id, t.created_at), index('programs_project').on(t.project_id, t.created_at)],
);

export const proofs = sqliteTable(
  'proofs',
  {
    id: text('id').primaryKey(),
    org_id: orgId(),
    program_id: text('program_id')
      .notNull()
      .references(() => programs.id),
    state: text('state', { enum: PROOF_STATES }).notNull().default('Queued'),
    proof_type: text('proof_type', { enum: PROOF_TYPES }).notNull(),
    priority: integer('priority').notNull(),
    num_gpus: integer('num_gpus').notNull(),
    created_at: createdAt(),
    created_by: text('created_by').notNull(),
    launched_at: text('launched_at'),
    terminated_at: text('terminated_at'),
    cells_used: integer('cells_used').notNull().default(0),
    cost: integer('cost').notNull().default(0),
    machine_type: text('machine_type').notNull().default(''),
    error_message: text('error_message').notNull().default(''),
    proof_size: integer('proof_size').notNull().default(0),
    num_instructions: integer('num_instructions'),
    num_deferred_proofs: integer('num_deferred_proofs').notNull().default(0),
    /** Written by no path since migrations/0019_archive.sql: a proof's public values are in its proof files; older rows may hold them. */
    public_values: text('public_values'),
    /** R2 keys of the deferred child proofs, in packing order. */
    child_proof_keys: text('child_proof_keys', { mode: 'json' }).$type<string[]>().notNull().default([]),
    /**
     * The kinds of proof file produced (`["stark"]`). Its files, like its input, are at
     * its own keys (src/lib/artifact-keys.ts proofOutput, proofInput), derived where
     * needed, not stored: migrations/0019_archive.sql.
     */
    proof_files: text('proof_files', { mode: 'json' }).$type<string[]>().notNull().default([]),
    /**
     * The object each proof file is served from and its SHA-256, by kind, named by the
     * completion that accepted it (src/jobs/results.ts). Null for a proof finished before
     * migrations/0022_results.sql: its files are at the fixed keys proofOutput
     * (src/lib/artifact-keys.ts servedProofKey reads both).
     */
    proof_objects: text('proof_objects', { mode: 'json' }).$type<Record<string, ServedObject> | null>(),
    /** Set when deleted, by a caller or the retention sweep (src/features/retention): its objects are gone, the row stays as a tombstone. */
    deleted_at: text('deleted_at'),
    /** Who deleted it (src/features/retention/copies.ts: the console user, the API key's owner with the key, or `retention`). */
    deleted_by: text('deleted_by'),
  },
  (t) => [
    index('proofs_program').on(t.program_id, t.created_at, t.id),
    index('proofs_org').on(t.org_id, t.created_at),
    // The retention sweep's finished, undeleted proofs per organization (src/features/retention/sweep.ts).
    index('proofs_retention')
      .on(t.org_id, t.terminated_at)
      .where(sql`${t.deleted_at} IS NULL AND ${t.terminated_at} IS NOT NULL`),
  ],
);

export const verifications = sqliteTable(
  'verifications',
  {
    id: text('id').primaryKey(),
    org_id: orgId(),
    /** The program whose baseline a STARK proof is checked against; null for an EVM proof checked against a config alone. */
    program_id: text('program_id').references(() => programs.id),
    /** The config whose keys verify the proof. */
    config_id: text('config_id')
      .notNull()
      .references(() => configs.id),
    created_at: createdAt(),
    created_by: text('created_by').notNull(),
    result: text('result', { enum: ['processing', 'verified', 'failed'] })
      .notNull()
      .default('processing'),
    proof_type: text('proof_type').notNull().default('stark'),
    error_message: text('error_message').notNull().default(''),
    proof_key: text('proof_key').notNull(),
    /** Set when deleted, by a caller, its program's deletion or the retention sweep (src/features/retention): its upload is gone, the row stays as a tombstone. */
    deleted_at: text('deleted_at'),
    /** Who deleted it (src/features/retention/copies.ts: the console user, the API key's owner with the key, or `retention`). */
    deleted_by: text('deleted_by'),
  },
  (t) => [
    index('verifications_org').on(t.org_id, t.created_at),
    // The retention sweep's finished, undeleted verifications per organization (src/features/retention/sweep.ts).
    index('verifications_retention')
      .on(t.org_id, t.created_at)
      .where(sql`${t.deleted_at} IS NULL AND ${t.result} <> 'processing'`),
    // A program's deletion finds its verifications (src/features/retention/copies.ts).
    index('verifications_program')
      .on(t.program_id)
      .where(sql`${t.program_id} IS NOT NULL`),
  ],
);

export const EXECUTION_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'canceled'] as const;

export const executions = sqliteTable(
  'executions',
  {
    id: text('id').primaryKey(),
    org_id: orgId(),
    program_id: text('program_id')
      .notNull()
      .references(() => programs.id),
    mode: text('mode').notNull(),
    status: text('status', { enum: EXECUTION_STATUSES }).notNull().default('queued'),
    created_at: createdAt(),
    created_by: text('created_by').notNull(),
    launched_at: text('launched_at'),
    terminated_at: text('terminated_at'),
    error_message: text('error_message').notNull().default(''),
    public_values: text('public_values'),
    cost: integer('cost'),
    num_segments: integer('num_segments'),
    total_cycle: integer('total_cycle'),
    total_tick: integer('total_tick'),
    num_instructions: integer('num_instructions'),
    // Its input is at its own key (src/lib/artifact-keys.ts executionInput), derived where needed: migrations/0019_archive.sql.
    /** Set when deleted, by a caller or the retention sweep (src/features/retention): its objects are gone, the row stays as a tombstone. */
    deleted_at: text('deleted_at'),
    /** Who deleted it (src/features/retention/copies.ts: the console user, the API key's owner with the key, or `retention`). */
    deleted_by: text('deleted_by'),
  },
  (t) => [
    index('executions_program').on(t.program_id, t.created_at, t.id),
    index('executions_org').on(t.org_id, t.created_at),
    index('executions_retention')
      .on(t.org_id, t.terminated_at)
      .where(sql`${t.deleted_at} IS NULL AND ${t.terminated_at} IS NOT NULL`),
  ],
);

/**
 * Dispatch and lease state of every background job, one row per job, whatever its
 * kind. The resource tables above hold what callers see; this table is what the
 * fleet claims. State machine: src/jobs/state.ts.
 */
export const jobs = sqliteTable(
  'jobs',
  {
    id: text('id').primaryKey(),
    kind: text('kind', { enum: JOB_KINDS }).notNull(),
    /** The program / proof / verification / execution this job works for. */
    subject_id: text('subject_id').notNull(),
    org_id: text('org_id').notNull(),
    config_id: text('config_id').notNull(),
    engine: text('engine').notNull(),
    priority: integer('priority').notNull(),
    num_gpus: integer('num_gpus').notNull(),
    /** GPUs the job holds and is billed on (protocol gpusUsed(engine, num_gpus)); part of its queue lane. */
    gpus_used: integer('gpus_used').notNull().default(0),
    status: text('status', { enum: ['queued', 'leased', 'done'] })
      .notNull()
      .default('queued'),
    /** Claims so far (1 for the first run); infrastructure losses count here. */
    attempt: integer('attempt').notNull().default(0),
    /** Retryable engine failures so far: the job's own retry budget. */
    retries: integer('retries').notNull().default(0),
    lease_id: text('lease_id'),
    lease_expires_at: integer('lease_expires_at'),
    agent_id: text('agent_id'),
    machine_type: text('machine_type'),
    cancel_requested: integer('cancel_requested', { mode: 'boolean' }).notNull().default(false),
    /** Epoch ms of the caller's cancel: a canceled job is never charged past it. */
    cancel_requested_at: integer('cancel_requested_at'),
    created_at: createdAt(),
    /** Epoch ms when the job (re)entered `queued`; orders claims among equal priorities. */
    queued_at: integer('queued_at').notNull(),
    /** Epoch ms of the last queue notice for this job. */
    notified_at: integer('notified_at').notNull(),
    /** Why no agent has taken it yet, if known. */
    waiting_reason: text('waiting_reason'),
    /** Next log chunk sequence number and the log's length in bytes (src/jobs/logs.ts). */
    log_seq: integer('log_seq').notNull().default(0),
    log_bytes: integer('log_bytes').notNull().default(0),
    /** The log reached its cap (LOG_MAX_BYTES / LOG_MAX_CHUNKS) and ends with the service's truncation marker: no more chunks. */
    log_truncated: integer('log_truncated', { mode: 'boolean' }).notNull().default(false),
    /**
     * Where the log's bytes are read from (src/jobs/logs.ts compactJobLog): `chunks` (its
     * indexed chunk objects; always while it can grow), `compacted` (one object holding the
     * whole finished log; the chunk objects are still to delete), `clean` (that object
     * alone), `kept` (finished, but left in chunks for good: written before the index, or
     * past the compaction's bound).
     */
    log_store: text('log_store', { enum: ['chunks', 'compacted', 'clean', 'kept'] })
      .notNull()
      .default('chunks'),
    /** Stages of the log's compaction done so far for the log as it is (src/jobs/logs.ts); an append sets it back to 0. */
    log_compact_step: integer('log_compact_step').notNull().default(0),
    /** Its limits (src/jobs/limits.ts; migrations/0015_job_limits.sql): cycles, cost (micro-USD), deadline (epoch ms). Null: none. */
    cycle_limit: integer('cycle_limit'),
    cost_limit: integer('cost_limit'),
    deadline_at: integer('deadline_at'),
    /** Why the service stopped it (a limit reached): set with cancel_requested, it ends Failed with this message instead of Canceled. */
    stop_reason: text('stop_reason'),
  },
  (t) => [
    uniqueIndex('jobs_subject').on(t.kind, t.subject_id),
    // Every index over a job's status is partial: a million finished jobs cost the
    // scheduler nothing, and a million queued ones cost it a seek, not a scan.
    // A lane's next job: priority, then age (src/jobs/state.ts claimJob, queue_lanes).
    index('jobs_lane')
      .on(t.org_id, t.engine, t.config_id, t.gpus_used, sql`${t.priority} DESC`, t.queued_at, t.id)
      .where(sql`${t.status} = 'queued'`),
    // Leases that expired (expireLeases) and the job holding a lease.
    index('jobs_lease_expiry')
      .on(t.lease_expires_at)
      .where(sql`${t.status} = 'leased'`),
    uniqueIndex('jobs_lease')
      .on(t.lease_id)
      .where(sql`${t.lease_id} IS NOT NULL`),
    // The sweep's stale notices, and the fleet view's oldest queued job per engine and config.
    index('jobs_stale_notice')
      .on(t.notified_at)
      .where(sql`${t.status} = 'queued'`),
    index('jobs_queued_age')
      .on(t.engine, t.config_id, t.queued_at)
      .where(sql`${t.status} = 'queued'`),
    // The jobs running on a config: a queued record's estimated start (src/features/runs/data.ts runStateSql).
    index('jobs_leased_config')
      .on(t.engine, t.config_id)
      .where(sql`${t.status} = 'leased'`),
    // Finished jobs whose log compaction is pending (the sweep's retries, src/jobs/logs.ts).
    index('jobs_log_pending')
      .on(t.id)
      .where(sql`${t.status} = 'done' AND ${t.log_store} IN ('chunks', 'compacted')`),
    // Queued jobs past their deadline (the sweep, src/jobs/limits.ts).
    index('jobs_deadline')
      .on(t.deadline_at)
      .where(sql`${t.status} = 'queued' AND ${t.deadline_at} IS NOT NULL`),
  ],
);

/**
 * The index of a job's log (src/jobs/logs.ts): one row per chunk object in R2, written in
 * the batch that moves jobs.log_seq, so a read from any byte offset is one query for the
 * rows of its page and a bounded number of R2 reads, however long the log.
 */
export const jobLogChunks = sqliteTable(
  'job_log_chunks',
  {
    job_id: text('job_id').notNull(),
    seq: integer('seq').notNull(),
    /** Byte offset of the chunk in the job's log. */
    offset: integer('offset').notNull(),
    bytes: integer('bytes').notNull(),
    /** Who wrote it: a host (an agent; its text escaped) or the service (its own lines, the truncation marker). */
    source: text('source', { enum: ['host', 'service'] }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.job_id, t.seq] }), index('job_log_chunks_offset').on(t.job_id, t.offset)],
);

/**
 * The open event streams (src/features/runs/events.ts), counted per API key and per organization
 * by the conditional insert that opens one. A row lapses at `expires_at` (epoch ms),
 * which its stream pushes forward while it runs, so a crashed Worker's rows free their
 * slots by themselves; a stream that ends deletes its row.
 */
export const eventStreams = sqliteTable(
  'event_streams',
  {
    id: text('id').primaryKey(),
    org_id: text('org_id').notNull(),
    key_hash: text('key_hash').notNull(),
    expires_at: integer('expires_at').notNull(),
  },
  (t) => [index('event_streams_key').on(t.key_hash, t.expires_at), index('event_streams_org').on(t.org_id, t.expires_at)],
);

/** Tokens agents authenticate with; stored only as SHA-256 hashes. */
export const agentTokens = sqliteTable(
  'agent_tokens',
  {
    id: text('id').primaryKey(),
    name: text('name').notNull(),
    token_hash: text('token_hash').notNull(),
    created_at: createdAt(),
    revoked_at: text('revoked_at'),
    /**
     * The engines its agents may run jobs of, whatever they declare (a claim takes the
     * intersection: src/jobs/state.ts claimJob). Revoking the token ends its leases
     * (a trigger, migrations/0010_fleet_scope.sql).
     */
    engines: text('engines', { mode: 'json' }).$type<string[]>().notNull().default([]),
    /** The configs its agents may run jobs under; null = every config of its engines. */
    configs: text('configs', { mode: 'json' }).$type<string[] | null>(),
    /**
     * What its hosts are and may hold, the operator's word (migrations/0023_fleet_authority.sql):
     * the machine type they are billed as (its rate: MACHINE_RATES), which a host must
     * declare as it is; the most GPUs its live leases hold together; the most leases
     * live at once. A host declaring more is held to these by the claim's own statement
     * (src/jobs/state.ts nextJobFor). The defaults are only for rows older than them.
     */
    machine_type: text('machine_type').notNull().default('unknown'),
    max_gpus: integer('max_gpus').notNull().default(8),
    max_leases: integer('max_leases').notNull().default(8),
    /** Its live leases (outcome not set) and the GPUs they hold: kept by triggers on leases (0023), read by every claim. */
    held_leases: integer('held_leases').notNull().default(0),
    held_gpus: integer('held_gpus').notNull().default(0),
  },
  (t) => [uniqueIndex('agent_tokens_hash').on(t.token_hash)],
);

/** Agents seen recently and what they can serve: tells a job nobody can run why it waits. */
export const agents = sqliteTable('agents', {
  id: text('id').primaryKey(),
  token_id: text('token_id').notNull(),
  name: text('name').notNull(),
  machine_type: text('machine_type').notNull(),
  gpus: integer('gpus').notNull(),
  /** `configs` empty = every config of its engines. */
  engines: text('engines', { mode: 'json' }).$type<string[]>().notNull(),
  configs: text('configs', { mode: 'json' }).$type<string[]>().notNull(),
  last_seen_at: integer('last_seen_at').notNull(),
  /** Epoch ms of its graceful stop: it left the fleet and is no longer counted. */
  left_at: integer('left_at'),
});

/**
 * One row per claim of a job: the lease an agent holds while it runs an attempt.
 * Callbacks authenticate with the lease's job token (stored hashed); a callback on a
 * lease that is no longer the job's current one is refused with 409.
 */
export const leases = sqliteTable(
  'leases',
  {
    id: text('id').primaryKey(),
    job_id: text('job_id').notNull(),
    attempt: integer('attempt').notNull(),
    agent_id: text('agent_id').notNull(),
    token_hash: text('token_hash').notNull(),
    gpus: integer('gpus').notNull(),
    machine_type: text('machine_type').notNull(),
    claimed_at: integer('claimed_at').notNull(),
    ended_at: integer('ended_at'),
    /** How it ended: completed, failed, canceled, released, expired, revoked (its agent token was). */
    outcome: text('outcome'),
    /** The answer given to the callback that ended it, repeated to retries of that callback. */
    response: text('response', { mode: 'json' }).$type<Record<string, unknown>>(),
    /** The job's input files as {name: R2 key}, worked out once at claim (GET /internal/v1/lease/artifacts/{name}). */
    artifacts: text('artifacts', { mode: 'json' }).$type<Record<string, string>>().notNull().default({}),
    /**
     * The agent token that claimed it: every job-token check requires it live, and its
     * revocation ends the lease (outcome `revoked`). Null only for leases older than it.
     */
    agent_token_id: text('agent_token_id'),
  },
  (t) => [
    uniqueIndex('leases_token').on(t.token_hash),
    index('leases_job').on(t.job_id),
    index('leases_live_by_agent_token')
      .on(t.agent_token_id)
      .where(sql`${t.outcome} IS NULL`),
    // Ended leases, for the sweep to delete once no retried callback can need them (src/features/retention/sweep.ts).
    index('leases_ended')
      .on(t.ended_at)
      .where(sql`${t.ended_at} IS NOT NULL`),
  ],
);

/**
 * The scheduler's queue, one row per lane: an organization's queued jobs of one
 * engine, config and GPU count. Kept by triggers on `jobs` (migrations/0005_counters.sql)
 * in the same transaction as every job change: `queued` counts the lane's queued jobs,
 * `head_*` is the job it serves next (highest priority, then oldest), and `share_key` /
 * `last_claimed_at` copy the organization's fair-share standing so one index seek per
 * engine or config finds the next job of the fleet (claimJob, src/jobs/state.ts).
 */
export const queueLanes = sqliteTable(
  'queue_lanes',
  {
    org_id: text('org_id').notNull(),
    engine: text('engine').notNull(),
    config_id: text('config_id').notNull(),
    gpus_used: integer('gpus_used').notNull(),
    queued: integer('queued').notNull().default(0),
    /** The organization's running_jobs / share_weight: lower is served first. */
    share_key: real('share_key').notNull().default(0),
    /** The organization's last_claimed_at (0 = never): the tie-break between equal shares. */
    last_claimed_at: integer('last_claimed_at').notNull().default(0),
    /** The lane's next job, null while the lane is empty. */
    head_job_id: text('head_job_id'),
    head_priority: integer('head_priority'),
    head_queued_at: integer('head_queued_at'),
    /** Why no online agent can serve this lane, as the sweep last found (null: servable). */
    waiting_reason: text('waiting_reason'),
    /** The same as a code (src/jobs/waiting.ts WAITING_REASONS), null: servable. */
    waiting_code: text('waiting_code'),
    /** Epoch ms since when the sweep found no online agent able to take it (null: one can). */
    unservable_since: integer('unservable_since'),
    /** Its jobs queued up to this epoch ms were announced unservable (the job.unservable event, once per job). */
    unservable_announced_to: integer('unservable_announced_to'),
  },
  (t) => [
    primaryKey({ columns: [t.org_id, t.engine, t.config_id, t.gpus_used] }),
    // The fleet's order (fair share, then priority and age) per engine and per config.
    index('queue_lanes_by_engine')
      .on(t.engine, t.share_key, t.last_claimed_at, sql`${t.head_priority} DESC`, t.head_queued_at, t.head_job_id)
      .where(sql`${t.head_job_id} IS NOT NULL`),
    index('queue_lanes_by_config')
      .on(t.config_id, t.share_key, t.last_claimed_at, sql`${t.head_priority} DESC`, t.head_queued_at, t.head_job_id)
      .where(sql`${t.head_job_id} IS NOT NULL`),
  ],
);

/**
 * Daily usage per program, by the day its proofs were created (UTC): what the console's
 * usage page sums, so a range costs its days, not its proofs. Kept by triggers
 * (migrations/0005_counters.sql): proofs when created, instructions and cost when they
 * end, GPU time when each of their leases ends.
 */
export const usageDaily = sqliteTable(
  'usage_daily',
  {
    org_id: text('org_id').notNull(),
    day: text('day').notNull(), // YYYY-MM-DD
    program_id: text('program_id').notNull(),
    proofs: integer('proofs').notNull().default(0),
    instructions: integer('instructions').notNull().default(0),
    gpu_ms: integer('gpu_ms').notNull().default(0),
    cost: integer('cost').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.org_id, t.day, t.program_id] })],
);

/**
 * Local emulation of the Cloudflare Queues HTTP pull API (DEV_QUEUE_EMULATION only):
 * messages the local queue delivered to the Worker, waiting to be pulled.
 */
export const emulatedQueueMessages = sqliteTable(
  'emulated_queue_messages',
  {
    id: text('id').primaryKey(),
    /** Base64 of the JSON body, as the real API returns `json` content. */
    body: text('body').notNull(),
    content_type: text('content_type').notNull(),
    timestamp_ms: integer('timestamp_ms').notNull(),
    attempts: integer('attempts').notNull().default(0),
    visible_at: integer('visible_at').notNull(),
    lease_id: text('lease_id'),
    /** Set once delivered max_retries times: kept for inspection, never delivered again. */
    dead_lettered_at: integer('dead_lettered_at'),
  },
  (t) => [index('emulated_queue_visible').on(t.visible_at)],
);

// ---------------------------------------------------------------------------
// Webhooks (docs/callers.md "Webhooks"): endpoints an organization registers, one delivery per
// event and endpoint, and each attempt to send it. Deliveries are inserted by triggers
// on the records' state columns (migrations/0006_webhooks.sql), in the same
// transaction as the change that causes them; src/features/webhooks/delivery.ts sends them.

export const webhookEndpoints = sqliteTable(
  'webhook_endpoints',
  {
    id: text('id').primaryKey(),
    org_id: orgId(),
    url: text('url').notNull(),
    description: text('description').notNull().default(''),
    /** Some of WEBHOOK_EVENTS; null = every event, including ones added later. */
    events: text('events', { mode: 'json' }).$type<WebhookEvent[]>(),
    /** The signing secret (`whsec_…`), AES-GCM encrypted under WEBHOOK_ENCRYPTION_KEY (src/lib/sealing.ts). */
    secret: text('secret').notNull(),
    /** The secret before the last rotation, encrypted; it signs too until previous_secret_expires_at (epoch ms). */
    previous_secret: text('previous_secret'),
    previous_secret_expires_at: integer('previous_secret_expires_at'),
    created_at: createdAt(),
    created_by: text('created_by').notNull(),
    updated_at: text('updated_at'),
    /** A disabled endpoint gets no new deliveries, and its pending ones are not sent. */
    disabled: integer('disabled', { mode: 'boolean' }).notNull().default(false),
    disabled_at: text('disabled_at'),
    /** Why and when: automatically after failing for a day or 20 failed deliveries in a row, or by whom. */
    disabled_reason: text('disabled_reason'),
    /** Deliveries that ended failed (every retry spent) since the last successful attempt. */
    failed_deliveries: integer('failed_deliveries').notNull().default(0),
    /** Epoch ms of the first failed attempt since the last successful one; null while the last attempt succeeded. */
    failing_since: integer('failing_since'),
  },
  // Also the triggers' lookup of an organization's endpoints.
  (t) => [index('webhook_endpoints_org').on(t.org_id, t.created_at)],
);

/**
 * One event for one endpoint. Its id is the `webhook-id` header, the same on every
 * attempt (receivers deduplicate on it); its payload is rendered at the first attempt
 * and sent byte for byte on every later one.
 */
export const webhookDeliveries = sqliteTable(
  'webhook_deliveries',
  {
    id: text('id').primaryKey(), // msg_{32 hex}
    org_id: text('org_id').notNull(),
    endpoint_id: text('endpoint_id').notNull(),
    event_type: text('event_type').notNull(),
    /** What the event is about: program, proof, execution, verification; `test` for webhook.test (subject_id is then the endpoint); `budget` for budget.threshold (subject_id: the organization; payload stored at once). */
    subject_kind: text('subject_kind', { enum: ['program', 'proof', 'execution', 'verification', 'test', 'budget'] }).notNull(),
    subject_id: text('subject_id').notNull(),
    /** When the event happened: the payload's `timestamp`. */
    created_at: createdAt(),
    /**
     * The JSON body; null until the first attempt renders it. Text, not a JSON column:
     * these are the bytes every attempt signs and sends, kept as they were rendered.
     */
    payload: text('payload'),
    status: text('status', { enum: WEBHOOK_DELIVERY_STATUSES }).notNull().default('pending'),
    /** Attempts made, over every redelivery. */
    attempts: integer('attempts').notNull().default(0),
    /** `attempts` when the current round began (0, or at a redelivery): retries back off from here. */
    round_start: integer('round_start').notNull().default(0),
    /** Epoch ms the next attempt is due (pending), or the last one was made. */
    next_attempt_at: integer('next_attempt_at').notNull(),
    /** Why it ended without a successful attempt, when no attempt says it (endpoint disabled or deleted, record gone). */
    last_error: text('last_error'),
  },
  (t) => [
    index('webhook_deliveries_endpoint').on(t.endpoint_id, t.created_at),
    // A record's deletion ends the deliveries about it (src/features/retention/copies.ts).
    index('webhook_deliveries_subject').on(t.subject_id),
    // The sweep's due deliveries (src/jobs/webhooks.ts): pending ones only.
    index('webhook_deliveries_due')
      .on(t.next_attempt_at)
      .where(sql`${t.status} = 'pending'`),
    // A state change's batch reads the deliveries its triggers just made (never attempted) to send them.
    index('webhook_deliveries_unsent')
      .on(t.subject_id)
      .where(sql`${t.attempts} = 0 AND ${t.status} = 'pending'`),
    // Retention (src/jobs/webhooks.ts sweepWebhooks): ended deliveries by age, oldest first,
    // delivered ones (kept WEBHOOK_DELIVERED_KEEP_DAYS) and failed ones (WEBHOOK_RETENTION_DAYS)
    // apart, so neither sweep steps over the other's rows; pending ones are in neither.
    index('webhook_deliveries_delivered_age')
      .on(t.created_at)
      .where(sql`${t.status} = 'delivered'`),
    index('webhook_deliveries_failed_age')
      .on(t.created_at)
      .where(sql`${t.status} = 'failed'`),
  ],
);

/** Each attempt to send a delivery: when, what came back (or what went wrong), how long it took. */
export const webhookAttempts = sqliteTable(
  'webhook_attempts',
  {
    delivery_id: text('delivery_id').notNull(),
    /** 1, 2, ... over the delivery's life. */
    attempt: integer('attempt').notNull(),
    /**
     * Random, per message: the batch that records an attempt recognises its own row by
     * (delivery_id, attempt, claim) (src/features/webhooks/delivery.ts). An integer, not a
     * random text id with an index of its own: an attempt is most of what a failing
     * endpoint's deliveries keep in D1 (docs/contributors.md "What D1 keeps, and past one database").
     */
    claim: integer('claim').notNull(),
    attempted_at: text('attempted_at').notNull(),
    /** The HTTP status, or null when none came (timeout, connection error, refused URL). */
    status_code: integer('status_code'),
    error: text('error'),
    latency_ms: integer('latency_ms').notNull(),
    /** The first bytes of the response body (at most 512 bytes of UTF-8); never the whole body. */
    response_excerpt: text('response_excerpt').notNull().default(''),
  },
  (t) => [primaryKey({ columns: [t.delivery_id, t.attempt] })],
);

export const IDEMPOTENCY_STATES = ['in_flight', 'done'] as const;

/**
 * Idempotency-Key claims and the answers stored under them, per organization
 * (src/middleware/idempotency/; docs/callers.md "Idempotent submissions"). A request with the
 * header claims (org_id, key) with a conditional insert in its first D1 batch (the
 * primary key makes concurrent claims exclusive); the batch that creates its record
 * stores its answer (`done`). Rows expire 24 h after the claim and the cron sweep
 * deletes them in bounded batches.
 */
export const idempotencyKeys = sqliteTable(
  'idempotency_keys',
  {
    org_id: text('org_id').notNull(),
    /** The header's value (1-255 printable ASCII characters). */
    key: text('key').notNull(),
    /** Random per request: which request holds the claim (a stale claim can be taken over). */
    claim_id: text('claim_id').notNull(),
    state: text('state', { enum: IDEMPOTENCY_STATES }).notNull(),
    /** SHA-256 (hex) of method, path, query, media type and body; set with the answer. */
    fingerprint: text('fingerprint'),
    /** The body's length as fingerprinted (multipart boundaries normalized); set with the answer. */
    body_bytes: integer('body_bytes'),
    /** The stored answer: HTTP status and JSON body (text: it may be sealed, src/middleware/idempotency/). */
    status: integer('status'),
    response: text('response'),
    /** Epoch ms of the claim. */
    created_at: integer('created_at').notNull(),
    /** Epoch ms until which an in-flight claim stands; past it, a retry may take the key over (its holder died). */
    locked_until: integer('locked_until').notNull(),
    /** Epoch ms past which the key is free again and the sweep deletes the row (created_at + 24 h). */
    expires_at: integer('expires_at').notNull(),
  },
  (t) => [primaryKey({ columns: [t.org_id, t.key] }), index('idempotency_keys_expiry').on(t.expires_at)],
);

/**
 * The operator's credential for publishing config keys (`npm run admin --
 * create-publisher-token`; prover-agent setup-config --publish). Not an agent token:
 * a GPU host's agent token proves jobs, it never decides what callers verify
 * against. Stored hashed; scoped to the configs it names (null: every config);
 * dies at expires_at (epoch ms) or when revoked.
 */
export const publisherTokens = sqliteTable(
  'publisher_tokens',
  {
    id: text('id').primaryKey(), // pub_{ulid}
    name: text('name').notNull(),
    token_hash: text('token_hash').notNull(),
    config_ids: text('config_ids', { mode: 'json' }).$type<string[] | null>(),
    expires_at: integer('expires_at').notNull(),
    created_at: createdAt(),
    revoked_at: text('revoked_at'),
  },
  (t) => [uniqueIndex('publisher_tokens_hash').on(t.token_hash)],
);

/**
 * Every published version of a config's key files (src/features/configs/keys.ts). Append-only
 * (triggers in migrations/0011_key_publication.sql refuse UPDATE and DELETE): a
 * version's object in R2 (r2_key, one object per upload) is never overwritten, and the
 * config's current version of a key is its highest. Downloads read the row they were
 * issued for.
 */
export const configKeys = sqliteTable(
  'config_keys',
  {
    config_id: text('config_id')
      .notNull()
      .references(() => configs.id),
    name: text('name').notNull(),
    version: integer('version').notNull(),
    /** Lowercase hex SHA-256 of the bytes, declared by the publisher at the upload's start. */
    sha256: text('sha256').notNull(),
    size: integer('size').notNull(),
    r2_key: text('r2_key').notNull(),
    /** Whether the Worker hashed the stored bytes and found the declared digest (too big keys are not: docs/operators.md "Publishing keys"). */
    verified: integer('verified', { mode: 'boolean' }).notNull(),
    published_at: text('published_at').notNull().default(nowIso),
    /** `publisher:{token id}` or `admin` (the operator command). */
    published_by: text('published_by').notNull(),
    upload_id: text('upload_id').notNull(),
  },
  (t) => [primaryKey({ columns: [t.config_id, t.name, t.version] }), uniqueIndex('config_keys_upload').on(t.upload_id)],
);

/**
 * The service's record of key publication, for operators (`npm run admin -- key-history`):
 * every upload started, completed, superseding, refused or aborted. Service-level, so not
 * audit_log (whose rows belong to one organization and are shown to its members).
 * Append-only, like config_keys. An `upload.start` row also holds what the upload
 * promised (its digest, the version it supersedes) for `/complete` to hold it to.
 */
export const keyAudit = sqliteTable(
  'key_audit',
  {
    id: text('id').primaryKey(), // ulid: sorts by time
    config_id: text('config_id').notNull(),
    name: text('name').notNull(),
    action: text('action').notNull(),
    upload_id: text('upload_id'),
    actor: text('actor').notNull(),
    sha256: text('sha256'),
    version: integer('version'),
    detail: text('detail', { mode: 'json' }).$type<Record<string, unknown>>().notNull().default({}),
    created_at: createdAt(),
  },
  (t) => [index('key_audit_config').on(t.config_id, t.id), index('key_audit_upload').on(t.upload_id)],
);

/**
 * An organization's monthly limits (docs/teams.md "Budgets"): spend in micro-USD (the unit of
 * the records' `cost`) and, optionally, GPU-hours, per calendar month (UTC). Null: no
 * such limit. Set by owners and admins (console, `budgets.manage`) and by the operator.
 */
export const budgets = sqliteTable('budgets', {
  org_id: text('org_id').primaryKey(),
  monthly_cost: integer('monthly_cost'),
  monthly_gpu_hours: real('monthly_gpu_hours'),
  updated_at: text('updated_at').notNull().default(nowIso),
  /** Who set it: a user id, or `operator`. */
  updated_by: text('updated_by').notNull(),
});

/**
 * What each organization spent per calendar month (UTC, `YYYY-MM`): the cost of its
 * proofs and executions that ended in it, and the GPU time of its leases that ended in
 * it. Counters kept by triggers in the transaction of each completion
 * (migrations/0016_budgets_estimates.sql), never a sum over jobs.
 */
export const budgetUsage = sqliteTable(
  'budget_usage',
  {
    org_id: text('org_id').notNull(),
    month: text('month').notNull(),
    cost: integer('cost').notNull().default(0),
    gpu_ms: integer('gpu_ms').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.org_id, t.month] })],
);

/** Which metric of a budget a notice is about. */
export const BUDGET_METRICS = ['cost', 'gpu_hours'] as const;
/** The thresholds (% of a limit) that are noticed, once each per month and metric. */
export const BUDGET_THRESHOLDS = [50, 80, 100] as const;

/**
 * The thresholds an organization's usage crossed, once each per month and metric (the
 * primary key makes "once" hold under concurrent completions); each insert raises the
 * `budget.threshold` webhook event by trigger. `used`/`budget` are in the metric's unit
 * (micro-USD, or GPU-hours).
 */
export const budgetNotices = sqliteTable(
  'budget_notices',
  {
    org_id: text('org_id').notNull(),
    month: text('month').notNull(),
    metric: text('metric', { enum: BUDGET_METRICS }).notNull(),
    threshold: integer('threshold').notNull(),
    used: real('used').notNull(),
    budget: real('budget').notNull(),
    created_at: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.org_id, t.month, t.metric, t.threshold] })],
);

/**
 * What the fleet measured proving, per config, machine type, GPUs held and proof type
 * (docs/callers.md "Estimates"): succeeded proofs, and the sums of their cycles, proving time
 * (ms, their charged attempt), cost (micro-USD) and the cross sums a least-squares line
 * through them needs. Kept by a trigger as each proof succeeds.
 */
export const provingRates = sqliteTable(
  'proving_rates',
  {
    config_id: text('config_id').notNull(),
    machine_type: text('machine_type').notNull(),
    gpus: integer('gpus').notNull(),
    proof_type: text('proof_type').notNull(),
    jobs: integer('jobs').notNull().default(0),
    cycles: real('cycles').notNull().default(0),
    proving_ms: real('proving_ms').notNull().default(0),
    cost: real('cost').notNull().default(0),
    cycles_sq: real('cycles_sq').notNull().default(0),
    cycles_ms: real('cycles_ms').notNull().default(0),
    cycles_cost: real('cycles_cost').notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.config_id, t.machine_type, t.gpus, t.proof_type] })],
);

/**
 * The R2 objects of deleted records still to delete (src/features/retention/purge.ts):
 * inserted in the batch that tombstones the record, so a crash after it loses nothing;
 * deleted once every object is gone, so a crash before that leaves the row for the
 * sweep to finish. `keys` is JSON whose string leaves are object keys; `log_job_id`'s
 * log goes too (its chunks listed by prefix, and its compacted object).
 */
export const purges = sqliteTable(
  'purges',
  {
    subject_kind: text('subject_kind', { enum: ['program', 'proof', 'execution', 'verification'] }).notNull(),
    subject_id: text('subject_id').notNull(),
    org_id: text('org_id').notNull(),
    keys: text('keys', { mode: 'json' }).$type<unknown>().notNull(),
    log_job_id: text('log_job_id'),
    /** Epoch ms. */
    created_at: integer('created_at').notNull(),
    // A purge that failed is counted in sweep_failures (kind `purge`), not here.
    /** An archived record's archive object, whose line of it the purge rewrites as its tombstone (src/features/retention/copies.ts). */
    archive_key: text('archive_key'),
  },
  (t) => [primaryKey({ columns: [t.subject_kind, t.subject_id] }), index('purges_age').on(t.created_at)],
);

/**
 * The archive (src/features/retention/archive.ts): finished proofs and executions past
 * ARCHIVE_AFTER_DAYS move out of D1 into R2 objects of NDJSON, one object per
 * organization, kind and day of creation per sweep batch. A row here is one such object:
 * `pending_ids` names the records it takes while it is being written (a crash leaves the
 * row, and the next sweep writes the same object again from them); once written, the
 * records' rows are gone and `pending_ids` is null.
 */
export const archiveObjects = sqliteTable(
  'archive_objects',
  {
    id: integer('id').primaryKey(),
    org_id: text('org_id').notNull(),
    kind: text('kind', { enum: ['proof', 'execution'] }).notNull(),
    /** The records' day of creation, yyyy-mm-dd (UTC): the object's folder. */
    day: text('day').notNull(),
    pending_ids: text('pending_ids', { mode: 'json' }).$type<string[]>(),
    /** Epoch ms. */
    created_at: integer('created_at').notNull(),
    /** Epoch ms when its records' rows were deleted; null while pending. */
    written_at: integer('written_at'),
  },
  (t) => [
    index('archive_objects_pending')
      .on(t.id)
      .where(sql`${t.written_at} IS NULL`),
    // The retention sweep's archived records per organization, by day (src/features/retention/sweep.ts).
    index('archive_objects_org_day').on(t.org_id, t.day),
  ],
);

/**
 * An archived record's stub: which archive object holds it, so a read by id that misses
 * in D1 finds it in the request's one batch and reads one R2 object. WITHOUT ROWID
 * (migrations/0019_archive.sql): one b-tree of (id, object), about 45 bytes a record.
 */
export const archived = sqliteTable(
  'archived',
  {
    id: text('id').primaryKey(),
    object_id: integer('object_id').notNull(),
    /** Set when the archived record is deleted (its files purged): the record reads as its tombstone. */
    deleted_at: text('deleted_at'),
    /** Who deleted it (src/features/retention/copies.ts: the console user, the API key's owner with the key, or `retention`). */
    deleted_by: text('deleted_by'),
  },
  // The retention sweep's undeleted records of an archive object (src/features/retention/sweep.ts).
  (t) => [
    index('archived_live')
      .on(t.object_id)
      .where(sql`${t.deleted_at} IS NULL`),
  ],
);

/** An object a record serves, as the completion that accepted it named it: its R2 key and the SHA-256 (hex) of its bytes. */
export interface ServedObject {
  key: string;
  sha256: string;
}

/**
 * Every object an attempt writes for its job's results (src/jobs/results.ts;
 * migrations/0022_results.sql): a result an agent PUT or sent inline with /complete, a
 * dev proof the Worker sealed. The row is inserted before the object's first byte, at a
 * key of its own that nothing else writes (artifactKey.resultUpload). The completion that
 * accepts some names them on its record and deletes their rows in its transaction; the
 * others are garbage, deleted by the sweep once their lease is over and their object can
 * no longer appear.
 */
export const resultUploads = sqliteTable(
  'result_uploads',
  {
    id: text('id').primaryKey(), // upl_{ulid}
    job_id: text('job_id').notNull(),
    lease_id: text('lease_id').notNull(),
    /** The result's name (ResultName), or `{name}.sealed` for a dev proof the Worker sealed. */
    name: text('name').notNull(),
    /** Epoch ms: its upload may write until started_at + RESULT_UPLOAD_MAX_MS, never after. */
    started_at: integer('started_at').notNull(),
    /** Epoch ms when its object was written whole; null while it is being written (or never was). */
    stored_at: integer('stored_at'),
    size: integer('size'),
    /** Hex SHA-256 of its bytes, computed as they were written. */
    sha256: text('sha256'),
  },
  (t) => [index('result_uploads_lease').on(t.lease_id, t.name), index('result_uploads_job').on(t.job_id)],
);

/** What the sweep does item by item, and may set aside when an item keeps failing (src/jobs/sweep-items.ts). */
export const SWEEP_ITEM_KINDS = ['log', 'purge', 'upload', 'archive'] as const;

/**
 * The sweep's items that failed (src/jobs/sweep-items.ts): retried after a delay growing
 * with `attempts`, then set aside (`set_aside_at`), so that a failing item never keeps
 * the rest waiting. Deleted when the item succeeds, or by the operator's retry-sweep-item.
 */
export const sweepFailures = sqliteTable(
  'sweep_failures',
  {
    kind: text('kind', { enum: SWEEP_ITEM_KINDS }).notNull(),
    /** The item's id: a job's (log), `{subject_kind}:{subject_id}` (purge), an upload's, an archive object's. */
    item: text('item').notNull(),
    attempts: integer('attempts').notNull(),
    last_error: text('last_error').notNull(),
    /** Epoch ms of the last failure. */
    failed_at: integer('failed_at').notNull(),
    /** Epoch ms it was set aside: the sweep no longer tries it. */
    set_aside_at: integer('set_aside_at'),
  },
  (t) => [primaryKey({ columns: [t.kind, t.item] })],
);
