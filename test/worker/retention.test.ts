// Their data, their call (issue 23 item 5): DELETE of proofs, executions and programs
// (the R2 objects go, the record stays as a tombstone with its billing figures), and the
// organization's retention, swept in bounded runs. README "Deleting records and retention".
import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { batchByName } from '../../src/db/batch.ts';
import { openDb } from '../../src/db/client.ts';
import { deleteProofStatements } from '../../src/features/retention/data.ts';
import { PURGE_SETTLE_MS, sweepPurges } from '../../src/features/retention/purge.ts';
import { deleteEndedLeases, LEASE_KEEP_MS, pastRetention, sweepRetention } from '../../src/features/retention/sweep.ts';
import { executions, proofs } from '../../src/db/schema.ts';
import { getTableName } from 'drizzle-orm';
import { as, seedUser, send, signIn, type Session } from './console-helpers.ts';
import { claimJob, devProofOf, drainQueuedJobs, lease, seedAgent, upload } from './fleet-helpers.ts';
import { api, countRows, eventually, json, queryPlan, r2Keys, registerProgram, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import { jsonPost, readyProgram, succeededExecution, succeededProof } from './run-helpers.ts';

beforeEach(drainQueuedJobs);

const DELETE: RequestInit = { method: 'DELETE' };

/** Every object a job's subject owns: its own prefix and its log. */
const objectsOf = async (prefix: string, jobId: string) => [...(await r2Keys(prefix)), ...(await r2Keys(`logs/${jobId}`))];

/** A sweep run once purges have settled (PURGE_SETTLE_MS after their record's deletion). */
const settledSweep = () => sweepPurges(openDb(env.DB), env.ARTIFACTS, 1000, Date.now() + PURGE_SETTLE_MS + 1000);

/**
 * The objects are gone after the response (the purge's first pass), and the purge row
 * once the sweep's second pass ran.
 */
async function expectPurged(prefix: string, jobId: string | null, subjectId: string) {
  await eventually(async () => expect([...(await r2Keys(prefix)), ...(jobId ? await r2Keys(`logs/${jobId}`) : [])]).toEqual([]));
  expect(await countRows('purges', 'subject_id = ?', subjectId)).toBe(1);
  await settledSweep();
  expect(await countRows('purges', 'subject_id = ?', subjectId)).toBe(0);
}

async function owner(t: Tenant): Promise<Session> {
  return signIn(await seedUser(t.orgId, 'owner'));
}

describe('DELETE /v1/proofs/{id}', () => {
  it(
    'deletes every object the proof owns, keeps a tombstone with its billing figures, and answers the same twice',
    { timeout: 30_000 },
    async () => {
      const t = await seedTenant();
      const program = await readyProgram(t);
      const { id, jobId } = await succeededProof(t, program);
      const before = await json(await api(t, `/v1/proofs/${id}`), 200);
      expect(before.state).toBe('Succeeded');
      expect(before).not.toHaveProperty('deleted_at');
      expect((await objectsOf(`proofs/${id}/`, jobId)).length).toBeGreaterThanOrEqual(3); // input, stark proof, log
      const usage = await env.DB.prepare('SELECT sum(cost) AS cost, sum(instructions) AS instructions FROM usage_daily WHERE org_id = ?')
        .bind(t.orgId)
        .first();

      const tombstone = await json(await api(t, `/v1/proofs/${id}`, DELETE), 200);
      expect(tombstone.deleted_at).toEqual(expect.any(String));
      // The billing figures stand.
      for (const field of [
        'state',
        'cost',
        'cells_used',
        'num_instructions',
        'machine_type',
        'launched_at',
        'terminated_at',
        'created_by',
        'num_gpus',
      ] as const)
        expect(tombstone[field]).toEqual(before[field]);
      expect(
        await env.DB.prepare('SELECT sum(cost) AS cost, sum(instructions) AS instructions FROM usage_daily WHERE org_id = ?')
          .bind(t.orgId)
          .first(),
      ).toEqual(usage);
      await expectPurged(`proofs/${id}/`, jobId, id);
      expect(await r2Keys(`logs/${jobId}`)).toEqual([]);
      expect(await countRows('job_log_chunks', 'job_id = ?', jobId)).toBe(0);
      expect(await env.DB.prepare('SELECT public_values FROM proofs WHERE id = ?').bind(id).first()).toEqual({ public_values: null });

      // The record answers as a tombstone; its files are gone (404, saying so).
      expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toEqual(tombstone);
      expect((await json(await api(t, `/v1/proofs/${id}/proof/stark`), 404)).detail).toMatch(/deleted/);
      expect((await json(await api(t, `/v1/proofs/${id}/logs`), 404)).detail).toMatch(/deleted/);
      // Idempotent: the same answer again, nothing more to purge.
      expect(await json(await api(t, `/v1/proofs/${id}`, DELETE), 200)).toEqual(tombstone);
      expect(await countRows('purges', 'subject_id = ?', id)).toBe(0);
      // The console's files of it too.
      const o = await owner(t);
      await as(o, `/console/v1/orgs/${t.orgId}/proofs/${id}/proof/stark`, 404);
      await as(o, `/console/v1/orgs/${t.orgId}/proofs/${id}/logs`, 404);
    },
  );

  it("answers 404 for another organization's proof and leaves it whole", { timeout: 30_000 }, async () => {
    const [a, b] = [await seedTenant(), await seedTenant()];
    const { id, jobId } = await succeededProof(b, await readyProgram(b));
    const objects = await objectsOf(`proofs/${id}/`, jobId);
    expect((await api(a, `/v1/proofs/${id}`, DELETE)).status).toBe(404);
    expect((await api(a, `/v1/proofs/${crypto.randomUUID()}`, DELETE)).status).toBe(404);
    const o = await owner(a);
    await as(o, `/console/v1/orgs/${a.orgId}/proofs/${id}`, 404, { method: 'DELETE' });
    await as(o, `/console/v1/orgs/${b.orgId}/proofs/${id}`, 404, { method: 'DELETE' }); // not a member there
    expect((await json(await api(b, `/v1/proofs/${id}`), 200)).deleted_at).toBeUndefined();
    expect(await objectsOf(`proofs/${id}/`, jobId)).toEqual(objects);
    expect(await countRows('purges', 'subject_id = ?', id)).toBe(0);
  });

  it('is refused to a prove key, a read key, a member and a viewer (403); an admin may', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const { id } = await succeededProof(t, await readyProgram(t));
    const o = await owner(t);
    for (const scope of ['prove', 'read'] as const) {
      const { key } = await send(o, 'POST', `/console/v1/orgs/${t.orgId}/api-keys`, { name: scope, scope }, 201);
      expect((await api({ ...t, key }, `/v1/proofs/${id}`, DELETE)).status).toBe(403);
    }
    for (const role of ['viewer', 'member'] as const)
      await as(await signIn(await seedUser(t.orgId, role)), `/console/v1/orgs/${t.orgId}/proofs/${id}`, 403, { method: 'DELETE' });
    expect((await json(await api(t, `/v1/proofs/${id}`), 200)).deleted_at).toBeUndefined();
    const admin = await signIn(await seedUser(t.orgId, 'admin'));
    expect((await as(admin, `/console/v1/orgs/${t.orgId}/proofs/${id}`, 200, { method: 'DELETE' })).deleted_at).toEqual(expect.any(String));
  });

  it('refuses a queued or running proof (409) and deletes it once canceled', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await json<{ id: string }>(await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })), 200);
    expect((await json(await api(t, `/v1/proofs/${id}`, DELETE), 409)).detail).toMatch(/still running \(Queued\).*cancel/);
    await claimJob(await seedAgent());
    expect((await json(await api(t, `/v1/proofs/${id}`, DELETE), 409)).detail).toMatch(/still running/);
    expect(await countRows('purges', 'subject_id = ?', id)).toBe(0);
    expect(await r2Keys(`proofs/${id}/`)).toEqual([`proofs/${id}/input.json`]);
    const { id: queued } = await json<{ id: string }>(
      await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })),
      200,
    );
    await json(await api(t, `/v1/proofs/${queued}/cancel`, { method: 'POST' }), 200);
    expect((await json(await api(t, `/v1/proofs/${queued}`, DELETE), 200)).state).toBe('Canceled');
    await expectPurged(`proofs/${queued}/`, null, queued);
  });

  it('loses nothing to a crash between the tombstone and the purge: the sweep finishes it', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const { id, jobId } = await succeededProof(t, await readyProgram(t));
    const db = openDb(env.DB);
    // The request's batch, and then the Worker dies before deleting anything.
    const { tombstone } = await batchByName(db, deleteProofStatements(db, t.orgId, id));
    expect(tombstone.map((r) => r.id)).toEqual([id]);
    expect((await objectsOf(`proofs/${id}/`, jobId)).length).toBeGreaterThanOrEqual(3);
    expect(await countRows('purges', 'subject_id = ?', id)).toBe(1);
    expect(await sweepPurges(db, env.ARTIFACTS, 1000)).toBe(0); // not settled yet: left for a later run
    expect(await settledSweep()).toBeGreaterThanOrEqual(1);
    expect(await objectsOf(`proofs/${id}/`, jobId)).toEqual([]);
    expect(await countRows('purges', 'subject_id = ?', id)).toBe(0);
  });
});

