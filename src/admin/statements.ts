// Operator commands as SQL. `npm run admin` (src/tools/admin.ts) runs these through
// `wrangler d1 execute` against the local or a deployed D1; the tests run the same
// statements against the test D1, so what operators run is what is tested. They are
// built with drizzle against src/db/schema.ts, as the Worker's are (a renamed column
// is a type error here too), and rendered to SQL text.
import { and, count, desc, eq, inArray, isNotNull, isNull, notExists, sql, type SQL } from 'drizzle-orm';
import { drizzle } from 'drizzle-orm/sqlite-proxy';
import { DEFAULT_KEY_SCOPE, KEY_SCOPE_NAMES, ROLES, type KeyScope, type Role } from '../auth/permissions.ts';
import {
  agents,
  agentTokens,
  apiKeys,
  sweepFailures,
  auditLog,
  budgets,
  configIdentity,
  configKeys,
  configs,
  consoleLinks,
  keyAudit,
  mailOutbox,
  memberships,
  nowIso,
  organizations,
  programs,
  publisherTokens,
  users,
} from '../db/schema.ts';
import { passwordLinkFor } from '../features/accounts/links.ts';
import { randomToken, sha256Hex } from '../lib/crypto.ts';
import {
  newAgentTokenId,
  newApiKeyId,
  newConfigId,
  newLinkId,
  newMailId,
  newOrganizationId,
  newPublisherTokenId,
  newUserId,
} from '../lib/ids.ts';
import { type MailMessage, SET_PASSWORD_LINK_TTL_HOURS, setPasswordMessage } from '../features/accounts/mail.ts';
import { revoke } from '../lib/revoke.ts';
import { normalizeConfigId, unsafeNameCharacter } from '../lib/schemas.ts';
import { MAX_AGENT_GPUS, MAX_AGENT_LEASES, MAX_MACHINE_TYPE_LENGTH } from '../lib/limits.ts';
import { ENGINE_NAMES, engineTraits } from 'prover-agent/protocol';
import { ulid } from 'ulid';
import { utf8Bytes } from '../lib/bytes.ts';

export interface AdminStep {
  /** SQL to run, in order, in one `wrangler d1 execute`. */
  sql: string[];
  /** What to print once it ran; the last line is the value scripts capture. */
  output: string[];
}

/** drizzle over no database: it only builds statements, which wrangler runs. */
const db = drizzle(() =>
  Promise.reject(new Error('operator statements are run by `wrangler d1 execute` (src/tools/admin.ts), not by drizzle')),
);

/** A SQL literal. */
export function lit(v: unknown): string {
  if (v === null) return 'NULL';
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  if (typeof v === 'string') return `'${v.replace(/'/g, "''")}'`;
  throw new Error(`no SQL literal for ${typeof v} ${String(v)}`);
}

type Statement = { toSQL(): { sql: string; params: unknown[] } };

/**
 * A built statement as SQL text. `wrangler d1 execute --command` binds no parameters,
 * so each of drizzle's `?` placeholders becomes its parameter as a literal; quoted
 * strings and names are passed over whole (a `?` in them is text).
 */
function render(statement: Statement): string {
  const { sql: text, params } = statement.toSQL();
  let next = 0;
  const inlined = text.replace(/'(?:[^']|'')*'|"(?:[^"]|"")*"|\?/g, (m) => (m === '?' ? lit(params[next++]) : m));
  if (next !== params.length) throw new Error(`${params.length} parameters for ${next} placeholders in: ${text}`);
  return `${inlined};`;
}

export { SET_PASSWORD_LINK_TTL_HOURS } from '../features/accounts/mail.ts';

export interface NewUser {
  email: string;
  orgId: string;
  role: Role;
  name?: string;
  operator?: boolean;
  /** Where people open the console, for the link (e.g. https://proving.example.com). */
  consoleUrl: string;
  /**
   * Local seeding only (`npm start`'s dev user, the tests): set this password hash
   * instead of making a set-password link. The operator command never passes it.
   */
  passwordHash?: string;
}

/** A create-user step: its SQL and output, and the set-password message when it makes a link. */
export interface UserStep extends AdminStep {
  /** The set-password link's message, to email (or, with no mail sender, to print: the output's last line is the link). */
  mail?: MailMessage;
}

/** Whether an account has this email, and whether it has a password (the operator command looks before it writes). */
export const findUser = (email: string): string =>
  render(
    db
      .select({ id: users.id, has_password: isNotNull(users.password_hash).as('has_password') })
      .from(users)
      .where(eq(users.email, normalizeEmail(email))),
  );

const normalizeEmail = (email: string) => email.trim().toLowerCase();

/**
 * A console user who is a member of an organization with a role. An existing account
 * keeps its password, always: it only gains the membership (or the role). An account
 * with no password yet (a new one) gets a one-time link to set it, which replaces any
 * earlier one; the SQL itself makes the link only while the account has no password,
 * so what `existing` says is only what to print. The link carries its token after
 * `#`, so it never reaches a server log.
 */
