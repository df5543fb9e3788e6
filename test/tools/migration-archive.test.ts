// Migration 0019 (the archive; what a finished record keeps) on a database that already
// has proofs and executions: their stored object keys become the proof's list of file
// kinds, the columns go, and the tables' triggers still hold; then 0020 and 0021 on the
// same rows. Real `wrangler d1 execute`
// against a local D1.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { d1Execute, ROOT, type Target } from '../../src/tools/wrangler.ts';

let target: Target;
let dir: string;

const migration = async (name: string) => readFile(path.join(ROOT, 'migrations', name), 'utf8');

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-migration-0019-'));
  target = { remote: false, persistTo: dir };
  const files = (await readdir(path.join(ROOT, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
  const archive = files.indexOf('0019_archive.sql');
  expect(archive).toBeGreaterThan(0);
  await d1Execute(target, await Promise.all(files.slice(0, archive).map(migration)));
  const day = '2026-11-20T10:00:00.000Z';
  await d1Execute(target, [
    `INSERT INTO organizations (id, name) VALUES ('org_a', 'A');`,
    `INSERT INTO configs (id, openvm_version, stark_backend_version, app_vm_commit, engine) VALUES ('cfg_dev', '2', '2', '0x00', 'dev');`,
    `INSERT INTO projects (id, org_id, name, created_by) VALUES ('prj_a', 'org_a', 'a', 'x');`,
    `INSERT INTO programs (id, org_id, project_id, config_id, name, status, created_by, last_active_at, program_hash, elf_key, elf_size, vmexe_key, vmexe_size)
     VALUES ('prg_a', 'org_a', 'prj_a', 'cfg_dev', 'a', 'ready', 'x', '${day}', 'h', 'e', 1, 'v', 1);`,
    `INSERT INTO proofs (id, org_id, program_id, state, proof_type, priority, num_gpus, created_by, input_key, proof_keys, created_at, cost, public_values) VALUES
     ('p1', 'org_a', 'prg_a', 'Succeeded', 'stark', 5, 1, 'x', 'proofs/p1/input.json', '{"app":"proofs/p1/app-proof.json","stark":"proofs/p1/stark-proof.json"}', '${day}', 700, '0x01'),
     ('p2', 'org_a', 'prg_a', 'Queued', 'evm', 5, 1, 'x', 'proofs/p2/input.json', '{}', '${day}', 0, NULL);`,
    `INSERT INTO executions (id, org_id, program_id, mode, created_by, input_key, status, cost) VALUES ('e1', 'org_a', 'prg_a', 'pure', 'x', 'executions/e1/input.json', 'succeeded', 9);`,
  ]);
  // (After a newline: a command that starts with its comment's `--` reads as a flag to wrangler.)
  await d1Execute(target, ['\n' + (await migration('0019_archive.sql'))]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('migration 0019 on a database with rows', () => {
  it('keeps every record, its file kinds in place of its keys', async () => {
    const [rows, execs] = await d1Execute(target, [
      `SELECT id, state, cost, public_values, proof_files FROM proofs ORDER BY id;`,
      `SELECT id, status, cost FROM executions;`,
    ]);
    expect(rows).toEqual([
      { id: 'p1', state: 'Succeeded', cost: 700, public_values: '0x01', proof_files: '["app","stark"]' },
      { id: 'p2', state: 'Queued', cost: 0, public_values: null, proof_files: '[]' },
    ]);
    expect(execs).toEqual([{ id: 'e1', status: 'succeeded', cost: 9 }]);
    const [proofCols, execCols] = await d1Execute(target, [
      `SELECT name FROM pragma_table_info('proofs') WHERE name IN ('input_key', 'proof_keys');`,
      `SELECT name FROM pragma_table_info('executions') WHERE name = 'input_key'`,
    ]);
    expect([proofCols, execCols]).toEqual([[], []]);
  });

  it('leaves the tables’ triggers working: counters on insert, a deleted program refused', async () => {
    await d1Execute(target, [
      `INSERT INTO proofs (id, org_id, program_id, proof_type, priority, num_gpus, created_by) VALUES ('p3', 'org_a', 'prg_a', 'stark', 5, 1, 'x');`,
    ]);
    const [[program]] = await d1Execute(target, [`SELECT proof_count FROM programs WHERE id = 'prg_a'`]);
    expect(program).toEqual({ proof_count: 3 }); // p1 and p2 from before the migration, and p3
    await d1Execute(target, [`UPDATE programs SET deleted_at = '2026-11-21T00:00:00.000Z' WHERE id = 'prg_a';`]);
    await expect(
      d1Execute(target, [
        `INSERT INTO proofs (id, org_id, program_id, proof_type, priority, num_gpus, created_by) VALUES ('p4', 'org_a', 'prg_a', 'stark', 5, 1, 'x');`,
      ]),
    ).rejects.toThrow(/program was deleted/);
  });

  it('adds the archive’s tables: the stub table without a rowid', async () => {
    const [[stub]] = await d1Execute(target, [`SELECT sql FROM sqlite_master WHERE name = 'archived'`]);
    expect((stub as { sql: string }).sql).toMatch(/WITHOUT ROWID/);
  });

  // Last: the migrations after 0019 on the same database, rows and all.
  it('takes 0020 and 0021 on top: running GPUs counted from leased jobs, a registration an organization limit stranded failed, limits off live commit jobs', async () => {
    const day = '2026-11-20T10:00:00.000Z';
    await d1Execute(target, [
      `INSERT INTO programs (id, org_id, project_id, config_id, name, status, created_by, last_active_at, program_hash, elf_key, elf_size, vmexe_key, vmexe_size)
       VALUES ('prg_stuck', 'org_a', 'prj_a', 'cfg_dev', 'stuck', 'not_ready', 'x', '${day}', 'h', 'e', 1, 'v', 1),
              ('prg_new', 'org_a', 'prj_a', 'cfg_dev', 'new', 'not_ready', 'x', '${day}', 'h', 'e', 1, 'v', 1);`,
      `INSERT INTO jobs (id, kind, subject_id, org_id, config_id, engine, priority, num_gpus, gpus_used, status, attempt, queued_at, notified_at, deadline_at) VALUES
       ('j_run', 'proof', 'p2', 'org_a', 'cfg_dev', 'dev', 5, 8, 8, 'leased', 1, 1, 1, NULL),
       ('j_stuck', 'commit', 'prg_stuck', 'org_a', 'cfg_dev', 'dev', 5, 1, 1, 'done', 1, 2, 2, 5),
       ('j_new', 'commit', 'prg_new', 'org_a', 'cfg_dev', 'dev', 5, 1, 1, 'queued', 0, 3, 3, 5);`,
    ]);
    await d1Execute(target, ['\n' + (await migration('0020_queue.sql'))]);
    await d1Execute(target, ['\n' + (await migration('0021_attack.sql'))]);
    const [[org], stranded, [job]] = await d1Execute(target, [
      `SELECT running_gpus, retention_swept_at FROM organizations WHERE id = 'org_a';`,
      `SELECT id, status FROM programs WHERE id IN ('prg_stuck', 'prg_new') ORDER BY id;`,
      `SELECT cycle_limit, cost_limit, deadline_at FROM jobs WHERE id = 'j_new';`,
    ]);
    expect(org).toEqual({ running_gpus: 8, retention_swept_at: null });
    expect(stranded).toEqual([
      { id: 'prg_new', status: 'not_ready' },
      { id: 'prg_stuck', status: 'failed' },
    ]);
    expect(job).toEqual({ cycle_limit: null, cost_limit: null, deadline_at: null });
  });
});
