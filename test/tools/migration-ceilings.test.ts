// migrations/0025_ceilings.sql on a database with rows: each organization's live jobs'
// cost limits are counted as its reservation, and from then on the triggers keep it; a
// cost charged before stays as it was, and none is raised past its job's limit again.
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

it('counts the live jobs’ cost limits as each organization’s reservation, keeps them after, and refuses a cost past a limit', async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-migration-ceilings-'));
  const target: Target = { remote: false, persistTo: dir };
  const files = (await readdir(path.join(ROOT, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
  const at = files.indexOf('0025_ceilings.sql');
  expect(at).toBeGreaterThan(0);
  const sql = (names: string[]) => Promise.all(names.map((f) => readFile(path.join(ROOT, 'migrations', f), 'utf8')));
  const day = '2026-11-20T10:00:00.000Z';
  const job = (id: string, org: string, status: string, costLimit: number | null, subject = id) =>
    `('${id}', 'proof', '${subject}', '${org}', 'cfg_dev', 'dev', '${status}', 5, 1, 0, 0, ${costLimit ?? 'NULL'})`;
  const results = await d1Execute(target, [
    ...(await sql(files.slice(0, at))),
    `INSERT INTO organizations (id, name) VALUES ('org_a', 'A'), ('org_b', 'B');`,
    `INSERT INTO configs (id, openvm_version, stark_backend_version, app_vm_commit, engine) VALUES ('cfg_dev', '2', '2', '0x00', 'dev');`,
    `INSERT INTO projects (id, org_id, name, created_by) VALUES ('prj_a', 'org_a', 'a', 'x');`,
    `INSERT INTO programs (id, org_id, project_id, config_id, name, status, created_by, last_active_at, program_hash, elf_key, elf_size, vmexe_key, vmexe_size)
     VALUES ('prg_a', 'org_a', 'prj_a', 'cfg_dev', 'a', 'ready', 'x', '${day}', 'h', 'e', 1, 'v', 1);`,
    // org_a: two live jobs with limits, one without, one finished; org_b: nothing live.
    // p_over: a proof charged past its limit before this change (finding 8), kept as charged.
    `INSERT INTO proofs (id, org_id, program_id, proof_type, priority, num_gpus, created_by, state, cost) VALUES
     ('p_queued', 'org_a', 'prg_a', 'stark', 5, 1, 'x', 'Queued', 0), ('p_over', 'org_a', 'prg_a', 'stark', 5, 1, 'x', 'Queued', 0);`,
    `INSERT INTO jobs (id, kind, subject_id, org_id, config_id, engine, status, priority, num_gpus, queued_at, notified_at, cost_limit) VALUES
     ${job('j1', 'org_a', 'queued', 700, 'p_queued')}, ${job('j2', 'org_a', 'leased', 300)}, ${job('j3', 'org_a', 'queued', null)},
     ${job('j4', 'org_a', 'queued', 1, 'p_over')}, ${job('j5', 'org_b', 'done', 900)};`,
    `UPDATE proofs SET state = 'Failed', cost = 16, terminated_at = '${day}' WHERE id = 'p_over';`,
    `UPDATE jobs SET status = 'done' WHERE id = 'j4';`,
    ...(await sql(files.slice(at))),
    `SELECT id, reserved_cost FROM organizations ORDER BY id;`,
    ...COUNTER_CHECKS.map((c) => `${c.sql};`),
  ]);
  const checks = results.slice(-COUNTER_CHECKS.length);
  expect(results.at(-COUNTER_CHECKS.length - 1)).toEqual([
    { id: 'org_a', reserved_cost: 1000 },
    { id: 'org_b', reserved_cost: 0 },
  ]);
  expect(checks.flatMap((rows, i) => rows.filter(COUNTER_CHECKS[i].wrong))).toEqual([]);

  // From then on: a job ending releases its reservation, a new one adds its own, and no cost passes its limit.
  const after = await d1Execute(target, [
    `UPDATE jobs SET status = 'done' WHERE id = 'j2';`,
    `INSERT INTO jobs (id, kind, subject_id, org_id, config_id, engine, status, priority, num_gpus, queued_at, notified_at, cost_limit) VALUES ${job('j6', 'org_b', 'queued', 50)};`,
    `UPDATE proofs SET cost = 16 WHERE id = 'p_over';`,
    `SELECT id, reserved_cost FROM organizations ORDER BY id;`,
    `SELECT cost FROM proofs WHERE id = 'p_over';`,
  ]);
  expect(after.at(-2)).toEqual([
    { id: 'org_a', reserved_cost: 700 },
    { id: 'org_b', reserved_cost: 50 },
  ]);
  expect(after.at(-1)).toEqual([{ cost: 16 }]);
  await expect(d1Execute(target, [`UPDATE proofs SET cost = 701 WHERE id = 'p_queued';`])).rejects.toThrow(
    /a proof is never charged past its cost_limit/,
  );
}, 240_000);