export async function createUser(
  u: NewUser,
  token: string = randomToken('pw', 32),
  existing?: { has_password: boolean },
): Promise<UserStep> {
  const email = normalizeEmail(u.email);
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new Error(`not an email address: ${u.email}`);
  if (!ROLES.includes(u.role)) throw new Error(`role must be ${ROLES.join(', ')}: ${u.role}`);
  checkName('a user name', u.name ?? '');
  const byEmail = sql<string>`${db.select({ id: users.id }).from(users).where(eq(users.email, email))}`;
  const user = db.insert(users).values({ id: newUserId(), email, name: u.name ?? '', is_operator: u.operator ?? false });
  const statements = [
    render(
      u.operator
        ? user.onConflictDoUpdate({ target: users.email, set: { is_operator: true } })
        : user.onConflictDoNothing({ target: users.email }),
    ),
    // Nothing for an organization that does not exist.
    render(
      db
        .insert(memberships)
        .select(
          db
            .select({
              org_id: organizations.id,
              user_id: byEmail.as('user_id'),
              role: sql`${u.role}`.as('role'),
              created_at: nowIso.as('created_at'),
            })
            .from(organizations)
            .where(eq(organizations.id, u.orgId)),
        )
        .onConflictDoUpdate({ target: [memberships.org_id, memberships.user_id], set: { role: sql`excluded.role` } }),
    ),
  ];
  const joined = `user ${email} (${u.role} of ${u.orgId})`;
  if (u.passwordHash !== undefined) {
    statements.push(render(db.update(users).set({ password_hash: u.passwordHash }).where(eq(users.email, email))));
    return { sql: statements, output: [joined, email] };
  }
  if (existing?.has_password) {
    return {
      sql: statements,
      output: [
        `${joined}: ${email} has an account already; its password is unchanged (they sign in with it, or reset it from the sign-in page)`,
        email,
      ],
    };
  }
  const passwordless = and(eq(users.email, email), isNull(users.password_hash));
  statements.push(
    // An earlier unused link dies: one live set-password link per account.
    render(
      revoke(db, consoleLinks, and(eq(consoleLinks.kind, 'set_password'), eq(consoleLinks.email, email), isNull(consoleLinks.used_at))),
    ),
    render(
      passwordLinkFor(
        db,
        { id: newLinkId(), kind: 'set_password', tokenHash: await sha256Hex(token), lifetime: `+${SET_PASSWORD_LINK_TTL_HOURS} hours` },
        passwordless,
      ),
    ),
  );
  const mail = setPasswordMessage({ consoleUrl: u.consoleUrl, token, to: email });
  return {
    sql: statements,
    output: [`${joined}; open this link within ${SET_PASSWORD_LINK_TTL_HOURS} hours to set the password (it works once):`, mail.link!],
    mail,
  };
}

/** A message into the local outbox (MAIL_SENDER = "outbox"), as the Worker's outbox sender stores it. */
export const outboxInsert = (m: MailMessage): string =>
  render(db.insert(mailOutbox).values({ id: newMailId(), to: m.to, subject: m.subject, text: m.text, link: m.link ?? null }));

/** Refuses a name people will read that holds a control or bidirectional formatting character (what the API refuses 422). */
function checkName(what: string, name: string): void {
  const found = unsafeNameCharacter(name);
  if (found) throw new Error(`${what} may not contain control or bidirectional formatting characters (found ${found})`);
}

export function createOrganization(name: string, id: string = newOrganizationId()): AdminStep {
  checkName('an organization name', name);
  return {
    sql: [render(db.insert(organizations).values({ id, name }).onConflictDoNothing({ target: organizations.id }))],
    output: [`organization ${name}`, id],
  };
}

export interface OrganizationLimits {
  /** Most queued-or-running jobs; null = the ORG_MAX_ACTIVE_JOBS default. */
  maxActiveJobs?: number | null;
  /** Most GPUs held by its queued-or-running jobs; null = the ORG_MAX_GPUS default. */
  maxGpus?: number | null;
  /** Its weight in the fair share of the fleet (1 = as any other). */
  shareWeight?: number;
  /** Its jobs' limits, each the default and the ceiling of a request's own (docs/callers.md "Job limits"); null = none. */
  defaultCycleLimit?: number | null;
  defaultCostLimit?: number | null;
  defaultDeadlineSeconds?: number | null;
}

/** Sets an organization's quotas and fair-share weight (src/jobs/quotas.ts, claims in src/jobs/state.ts); unnamed ones stay. */
export function setOrganizationLimits(orgId: string, limits: OrganizationLimits): AdminStep {
  const set: Partial<
    Pick<
      typeof organizations.$inferInsert,
      'max_active_jobs' | 'max_gpus' | 'share_weight' | 'default_cycle_limit' | 'default_cost_limit' | 'default_deadline_seconds'
    >
  > = {};
  const count = <K extends keyof typeof set>(name: K, v: number | null | undefined, min: number) => {
    if (v === undefined) return;
    if (v !== null && (!Number.isSafeInteger(v) || v < min)) throw new Error(`${name} must be an integer ≥ ${min}, not ${v}`);
    set[name] = v as (typeof set)[K];
  };
  count('max_active_jobs', limits.maxActiveJobs, 0);
  count('max_gpus', limits.maxGpus, 0);
  count('share_weight', limits.shareWeight, 1);
  count('default_cycle_limit', limits.defaultCycleLimit, 1);
  count('default_cost_limit', limits.defaultCostLimit, 1);
  count('default_deadline_seconds', limits.defaultDeadlineSeconds, 1);
  const changes = Object.entries(set).map(([name, v]) => `${name} = ${v ?? 'default'}`);
  if (changes.length === 0) throw new Error('name at least one limit to set');
  return {
    sql: [render(db.update(organizations).set(set).where(eq(organizations.id, orgId)))],
    output: [`${orgId}: ${changes.join(', ')}`],
  };
}

