// migrations/0009_identity.sql on a database that has console rows: every invitation
// still pending dies (its link had been answered to its inviter); used ones, revoked
// ones and set-password links stay as they were; the outbox table exists.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { d1Execute, ROOT, type Target } from '../../src/tools/wrangler.ts';

let dir: string;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('revokes the pending invitations and nothing else', async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-migration-identity-'));
  const target: Target = { remote: false, persistTo: dir };
  const files = (await readdir(path.join(ROOT, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
  const at = files.indexOf('0009_identity.sql');
  expect(at).toBeGreaterThan(0);
  const sql = (names: string[]) => Promise.all(names.map((f) => readFile(path.join(ROOT, 'migrations', f), 'utf8')));
  const future = '2999-01-01T00:00:00.000Z';
  // Everything before 0009, the rows, then 0009: one wrangler run (each costs seconds).
  const results = await d1Execute(target, [
    ...(await sql(files.slice(0, at))),
    `INSERT INTO organizations (id, name) VALUES ('org_a', 'A');`,
    `INSERT INTO users (id, email, name) VALUES ('usr_a', 'a@example.com', '');`,
    `INSERT INTO console_links (id, kind, token_hash, email, user_id, org_id, role, expires_at, used_at, revoked_at) VALUES
     ('lnk_pending', 'invite', 'h1', 'b@example.com', NULL, 'org_a', 'member', '${future}', NULL, NULL),
     ('lnk_used', 'invite', 'h2', 'c@example.com', NULL, 'org_a', 'member', '${future}', '2026-01-01T00:00:00.000Z', NULL),
     ('lnk_revoked', 'invite', 'h3', 'd@example.com', NULL, 'org_a', 'member', '${future}', NULL, '2026-01-02T00:00:00.000Z'),
     ('lnk_password', 'set_password', 'h4', 'a@example.com', 'usr_a', NULL, NULL, '${future}', NULL, NULL);`,
    ...(await sql(files.slice(at))),
    `SELECT id, used_at, revoked_at FROM console_links ORDER BY id;`,
    `SELECT count(*) AS n FROM mail_outbox;`,
  ]);
  const links = Object.fromEntries(results.at(-2)!.map((r) => [r.id, r]));
  expect(links.lnk_pending!.revoked_at).toEqual(expect.any(String));
  expect(links.lnk_used).toEqual({ id: 'lnk_used', used_at: '2026-01-01T00:00:00.000Z', revoked_at: null });
  expect(links.lnk_revoked!.revoked_at).toBe('2026-01-02T00:00:00.000Z');
  expect(links.lnk_password!.revoked_at).toBeNull();
  expect(results.at(-1)).toEqual([{ n: 0 }]);
});
