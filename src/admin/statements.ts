// Operator commands as SQL. `npm run admin` (src/tools/admin.ts) runs these through
// `wrangler d1 execute` against the local or a deployed D1; the tests run the same
// statements against the test D1, so what operators run is what is tested.
import { ulid } from 'ulid';
import { randomToken, sha256Hex } from '../lib/crypto.ts';
import { newUserId } from '../lib/ids.ts';
import { normalizeConfigId } from '../lib/schemas.ts';

export interface AdminStep {
  /** SQL to run, in order, in one `wrangler d1 execute`. */
  sql: string[];
  /** What to print once it ran; the last line is the value scripts capture. */
  output: string[];
}

/** A SQL string literal. */
export const lit = (v: string | number | boolean | null): string =>
  v === null ? 'NULL' : typeof v === 'number' ? String(v) : typeof v === 'boolean' ? (v ? '1' : '0') : `'${v.replace(/'/g, "''")}'`;

/** How long a set-password link stays valid. */
export const SET_PASSWORD_LINK_TTL_HOURS = 72;

export interface NewUser {
  email: string;
  orgId: string;
  role: 'owner' | 'admin' | 'member';
  name?: string;
  operator?: boolean;
  /** Where people open the console, for the printed link (e.g. https://proving.example.com). */
  consoleUrl: string;
  /** Set this password hash at once (the `npm start` dev user) instead of printing a set-password link. */
  passwordHash?: string;
}

/**
 * A console user who is a member of an organization with a role (an existing user
 * keeps their account and gets the role), and a one-time link to set the password.
 * The link carries its token after `#`, so it never reaches a server log.
 */
export async function createUser(u: NewUser, token: string = randomToken('pw', 32)): Promise<AdminStep> {
  const email = u.email.trim().toLowerCase();
  if (!/^[^\s@]+@[^\s@]+$/.test(email)) throw new Error(`not an email address: ${u.email}`);
  if (!['owner', 'admin', 'member'].includes(u.role)) throw new Error(`role must be owner, admin or member: ${u.role}`);
  const byEmail = `(SELECT id FROM users WHERE email = ${lit(email)})`;
  const sql = [
    `INSERT INTO users (id, email, name, is_operator) VALUES (${lit(newUserId())}, ${lit(email)}, ${lit(u.name ?? '')}, ${lit(u.operator ?? false)}) ON CONFLICT(email) DO ${u.operator ? 'UPDATE SET is_operator = 1' : 'NOTHING'};`,
    `INSERT INTO memberships (org_id, user_id, role) SELECT id, ${byEmail}, ${lit(u.role)} FROM organizations WHERE id = ${lit(u.orgId)} ON CONFLICT(org_id, user_id) DO UPDATE SET role = excluded.role;`,
  ];
  if (u.passwordHash !== undefined) {
    sql.push(`UPDATE users SET password_hash = ${lit(u.passwordHash)} WHERE email = ${lit(email)};`);
    return { sql, output: [`user ${email} (${u.role} of ${u.orgId})`, email] };
  }
  sql.push(
    `INSERT INTO console_links (id, kind, token_hash, email, user_id, expires_at) VALUES (${lit(`lnk_${ulid().toLowerCase()}`)}, 'set_password', ${lit(await sha256Hex(token))}, ${lit(email)}, ${byEmail}, strftime('%Y-%m-%dT%H:%M:%fZ', 'now', '+${SET_PASSWORD_LINK_TTL_HOURS} hours'));`,
  );
  const link = `${u.consoleUrl.replace(/\/+$/, '')}/console/set-password#token=${token}`;
  return {
    sql,
    output: [`user ${email} (${u.role} of ${u.orgId}); open this link within ${SET_PASSWORD_LINK_TTL_HOURS} hours to set the password (it works once):`, link],
  };
}