describe('DELETE racing what an agent uploaded (attack)', () => {
  it('deletes a proof file the agent uploaded before its job failed (the record never named it)', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await json<{ id: string }>(await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })), 200);
    const job = await claimJob(await seedAgent());
    // The agent stored its proof, then the job failed (a limit crossed, a cancel, a crash
    // after the upload): the result is dropped, the record names no proof file.
    await json(await upload(job, 'stark', await devProofOf(job)), 200);
    await json(await lease(job, '/fail', { error: 'engine crashed', retryable: false }), 200);
    expect((await json(await api(t, `/v1/proofs/${id}`), 200)).state).toBe('Failed');
    expect(await r2Keys(`proofs/${id}/`)).toContain(`proofs/${id}/stark-proof.json`);
    await json(await api(t, `/v1/proofs/${id}`, DELETE), 200);
    await expectPurged(`proofs/${id}/`, null, id);
  });

  it('deletes a baseline the commit job uploaded before it failed', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    const job = await claimJob(await seedAgent());
    expect(job.kind).toBe('commit');
    await json(await upload(job, 'baseline', '{}'), 200);
    await json(await lease(job, '/fail', { error: 'keys do not match', retryable: false }), 200);
    expect(await r2Keys(`programs/${program}/`)).toContain(`programs/${program}/baseline.json`);
    await json(await api(t, `/v1/programs/${program}`, DELETE), 200);
    await expectPurged(`programs/${program}/`, null, program);
  });
});