/**
 * Sets an organization's monthly budget (docs/teams.md "Budgets"; src/jobs/budgets.ts):
 * spend in micro-USD and GPU-hours per calendar month (UTC), null for no such limit;
 * an unnamed one stays. Nothing changes (the tool then fails) for an unknown organization.
 */
export function setOrganizationBudget(orgId: string, limits: { monthlyCost?: number | null; monthlyGpuHours?: number | null }): AdminStep {
  const set: Partial<Pick<typeof budgets.$inferInsert, 'monthly_cost' | 'monthly_gpu_hours'>> = {};
  if (limits.monthlyCost !== undefined) {
    if (limits.monthlyCost !== null && !(Number.isSafeInteger(limits.monthlyCost) && limits.monthlyCost > 0))
      throw new Error(`the spending budget must be a positive whole number of micro-USD, not ${limits.monthlyCost}`);
    set.monthly_cost = limits.monthlyCost;
  }
  if (limits.monthlyGpuHours !== undefined) {
    if (limits.monthlyGpuHours !== null && !(Number.isFinite(limits.monthlyGpuHours) && limits.monthlyGpuHours > 0))
      throw new Error(`the GPU-hour budget must be a positive number, not ${limits.monthlyGpuHours}`);
    set.monthly_gpu_hours = limits.monthlyGpuHours;
  }
  if (Object.keys(set).length === 0) throw new Error('name at least one budget to set');
  const changes = Object.entries(set).map(([name, v]) => `${name} = ${v ?? 'none'}`);
  return {
    sql: [
      render(
        db
          .insert(budgets)
          .select(
            db
              .select({
                org_id: organizations.id,
                monthly_cost: sql`${set.monthly_cost ?? null}`.as('monthly_cost'),
                monthly_gpu_hours: sql`${set.monthly_gpu_hours ?? null}`.as('monthly_gpu_hours'),
                updated_at: nowIso.as('updated_at'),
                updated_by: sql`'operator'`.as('updated_by'),
              })
              .from(organizations)
              .where(eq(organizations.id, orgId)),
          )
          .onConflictDoUpdate({ target: budgets.org_id, set: { ...set, updated_at: nowIso, updated_by: 'operator' } }),
      ),
    ],
    output: [`${orgId}: ${changes.join(', ')}`],
  };
}

/** Who the audit log names for what an operator does here: the tool has no signed-in user. */
export const OPERATOR = 'operator (npm run admin)';

/**
 * The audit entry of an operator's change (issue 29 finding 9; its actions are AuditAction's,
 * src/features/accounts/audit.ts), inserted from the row it
 * changed (`from`, where `where` holds), so an entry exists exactly when the change does:
 * run before the change when the change makes `where` false (a revoke), after it otherwise.
 */
function operatorAudit(
  from: SQL,
  orgId: SQL,
  action: 'api_key.create' | 'api_key.revoke' | 'retention.update',
  target: SQL,
  detail: SQL,
  where: SQL,
) {
  return db
    .insert(auditLog)
    .select(sql`SELECT ${ulid()}, ${orgId}, NULL, ${OPERATOR}, ${action}, ${target}, ${detail}, ${nowIso} FROM ${from} WHERE ${where}`);
}

/**
 * An organization's retention (docs/callers.md "Deleting records"): days its
 * finished proofs', executions' and verifications' files are kept, or null for good. Audited.
 */
export function setOrganizationRetention(orgId: string, days: number | null): AdminStep {
  if (days !== null && (!Number.isSafeInteger(days) || days < 1 || days > 3650))
    throw new Error(`retention must be 1..3650 days or forever, not ${days}`);
  return {
    sql: [
      render(db.update(organizations).set({ retention_days: days }).where(eq(organizations.id, orgId))),
      render(
        operatorAudit(
          sql`${organizations}`,
          sql`${organizations.id}`,
          'retention.update',
          sql`${organizations.id}`,
          sql`json_object('retention_days', ${days})`,
          eq(organizations.id, orgId),
        ),
      ),
    ],
    output: [`${orgId}: retention = ${days === null ? 'forever' : `${days} days`}`],
  };
}

/**
 * A new API key for an organization, printed once and stored only as its SHA-256. An
 * operator-made key has no creator user, so its scope alone bounds it
 * (src/auth/permissions.ts KEY_SCOPES; `full` is an owner's rights). A given `key` is
 * imported: a value stored already, live or revoked, in any organization, is refused by
 * the insert itself (the unique index on the hash: importRefusal() words it), so a dead
 * key never comes back.
 */
