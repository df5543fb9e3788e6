// migrations/0023_fleet_authority.sql on a database with rows: existing agent tokens get
// limits from what their hosts declared (and keep working), their live leases counted;
// finished executions without a cost get 0; revoked credentials can no longer come back.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { d1Execute, ROOT, type Target } from '../../src/tools/wrangler.ts';
import { COUNTER_CHECKS } from '../counter-checks.ts';

let dir: string;
afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('gives existing tokens their hosts’ machine type and room, counts their leases, and gives finished executions a cost', async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-migration-fleet-authority-'));
  const target: Target = { remote: false, persistTo: dir };
  const files = (await readdir(path.join(ROOT, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
  const at = files.indexOf('0023_fleet_authority.sql');
  expect(at).toBeGreaterThan(0);
  const sql = (names: string[]) => Promise.all(names.map((f) => readFile(path.join(ROOT, 'migrations', f), 'utf8')));
  const now = Date.now();
  const day = '2026-11-20T10:00:00.000Z';
  // Everything before 0023, the rows, then 0023 and what it promises: one wrangler run (each costs seconds).
  const results = await d1Execute(target, [
    ...(await sql(files.slice(0, at))),
    `INSERT INTO organizations (id, name) VALUES ('org_a', 'A');`,
    `INSERT INTO configs (id, openvm_version, stark_backend_version, app_vm_commit, engine) VALUES ('cfg_dev', '2', '2', '0x00', 'dev');`,
    `INSERT INTO projects (id, org_id, name, created_by) VALUES ('prj_a', 'org_a', 'a', 'x');`,
    `INSERT INTO programs (id, org_id, project_id, config_id, name, status, created_by, last_active_at, program_hash, elf_key, elf_size, vmexe_key, vmexe_size)
     VALUES ('prg_a', 'org_a', 'prj_a', 'cfg_dev', 'a', 'ready', 'x', '${day}', 'h', 'e', 1, 'v', 1);`,
    // gpu: two hosts by name (one restarted: two agents), one seen only two days ago; odd: a host that declared "constructor";
    // idle: no agent ever; busy: holds more leases than its hosts' GPUs say.
    `INSERT INTO agent_tokens (id, name, token_hash, engines) VALUES
     ('agt_gpu', 'gpu', 'h-gpu', '["openvm"]'), ('agt_odd', 'odd', 'h-odd', '["dev"]'), ('agt_idle', 'idle', 'h-idle', '["dev"]'),
     ('agt_busy', 'busy', 'h-busy', '["dev"]');`,
    `INSERT INTO agents (id, token_id, name, machine_type, gpus, engines, configs, last_seen_at) VALUES
     ('a1', 'agt_gpu', 'box-1', 'h100', 8, '["openvm"]', '[]', ${now - 3_600_000}),
     ('a2', 'agt_gpu', 'box-1', 'h100', 8, '["openvm"]', '[]', ${now - 60_000}),
     ('a3', 'agt_gpu', 'box-2', 'h100', 4, '["openvm"]', '[]', ${now - 120_000}),
     ('a4', 'agt_gpu', 'box-3', 'a100', 16, '["openvm"]', '[]', ${now - 2 * 86_400_000}),
     ('a5', 'agt_odd', 'odd', 'constructor', 10000, '["dev"]', '[]', ${now}),
     ('a6', 'agt_busy', 'dev-box', 'local-dev', 0, '["dev"]', '[]', ${now});`,
    `INSERT INTO executions (id, org_id, program_id, mode, created_by, status, cost) VALUES
     ('e_ok', 'org_a', 'prg_a', 'pure', 'x', 'succeeded', 700), ('e_free', 'org_a', 'prg_a', 'pure', 'x', 'succeeded', NULL),
     ('e_failed', 'org_a', 'prg_a', 'pure', 'x', 'failed', NULL), ('e_queued', 'org_a', 'prg_a', 'pure', 'x', 'queued', NULL);`,
    `INSERT INTO leases (id, job_id, attempt, agent_id, token_hash, gpus, machine_type, claimed_at, outcome, agent_token_id) VALUES
     ${Array.from({ length: 10 }, (_, i) => `('l${i}', 'j${i}', 1, 'a6', 't${i}', 0, 'local-dev', ${now}, NULL, 'agt_busy')`).join(', ')},
     ('l-gpu', 'jg', 1, 'a2', 'tg', 2, 'h100', ${now}, NULL, 'agt_gpu'), ('l-done', 'jd', 1, 'a2', 'td', 1, 'h100', ${now}, 'completed', 'agt_gpu');`,
    `INSERT INTO api_keys (id, org_id, key_hash, owner, revoked_at) VALUES ('key_dead', 'org_a', 'kh', 'x', '${day}');`,
    ...(await sql(files.slice(at))),
    `SELECT id, machine_type, max_gpus, max_leases, held_leases, held_gpus FROM agent_tokens ORDER BY id;`,
    `SELECT id, cost FROM executions ORDER BY id;`,
    ...COUNTER_CHECKS.map((c) => `${c.sql};`),
  ]);
  const checks = results.slice(-COUNTER_CHECKS.length);
  const [tokens, executions] = results.slice(-COUNTER_CHECKS.length - 2, -COUNTER_CHECKS.length);
  expect(tokens).toEqual([
    // 10 live leases: at least as many as it holds.
    { id: 'agt_busy', machine_type: 'local-dev', max_gpus: 8, max_leases: 10, held_leases: 10, held_gpus: 0 },
    // box-1 (8, its two agents once) + box-2 (4); box-3 is two days old.
    { id: 'agt_gpu', machine_type: 'h100', max_gpus: 12, max_leases: 12, held_leases: 1, held_gpus: 2 },
    { id: 'agt_idle', machine_type: 'unknown', max_gpus: 8, max_leases: 8, held_leases: 0, held_gpus: 0 },
    // Not a name a token may have: the agent's own default; 10,000 GPUs declared are 16 (the most a host is given).
    { id: 'agt_odd', machine_type: 'unknown', max_gpus: 16, max_leases: 16, held_leases: 0, held_gpus: 0 },
  ]);
  expect(executions).toEqual([
    { id: 'e_failed', cost: 0 },
    { id: 'e_free', cost: 0 },
    { id: 'e_ok', cost: 700 },
    { id: 'e_queued', cost: null },
  ]);
  expect(checks.flatMap((rows, i) => rows.filter(COUNTER_CHECKS[i].wrong))).toEqual([]);

  // From then on: the triggers keep the counters, refuse a finished execution without a cost and a revived credential.
  const after = await d1Execute(target, [
    `UPDATE leases SET outcome = 'completed' WHERE id IN ('l0', 'l1', 'l-gpu');`,
    `DELETE FROM leases WHERE id = 'l2';`,
    `SELECT id, held_leases, held_gpus FROM agent_tokens WHERE id IN ('agt_busy', 'agt_gpu') ORDER BY id;`,
  ]);
  expect(after.at(-1)).toEqual([
    { id: 'agt_busy', held_leases: 7, held_gpus: 0 },
    { id: 'agt_gpu', held_leases: 0, held_gpus: 0 },
  ]);
  await expect(d1Execute(target, [`UPDATE executions SET status = 'failed' WHERE id = 'e_queued';`])).rejects.toThrow(
    /a finished execution has a cost/,
  );
  await expect(d1Execute(target, [`UPDATE api_keys SET revoked_at = NULL WHERE id = 'key_dead';`])).rejects.toThrow(
    /a revoked key stays revoked/,
  );
}, 240_000);