describe('DELETE /v1/executions/{id}', () => {
  it('deletes its input and log, keeps cost and cycles, refuses a queued one, 404 elsewhere', { timeout: 30_000 }, async () => {
    const [t, other] = [await seedTenant(), await seedTenant()];
    const program = await readyProgram(t);
    const { id: queued } = await json<{ id: string }>(await api(t, `/v1/executions?program_id=${program}`, jsonPost({ input: [] })), 200);
    expect((await api(t, `/v1/executions/${queued}`, DELETE)).status).toBe(409);
    await drainQueuedJobs();
    await env.DB.prepare(`UPDATE executions SET status = 'failed', cost = 0, terminated_at = ? WHERE id = ?`)
      .bind(new Date().toISOString(), queued)
      .run();
    const { id, jobId } = await succeededExecution(t, program);
    const before = await json(await api(t, `/v1/executions/${id}`), 200);
    expect((await api(other, `/v1/executions/${id}`, DELETE)).status).toBe(404);
    const tombstone = await json(await api(t, `/v1/executions/${id}`, DELETE), 200);
    expect(tombstone).toEqual({ ...before, public_values: null, deleted_at: expect.any(String) });
    expect(tombstone.num_instructions).toBe(7);
    await expectPurged(`executions/${id}/`, jobId, id);
    expect((await api(t, `/v1/executions/${id}/logs`)).status).toBe(404);
    expect(await json(await api(t, `/v1/executions/${id}`, DELETE), 200)).toEqual(tombstone);
    const { key } = await send(await owner(t), 'POST', `/console/v1/orgs/${t.orgId}/api-keys`, { name: 'p', scope: 'prove' }, 201);
    expect((await api({ ...t, key }, `/v1/executions/${queued}`, DELETE)).status).toBe(403);
  });
});