export async function createApiKey(
  orgId: string,
  owner: string,
  key: string = randomToken('sk'),
  scope: KeyScope = DEFAULT_KEY_SCOPE,
): Promise<AdminStep> {
  if (!KEY_SCOPE_NAMES.includes(scope)) throw new Error(`scope must be ${KEY_SCOPE_NAMES.join(', ')}: ${scope}`);
  checkName('a key owner', owner);
  const id = newApiKeyId();
  const row = {
    id: sql`${id}`.as('id'),
    org_id: organizations.id,
    key_hash: sql`${await sha256Hex(key)}`.as('key_hash'),
    owner: sql`${owner}`.as('owner'),
    created_at: nowIso.as('created_at'),
    revoked_at: sql`NULL`.as('revoked_at'),
    prefix: sql`${key.slice(0, 11)}`.as('prefix'),
    user_id: sql`NULL`.as('user_id'),
    last_used_at: sql`NULL`.as('last_used_at'),
    scope: sql`${scope}`.as('scope'),
    name: sql`NULL`.as('name'),
  };
  return {
    sql: [
      // Nothing for an organization that does not exist.
      render(db.insert(apiKeys).select(db.select(row).from(organizations).where(eq(organizations.id, orgId)))),
      render(
        operatorAudit(
          sql`${apiKeys}`,
          sql`${apiKeys.org_id}`,
          'api_key.create',
          sql`${apiKeys.id}`,
          sql`json_object('prefix', ${apiKeys.prefix}, 'owner', ${apiKeys.owner}, 'scope', ${apiKeys.scope})`,
          eq(apiKeys.id, id),
        ),
      ),
    ],
    output: [`${scope} api key for ${owner} in ${orgId} (store it now: it is not shown again)`, key],
  };
}

/**
 * What to tell the operator when an import failed because its value is stored already
 * (the unique index on the hash refused it; `error` is the database's message), or null
 * for any other failure. Values are never reused: one that leaked and was revoked must
 * not come back, in its organization or another.
 */
export function importRefusal(error: string): string | null {
  if (/UNIQUE constraint failed: api_keys\.key_hash/.test(error))
    return 'that API key value is stored already, live or revoked, in this or another organization: a key value is never reused (leave out --key to have a new one made)';
  if (/UNIQUE constraint failed: agent_tokens\.token_hash/.test(error))
    return 'that agent token value is stored already, live or revoked: a token value is never reused';
  if (/UNIQUE constraint failed: publisher_tokens\.token_hash/.test(error))
    return 'that publisher token value is stored already, live or revoked: a token value is never reused';
  return null;
}

const revoked = (statement: Statement, audit?: Statement): AdminStep => ({
  sql: [...(audit ? [render(audit)] : []), render(statement)],
  output: ['revoked (if it existed)'],
});

/** An API key's revocation by an operator, and its audit entry (written first: only while the key is live). */
const revokeKey = (which: SQL) =>
  revoked(
    revoke(db, apiKeys, which),
    operatorAudit(
      sql`${apiKeys}`,
      sql`${apiKeys.org_id}`,
      'api_key.revoke',
      sql`${apiKeys.id}`,
      sql`json_object('prefix', ${apiKeys.prefix}, 'owner', ${apiKeys.owner}, 'name', ${apiKeys.name})`,
      and(which, isNull(apiKeys.revoked_at))!,
    ),
  );

export const revokeApiKey = async (key: string): Promise<AdminStep> => revokeKey(eq(apiKeys.key_hash, await sha256Hex(key)));

export const revokeApiKeyById = (id: string): AdminStep => revokeKey(eq(apiKeys.id, id));

export interface NewConfig {
  id?: string;
  openvm_version: string;
  stark_backend_version: string;
  app_vm_commit: string;
  engine: 'dev' | 'openvm';
  deferral_enabled: boolean;
  public_values_bytes?: number;
  active?: boolean;
  /** The config's openvm.toml text (served at GET /v1/configs/{id}/config; agents key from it). */
  openvm_toml?: string;
}

/**
 * The openvm.toml of dev-engine configs: the extensions the dev engine executes
 * (shared/spec/guest-abi.md), named as openvm v2.0.1 names them
 * (examples/keccak/openvm.toml, examples/sha2/openvm.toml).
 */
/**
 * The zkVM release this service targets: openvm v2.0.1 (openvm v2.0.1:Cargo.toml:2), built
 * on stark-backend v2.0.0 (v2.0.1:Cargo.toml:119, `openvm-stark-backend = { version =
 * "2.0.0", ... tag = "v2.0.0" }`). Dev configs say so too.
 */
export const TARGET_RELEASE = { openvm_version: '2.0.1', stark_backend_version: '2.0.0' } as const;

/**
 * A dev config's app_vm_commit: the dev engine's stand-in for the commitment `cargo openvm
 * commit` makes to a VM configuration, a SHA-256 of the release and the config's
 * openvm.toml, so that it describes what the config is (and changes when it does).
 */
export async function devAppVmCommit(openvmToml: string): Promise<string> {
  return (
    '0x' +
    (await sha256Hex(
      `zkvm-dev/app-vm-commit/v1\0openvm ${TARGET_RELEASE.openvm_version}\0stark-backend ${TARGET_RELEASE.stark_backend_version}\0${openvmToml}`,
    ))
  );
}

export const DEV_ENGINE_OPENVM_TOML = `# The VM the dev engine executes (RV32IM, io, keccak, SHA-2). Dev proofs are not zero-knowledge proofs.
[app_vm_config.rv32i]
[app_vm_config.rv32m]
[app_vm_config.io]
[app_vm_config.keccak]
[app_vm_config.sha2]
`;

/** Largest openvm.toml accepted (real ones are a few hundred bytes). */
export const MAX_OPENVM_TOML_BYTES = 64 * 1024;

function checkOpenvmToml(text: string): void {
  if (utf8Bytes(text).length > MAX_OPENVM_TOML_BYTES) throw new Error(`openvm.toml is larger than ${MAX_OPENVM_TOML_BYTES} bytes`);
  if (text.includes('\0')) throw new Error('openvm.toml is not text');
}