export function createOrganization(name: string, id: string = `org_${ulid().toLowerCase()}`): AdminStep {
  return {
    sql: [`INSERT INTO organizations (id, name) VALUES (${lit(id)}, ${lit(name)}) ON CONFLICT(id) DO NOTHING;`],
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
}

/** Sets an organization's quotas and fair-share weight (src/jobs/quotas.ts, claims in src/jobs/state.ts); unnamed ones stay. */
export function setOrganizationLimits(orgId: string, limits: OrganizationLimits): AdminStep {
  const sets: string[] = [];
  const count = (name: string, v: number | null | undefined, min: number) => {
    if (v === undefined) return;
    if (v !== null && (!Number.isSafeInteger(v) || v < min)) throw new Error(`${name} must be an integer ≥ ${min}, not ${v}`);
    sets.push(`${name} = ${lit(v)}`);
  };
  count('max_active_jobs', limits.maxActiveJobs, 0);
  count('max_gpus', limits.maxGpus, 0);
  count('share_weight', limits.shareWeight, 1);
  if (sets.length === 0) throw new Error('name at least one limit to set');
  return {
    sql: [`UPDATE organizations SET ${sets.join(', ')} WHERE id = ${lit(orgId)};`],
    output: [`${orgId}: ${sets.join(', ').replaceAll(' = NULL', ' = default')}`],
  };
}

/** A new API key for an organization. The key itself is printed once and stored only as its SHA-256. */
export async function createApiKey(orgId: string, owner: string, key: string = randomToken('sk')): Promise<AdminStep> {
  const id = `key_${ulid().toLowerCase()}`;
  const hash = await sha256Hex(key);
  return {
    sql: [
      `INSERT INTO api_keys (id, org_id, key_hash, owner, prefix) SELECT ${lit(id)}, id, ${lit(hash)}, ${lit(owner)}, ${lit(key.slice(0, 11))} FROM organizations WHERE id = ${lit(orgId)} ON CONFLICT(key_hash) DO UPDATE SET revoked_at = NULL;`,
    ],
    output: [`api key for ${owner} in ${orgId} (store it now: it is not shown again)`, key],
  };
}

export async function revokeApiKey(key: string): Promise<AdminStep> {
  return {
    sql: [`UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE key_hash = ${lit(await sha256Hex(key))} AND revoked_at IS NULL;`],
    output: ['revoked (if it existed)'],
  };
}

export function revokeApiKeyById(id: string): AdminStep {
  return {
    sql: [`UPDATE api_keys SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ${lit(id)} AND revoked_at IS NULL;`],
    output: ['revoked (if it existed)'],
  };
}

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
  return '0x' + (await sha256Hex(`zkvm-dev/app-vm-commit/v1\0openvm ${TARGET_RELEASE.openvm_version}\0stark-backend ${TARGET_RELEASE.stark_backend_version}\0${openvmToml}`));
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
  if (new TextEncoder().encode(text).length > MAX_OPENVM_TOML_BYTES) throw new Error(`openvm.toml is larger than ${MAX_OPENVM_TOML_BYTES} bytes`);
  if (text.includes('\0')) throw new Error('openvm.toml is not text');
}

export function createConfig(cfg: NewConfig): AdminStep {
  const id = normalizeConfigId(cfg.id ?? `cfg_${ulid()}`);
  if (!/^cfg_[0-9A-HJKMNP-TV-Z]{26}$/.test(id)) throw new Error(`config id must be cfg_{ulid}: ${id}`);
  if (cfg.openvm_toml !== undefined) checkOpenvmToml(cfg.openvm_toml);
  if (!/^0x[0-9a-f]{64}$/.test(cfg.app_vm_commit)) throw new Error('app_vm_commit must be 0x followed by 64 lower-case hex digits');
  const pvb = cfg.public_values_bytes ?? 32;
  if (pvb < 8 || (pvb & (pvb - 1)) !== 0) throw new Error('public_values_bytes must be 8 × a power of two');
  return {
    sql: [
      `INSERT INTO configs (id, openvm_version, stark_backend_version, app_vm_commit, engine, deferral_enabled, public_values_bytes, active, openvm_toml) VALUES (${[
        id,
        cfg.openvm_version,
        cfg.stark_backend_version,
        cfg.app_vm_commit,
        cfg.engine,
        cfg.deferral_enabled,
        pvb,
        cfg.active ?? true,
        cfg.openvm_toml ?? null,
      ]
        .map(lit)
        .join(', ')}) ON CONFLICT(id) DO NOTHING;`,
    ],
    output: [`config ${cfg.engine} openvm ${cfg.openvm_version}`, id],
  };
}

