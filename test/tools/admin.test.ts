// The operator command (src/tools/admin.ts) end to end: real `wrangler d1 execute`
// runs against a local D1 in a temporary --persist-to directory. The test reads that D1
// back through its SQLite file (node:sqlite), not through one more `wrangler` process per
// look (seconds apiece on a busy host, most of this file's time).
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lit } from '../../src/admin/statements.ts';
import { applyLocalMigrations, ROOT, type Row } from '../../src/tools/wrangler.ts';

const ADMIN = path.join(ROOT, 'src', 'tools', 'admin.ts');
const COMMIT = '0x' + 'ab'.repeat(32);
let dir: string;

interface Run {
  code: number;
  stdout: string;
  stderr: string;
  lastLine: string;
}

/** `npm run admin -- ...args`, without the location flags; `env` adds to the operator's environment. */
function adminRaw(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [ADMIN, ...args],
      { cwd: ROOT, env: { ...process.env, WRANGLER_SEND_METRICS: 'false', ...env } },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        resolve({ code, stdout, stderr, lastLine: stdout.trimEnd().split('\n').at(-1) ?? '' });
      },
    );
  });
}

/** `npm run admin -- ...args --local --persist-to <the test's D1>`. */
const admin = (...args: string[]) => adminRaw([...args, '--local', '--persist-to', dir]);
/** The same with no mail sender (`MAIL_SENDER=` overrides the local "outbox" of src/tools/dev-vars.ts). */
const adminNoMail = (...args: string[]) => adminRaw([...args, '--local', '--persist-to', dir], { MAIL_SENDER: '' });

/** The SQLite file wrangler keeps the test's local D1 in (beside it, miniflare's metadata.sqlite). */
function d1File(): string {
  const objects = path.join(dir, 'v3', 'd1', 'miniflare-D1DatabaseObject');
  const files = readdirSync(objects).filter((f) => f.endsWith('.sqlite') && f !== 'metadata.sqlite');
  expect(files).toHaveLength(1);
  return path.join(objects, files[0]);
}

/**
 * One statement on the test's D1, straight on its SQLite file. Only between admin runs:
 * each is awaited to its exit, so no workerd holds the file.
 */
async function rows(sql: string): Promise<Row[]> {
  const db = new DatabaseSync(d1File());
  try {
    return db
      .prepare(sql)
      .all()
      .map((r) => ({ ...r }));
  } finally {
    db.close();
  }
}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-admin-test-'));
  await applyLocalMigrations(dir);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