export function createConfig(cfg: NewConfig): AdminStep {
  const id = normalizeConfigId(cfg.id ?? newConfigId());
  if (!/^cfg_[0-9A-HJKMNP-TV-Z]{26}$/.test(id)) throw new Error(`config id must be cfg_{ulid}: ${id}`);
  if (cfg.openvm_toml !== undefined) checkOpenvmToml(cfg.openvm_toml);
  if (!/^0x[0-9a-f]{64}$/.test(cfg.app_vm_commit)) throw new Error('app_vm_commit must be 0x followed by 64 lower-case hex digits');
  const pvb = cfg.public_values_bytes ?? 32;
  if (pvb < 8 || (pvb & (pvb - 1)) !== 0) throw new Error('public_values_bytes must be 8 × a power of two');
  return {
    sql: [
      render(
        db
          .insert(configs)
          .values({
            id,
            openvm_version: cfg.openvm_version,
            stark_backend_version: cfg.stark_backend_version,
            app_vm_commit: cfg.app_vm_commit,
            engine: cfg.engine,
            deferral_enabled: cfg.deferral_enabled,
            public_values_bytes: pvb,
            active: cfg.active ?? true,
            openvm_toml: cfg.openvm_toml ?? null,
          })
          .onConflictDoNothing({ target: configs.id }),
      ),
    ],
    output: [`config ${cfg.engine} openvm ${cfg.openvm_version}`, id],
  };
}

/** Sets (replaces) a config's openvm.toml. Agents re-key from it with `prover-agent setup-config`. */
export function setConfigOpenvmToml(id: string, openvmToml: string): AdminStep {
  checkOpenvmToml(openvmToml);
  const cfg = normalizeConfigId(id);
  return {
    sql: [render(db.update(configs).set({ openvm_toml: openvmToml }).where(eq(configs.id, cfg)))],
    output: [`${cfg}: openvm.toml set (${openvmToml.length} characters)`],
  };
}

/**
 * A dev config seeded by an older `npm start`, made the targeted release's: its versions,
 * and its app_vm_commit only while no program uses the config (programs' baselines and
 * dev proofs are bound to the commit they were made under).
 */
export function upgradeDevConfig(id: string, old: { openvm_version: string; app_vm_commit: string }, appVmCommit: string): AdminStep {
  const unused = notExists(
    db
      .select({ one: sql`1` })
      .from(programs)
      .where(eq(programs.config_id, id)),
  );
  return {
    sql: [
      render(
        db
          .update(configs)
          .set(TARGET_RELEASE)
          .where(and(eq(configs.id, id), eq(configs.openvm_version, old.openvm_version))),
      ),
      render(
        db
          .update(configs)
          .set({ app_vm_commit: appVmCommit })
          .where(and(eq(configs.id, id), eq(configs.app_vm_commit, old.app_vm_commit), unused)),
      ),
    ],
    output: [],
  };
}

export function setConfigActive(id: string, active: boolean): AdminStep {
  return {
    sql: [render(db.update(configs).set({ active }).where(eq(configs.id, id)))],
    output: [`${id} ${active ? 'activated' : 'deactivated'}`],
  };
}

/**
 * What an agent token lets its agents run: jobs of these engines, under these configs
 * (null: every config of the engines). A claim takes only jobs inside it, whatever the
 * agent declares (src/jobs/state.ts nextJobFor).
 */
export interface AgentTokenScope {
  engines: string[];
  configs: string[] | null;
}

/**
 * What an agent token's hosts are and may hold, whatever they declare (src/jobs/state.ts
 * nextJobFor): the machine type they are billed as (its rate is MACHINE_RATES'), which a
 * host must declare as it is; the most GPUs its live leases hold together (0: jobs of
 * GPU-less engines only); the most leases live at once.
 */
export interface AgentTokenLimits {
  machineType: string;
  maxGpus: number;
  maxLeases: number;
}

/**
 * Why a machine type name cannot be a token's (null: it can): a plain name of letters,
 * digits, `.`, `_` and `-`, starting with a letter or digit, and none that every
 * JavaScript object answers to ("constructor", "toString"...): a rate read by such a name
 * from a plain object was a function, and the cost NaN. (migrations/0023_fleet_authority.sql
 * keeps only such names of existing tokens.)
 */
export function machineTypeProblem(name: string): string | null {
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name) || name.length > MAX_MACHINE_TYPE_LENGTH)
    return `a machine type is 1 to ${MAX_MACHINE_TYPE_LENGTH} letters, digits, '.', '_' or '-', starting with a letter or digit: ${JSON.stringify(name)}`;
  if (name in Object.prototype) return `${JSON.stringify(name)} is a name every JavaScript object has; name the machine type otherwise`;
  return null;
}

function checkLimits(limits: Partial<AgentTokenLimits>): void {
  if (limits.machineType !== undefined) {
    const problem = machineTypeProblem(limits.machineType);
    if (problem) throw new Error(problem);
  }
  if (limits.maxGpus !== undefined && !(Number.isSafeInteger(limits.maxGpus) && limits.maxGpus >= 0 && limits.maxGpus <= MAX_AGENT_GPUS))
    throw new Error(`the most GPUs of an agent token is a whole number 0 to ${MAX_AGENT_GPUS}, not ${limits.maxGpus}`);
  if (
    limits.maxLeases !== undefined &&
    !(Number.isSafeInteger(limits.maxLeases) && limits.maxLeases >= 1 && limits.maxLeases <= MAX_AGENT_LEASES)
  )
    throw new Error(`the most leases of an agent token is a whole number 1 to ${MAX_AGENT_LEASES}, not ${limits.maxLeases}`);
}