describe('DELETE /v1/programs/{id}', () => {
  it(
    'is refused while a job of it is queued, then deletes its ELF, VMEXE and baseline; nothing more is submitted against it',
    { timeout: 30_000 },
    async () => {
      const [t, other] = [await seedTenant(), await seedTenant()];
      const program = await readyProgram(t);
      const { id: proof } = await json<{ id: string }>(
        await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })),
        200,
      );
      expect((await json(await api(t, `/v1/programs/${program}`, DELETE), 409)).detail).toMatch(/queued or running/);
      const job = await claimJob(await seedAgent());
      expect((await api(t, `/v1/programs/${program}`, DELETE)).status).toBe(409);
      await json(await upload(job, 'stark', await devProofOf(job)), 200);
      await json(
        await lease(job, '/complete', { kind: 'proof', proofs: ['stark'], public_values: '0x00', metrics: { num_instructions: 42 } }),
        200,
      );
      expect((await api(other, `/v1/programs/${program}`, DELETE)).status).toBe(404);
      expect((await r2Keys(`programs/${program}/`)).length).toBe(3);

      const tombstone = await json(await api(t, `/v1/programs/${program}`, DELETE), 200);
      expect(tombstone.deleted_at).toEqual(expect.any(String));
      expect(tombstone.proofs_run).toBe((await json(await api(t, `/v1/programs/${program}`), 200)).proofs_run);
      await expectPurged(`programs/${program}/`, null, program);
      expect((await api(t, `/v1/programs/${program}/download/elf`)).status).toBe(404);
      expect((await json(await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })), 409)).detail).toMatch(
        /deleted/,
      );
      expect((await api(t, `/v1/executions?program_id=${program}`, jsonPost({ input: [] }))).status).toBe(409);
      // Its proofs are records of their own: still there.
      expect((await json(await api(t, `/v1/proofs/${proof}`), 200)).deleted_at).toBeUndefined();
      expect(await json(await api(t, `/v1/programs/${program}`, DELETE), 200)).toEqual(tombstone);
      // The database itself refuses a proof of a deleted program (a submission that read the program before its deletion).
      await expect(
        env.DB.prepare(
          `INSERT INTO proofs (id, org_id, program_id, proof_type, priority, num_gpus, created_by) VALUES (?, ?, ?, 'stark', 5, 1, 'x')`,
        )
          .bind(crypto.randomUUID(), t.orgId, program)
          .run(),
      ).rejects.toThrow(/program was deleted/);
    },
  );
  it(
    'answers 409, not 500, to a submission whose program read came before the deletion and whose batch after',
    { timeout: 30_000 },
    async () => {
      const t = await seedTenant();
      const program = await readyProgram(t);
      // The deletion lands between the submission's read and its batch: inside the batch,
      // right after the job's insert, so the proof's (or execution's) insert meets the trigger.
      await env.DB.prepare(
        `CREATE TRIGGER test_program_deleted_midway AFTER INSERT ON jobs BEGIN UPDATE programs SET deleted_at = '2026-01-01T00:00:00.000Z' WHERE id = '${program}'; END`,
      ).run();
      try {
        expect((await json(await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })), 409)).detail).toMatch(
          /deleted/,
        );
        expect((await json(await api(t, `/v1/executions?program_id=${program}`, jsonPost({ input: [] })), 409)).detail).toMatch(/deleted/);
      } finally {
        await env.DB.prepare('DROP TRIGGER test_program_deleted_midway').run();
      }
      // Nothing of either was stored: the batch failed as a whole.
      expect(
        await env.DB.prepare('SELECT count(*) AS n FROM jobs WHERE kind IN (?, ?) AND org_id = ?')
          .bind('proof', 'execution', t.orgId)
          .first('n'),
      ).toBe(0);
    },
  );
});

describe('verifying against a deleted program (attack)', () => {
  const STARK = JSON.stringify({ version: 'v1.1', proof: 'abcd', user_pvs_proof: '0011', deferral_merkle_proofs: null });
  const proofForm = () => {
    const form = new FormData();
    form.append('proof', new File([STARK], 'proof.json', { type: 'application/json' }));
    return { method: 'POST', body: form };
  };

  it('is refused (409): its baseline is gone, no job is queued for it', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await json(await api(t, `/v1/programs/${program}`, DELETE), 200);
    for (const path of [`/v1/verify/stark?program_id=${program}`, `/v1/verify?program_id=${program}`])
      expect((await json(await api(t, path, proofForm()), 409)).detail).toMatch(/deleted/);
    expect(await countRows('verifications', 'program_id = ?', program)).toBe(0);
    expect(await countRows('jobs', "kind = 'verify' AND org_id = ?", t.orgId)).toBe(0);
    expect(await r2Keys('verifications/')).toEqual([]);
  });

  it('is refused (409) when the deletion lands between its read and its batch', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await env.DB.prepare(
      `CREATE TRIGGER test_program_deleted_midway_verify AFTER INSERT ON jobs BEGIN UPDATE programs SET deleted_at = '2026-01-01T00:00:00.000Z' WHERE id = '${program}'; END`,
    ).run();
    try {
      expect((await json(await api(t, `/v1/verify/stark?program_id=${program}`, proofForm()), 409)).detail).toMatch(/deleted/);
    } finally {
      await env.DB.prepare('DROP TRIGGER test_program_deleted_midway_verify').run();
    }
    expect(await countRows('verifications', 'program_id = ?', program)).toBe(0);
  });
});

