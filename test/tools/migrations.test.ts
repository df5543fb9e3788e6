// Migration 0005 (counters, queue lanes, usage rollup) on a database that already has
// jobs, proofs and leases: the upgrade must build every counter from the rows it finds,
// and from then on the triggers keep them. Real `wrangler d1 execute` against a local D1.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { d1Execute, ROOT, type Target } from '../../src/tools/wrangler.ts';
import { COUNTER_CHECKS } from '../counter-checks.ts';

let target: Target;
let dir: string;

const migration = async (name: string) => readFile(path.join(ROOT, 'migrations', name), 'utf8');
/** Every check in one `wrangler d1 execute` (a process each would cost seconds). */
async function counterMismatches() {
  const results = await d1Execute(
    target,
    COUNTER_CHECKS.map((c) => `${c.sql};`),
  );
  return COUNTER_CHECKS.flatMap((c, i) => results[i].filter(c.wrong));
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'zk-migrations-'));
  target = { remote: false, persistTo: dir };
  const files = (await readdir(path.join(ROOT, 'migrations'))).filter((f) => f.endsWith('.sql')).sort();
  // Later migrations (0006 on) are not part of this upgrade: only what came before 0005.
  const counters = files.indexOf('0005_counters.sql');
  expect(counters).toBeGreaterThan(0);
  // The schema as it was before counters...
  await d1Execute(target, await Promise.all(files.slice(0, counters).map(migration)));
  // ...with work in every state: two organizations, queued, running and finished jobs.
  const day = '2026-11-20T10:00:00.000Z';
  await d1Execute(target, [
    `INSERT INTO organizations (id, name, share_weight) VALUES ('org_a', 'A', 1), ('org_b', 'B', 3);`,
    `INSERT INTO configs (id, openvm_version, stark_backend_version, app_vm_commit, engine) VALUES ('cfg_dev', '2', '2', '0x00', 'dev'), ('cfg_gpu', '2', '2', '0x00', 'openvm');`,
    `INSERT INTO projects (id, org_id, name, created_by) VALUES ('prj_a', 'org_a', 'a', 'x'), ('prj_b', 'org_b', 'b', 'x');`,
    `INSERT INTO programs (id, org_id, project_id, config_id, name, status, created_by, last_active_at, program_hash, elf_key, elf_size, vmexe_key, vmexe_size, proofs_run)
     VALUES ('prg_a', 'org_a', 'prj_a', 'cfg_dev', 'a', 'ready', 'x', '${day}', 'h', 'e', 1, 'v', 1, 2), ('prg_b', 'org_b', 'prj_b', 'cfg_gpu', 'b', 'ready', 'x', '${day}', 'h', 'e', 1, 'v', 1, 0);`,
    `INSERT INTO proofs (id, org_id, program_id, state, proof_type, priority, num_gpus, created_by, input_key, created_at, cost, num_instructions) VALUES
     ('p1', 'org_a', 'prg_a', 'Succeeded', 'stark', 5, 1, 'x', 'i', '${day}', 700, 40),
     ('p2', 'org_a', 'prg_a', 'Queued', 'stark', 9, 1, 'x', 'i', '${day}', 0, NULL),
     ('p3', 'org_a', 'prg_a', 'Queued', 'stark', 2, 1, 'x', 'i', '${day}', 0, NULL),
     ('p4', 'org_b', 'prg_b', 'AppProving', 'stark', 5, 8, 'x', 'i', '${day}', 0, 7),
     ('p5', 'org_b', 'prg_b', 'Queued', 'evm', 5, 8, 'x', 'i', '${day}', 0, NULL);`,
    `INSERT INTO executions (id, org_id, program_id, mode, created_by, input_key) VALUES ('e1', 'org_a', 'prg_a', 'pure', 'x', 'i');`,
    `INSERT INTO jobs (id, kind, subject_id, org_id, config_id, engine, priority, num_gpus, status, attempt, lease_id, lease_expires_at, queued_at, notified_at) VALUES
     ('j1', 'proof', 'p1', 'org_a', 'cfg_dev', 'dev', 5, 1, 'done', 1, 'l1', NULL, 1, 1),
     ('j2', 'proof', 'p2', 'org_a', 'cfg_dev', 'dev', 9, 1, 'queued', 0, NULL, NULL, 2, 2),
     ('j3', 'proof', 'p3', 'org_a', 'cfg_dev', 'dev', 2, 1, 'queued', 0, NULL, NULL, 3, 3),
     ('j4', 'proof', 'p4', 'org_b', 'cfg_gpu', 'openvm', 5, 8, 'leased', 1, 'l4', 9999999999999, 4, 4),
     ('j5', 'proof', 'p5', 'org_b', 'cfg_gpu', 'openvm', 5, 8, 'queued', 0, NULL, NULL, 5, 5),
     ('j6', 'execute', 'e1', 'org_a', 'cfg_dev', 'dev', 5, 1, 'queued', 0, NULL, NULL, 6, 6);`,
    `INSERT INTO leases (id, job_id, attempt, agent_id, token_hash, gpus, machine_type, claimed_at, ended_at, outcome) VALUES
     ('l1', 'j1', 1, 'a', 't1', 1, 'm', 1000, 61000, 'completed'), ('l4', 'j4', 1, 'a', 't4', 1, 'm', 5000, NULL, NULL);`,
  ]);
  // ...then the upgrade, and every migration after it.
  await d1Execute(target, await Promise.all(files.slice(counters).map(migration)));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('migration 0005: counters from the rows it finds', () => {
  it('builds every counter, lane and rollup exactly', async () => {
    expect(await counterMismatches()).toEqual([]);
    const [orgs] = await d1Execute(target, [`SELECT id, running_jobs, active_jobs, held_gpus FROM organizations ORDER BY id`]);
    // openvm jobs hold one GPU whatever they ask for; dev jobs none.
    expect(orgs).toEqual([
      { id: 'org_a', running_jobs: 0, active_jobs: 3, held_gpus: 0 },
      { id: 'org_b', running_jobs: 1, active_jobs: 2, held_gpus: 2 },
    ]);
    const [lanes] = await d1Execute(target, [
      `SELECT org_id, engine, queued, head_job_id, share_key FROM queue_lanes ORDER BY org_id, engine`,
    ]);
    expect(lanes).toEqual([
      { org_id: 'org_a', engine: 'dev', queued: 3, head_job_id: 'j2', share_key: 0 },
      { org_id: 'org_b', engine: 'openvm', queued: 1, head_job_id: 'j5', share_key: 1 / 3 },
    ]);
    const [usage] = await d1Execute(target, [`SELECT org_id, proofs, instructions, gpu_ms, cost FROM usage_daily ORDER BY org_id`]);
    expect(usage).toEqual([
      { org_id: 'org_a', proofs: 3, instructions: 40, gpu_ms: 60_000, cost: 700 },
      { org_id: 'org_b', proofs: 2, instructions: 0, gpu_ms: 0, cost: 0 },
    ]);
  });

  it('and keeps them from then on, through its triggers', async () => {
    await d1Execute(target, [
      `UPDATE jobs SET status = 'leased', lease_id = 'l2' WHERE id = 'j2';`,
      `UPDATE jobs SET status = 'done' WHERE id = 'j4';`,
      `UPDATE leases SET ended_at = 65000, outcome = 'completed' WHERE id = 'l4';`,
      `UPDATE proofs SET state = 'Succeeded', cost = 90 WHERE id = 'p4';`,
      `UPDATE programs SET project_id = 'prj_b' WHERE id = 'prg_a';`,
    ]);
    expect(await counterMismatches()).toEqual([]);
    const [[lane]] = await d1Execute(target, [`SELECT queued, head_job_id FROM queue_lanes WHERE org_id = 'org_a'`]);
    expect(lane).toEqual({ queued: 2, head_job_id: 'j6' });
  });
});

