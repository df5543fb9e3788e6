// /console/v1: API keys, projects, programs, proofs (logs, files, cancel), executions,
// verifications, usage and the operators' fleet page, each with its roles and errors.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { appendLogChunk } from '../../src/jobs/logs.ts';
import { tenantLimits } from '../../src/jobs/settings.ts';
import { openDb } from '../../src/db/client.ts';
import { api, json, markReady, registerProgram, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import { as, seedUser, send, signIn } from './console-helpers.ts';
import { seedAgent } from './fleet-helpers.ts';

async function member(role: 'owner' | 'admin' | 'member' = 'member', t?: Tenant) {
  const tenant = t ?? (await seedTenant());
  return { t: tenant, org: `/console/v1/orgs/${tenant.orgId}`, s: await signIn(await seedUser(tenant.orgId, role)) };
}

async function queuedProof(t: Tenant, programId?: string) {
  const program = programId ?? (await registerProgram(t, await seedConfig(), '&program_name=guest-one'));
  if (!programId) await markReady(program);
  const res = await api(t, `/v1/proofs?program_id=${program}`, {
    method: 'POST',
    body: JSON.stringify({ input: ['0x0148656c6c6f'] }),
    headers: { 'content-type': 'application/json' },
  });
  return { program, proof: (await json<{ id: string }>(res, 200)).id };
}

describe('API keys', () => {
  it('creates a key shown once that works on the public API until revoked', async () => {
    const { t, org, s } = await member('member');
    const created = await send(s, 'POST', `${org}/api-keys`, { name: 'ci' }, 201);
    expect(created).toMatchObject({
      name: 'ci',
      owner: s.email,
      prefix: created.key.slice(0, 11),
      owner_user_id: s.userId,
      scope: 'full',
      last_used_at: null,
      revoked_at: null,
    });
    expect(created.key).toMatch(/^sk_[0-9a-f]{48}$/);
    const tenant = { ...t, key: created.key };
    await json(await api(tenant, '/v1/validate_api_key'), 200);
    const [listed] = (await as(s, `${org}/api-keys`)).items;
    expect(listed).not.toHaveProperty('key');
    expect(listed.last_used_at).toEqual(expect.any(String));
    // What the key makes is created_by the person who made it, the key's name beside it.
    const { id } = await json(
      await api(tenant, '/v1/projects', {
        method: 'POST',
        body: JSON.stringify('made-with-key'),
        headers: { 'content-type': 'application/json' },
      }),
      201,
    );
    expect((await as(s, `${org}/projects/${id}`)).created_by).toBe(`${s.email} (key "ci")`);
    await send(s, 'DELETE', `${org}/api-keys/${created.id}`, undefined, 200);
    await json(await api(tenant, '/v1/validate_api_key'), 401);
    await send(s, 'DELETE', `${org}/api-keys/${created.id}`, undefined, 409);
    await send(s, 'DELETE', `${org}/api-keys/key_nope`, undefined, 404);
    expect((await as(s, `${org}/api-keys`)).items).toEqual([]);
    expect((await as(s, `${org}/api-keys?include_revoked=true`)).items).toHaveLength(1);
    await as(s, `${org}/api-keys?include_revoked=maybe`, 422);
    await send(s, 'POST', `${org}/api-keys`, { name: 'x'.repeat(101) }, 422);
  });

  it('members see and revoke only their own keys; admins all of them', async () => {
    const { t, org, s: alice } = await member('member');
    const { s: bob } = await member('member', t);
    const { s: admin } = await member('admin', t);
    const a = await send(alice, 'POST', `${org}/api-keys`, {}, 201);
    const b = await send(bob, 'POST', `${org}/api-keys`, {}, 201);
    expect((await as(alice, `${org}/api-keys`)).items.map((k: { id: string }) => k.id)).toEqual([a.id]);
    const all = (await as(admin, `${org}/api-keys`)).items.map((k: { id: string }) => k.id);
    expect(all).toEqual(expect.arrayContaining([a.id, b.id]));
    expect(all.length).toBeGreaterThanOrEqual(3); // the tenant's operator-made key too
    expect(await send(alice, 'DELETE', `${org}/api-keys/${b.id}`, undefined, 403)).toEqual({ detail: 'You can revoke only your own keys' });
    await send(admin, 'DELETE', `${org}/api-keys/${b.id}`, undefined, 200);
    const audit = (await as(admin, `${org}/audit`)).items;
    expect(audit[0]).toMatchObject({ action: 'api_key.revoke', actor: admin.email, target: b.id });
    // Another organization's key is not found.
    const other = await member('owner');
    await send(other.s, 'DELETE', `${other.org}/api-keys/${a.id}`, undefined, 404);
  });
});

describe('projects and programs', () => {
  it('searches, sorts and filters; shows a program with its artifacts and proof states', async () => {
    const { t, org, s } = await member('member');
    const cfg = await seedConfig();
    const p1 = await registerProgram(t, cfg, '&program_name=alpha&project_name=Zebra');
    const p2 = await registerProgram(t, cfg, '&program_name=beta&project_name=Aardvark');
    await markReady(p2);
    const projects = await as(s, `${org}/projects?sort_by=name&sort_order=asc`);
    expect(projects.items.map((p: { name: string }) => p.name)).toEqual(['Aardvark', 'Zebra']);
    expect((await as(s, `${org}/projects?search=zeb`)).items.map((p: { name: string }) => p.name)).toEqual(['Zebra']);
    await as(s, `${org}/projects?sort_by=size`, 422);
    expect((await as(s, `${org}/programs?status=ready`)).items.map((p: { id: string }) => p.id)).toEqual([p2]);
    expect((await as(s, `${org}/programs?search=alp`)).items.map((p: { id: string }) => p.id)).toEqual([p1]);
    expect((await as(s, `${org}/programs?from=2999-01-01`)).pagination.total).toBe(0);
    expect((await as(s, `${org}/programs?page_size=1&page=2`)).pagination).toEqual({ total: 2, page: 2, page_size: 1, pages: 2 });
    await as(s, `${org}/programs?from=yesterday`, 422);
    await queuedProof(t, p2);
    const detail = await as(s, `${org}/programs/${p2}`);
    expect(detail).toMatchObject({
      id: p2,
      name: 'beta',
      status: 'ready',
      artifacts: { engine: 'dev', app_exe_commit: '0x' + 'cd'.repeat(32) },
      proof_states: { Queued: 1 },
    });
    expect(detail.artifacts.elf_size).toBeGreaterThan(0);
    await as(s, `${org}/programs/${crypto.randomUUID()}`, 404);
    await as(s, `${org}/programs/not-a-uuid`, 422);
    const other = await member('owner');
    await as(other.s, `${other.org}/programs/${p2}`, 404);
    await as(other.s, `${other.org}/projects/${detail.project_id}`, 404);
  });
});

describe('proofs', () => {
  it('lists with filters, shows progress, reads logs from an offset, cancels once', async () => {
    const { t, org, s } = await member('member');
    const { program, proof } = await queuedProof(t);
    const page = await as(s, `${org}/proofs?state=Queued`);
    expect(page.items).toEqual([expect.objectContaining({ id: proof, state: 'Queued', program_uuid: program, program_name: 'guest-one' })]);
    expect((await as(s, `${org}/proofs?state=Succeeded`)).items).toEqual([]);
    expect((await as(s, `${org}/proofs?search=${proof.slice(0, 8)}`)).items).toHaveLength(1);
    expect((await as(s, `${org}/proofs?search=guest-o`)).items).toHaveLength(1);
    expect((await as(s, `${org}/proofs?to=2000-01-01`)).items).toHaveLength(0);
    expect((await as(s, `${org}/proofs?from=${new Date().toISOString().slice(0, 10)}`)).items).toHaveLength(1);
    await as(s, `${org}/proofs?state=Done`, 422);
    await as(s, `${org}/proofs?page_size=101`, 422);

    const detail = await as(s, `${org}/proofs/${proof}`);
    expect(detail).toMatchObject({
      id: proof,
      state: 'Queued',
      job: { status: 'queued', attempt: 0, log_bytes: 0, cancel_requested: false },
      files: [],
    });

    const job = (await env.DB.prepare(`SELECT id FROM jobs WHERE subject_id = ?`).bind(proof).first<{ id: string }>())!.id;
    const db = openDb(env.DB);
    await appendLogChunk(db, env.ARTIFACTS, job, { seq: 0, offset: 0, text: 'line one\n' }, tenantLimits(env));
    await appendLogChunk(db, env.ARTIFACTS, job, { seq: 1, offset: 9, text: 'line two\n' }, tenantLimits(env));
    const res = await fetchText(s.token, `${org}/proofs/${proof}/logs`);
    expect(res).toEqual({ text: 'line one\nline two\n', next: '18', state: 'Queued' });
    expect(await fetchText(s.token, `${org}/proofs/${proof}/logs?offset=9`)).toEqual({ text: 'line two\n', next: '18', state: 'Queued' });
    expect(await fetchText(s.token, `${org}/proofs/${proof}/logs?offset=18`)).toEqual({ text: '', next: '18', state: 'Queued' });
    await as(s, `${org}/proofs/${proof}/logs?offset=-1`, 422);

    await as(s, `${org}/proofs/${proof}/proof/stark`, 404);
    await as(s, `${org}/proofs/${proof}/proof/zip`, 422);
    expect(await send(s, 'POST', `${org}/proofs/${proof}/cancel`, undefined, 200)).toEqual({
      message: 'Proof canceled',
      state: 'Canceled',
    });
    await send(s, 'POST', `${org}/proofs/${proof}/cancel`, undefined, 409);
    expect((await json(await api(t, `/v1/proofs/${proof}`), 200)).state).toBe('Canceled');

    const other = await member('owner');
    await as(other.s, `${other.org}/proofs/${proof}`, 404);
    await send(other.s, 'POST', `${other.org}/proofs/${proof}/cancel`, undefined, 404);
    await as(other.s, `${other.org}/proofs/${proof}/logs`, 404);
  });

  it('downloads a finished proof file', async () => {
    const { t, org, s } = await member('member');
    const { proof } = await queuedProof(t);
    await env.ARTIFACTS.put(`proofs/${proof}/stark-proof.json`, '{"proof":"0xab"}');
    await env.DB.prepare(`UPDATE proofs SET state = 'Succeeded', proof_files = '["stark"]' WHERE id = ?`).bind(proof).run();
    expect((await as(s, `${org}/proofs/${proof}`)).files).toEqual(['stark']);
    expect(await as(s, `${org}/proofs/${proof}/proof/stark`)).toEqual({ proof: '0xab' });
  });
});

async function fetchText(token: string, path: string) {
  const { consoleFetch } = await import('./console-helpers.ts');
  const res = await consoleFetch(path, { token });
  expect(res.status).toBe(200);
  return { text: await res.text(), next: res.headers.get('x-log-next-offset'), state: res.headers.get('x-proof-state') };
}

describe('executions and verifications', () => {
  it('lists them with filters', async () => {
    const { t, org, s } = await member('member');
    const program = await registerProgram(t, await seedConfig());
    await markReady(program);
    const run = await json(
      await api(t, `/v1/executions?program_id=${program}`, {
        method: 'POST',
        body: JSON.stringify({ input: [] }),
        headers: { 'content-type': 'application/json' },
      }),
      200,
    );
    expect((await as(s, `${org}/executions`)).items.map((e: { id: string }) => e.id)).toEqual([run.id]);
    expect((await as(s, `${org}/executions?status=succeeded`)).items).toEqual([]);
    expect((await as(s, `${org}/executions?program_id=${program}&status=queued`)).items).toHaveLength(1);
    await as(s, `${org}/executions?status=Queued`, 422);
    expect((await as(s, `${org}/verifications`)).items).toEqual([]);
    await as(s, `${org}/verifications?result=maybe`, 422);
  });
});

describe('usage', () => {
  it('sums proofs, instructions, GPU-hours and cost per day and per project', async () => {
    const { t, org, s } = await member('member');
    const { proof } = await queuedProof(t);
    const { proof: second } = await queuedProof(t);
    const day = new Date().toISOString().slice(0, 10);
    // Usage counts a proof's instructions and cost once it ends, and a lease's GPU time once it ends.
    await env.DB.prepare(`UPDATE proofs SET state = 'Succeeded', num_instructions = 1000, cost = 2500000 WHERE id IN (?, ?)`)
      .bind(proof, second)
      .run();
    const job = (await env.DB.prepare(`SELECT id FROM jobs WHERE subject_id = ?`).bind(proof).first<{ id: string }>())!.id;
    const leaseId = crypto.randomUUID();
    await env.DB.prepare(
      `INSERT INTO leases (id, job_id, attempt, agent_id, token_hash, gpus, machine_type, claimed_at) VALUES (?, ?, 1, 'a', ?, 2, 'm', 0)`,
    )
      .bind(leaseId, job, crypto.randomUUID())
      .run();
    await env.DB.prepare(`UPDATE leases SET ended_at = 1800000, outcome = 'completed' WHERE id = ?`).bind(leaseId).run();
    const usage = await as(s, `${org}/usage?from=${day}&to=${day}`);
    expect(usage.totals).toEqual({ proofs: 2, instructions: 2000, gpu_hours: 1, cost: 5000000 });
    expect(usage.days).toEqual([{ date: day, proofs: 2, instructions: 2000, gpu_hours: 1, cost: 5000000 }]);
    expect(usage.projects).toHaveLength(2);
    const month = await as(s, `${org}/usage`);
    expect(month.days).toHaveLength(30);
    expect(month.days.at(-1).date).toBe(day);
    expect(month.totals.proofs).toBe(2);
    const from = new Date(Date.now() - 29 * 86400_000).toISOString().slice(0, 10);
    expect((await as(s, `${org}/usage?from=${from}&to=${day}`)).totals.proofs).toBe(2);
    await as(s, `${org}/usage?from=2026-02-01&to=2026-01-01`, 422);
    // A proof running now counts its GPU time so far.
    const { proof: third } = await queuedProof(t);
    await env.DB.prepare(`UPDATE jobs SET status = 'leased', lease_id = ? WHERE subject_id = ?`).bind(`live-${third}`, third).run();
    await env.DB.prepare(
      `INSERT INTO leases (id, job_id, attempt, agent_id, token_hash, gpus, machine_type, claimed_at) SELECT ?, id, 1, 'a', ?, 1, 'm', ? FROM jobs WHERE subject_id = ?`,
    )
      .bind(`live-${third}`, crypto.randomUUID(), Date.now() - 3_600_000, third)
      .run();
    const live = await as(s, `${org}/usage?from=${day}&to=${day}`);
    expect(live.totals.proofs).toBe(3);
    expect(live.totals.gpu_hours).toBeGreaterThanOrEqual(2);
    expect(live.totals.gpu_hours).toBeLessThan(2.01);
    await as(s, `${org}/usage?from=2020-01-01&to=2026-01-01`, 422);
    await as(s, `${org}/usage?from=Monday`, 422);
  });
});

describe('fleet', () => {
  it('is for operators only', async () => {
    const t = await seedTenant();
    const op = await signIn(await seedUser(t.orgId, 'member', { operator: true }));
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    expect(await as(owner, '/console/v1/fleet', 403)).toEqual({ detail: 'Operators only' });
    await queuedProof(t);
    await env.DB.prepare(
      `INSERT OR REPLACE INTO agents (id, token_id, name, machine_type, gpus, engines, configs, last_seen_at) VALUES ('agent-x', 't', 'gpu-box', 'h100', 8, '["dev"]', '[]', ?)`,
    )
      .bind(Date.now())
      .run();
    const fleet = await as(op, '/console/v1/fleet');
    expect(fleet.agents).toEqual(
      expect.arrayContaining([expect.objectContaining({ name: 'gpu-box', gpus: 8, engines: ['dev'], stale: false })]),
    );
    expect(fleet.queued.find((q: { engine: string }) => q.engine === 'dev').jobs).toBeGreaterThanOrEqual(1);
    expect(fleet.queued[0].oldest_age_seconds).toBeGreaterThanOrEqual(0);
    // Each live token with what its hosts are and may hold (the operator's word, not theirs).
    const box = await seedAgent({ machine_type: 'h100', gpus: 8 }, { limits: { maxGpus: 4, maxLeases: 2 } });
    const tokens = (await as(op, '/console/v1/fleet')).tokens;
    const id = await env.DB.prepare('SELECT token_id FROM agents WHERE id = ?').bind(box.caps.agent_id).first('token_id');
    expect(tokens.find((k: { id: string }) => k.id === id)).toMatchObject({ machine_type: 'h100', max_gpus: 4, max_leases: 2 });
  });
});

describe('OpenAPI', () => {
  it('documents /console/v1 under its own bearer scheme, in its own reference', async () => {
    const doc = await json(await api(null, '/openapi/console.json'), 200);
    expect(doc.components.securitySchemes.ConsoleBearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(doc.paths['/console/v1/orgs/{org_id}/api-keys'].post.security).toEqual([{ ConsoleBearer: [] }]);
    expect(doc.paths['/console/v1/auth/signin'].post).toBeDefined();
  });
});