describe('retention', () => {
  it('is set by owners and admins in the console, read by members', async () => {
    const t = await seedTenant();
    const [o, member] = [await owner(t), await signIn(await seedUser(t.orgId, 'member'))];
    expect(await as(member, `/console/v1/orgs/${t.orgId}/retention`)).toEqual({ retention_days: null });
    await send(member, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 30 }, 403);
    await send(o, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 0 }, 422);
    expect(await send(o, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 30 })).toEqual({ retention_days: 30 });
    expect(await as(member, `/console/v1/orgs/${t.orgId}/retention`)).toEqual({ retention_days: 30 });
    expect(await send(o, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: null })).toEqual({ retention_days: null });
  });

  it('leaves a trace in the audit log: who shortened it, to what (attack: an admin wipes every file unseen)', async () => {
    const t = await seedTenant();
    const admin = await signIn(await seedUser(t.orgId, 'admin'));
    await send(admin, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 1 });
    await send(admin, 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 3 });
    const entries = await env.DB.prepare(
      `SELECT actor, action, target, detail FROM audit_log WHERE org_id = ? AND action = 'retention.update' ORDER BY id`,
    )
      .bind(t.orgId)
      .all();
    expect(entries.results).toEqual([
      { actor: admin.email, action: 'retention.update', target: t.orgId, detail: JSON.stringify({ retention_days: 1 }) },
      { actor: admin.email, action: 'retention.update', target: t.orgId, detail: JSON.stringify({ retention_days: 3 }) },
    ]);
    // The owner reads it in the console's audit log.
    const log = await as(await owner(t), `/console/v1/orgs/${t.orgId}/audit`);
    expect(JSON.stringify(log)).toContain('retention.update');
  });

  it(
    'deletes finished records past it, a bounded number per run, oldest first, and resumes on the next run',
    { timeout: 30_000 },
    async () => {
      const [t, keeper] = [await seedTenant(), await seedTenant()];
      const program = await readyProgram(t);
      const done = [];
      for (let i = 0; i < 3; i++) done.push(await succeededProof(t, program));
      const recent = await succeededProof(t, program);
      const execution = await succeededExecution(t, program);
      const kept = await succeededProof(keeper, await readyProgram(keeper));
      // Finished 10, 9 and 8 days ago; the recent one today.
      const daysAgo = (d: number) => new Date(Date.now() - d * 86_400_000).toISOString();
      for (const [i, p] of done.entries())
        await env.DB.prepare('UPDATE proofs SET terminated_at = ? WHERE id = ?')
          .bind(daysAgo(10 - i), p.id)
          .run();
      await env.DB.prepare('UPDATE executions SET terminated_at = ? WHERE id = ?').bind(daysAgo(10), execution.id).run();
      await env.DB.prepare('UPDATE proofs SET terminated_at = ? WHERE id = ?').bind(daysAgo(20), kept.id).run();
      await send(await owner(t), 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 7 });
      const db = openDb(env.DB);
      const deleted = async (id: string, path = 'proofs') => (await json(await api(t, `/v1/${path}/${id}`), 200)).deleted_at !== undefined;

      // Two of each kind per run.
      const first = await sweepRetention(db, env.ARTIFACTS, Date.now(), 2);
      expect(first.retentionDeleted).toBe(3);
      expect(await Promise.all(done.map((p) => deleted(p.id)))).toEqual([true, true, false]);
      expect(await deleted(execution.id, 'executions')).toBe(true);
      expect(await r2Keys(`proofs/${done[0].id}/`)).toEqual([]);
      expect(await r2Keys(`logs/${done[0].jobId}`)).toEqual([]);
      expect(await r2Keys(`executions/${execution.id}/`)).toEqual([]);

      const second = await sweepRetention(db, env.ARTIFACTS, Date.now(), 2);
      expect(second.retentionDeleted).toBe(1);
      expect(await deleted(done[2].id)).toBe(true);
      expect((await sweepRetention(db, env.ARTIFACTS, Date.now(), 2)).retentionDeleted).toBe(0);
      // Within its retention, or an organization without one: kept.
      expect(await deleted(recent.id)).toBe(false);
      expect((await r2Keys(`proofs/${recent.id}/`)).length).toBeGreaterThanOrEqual(2);
      expect((await json(await api(keeper, `/v1/proofs/${kept.id}`), 200)).deleted_at).toBeUndefined();
      expect((await r2Keys(`proofs/${kept.id}/`)).length).toBeGreaterThanOrEqual(2);
    },
  );

  it(
    "serves organizations in turn: one organization's backlog does not hold up another's retention (attack)",
    { timeout: 60_000 },
    async () => {
      // The organization the sweep meets first (the lower id, neither swept yet) has the backlog.
      const [first, second] = [await seedTenant(), await seedTenant()].sort((a, b) => (a.orgId < b.orgId ? -1 : 1));
      const backlog = [];
      const firstProgram = await readyProgram(first);
      for (let i = 0; i < 4; i++) backlog.push(await succeededProof(first, firstProgram));
      const other = await succeededProof(second, await readyProgram(second));
      const longAgo = new Date(Date.now() - 10 * 86_400_000).toISOString();
      for (const p of [...backlog, other])
        await env.DB.prepare('UPDATE proofs SET terminated_at = ? WHERE id = ?').bind(longAgo, p.id).run();
      for (const t of [first, second]) await send(await owner(t), 'PUT', `/console/v1/orgs/${t.orgId}/retention`, { retention_days: 7 });
      const db = openDb(env.DB);
      const now = Date.now();
      expect((await sweepRetention(db, env.ARTIFACTS, now, 2)).retentionDeleted).toBe(2); // the first organization's two oldest
      // The next run starts with the organization the last one did not serve.
      expect((await sweepRetention(db, env.ARTIFACTS, now + 60_000, 2)).retentionDeleted).toBe(2);
      expect((await json(await api(second, `/v1/proofs/${other.id}`), 200)).deleted_at).toEqual(expect.any(String));
    },
  );

  it('finds its candidates through the partial indexes, never a scan of the records', async () => {
    const db = openDb(env.DB);
    for (const table of [proofs, executions]) {
      const detail = await queryPlan(pastRetention(db, table, Date.now(), 50));
      expect(detail).toMatch(/SCAN organizations USING (COVERING )?INDEX organizations_retention/);
      expect(detail).not.toMatch(/TEMP B-TREE/); // the turn's order is the index's: no sort
      expect(detail).toMatch(
        new RegExp(`SEARCH ${getTableName(table)} USING INDEX ${getTableName(table)}_retention \\(org_id=\\? AND terminated_at`),
      );
    }
  });

  it('deletes ended leases once no retried callback can need them, and never a live one', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { jobId } = await succeededProof(t, program);
    await json(await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })), 200);
    const running = await claimJob(await seedAgent());
    const db = openDb(env.DB);
    expect(await countRows('leases', 'job_id = ?', jobId)).toBe(1);
    await deleteEndedLeases(db, Date.now());
    expect(await countRows('leases', 'job_id = ?', jobId)).toBe(1); // within LEASE_KEEP_MS: a retried /complete still gets its answer
    await deleteEndedLeases(db, Date.now() + LEASE_KEEP_MS + 1000);
    expect(await countRows('leases', 'job_id = ?', jobId)).toBe(0);
    expect(await countRows('leases', 'job_id = ?', running.id)).toBe(1);
  });

  it('a finished job keeps nothing of the agent that ran it; a running one does', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { jobId } = await succeededProof(t, program);
    await json(await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })), 200);
    const running = await claimJob(await seedAgent());
    const agentFields = (id: string) =>
      env.DB.prepare(
        'SELECT agent_id IS NOT NULL AS agent, machine_type IS NOT NULL AS machine, lease_expires_at IS NOT NULL AS expiry FROM jobs WHERE id = ?',
      )
        .bind(id)
        .first();
    expect(await agentFields(jobId)).toEqual({ agent: 0, machine: 0, expiry: 0 });
    expect(await agentFields(running.id)).toEqual({ agent: 1, machine: 1, expiry: 1 });
    await json(await lease(running, '/fail', { error: 'boom', retryable: false }), 200);
    expect(await agentFields(running.id)).toEqual({ agent: 0, machine: 0, expiry: 0 });
  });
});