const describeLimits = (l: AgentTokenLimits) =>
  `machine type ${l.machineType}, at most ${l.maxGpus} GPU(s) and ${l.maxLeases} lease(s) at once`;

/**
 * A new agent token with its scope and limits. Printed once; stored only as its SHA-256.
 * A given `token` is imported: a value stored already, live or revoked, is refused by the
 * insert itself (the unique index on the hash; importRefusal()).
 */
export async function createAgentToken(
  name: string,
  scope: AgentTokenScope,
  limits: AgentTokenLimits,
  token: string = randomToken('at'),
): Promise<AdminStep> {
  const unknown = scope.engines.filter((e) => !engineTraits(e));
  if (unknown.length || scope.engines.length === 0)
    throw new Error(`an agent token needs engines among ${ENGINE_NAMES.join(', ')}${unknown.length ? ` (not ${unknown.join(', ')})` : ''}`);
  if (scope.configs?.length === 0) throw new Error('an agent token needs at least one config, or every config of its engines');
  const badIds = scope.configs?.filter((id) => !/^cfg_[0-9A-HJKMNP-TV-Z]{26}$/i.test(id)) ?? [];
  if (badIds.length) throw new Error(`not config ids (cfg_{ulid}): ${badIds.join(', ')}`);
  checkLimits(limits);
  const configIds = scope.configs?.map(normalizeConfigId) ?? null;
  const engines = [...new Set(scope.engines)];
  return {
    sql: [
      render(
        db.insert(agentTokens).values({
          id: newAgentTokenId(),
          name,
          token_hash: await sha256Hex(token),
          engines,
          configs: configIds,
          machine_type: limits.machineType,
          max_gpus: limits.maxGpus,
          max_leases: limits.maxLeases,
        }),
      ),
    ],
    output: [
      `agent token ${name} for ${engines.join(', ')} under ${configIds ? configIds.join(', ') : 'every config of them'}; ${describeLimits(limits)} (store it now: it is not shown again)`,
      token,
    ],
  };
}

/**
 * Sets what a live agent token's hosts are and may hold (`by`: its id or its value);
 * unnamed limits stay. New claims are held to them at once; leases live already run on
 * (revoke the token to end them now).
 */
export async function setAgentTokenLimits(by: { id: string } | { token: string }, limits: Partial<AgentTokenLimits>): Promise<AdminStep> {
  checkLimits(limits);
  const set: Partial<Pick<typeof agentTokens.$inferInsert, 'machine_type' | 'max_gpus' | 'max_leases'>> = {
    machine_type: limits.machineType,
    max_gpus: limits.maxGpus,
    max_leases: limits.maxLeases,
  };
  const changes = Object.entries(set).filter(([, v]) => v !== undefined);
  if (changes.length === 0) throw new Error('name at least one of the machine type, the most GPUs and the most leases');
  const which = 'id' in by ? eq(agentTokens.id, by.id) : eq(agentTokens.token_hash, await sha256Hex(by.token));
  return {
    sql: [
      render(
        db
          .update(agentTokens)
          .set(set)
          .where(and(which, isNull(agentTokens.revoked_at))),
      ),
    ],
    output: [`${'id' in by ? by.id : 'agent token'}: ${changes.map(([k, v]) => `${k} = ${v}`).join(', ')}`],
  };
}

/**
 * The API keys and agent tokens stored with these values, live or revoked (`npm start`
 * looks at its dev credentials before it seeds them: src/tools/start.ts). Two results:
 * keys (key_hash, org_id, revoked_at), then tokens (token_hash, revoked_at); `hashes`
 * names each value's hash.
 */
export async function storedCredentials(values: {
  apiKeys: string[];
  agentTokens: string[];
}): Promise<{ sql: string[]; hashes: Map<string, string> }> {
  const hashes = new Map<string, string>();
  for (const v of [...values.apiKeys, ...values.agentTokens]) hashes.set(v, await sha256Hex(v));
  const of = (vs: string[]) => vs.map((v) => hashes.get(v)!);
  return {
    sql: [
      render(
        db
          .select({ key_hash: apiKeys.key_hash, org_id: apiKeys.org_id, revoked_at: apiKeys.revoked_at })
          .from(apiKeys)
          .where(inArray(apiKeys.key_hash, [...of(values.apiKeys), ''])),
      ),
      render(
        db
          .select({ token_hash: agentTokens.token_hash, revoked_at: agentTokens.revoked_at })
          .from(agentTokens)
          .where(inArray(agentTokens.token_hash, [...of(values.agentTokens), ''])),
      ),
    ],
    hashes,
  };
}

export const revokeAgentToken = async (token: string): Promise<AdminStep> =>
  revoked(revoke(db, agentTokens, eq(agentTokens.token_hash, await sha256Hex(token))));

export const revokeAgentTokenById = (id: string): AdminStep => revoked(revoke(db, agentTokens, eq(agentTokens.id, id)));

/** Longest life of a publisher token, and its default: it is made for one publication round. */
export const MAX_PUBLISHER_TOKEN_TTL_DAYS = 90;
export const DEFAULT_PUBLISHER_TOKEN_TTL_DAYS = 7;

