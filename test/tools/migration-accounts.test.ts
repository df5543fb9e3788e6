// migrations/0024_accounts.sql on a database that has console rows: each console key's
// label '<email> (<name>)' becomes its owner (the email) and its name; keys without a
// name, and operator-made keys, stay as they were; sign-in throttle rows of an account
// learn it; sessions made before read their browser and address as unknown.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { d1Execute, ROOT, type Target } from '../../src/tools/wrangler.ts';

let dir: string;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('splits console keys’ labels, keeps the others, and learns the throttle rows’ accounts', async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-migration-accounts-'));
  const target: Target = { remote: false, persistTo: dir };
  const files = (await readdir(path.join(ROOT, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
  const at = files.indexOf('0024_accounts.sql');
  expect(at).toBeGreaterThan(0);
  const sql = (names: string[]) => Promise.all(names.map((f) => readFile(path.join(ROOT, 'migrations', f), 'utf8')));
  const results = await d1Execute(target, [
    ...(await sql(files.slice(0, at))),
    `INSERT INTO organizations (id, name) VALUES ('org_a', 'A');`,
    `INSERT INTO users (id, email, name) VALUES ('usr_a', 'a@example.com', ''), ('usr_b', 'b_x@example.com', '');`,
    `INSERT INTO api_keys (id, org_id, key_hash, owner, user_id) VALUES
     ('key_named', 'org_a', 'h1', 'a@example.com (ci (nightly))', 'usr_a'),
     ('key_plain', 'org_a', 'h2', 'a@example.com', 'usr_a'),
     ('key_underscore', 'org_a', 'h3', 'b_x@example.com (deploy)', 'usr_b'),
     ('key_operator', 'org_a', 'h4', 'ops@example.com (not a console key)', NULL);`,
    `INSERT INTO signin_throttle (key, failures, window_started_at) VALUES ('account:a@example.com', 3, 1), ('client:192.0.2.1', 2, 1);`,
    `INSERT INTO console_sessions (id, user_id, refresh_hash, expires_at) VALUES ('ses_a', 'usr_a', 'r1', '2999-01-01T00:00:00.000Z');`,
    ...(await sql(files.slice(at))),
    `SELECT id, owner, name FROM api_keys ORDER BY id;`,
    `SELECT key, account FROM signin_throttle ORDER BY key;`,
    `SELECT id, user_agent, client_address FROM console_sessions;`,
  ]);
  expect(results.at(-3)).toEqual([
    { id: 'key_named', owner: 'a@example.com', name: 'ci (nightly)' },
    { id: 'key_operator', owner: 'ops@example.com (not a console key)', name: null },
    { id: 'key_plain', owner: 'a@example.com', name: null },
    { id: 'key_underscore', owner: 'b_x@example.com', name: 'deploy' },
  ]);
  expect(results.at(-2)).toEqual([
    { key: 'account:a@example.com', account: 'a@example.com' },
    { key: 'client:192.0.2.1', account: null },
  ]);
  expect(results.at(-1)).toEqual([{ id: 'ses_a', user_agent: null, client_address: null }]);
}, 180_000);