/** Sets (replaces) a config's openvm.toml. Agents re-key from it with `prover-agent setup-config`. */
export function setConfigOpenvmToml(id: string, openvmToml: string): AdminStep {
  checkOpenvmToml(openvmToml);
  const cfg = normalizeConfigId(id);
  return {
    sql: [`UPDATE configs SET openvm_toml = ${lit(openvmToml)} WHERE id = ${lit(cfg)};`],
    output: [`${cfg}: openvm.toml set (${openvmToml.length} characters)`],
  };
}

export function setConfigActive(id: string, active: boolean): AdminStep {
  return {
    sql: [`UPDATE configs SET active = ${lit(active)} WHERE id = ${lit(id)};`],
    output: [`${id} ${active ? 'activated' : 'deactivated'}`],
  };
}

/** A new agent token. Printed once; stored only as its SHA-256. */
export async function createAgentToken(name: string, token: string = randomToken('at')): Promise<AdminStep> {
  const id = `agt_${ulid().toLowerCase()}`;
  return {
    sql: [
      `INSERT INTO agent_tokens (id, name, token_hash) VALUES (${lit(id)}, ${lit(name)}, ${lit(await sha256Hex(token))}) ON CONFLICT(token_hash) DO UPDATE SET revoked_at = NULL, name = excluded.name;`,
    ],
    output: [`agent token ${name} (store it now: it is not shown again)`, token],
  };
}

export async function revokeAgentToken(token: string): Promise<AdminStep> {
  return {
    sql: [`UPDATE agent_tokens SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE token_hash = ${lit(await sha256Hex(token))} AND revoked_at IS NULL;`],
    output: ['revoked (if it existed)'],
  };
}

export function revokeAgentTokenById(id: string): AdminStep {
  return {
    sql: [`UPDATE agent_tokens SET revoked_at = strftime('%Y-%m-%dT%H:%M:%fZ','now') WHERE id = ${lit(id)} AND revoked_at IS NULL;`],
    output: ['revoked (if it existed)'],
  };
}

// Read-only queries for the operator's list commands: one SELECT each, printed as rows.
// Secrets never appear: keys and tokens are stored only as hashes, and those are left out.

/** Organizations with their quotas and fair-share weight (`-` quota: the Worker's ORG_MAX_* default) and current load. */
export const listOrganizations = (): string =>
  `SELECT o.id, o.name, o.created_at, (SELECT count(*) FROM api_keys k WHERE k.org_id = o.id AND k.revoked_at IS NULL) AS active_keys, o.max_active_jobs, o.max_gpus, o.share_weight, o.active_jobs FROM organizations o ORDER BY o.created_at, o.id;`;

export const listUsers = (orgId?: string): string =>
  `SELECT u.id, u.email, u.name, m.org_id, m.role, u.is_operator, u.password_hash IS NOT NULL AS has_password, u.created_at FROM users u LEFT JOIN memberships m ON m.user_id = u.id${orgId === undefined ? '' : ` WHERE m.org_id = ${lit(orgId)}`} ORDER BY u.created_at, u.id;`;

export const listApiKeys = (orgId?: string): string =>
  `SELECT id, org_id, owner, created_at, revoked_at FROM api_keys${orgId === undefined ? '' : ` WHERE org_id = ${lit(orgId)}`} ORDER BY created_at, id;`;

export const listConfigs = (id?: string): string =>
  `SELECT id, engine, openvm_version, stark_backend_version, app_vm_commit, deferral_enabled, public_values_bytes, active, status, openvm_toml IS NOT NULL AS has_openvm_toml, created_at FROM configs${id === undefined ? '' : ` WHERE id = ${lit(normalizeConfigId(id))}`} ORDER BY created_at, id;`;

export const listAgentTokens = (): string => `SELECT id, name, created_at, revoked_at FROM agent_tokens ORDER BY created_at, id;`;

/** Agents that have polled for work; `last_seen_at` is stored in epoch milliseconds. */
export const listAgents = (): string =>
  `SELECT id, name, token_id, machine_type, gpus, engines, configs, strftime('%Y-%m-%dT%H:%M:%fZ', last_seen_at / 1000.0, 'unixepoch') AS last_seen_at FROM agents ORDER BY agents.last_seen_at DESC;`;