export interface NewPublisherToken {
  name: string;
  /** Configs it may publish keys of; null: every config (say so on purpose: --all-configs). */
  configIds: string[] | null;
  ttlDays?: number;
}

/**
 * A token that publishes config keys (src/features/configs/publisher-auth.ts): the operator's,
 * not an agent's. Stored hashed, scoped, expiring.
 */
export async function createPublisherToken(t: NewPublisherToken, token: string = randomToken('pt'), now = Date.now()): Promise<AdminStep> {
  const ttl = t.ttlDays ?? DEFAULT_PUBLISHER_TOKEN_TTL_DAYS;
  if (!Number.isInteger(ttl) || ttl < 1 || ttl > MAX_PUBLISHER_TOKEN_TTL_DAYS)
    throw new Error(`a publisher token lives 1 to ${MAX_PUBLISHER_TOKEN_TTL_DAYS} days: ${ttl}`);
  if (!token.startsWith('pt_')) throw new Error('a publisher token starts with pt_');
  const scope = t.configIds === null ? null : [...new Set(t.configIds.map((id) => normalizeConfigId(id.trim())))];
  if (scope !== null && scope.length === 0) throw new Error('name the configs the token may publish (or --all-configs)');
  const expiresAt = now + ttl * 24 * 3600 * 1000;
  return {
    sql: [
      render(
        db.insert(publisherTokens).values({
          id: newPublisherTokenId(),
          name: t.name,
          token_hash: await sha256Hex(token),
          config_ids: scope,
          expires_at: expiresAt,
        }),
      ),
    ],
    output: [
      `publisher token ${t.name} for ${scope === null ? 'every config' : scope.join(', ')}, expires ${new Date(expiresAt).toISOString()} (store it now: it is not shown again)`,
      token,
    ],
  };
}

export const revokePublisherToken = async (token: string): Promise<AdminStep> =>
  revoked(revoke(db, publisherTokens, eq(publisherTokens.token_hash, await sha256Hex(token))));

export const revokePublisherTokenById = (id: string): AdminStep => revoked(revoke(db, publisherTokens, eq(publisherTokens.id, id)));

/**
 * The operator command's own publication (`put-config-key`): the object is uploaded
 * first to its own R2 key, then this records it as the key's next version, with the
 * digest computed on the operator's machine, in one `wrangler d1 execute` (a
 * transaction): refused by config_keys' triggers unless `supersedes` is the current
 * version (null: none published).
 */
export function publishConfigKey(k: {
  configId: string;
  name: string;
  uploadId: string;
  r2Key: string;
  sha256: string;
  size: number;
  supersedes: number | null;
}): AdminStep {
  const version = (k.supersedes ?? 0) + 1;
  const configId = normalizeConfigId(k.configId);
  return {
    sql: [
      render(
        db.insert(configKeys).values({
          config_id: configId,
          name: k.name,
          version,
          sha256: k.sha256,
          size: k.size,
          r2_key: k.r2Key,
          verified: true,
          published_by: 'admin',
          upload_id: k.uploadId,
        }),
      ),
      render(
        db.insert(keyAudit).values({
          id: k.uploadId.toUpperCase(),
          config_id: configId,
          name: k.name,
          action: k.supersedes === null ? 'key.publish' : 'key.supersede',
          upload_id: k.uploadId,
          actor: 'admin',
          sha256: k.sha256,
          version,
          detail: { size: k.size, verified: true, supersedes: k.supersedes },
        }),
      ),
    ],
    output: [`published ${k.name} of ${configId} as version ${version} (sha256 ${k.sha256}, ${k.size} bytes)`, k.r2Key],
  };
}

// Read-only queries for the operator's list commands: one SELECT each, printed as rows
// named as the keys below. Secrets never appear: keys and tokens are stored only as
// hashes, and those are left out.

/** Organizations with their quotas and fair-share weight (`-` quota: the Worker's ORG_MAX_* default) and current load. */
export const listOrganizations = (): string =>
  render(
    db
      .select({
        id: organizations.id,
        name: organizations.name,
        created_at: organizations.created_at,
        active_keys: sql<number>`${db
          .select({ n: count() })
          .from(apiKeys)
          .where(and(eq(apiKeys.org_id, organizations.id), isNull(apiKeys.revoked_at)))}`.as('active_keys'),
        max_active_jobs: organizations.max_active_jobs,
        max_gpus: organizations.max_gpus,
        share_weight: organizations.share_weight,
        active_jobs: organizations.active_jobs,
      })
      .from(organizations)
      .orderBy(organizations.created_at, organizations.id),
  );

export const listUsers = (orgId?: string): string =>
  render(
    db
      .select({
        id: users.id,
        email: users.email,
        name: users.name,
        org_id: memberships.org_id,
        role: memberships.role,
        is_operator: users.is_operator,
        has_password: isNotNull(users.password_hash).as('has_password'),
        created_at: users.created_at,
      })
      .from(users)
      .leftJoin(memberships, eq(memberships.user_id, users.id))
      .where(orgId === undefined ? undefined : eq(memberships.org_id, orgId))
      .orderBy(users.created_at, users.id),
  );