describe('migration 0006: webhook events', () => {
  it('its triggers record one delivery per subscribed, enabled endpoint of the record’s organization', async () => {
    const before = Date.now();
    await d1Execute(target, [
      `INSERT INTO webhook_endpoints (id, org_id, url, events, secret, created_by, disabled) VALUES
       ('we_all', 'org_b', 'https://a.example.com/', NULL, 'v1.x.y', 'x', 0),
       ('we_failed', 'org_b', 'https://b.example.com/', '["proof.failed"]', 'v1.x.y', 'x', 0),
       ('we_off', 'org_b', 'https://c.example.com/', NULL, 'v1.x.y', 'x', 1),
       ('we_a', 'org_a', 'https://d.example.com/', NULL, 'v1.x.y', 'x', 0);`,
      `UPDATE proofs SET state = 'Succeeded' WHERE id = 'p5';`,
      `UPDATE proofs SET state = 'Succeeded' WHERE id = 'p5';`, // no change: no event
      `UPDATE executions SET status = 'canceled', cost = 0 WHERE id = 'e1';`, // a finished execution has a cost (0023)
    ]);
    const after = Date.now();
    const [rows] = await d1Execute(target, [
      `SELECT id, org_id, endpoint_id, event_type, subject_kind, subject_id, status, attempts, next_attempt_at FROM webhook_deliveries ORDER BY event_type`,
    ]);
    expect(rows).toEqual([
      {
        id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
        org_id: 'org_a',
        endpoint_id: 'we_a',
        event_type: 'execution.failed',
        subject_kind: 'execution',
        subject_id: 'e1',
        status: 'pending',
        attempts: 0,
        next_attempt_at: expect.any(Number),
      },
      {
        id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
        org_id: 'org_b',
        endpoint_id: 'we_all',
        event_type: 'proof.succeeded',
        subject_kind: 'proof',
        subject_id: 'p5',
        status: 'pending',
        attempts: 0,
        next_attempt_at: expect.any(Number),
      },
    ]);
    // Due at once: when the triggers ran, between the two readings of the clock.
    for (const r of rows) {
      expect(r.next_attempt_at as number).toBeGreaterThanOrEqual(before);
      expect(r.next_attempt_at as number).toBeLessThanOrEqual(after);
    }
  });
});