// Each `npm run admin` is a `wrangler` process (seconds apiece, ten times that on a loaded
// 2-core host: npm test runs the other projects alongside): a test gives up late.
describe('npm run admin', { timeout: 300_000 }, () => {
  it('creates an organization and an API key, stores only the key’s SHA-256, and revokes it once', async () => {
    const org = await admin('create-org', '--name', "O'Brien; Labs");
    expect(org.code, org.stderr).toBe(0);
    expect(org.lastLine).toMatch(/^org_[0-9a-z]{26}$/);

    const created = await admin('create-api-key', '--org', org.lastLine, '--owner', 'ops@example.com');
    expect(created.code, created.stderr).toBe(0);
    const key = created.lastLine;
    expect(key).toMatch(/^sk_[0-9a-f]{48}$/);

    const revoked = await admin('revoke-api-key', '--key', key);
    expect(revoked.code, revoked.stderr).toBe(0);

    const stored = await rows(
      `SELECT k.*, o.name AS org_name FROM api_keys k JOIN organizations o ON o.id = k.org_id WHERE k.org_id = ${lit(org.lastLine)}`,
    );
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ owner: 'ops@example.com', key_hash: sha256(key), org_name: "O'Brien; Labs", scope: 'full' });
    expect(stored[0].revoked_at).toEqual(expect.any(String));
    expect(JSON.stringify(stored)).not.toContain(key);

    const again = await admin('revoke-api-key', '--key', key);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('no active API key has that value');
  });

  it('creates an API key with a scope, which alone bounds it (no creator); refuses an unknown scope', async () => {
    const org = (await admin('create-org', '--name', 'Scoped')).lastLine;
    const created = await admin('create-api-key', '--org', org, '--owner', 'dashboard', '--scope', 'read');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('read api key for dashboard');
    expect(await rows(`SELECT scope, user_id FROM api_keys WHERE key_hash = ${lit(sha256(created.lastLine))}`)).toEqual([
      { scope: 'read', user_id: null },
    ]);
    const bad = await admin('create-api-key', '--org', org, '--owner', 'x', '--scope', 'admin');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--scope must be full, prove, read');
  });

  it('rejects invalid configs with a message and exit code 2, printing nothing', async () => {
    const base = ['create-config', '--openvm-version', '1.4.0', '--stark-backend-version', '1.2.0', '--engine', 'dev'];
    const badCommit = await admin(...base, '--app-vm-commit', '0xABC');
    expect(badCommit.code).toBe(2);
    expect(badCommit.stderr).toContain('app_vm_commit must be 0x followed by 64 lower-case hex digits');
    expect(badCommit.stdout).toBe('');

    const badEngine = await admin(...base.slice(0, -1), 'risc0', '--app-vm-commit', COMMIT);
    expect(badEngine.code).toBe(2);
    expect(badEngine.stderr).toContain('--engine must be dev or openvm');

    const badPvb = await admin(...base, '--app-vm-commit', COMMIT, '--public-values-bytes', '48');
    expect(badPvb.code).toBe(2);
    expect(badPvb.stderr).toContain('public_values_bytes must be 8 × a power of two');

    const missing = await admin('create-config', '--engine', 'dev');
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('--openvm-version is required');
  });

  it('creates a config with its openvm.toml and prints its id last; the toml can be replaced', async () => {
    const toml = path.join(dir, 'openvm.toml');
    await writeFile(toml, "[app_vm_config.rv32i]\n[app_vm_config.io]\n# it's quoted\n");
    const base = [
      'create-config',
      '--openvm-version',
      '2.0.1',
      '--stark-backend-version',
      '2.0.1',
      '--app-vm-commit',
      COMMIT,
      '--engine',
      'openvm',
    ];
    const withoutToml = await admin(...base);
    expect(withoutToml.code).toBe(2);
    expect(withoutToml.stderr).toContain('--openvm-toml is required for openvm configs');

    const created = await admin(...base, '--openvm-toml', toml, '--deferral', '--inactive');
    expect(created.code, created.stderr).toBe(0);
    const id = created.lastLine;
    expect(id).toMatch(/^cfg_[0-9A-HJKMNP-TV-Z]{26}$/);

    const listed = await admin('list-configs', '--json');
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout)).toContainEqual(
      expect.objectContaining({
        id,
        engine: 'openvm',
        app_vm_commit: COMMIT,
        deferral_enabled: 1,
        public_values_bytes: 32,
        active: 0,
        has_openvm_toml: 1,
      }),
    );
    expect(await rows(`SELECT openvm_toml FROM configs WHERE id = ${lit(id)}`)).toEqual([
      { openvm_toml: "[app_vm_config.rv32i]\n[app_vm_config.io]\n# it's quoted\n" },
    ]);

    await writeFile(toml, '[app_vm_config.rv32m]\n');
    const set = await admin('set-config-toml', id.toLowerCase(), toml);
    expect(set.code, set.stderr).toBe(0);
    expect(await rows(`SELECT openvm_toml FROM configs WHERE id = ${lit(id)}`)).toEqual([{ openvm_toml: '[app_vm_config.rv32m]\n' }]);
    // What cargo-openvm v2.0.1 cannot key is refused, saying why, and nothing changes.
    await writeFile(toml, '[app_vm_config.system.config]\nnum_public_values = 64\n');
    const unkeyable = await admin('set-config-toml', id, toml);
    expect(unkeyable.code).toBe(2);
    expect(unkeyable.stderr).toMatch(
      /num_public_values = 64: cargo openvm keygen only supports 32 \(v2\.0\.1:crates\/cli\/src\/commands\/keygen\.rs/,
    );
    expect(await rows(`SELECT openvm_toml FROM configs WHERE id = ${lit(id)}`)).toEqual([{ openvm_toml: '[app_vm_config.rv32m]\n' }]);
    const created2 = await admin(...base, '--openvm-toml', toml);
    expect(created2.code).toBe(2);
    expect(created2.stderr).toContain('cargo openvm cannot serve this config');
    const ok = path.join(dir, 'ok.toml');
    await writeFile(ok, '[app_vm_config.rv32i]\n');
    const prerelease = await admin('create-config', '--openvm-version', '2.0.0-rc.7', ...base.slice(3), '--openvm-toml', ok);
    expect(prerelease.code).toBe(2);
    expect(prerelease.stderr).toMatch(/2\.0\.0-rc\.7 is a pre-release/);

    const unknown = await admin('set-config-toml', 'cfg_01JD00000000000000000000ZZ', toml);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no config cfg_01JD00000000000000000000ZZ');
  });

  it('set-org-limits sets quotas and the fair-share weight, `default` clears a quota, and list-orgs shows them', async () => {
    const org = (await admin('create-org', '--name', 'quota-org')).lastLine;
    const set = await admin('set-org-limits', org, '--max-jobs', '50', '--max-gpus', '8', '--weight', '3');
    expect(set.code, set.stderr).toBe(0);
    expect(await rows(`SELECT max_active_jobs, max_gpus, share_weight FROM organizations WHERE id = ${lit(org)}`)).toEqual([
      { max_active_jobs: 50, max_gpus: 8, share_weight: 3 },
    ]);
    expect((await admin('set-org-limits', org, '--max-gpus', 'default')).code).toBe(0);
    expect(await rows(`SELECT max_active_jobs, max_gpus, share_weight FROM organizations WHERE id = ${lit(org)}`)).toEqual([
      { max_active_jobs: 50, max_gpus: null, share_weight: 3 },
    ]);
    const listed = JSON.parse((await admin('list-orgs', '--json')).stdout) as Row[];
    expect(listed.find((r) => r.id === org)).toMatchObject({ max_active_jobs: 50, max_gpus: null, share_weight: 3, active_jobs: 0 });

    for (const bad of [['--max-jobs', '-1'], ['--max-jobs', '1.5'], ['--weight', '0'], ['--weight', 'default'], []]) {
      const r = await admin('set-org-limits', org, ...bad);
      expect(r.code, bad.join(' ')).toBe(2);
    }
    const unknown = await admin('set-org-limits', 'org_nope', '--max-jobs', '1');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no organization org_nope');
  });

  it('set-org-limits sets the defaults of the organization’s job limits, and `default` clears one (README "Job limits")', async () => {
    const org = (await admin('create-org', '--name', 'limits-org')).lastLine;
    const set = await admin('set-org-limits', org, '--cycle-limit', '1000000', '--cost-limit', '5000', '--deadline-seconds', '600');
    expect(set.code, set.stderr).toBe(0);
    const read = () =>
      rows(`SELECT default_cycle_limit, default_cost_limit, default_deadline_seconds FROM organizations WHERE id = ${lit(org)}`);
    expect(await read()).toEqual([{ default_cycle_limit: 1000000, default_cost_limit: 5000, default_deadline_seconds: 600 }]);
    expect((await admin('set-org-limits', org, '--cost-limit', 'default')).code).toBe(0);
    expect(await read()).toEqual([{ default_cycle_limit: 1000000, default_cost_limit: null, default_deadline_seconds: 600 }]);
    for (const bad of [
      ['--cycle-limit', '0'],
      ['--deadline-seconds', 'soon'],
    ])
      expect((await admin('set-org-limits', org, ...bad)).code, bad.join(' ')).toBe(2);
  });

  it('create-user makes the first owner and, with no mail sender, prints a one-time set-password link; the token is stored hashed', async () => {
    const org = (await admin('create-org', '--name', 'Console Co')).lastLine;
    const made = await adminNoMail('create-user', '--email', 'Founder@Example.com', '--org', org, '--name', 'Fay');
    expect(made.code, made.stderr).toBe(0);
    expect(made.lastLine).toMatch(/^http:\/\/127\.0\.0\.1:8787\/console\/set-password#token=pw_[0-9a-f]{64}$/);
    const token = made.lastLine.split('#token=')[1];
    const [link] = await rows(`SELECT token_hash, email, kind FROM console_links WHERE email = 'founder@example.com'`);
    expect(link).toEqual({
      token_hash: createHash('sha256').update(token).digest('hex'),
      email: 'founder@example.com',
      kind: 'set_password',
    });
    const listed = await admin('list-users', '--org', org, '--json');
    expect(JSON.parse(listed.stdout)).toEqual([
      expect.objectContaining({ email: 'founder@example.com', name: 'Fay', role: 'owner', has_password: 0 }),
    ]);
    const unknown = await admin('create-user', '--email', 'x@example.com', '--org', 'org_missing');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('no organization org_missing');
    const badRole = await admin('create-user', '--email', 'x@example.com', '--org', org, '--role', 'boss');
    expect(badRole.code).toBe(2);
    const remote = await adminRaw(['create-user', '--email', 'x@example.com', '--org', org, '--remote', '--env', 'staging']);
    expect(remote.code).toBe(2);
    // Staging sets no PUBLIC_ORIGIN (wrangler.toml): the link would point nowhere.
    expect(remote.stderr).toContain('--console-url is needed: this environment sets no PUBLIC_ORIGIN');
  }, 360_000);

  it('create-user emails the set-password link through the local outbox and prints no link', async () => {
    const org = (await admin('create-org', '--name', 'Mailed Co')).lastLine;
    const made = await admin('create-user', '--email', 'mailed@example.com', '--org', org);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout).not.toContain('#token=');
    expect(made.stdout).toContain('a set-password link was emailed to mailed@example.com');
    expect(made.lastLine).toBe('mailed@example.com');
    const [mail] = await rows(`SELECT "to", subject, link FROM mail_outbox WHERE "to" = 'mailed@example.com'`);
    expect(mail).toMatchObject({
      subject: 'Set your proving console password',
      link: expect.stringMatching(/^http:\/\/127\.0\.0\.1:8787\/console\/set-password#token=pw_[0-9a-f]{64}$/),
    });
    const token = String(mail.link).split('#token=')[1];
    expect(await rows(`SELECT kind FROM console_links WHERE token_hash = ${lit(sha256(token))}`)).toEqual([{ kind: 'set_password' }]);
  }, 360_000);

  it('create-user on an email that has an account adds the membership, says so, and never touches its password', async () => {
    const first = (await admin('create-org', '--name', 'First Co')).lastLine;
    const second = (await admin('create-org', '--name', 'Second Co')).lastLine;
    const made = await adminNoMail('create-user', '--email', 'taken@example.com', '--org', first);
    expect(made.code, made.stderr).toBe(0);
    // The person sets their password (as the set-password link would).
    await rows(`UPDATE users SET password_hash = 'pbkdf2-sha256$1000$00$11' WHERE email = 'taken@example.com'`);
    const links = async () => (await rows(`SELECT count(*) AS n FROM console_links WHERE email = 'taken@example.com'`))[0].n;
    const before = await links();
    for (const run of [adminNoMail, admin]) {
      const again = await run('create-user', '--email', 'Taken@Example.com', '--org', second, '--role', 'admin');
      expect(again.code, again.stderr).toBe(0);
      expect(again.stdout).toContain('taken@example.com has an account already; its password is unchanged');
      expect(again.stdout).not.toContain('#token=');
      expect(again.lastLine).toBe('taken@example.com');
    }
    expect(await rows(`SELECT password_hash FROM users WHERE email = 'taken@example.com'`)).toEqual([
      { password_hash: 'pbkdf2-sha256$1000$00$11' },
    ]);
    expect(await links()).toBe(before);
    expect(await rows(`SELECT count(*) AS n FROM mail_outbox WHERE "to" = 'taken@example.com'`)).toEqual([{ n: 0 }]);
    const listed = await admin('list-users', '--json');
    expect(
      JSON.parse(listed.stdout)
        .filter((u: { email: string }) => u.email === 'taken@example.com')
        .map((u: { org_id: string; role: string }) => [u.org_id, u.role])
        .sort(),
    ).toEqual(
      [
        [first, 'owner'],
        [second, 'admin'],
      ].sort(),
    );
  }, 360_000);

  it('creates an agent token with what its hosts are and may hold, stores only its SHA-256, and sets its limits', async () => {
    const token = ['--engines', 'dev', '--configs', 'all'];
    const created = await admin('create-agent-token', '--name', 'gpu-box-1', ...token, '--machine-type', 'h100', '--max-gpus', '8');
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toContain('machine type h100, at most 8 GPU(s) and 8 lease(s) at once');
    // The rate it is billed at, from the target's MACHINE_RATES (wrangler.toml: "*" is 1.0 locally).
    expect(created.stderr).toContain('machine type h100 is billed 1 USD per GPU-hour');
    const value = created.lastLine;
    expect(value).toMatch(/^at_[0-9a-f]{48}$/);

    const stored = await rows(`SELECT * FROM agent_tokens WHERE name = 'gpu-box-1'`);
    expect(stored).toEqual([
      expect.objectContaining({
        token_hash: sha256(value),
        revoked_at: null,
        engines: '["dev"]',
        configs: null,
        machine_type: 'h100',
        max_gpus: 8,
        max_leases: 8,
      }),
    ]);
    expect(JSON.stringify(stored)).not.toContain(value);
    // A token names what it may claim: no engines, or an engine this build does not know, is refused.
    expect(
      (
        await admin(
          'create-agent-token',
          '--name',
          'gpu-box-2',
          '--engines',
          'gpu9000',
          '--configs',
          'all',
          '--machine-type',
          'h100',
          '--max-gpus',
          '8',
        )
      ).code,
    ).toBe(2);
    // ...and what it is: the machine type and GPUs are the operator's to say; no name every JavaScript object has.
    const missing = await admin('create-agent-token', '--name', 'gpu-box-2', ...token, '--max-gpus', '8');
    expect([missing.code, missing.stderr]).toEqual([2, expect.stringContaining('--machine-type is required')]);
    expect((await admin('create-agent-token', '--name', 'gpu-box-2', ...token, '--machine-type', 'h100')).code).toBe(2);
    for (const name of ['constructor', '__proto__', 'toString']) {
      const bad = await admin('create-agent-token', '--name', 'gpu-box-2', ...token, '--machine-type', name, '--max-gpus', '8');
      expect(bad.code, name).toBe(2);
      expect(bad.stdout).toBe('');
    }
    expect(await rows(`SELECT count(*) AS n FROM agent_tokens WHERE name = 'gpu-box-2'`)).toEqual([{ n: 0 }]);

    const id = String((await rows(`SELECT id FROM agent_tokens WHERE name = 'gpu-box-1'`))[0].id);
    const set = await admin('set-agent-token-limits', '--id', id, '--max-leases', '2', '--machine-type', 'h100-sxm');
    expect(set.code, set.stderr).toBe(0);
    expect(await rows(`SELECT machine_type, max_gpus, max_leases FROM agent_tokens WHERE id = ${lit(id)}`)).toEqual([
      { machine_type: 'h100-sxm', max_gpus: 8, max_leases: 2 },
    ]);
    const listed = await admin('list-agent-tokens', '--json');
    expect(JSON.parse(listed.stdout)).toEqual(
      expect.arrayContaining([expect.objectContaining({ id, machine_type: 'h100-sxm', max_gpus: 8, max_leases: 2 })]),
    );
    expect((await admin('revoke-agent-token', '--id', id)).code).toBe(0);
    const dead = await admin('set-agent-token-limits', '--id', id, '--max-leases', '4');
    expect([dead.code, dead.stderr]).toEqual([1, expect.stringContaining(`no live agent token ${id}`)]);
  });

  it('refuses to import a key value stored already, live or revoked, in any organization: a revoked key never comes back', async () => {
    const a = (await admin('create-org', '--name', 'A')).lastLine;
    const b = (await admin('create-org', '--name', 'B')).lastLine;
    const key = 'sk_imported_value_0001';
    expect((await admin('create-api-key', '--org', a, '--owner', 'a', '--key', key)).code).toBe(0);
    expect((await admin('revoke-api-key', '--key', key)).code).toBe(0);
    for (const org of [b, a]) {
      const again = await admin('create-api-key', '--org', org, '--owner', 'thief', '--key', key);
      expect(again.code, again.stderr).toBe(1);
      expect(again.stderr).toContain('that API key value is stored already, live or revoked, in this or another organization');
      expect(again.stdout).toBe('');
    }
    expect(await rows(`SELECT org_id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE key_hash = ${lit(sha256(key))}`)).toEqual([
      { org_id: a, revoked: 1 },
    ]);
  });

  // Several `wrangler` runs each (seconds apiece on a busy host).
  it('creates a scoped, expiring publisher token stored only as its SHA-256, and revokes it', { timeout: 180_000 }, async () => {
    const cfg = (
      await admin(
        'create-config',
        '--openvm-version',
        '1.4.0',
        '--stark-backend-version',
        '1.2.0',
        '--engine',
        'dev',
        '--app-vm-commit',
        COMMIT,
      )
    ).lastLine;
    const unscoped = await admin('create-publisher-token', '--name', 'release-2026-11');
    expect(unscoped.code).toBe(2);
    expect(unscoped.stderr).toContain('--configs and --all-configs');
    expect((await admin('create-publisher-token', '--name', 'x', '--all-configs', '--ttl-days', '365')).code).toBe(2);

    const issued = Date.now();
    const created = await admin(
      'create-publisher-token',
      '--name',
      'release-2026-11',
      '--configs',
      'cfg_' + cfg.slice(4).toLowerCase(),
      '--ttl-days',
      '2',
    );
    expect(created.code, created.stderr).toBe(0);
    const token = created.lastLine;
    expect(token).toMatch(/^pt_[0-9a-f]{48}$/);
    const [stored] = await rows(`SELECT * FROM publisher_tokens WHERE name = 'release-2026-11'`);
    expect(stored).toMatchObject({ token_hash: sha256(token), config_ids: JSON.stringify([cfg]), revoked_at: null });
    // Two days from when the command ran (between the two readings of the clock).
    expect(Number(stored.expires_at) - 48 * 3600 * 1000).toBeGreaterThanOrEqual(issued);
    expect(Number(stored.expires_at) - 48 * 3600 * 1000).toBeLessThanOrEqual(Date.now());
    expect(JSON.stringify(stored)).not.toContain(token);
    expect((await admin('list-publisher-tokens')).stdout).toContain('release-2026-11');

    expect((await admin('revoke-publisher-token', '--token', token)).code).toBe(0);
    expect((await rows(`SELECT revoked_at FROM publisher_tokens WHERE name = 'release-2026-11'`))[0].revoked_at).not.toBeNull();
  });

  it(
    'put-config-key publishes a version with its digest, replaces it only with --supersedes, and key-history shows both',
    { timeout: 300_000 },
    async () => {
      const cfg = (
        await admin(
          'create-config',
          '--openvm-version',
          '1.4.0',
          '--stark-backend-version',
          '1.2.0',
          '--engine',
          'dev',
          '--app-vm-commit',
          COMMIT,
        )
      ).lastLine;
      const file = path.join(dir, 'app.vk');
      await writeFile(file, 'verifying key v1');
      const first = await admin('put-config-key', cfg, 'app_vk', file);
      expect(first.code, first.stderr).toBe(0);
      expect(first.stdout).toContain(`as version 1 (sha256 ${sha256('verifying key v1')}`);

      await writeFile(file, 'verifying key v2');
      const refused = await admin('put-config-key', cfg, 'app_vk', file);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('--supersedes 1');
      const second = await admin('put-config-key', cfg, 'app_vk', file, '--supersedes', '1');
      expect(second.code, second.stderr).toBe(0);
      expect(await rows(`SELECT version, sha256, published_by FROM config_keys WHERE config_id = ${lit(cfg)} ORDER BY version`)).toEqual([
        { version: 1, sha256: sha256('verifying key v1'), published_by: 'admin' },
        { version: 2, sha256: sha256('verifying key v2'), published_by: 'admin' },
      ]);
      const history = await admin('key-history', '--config', cfg, '--json');
      expect((JSON.parse(history.stdout) as Row[]).map((r) => [r.action, r.version])).toEqual([
        ['key.supersede', 2],
        ['key.publish', 1],
      ]);
    },
  );

  it('requires the operator to say which database, and rejects --remote without --env', async () => {
    const neither = await adminRaw(['list-orgs']);
    expect(neither.code).toBe(2);
    expect(neither.stderr).toContain('--local');
    expect(neither.stderr).toContain('--remote');

    const both = await adminRaw(['list-orgs', '--local', '--remote']);
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('not both');

    const remote = await adminRaw(['create-org', '--name', 'x', '--remote']);
    expect(remote.code).toBe(2);
    expect(remote.stderr).toContain('--remote needs --env staging|production');

    const unknown = await adminRaw(['drop-everything', '--local']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("unknown command 'drop-everything'");
  });

  it('lists every command in --help', async () => {
    const help = await adminRaw(['--help']);
    expect(help.code).toBe(0);
    for (const command of [
      'create-org',
      'create-api-key',
      'revoke-api-key',
      'create-config',
      'activate-config',
      'deactivate-config',
      'create-agent-token',
      'revoke-agent-token',
      'set-config-toml',
      'put-config-key',
      'list-orgs',
      'set-org-limits',
      'list-configs',
      'list-agent-tokens',
      'set-agent-token-limits',
      'create-user',
      'list-users',
      'create-publisher-token',
      'revoke-publisher-token',
      'list-publisher-tokens',
      'list-config-keys',
      'key-history',
    ])
      expect(help.stdout).toContain(`  ${command} `);
  });
});