export const listApiKeys = (orgId?: string): string =>
  render(
    db
      .select({
        id: apiKeys.id,
        org_id: apiKeys.org_id,
        owner: apiKeys.owner,
        scope: apiKeys.scope,
        created_at: apiKeys.created_at,
        revoked_at: apiKeys.revoked_at,
      })
      .from(apiKeys)
      .where(orgId === undefined ? undefined : eq(apiKeys.org_id, orgId))
      .orderBy(apiKeys.created_at, apiKeys.id),
  );

export const listConfigs = (id?: string): string =>
  render(
    db
      .select({
        ...configIdentity,
        active: configs.active,
        status: configs.status,
        has_openvm_toml: isNotNull(configs.openvm_toml).as('has_openvm_toml'),
        created_at: configs.created_at,
      })
      .from(configs)
      .where(id === undefined ? undefined : eq(configs.id, normalizeConfigId(id)))
      .orderBy(configs.created_at, configs.id),
  );

export const listAgentTokens = (): string =>
  render(
    db
      .select({
        id: agentTokens.id,
        name: agentTokens.name,
        engines: agentTokens.engines,
        configs: agentTokens.configs,
        machine_type: agentTokens.machine_type,
        max_gpus: agentTokens.max_gpus,
        max_leases: agentTokens.max_leases,
        created_at: agentTokens.created_at,
        revoked_at: agentTokens.revoked_at,
      })
      .from(agentTokens)
      .orderBy(agentTokens.created_at, agentTokens.id),
  );

/** Agents that have polled for work, most recently seen first; `last_seen_at` (stored in epoch milliseconds) as ISO 8601. */
export const listAgents = (): string =>
  render(
    db
      .select({
        id: agents.id,
        name: agents.name,
        token_id: agents.token_id,
        machine_type: agents.machine_type,
        gpus: agents.gpus,
        engines: agents.engines,
        configs: agents.configs,
        last_seen_at: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', ${agents.last_seen_at} / 1000.0, 'unixepoch')`.as('last_seen_at'),
      })
      .from(agents)
      .orderBy(desc(agents.last_seen_at)),
  );

/** Publisher tokens: ids, names, scope, expiry and revocation; never the tokens. */
export const listPublisherTokens = (): string =>
  render(
    db
      .select({
        id: publisherTokens.id,
        name: publisherTokens.name,
        config_ids: publisherTokens.config_ids,
        expires_at: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', ${publisherTokens.expires_at} / 1000.0, 'unixepoch')`.as('expires_at'),
        created_at: publisherTokens.created_at,
        revoked_at: publisherTokens.revoked_at,
      })
      .from(publisherTokens)
      .orderBy(publisherTokens.created_at, publisherTokens.id),
  );

/** The published versions of a config's keys (all configs when none is named), newest first. */
export const listConfigKeys = (configId?: string): string =>
  render(
    db
      .select({
        config_id: configKeys.config_id,
        name: configKeys.name,
        version: configKeys.version,
        sha256: configKeys.sha256,
        size: configKeys.size,
        verified: configKeys.verified,
        published_at: configKeys.published_at,
        published_by: configKeys.published_by,
      })
      .from(configKeys)
      .where(configId === undefined ? undefined : eq(configKeys.config_id, normalizeConfigId(configId)))
      .orderBy(configKeys.config_id, configKeys.name, desc(configKeys.version)),
  );

/** Every step of key publication (key_audit), newest first; at most `limit` rows. */
export const keyHistory = (configId?: string, limit = 200): string =>
  render(
    db
      .select({
        at: keyAudit.created_at,
        config_id: keyAudit.config_id,
        name: keyAudit.name,
        action: keyAudit.action,
        version: keyAudit.version,
        sha256: keyAudit.sha256,
        actor: keyAudit.actor,
        upload_id: keyAudit.upload_id,
        detail: keyAudit.detail,
      })
      .from(keyAudit)
      .where(configId === undefined ? undefined : eq(keyAudit.config_id, normalizeConfigId(configId)))
      .orderBy(desc(keyAudit.id))
      .limit(limit),
  );

/**
 * The sweep's items that failed (src/jobs/sweep-items.ts): waiting out their retry delay,
 * or set aside after SWEEP_MAX_ATTEMPTS, the set-aside ones first, with their last error.
 */
export const listSweepFailures = (): string =>
  render(
    db
      .select({
        kind: sweepFailures.kind,
        item: sweepFailures.item,
        attempts: sweepFailures.attempts,
        state: sql<string>`CASE WHEN ${sweepFailures.set_aside_at} IS NOT NULL THEN 'set aside' ELSE 'retrying' END`.as('state'),
        failed_at: sql<string>`strftime('%Y-%m-%dT%H:%M:%fZ', ${sweepFailures.failed_at} / 1000.0, 'unixepoch')`.as('failed_at'),
        last_error: sweepFailures.last_error,
      })
      .from(sweepFailures)
      .orderBy(sql`${sweepFailures.set_aside_at} IS NULL`, desc(sweepFailures.failed_at)),
  );

/** Puts a failed sweep item back in line: its failures are forgotten, and the next sweep tries it. */
export const retrySweepItem = (kind: string, item: string): AdminStep => ({
  sql: [render(db.delete(sweepFailures).where(and(eq(sweepFailures.kind, kind as SweepFailureKind), eq(sweepFailures.item, item))))],
  output: [`${kind} ${item}: back in line for the next sweep`],
});

type SweepFailureKind = (typeof sweepFailures.$inferSelect)['kind'];
