// What a compromised GPU host can do with its credentials, and no more (SECURITY.md
// "Agent tokens, job tokens and queue tokens"): its agent token's scope bounds what it
// claims, whatever it declares; revoking the token ends its leases, job tokens and claims
// at once, its queue tokens within REVOCATION_BOUND_MS; a lease cannot be renewed forever; the lease routes authenticate per
// route, and unknown internal paths are 404s.
import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { revokeAgentToken } from '../../src/admin/statements.ts';
import { openDb } from '../../src/db/client.ts';
import { issueQueueToken, queueTokenLive, REVOCATION_BOUND_MS, verifyQueueToken } from '../../src/features/fleet/queue-token.ts';
import { recordD1Calls } from './d1-calls.ts';
import { FLEET_DEFAULTS } from '../../src/jobs/settings.ts';
import { api, json, markReady, registerProgram, runAdmin, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import {
  claim,
  claimJob,
  devProofOf,
  drainQueuedJobs,
  expectSealed,
  expireLease,
  jobRow,
  lease,
  presence,
  sealedDevProof,
  seedAgent,
  upload,
} from './fleet-helpers.ts';

beforeEach(drainQueuedJobs);

const FORGED_PVS = '0x' + 'ff'.repeat(32);
const COMPLETE = { kind: 'proof', proofs: ['stark'], public_values: FORGED_PVS, metrics: {} };

async function readyProgram(t: Tenant, configId: string): Promise<string> {
  const program = await registerProgram(t, configId);
  await markReady(program);
  await drainQueuedJobs(); // its commit job is not under test here
  return program;
}

const queuedProof = async (t: Tenant, configId: string) => submitProof(t, await readyProgram(t, configId));

async function submitProof(t: Tenant, program: string): Promise<string> {
  const res = await api(t, `/v1/proofs?program_id=${program}`, {
    method: 'POST',
    body: '{"input": ["0x0101"]}',
    headers: { 'content-type': 'application/json' },
  });
  return (await json<{ id: string }>(res, 200)).id;
}

const proofState = async (t: Tenant, id: string) => (await json(await api(t, `/v1/proofs/${id}`), 200)).state;

describe('an agent token’s scope', () => {
  it('a token for engine dev under config X cannot claim another organization’s job under config Y or on openvm, whatever it declares', async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const x = await seedConfig();
    const y = await seedConfig();
    const gpu = await seedConfig({ engine: 'openvm' });
    const [aProgram, bDevProgram, bGpuProgram] = [await readyProgram(a, x), await readyProgram(b, y), await readyProgram(b, gpu)];
    const bDev = await submitProof(b, bDevProgram);
    const bGpu = await submitProof(b, bGpuProgram);
    const greedy = { engines: ['dev', 'openvm'], configs: [] as string[], gpus: 8 };
    const host = await seedAgent(greedy, { scope: { engines: ['dev'], configs: [x] } });

    // Declaring every engine and config, or naming B's config outright, gets nothing.
    expect((await claim(host)).job).toBeNull();
    expect((await claim(host, { configs: [y, gpu] })).job).toBeNull();
    expect((await claim(host, { engines: ['openvm'], configs: [gpu] })).job).toBeNull();
    // A queue notice naming B's job is not for it.
    expect(await claim(host, { hint_job_id: await jobIdOf(bDev) })).toMatchObject({ job: null, hint: 'not-servable' });
    expect(await proofState(b, bDev)).toBe('Queued');
    expect(await proofState(b, bGpu)).toBe('Queued');

    // Its own config's job it gets, declaring the same.
    const mine = await submitProof(a, aProgram);
    expect((await claimJob(host)).subject_id).toBe(mine);

    // A token for every config of dev still never reaches openvm.
    const devAnywhere = await seedAgent(greedy, { scope: { engines: ['dev'], configs: null } });
    expect((await claimJob(devAnywhere)).subject_id).toBe(bDev);
    expect((await claim(devAnywhere)).job).toBeNull();
    expect(await proofState(b, bGpu)).toBe('Queued');
  });
});

async function jobIdOf(proofId: string): Promise<string> {
  return (await env.DB.prepare(`SELECT id FROM jobs WHERE kind = 'proof' AND subject_id = ?`).bind(proofId).first<{ id: string }>())!.id;
}

describe('revoking an agent token', () => {
  it('requeues its leased job at once, uncharged; its job token can renew, read and complete nothing afterwards', async () => {
    const t = await seedTenant();
    const proofId = await queuedProof(t, await seedConfig());
    const host = await seedAgent();
    const job = await claimJob(host);
    await json(await lease(job, '/heartbeat', { phase: 'AppProving' }), 200);
    const forged = await devProofOf(job, FORGED_PVS);
    await json(await upload(job, 'stark', forged), 200);
    const running = await env.DB.prepare(`SELECT running_jobs FROM organizations WHERE id = ?`)
      .bind(t.orgId)
      .first<{ running_jobs: number }>();
    expect(running!.running_jobs).toBe(1);

    await runAdmin(revokeAgentToken(host.token));

    // Back in the queue in the revocation's own transaction, through the counters and lanes.
    expect(await jobRow(job.id)).toMatchObject({ status: 'queued', lease_id: null, agent_id: null, attempt: 0, retries: 0 });
    expect(await proofState(t, proofId)).toBe('Queued');
    const org = await env.DB.prepare(`SELECT running_jobs, active_jobs FROM organizations WHERE id = ?`).bind(t.orgId).first();
    expect(org).toMatchObject({ running_jobs: 0, active_jobs: 1 });
    const lane = await env.DB.prepare(`SELECT queued, head_job_id FROM queue_lanes WHERE head_job_id = ?`).bind(job.id).first();
    expect(lane).toMatchObject({ queued: 1, head_job_id: job.id });
    expect(await env.DB.prepare(`SELECT outcome FROM leases WHERE id = ?`).bind(job.lease_id).first()).toEqual({ outcome: 'revoked' });

    // Nothing the old job token reports is accepted.
    expect([401, 409]).toContain((await lease(job, '/heartbeat', { phase: 'PostProcessing' })).status);
    expect((await lease(job, '/artifacts/input')).status).toBe(401);
    expect((await lease(job, '/status')).status).toBe(401);
    expect((await upload(job, 'stark', forged)).status).toBe(401);
    expect((await lease(job, '/complete', COMPLETE)).status).toBe(401);
    expect((await lease(job, '/fail', { error: 'x', retryable: true })).status).toBe(401);
    expect(await proofState(t, proofId)).toBe('Queued');

    // Another host takes it, as the same attempt: the revoked one is not counted.
    const next = await claimJob(await seedAgent());
    expect(next).toMatchObject({ id: job.id, attempt: job.attempt });
    await json(await upload(next, 'stark', await devProofOf(next)), 200);
    await json(await lease(next, '/complete', { ...COMPLETE, public_values: '0x00' }), 200);
    expect(await proofState(t, proofId)).toBe('Succeeded');
    expectSealed(await (await api(t, `/v1/proofs/${proofId}/proof/stark`)).text(), '0x00');
  });

  it('a job whose cancel was recorded is not requeued: its lease is made overdue, and the expiry ends it Canceled', async () => {
    const t = await seedTenant();
    const proofId = await queuedProof(t, await seedConfig());
    const host = await seedAgent();
    const job = await claimJob(host);
    await json(await api(t, `/v1/proofs/${proofId}/cancel`, { method: 'POST' }), 200);
    await runAdmin(revokeAgentToken(host.token));
    expect(await jobRow(job.id)).toMatchObject({ status: 'leased', lease_expires_at: 0 });
    expect(await env.DB.prepare(`SELECT outcome FROM leases WHERE id = ?`).bind(job.lease_id).first()).toEqual({ outcome: 'revoked' });
    expect((await lease(job, '/canceled', {})).status).toBe(401);
    expect(await expireLease(job)).toBe('expired');
    expect(await proofState(t, proofId)).toBe('Canceled');
    expect((await jobRow(job.id)).status).toBe('done');
  });

  it('stops the queue tokens it minted within REVOCATION_BOUND_MS, reading nothing per pull before that (injected clock)', async () => {
    const host = await seedAgent();
    const { queue_token } = await presence(host);
    const queue = (what: 'pull' | 'ack', token = queue_token) =>
      api(null, `/internal/v1/queue/${what}`, {
        method: 'POST',
        body: JSON.stringify(what === 'pull' ? { batch_size: 1, visibility_timeout_ms: 1000 } : { acks: [], retries: [] }),
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      });
    expect((await queue('pull')).status).toBe(200);
    expect((await queue('ack')).status).toBe(200);
    const claims = await verifyQueueToken(env, queue_token);
    const db = openDb(env.DB);
    const issued = claims.live_at;

    // Live: taken for live without a read up to the bound, then read once and taken for live for the bound again.
    const calls = recordD1Calls();
    expect(await queueTokenLive(db, claims, issued + REVOCATION_BOUND_MS - 1)).toBe(true);
    calls.stop();
    expect(calls.calls).toEqual([]);
    const reads = recordD1Calls();
    const read = issued + REVOCATION_BOUND_MS;
    expect(await queueTokenLive(db, claims, read)).toBe(true);
    expect(await queueTokenLive(db, claims, read + REVOCATION_BOUND_MS - 1)).toBe(true);
    reads.stop();
    expect(reads.calls.map((c) => c.sql)).toEqual([[expect.stringMatching(/^select "id" from "agent_tokens" where/)]]);

    await runAdmin(revokeAgentToken(host.token));
    // Within the bound of its last finding, the revoked token's queue token still pulls (the revocation's stated delay) ...
    expect(await queueTokenLive(db, claims, read + REVOCATION_BOUND_MS - 1)).toBe(true);
    expect((await queue('pull')).status).toBe(200);
    // ... and from the bound on, it is read and refused.
    expect(await queueTokenLive(db, claims, read + REVOCATION_BOUND_MS)).toBe(false);
    expect(await queueTokenLive(db, claims, read + 2 * REVOCATION_BOUND_MS)).toBe(false);
    // Through the routes: a queue token last found live more than the bound ago (minted then) pulls and acks nothing.
    const old = await issueQueueToken(env, { tokenId: claims.sub, agentId: claims.aid }, Date.now() - REVOCATION_BOUND_MS - 1);
    expect((await queue('pull', old.token)).status).toBe(401);
    expect((await queue('ack', old.token)).status).toBe(401);
    // No new queue token: presence is refused at once.
    expect(
      (
        await api(null, '/internal/v1/agents/presence', {
          method: 'POST',
          body: JSON.stringify(host.caps),
          headers: { authorization: `Bearer ${host.token}`, 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(401);
  });
});

describe('dev proofs: the host holds no secret', () => {
  it('a claim carries no dev proof secret; a proof sealed with a guessed secret is refused by /v1/verify/stark, whatever the host reports', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const program = await readyProgram(t, config);
    await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    expect(job.config).not.toHaveProperty('dev_proof_secret');
    expect(JSON.stringify(job)).not.toContain(env.DEV_PROOF_SECRET!);
    await json(await lease(job, '/release', {}), 200);
    await drainQueuedJobs();

    const verifyAs = async (proof: string, reported: boolean) => {
      const form = new FormData();
      form.append('proof', new File([proof], 'proof.json', { type: 'application/json' }));
      const { id } = await json(await api(t, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body: form }), 200);
      const verify = await claimJob(await seedAgent());
      await json(await lease(verify, '/complete', { kind: 'verify', verified: reported, reason: null }), 200);
      return json(await api(t, `/v1/verify/${id}`), 200);
    };
    // The forger's secret: a guess, or the one an old claim used to carry.
    const forged = await sealedDevProof('0x' + 'cd'.repeat(32), job.config, FORGED_PVS, 'local-dev-proof-secret-guess');
    expect(await verifyAs(forged, true)).toMatchObject({ result: 'failed', error_message: expect.stringMatching(/^MAC mismatch/) });
    // An unsealed proof (what a host's engine writes) is no proof either.
    expect(await verifyAs(await devProofOf(job, FORGED_PVS), true)).toMatchObject({ result: 'failed' });
    // One the deployment sealed is verified.
    const genuine = await sealedDevProof('0x' + 'cd'.repeat(32), job.config, '0x00', env.DEV_PROOF_SECRET!);
    expect(await verifyAs(genuine, true)).toMatchObject({ result: 'verified' });
  });

  it('the Worker seals only what the engine reported: a proof file with other public values, program or config fails the job', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const proofId = await submitProof(t, await readyProgram(t, config));
    const job = await claimJob(await seedAgent());
    await json(await upload(job, 'stark', await devProofOf(job, FORGED_PVS)), 200);
    expect(await json(await lease(job, '/complete', { ...COMPLETE, public_values: '0x00' }), 200)).toMatchObject({ status: 'failed' });
    const proof = await json(await api(t, `/v1/proofs/${proofId}`), 200);
    expect(proof).toMatchObject({
      state: 'Failed',
      error_message: expect.stringMatching(/public values are not the ones the engine reported/),
    });
  });
});

describe('a lease’s lifetime', () => {
  const bound = FLEET_DEFAULTS.MAX_LEASE_SECONDS * 1000;
  const claimedAgo = (leaseId: string, ms: number) =>
    env.DB.prepare('UPDATE leases SET claimed_at = ? WHERE id = ?')
      .bind(Date.now() - ms, leaseId)
      .run();

  it('is renewed up to its bound and never past it; then the heartbeat says it is over and the job is requeued', async () => {
    const t = await seedTenant();
    const proofId = await queuedProof(t, await seedConfig());
    const job = await claimJob(await seedAgent());

    // Three seconds short of the bound: renewed, but only up to it.
    await claimedAgo(job.lease_id, bound - 3_000);
    const lease0 = await env.DB.prepare('SELECT claimed_at FROM leases WHERE id = ?').bind(job.lease_id).first<{ claimed_at: number }>();
    const renewed = await json(await lease(job, '/heartbeat', {}), 200);
    expect(renewed.lease_expires_at).toBe(lease0!.claimed_at + bound);

    // Past it: over, whatever the agent does.
    await claimedAgo(job.lease_id, bound + 1_000);
    await env.DB.prepare('UPDATE jobs SET lease_expires_at = ? WHERE id = ?')
      .bind(Date.now() - 500, job.id)
      .run();
    const over = await json(await lease(job, '/heartbeat', { phase: 'AppProving' }), 409);
    expect(over.detail).toMatch(/maximum lifetime/);
    expect(await jobRow(job.id)).toMatchObject({ status: 'queued', lease_id: null });
    expect(await proofState(t, proofId)).toBe('Queued');
    expect([401, 409]).toContain((await lease(job, '/heartbeat', {})).status);
    expect((await lease(job, '/complete', COMPLETE)).status).toBe(409);
    // As after a lost lease: the next claim is the next attempt.
    expect(await claimJob(await seedAgent())).toMatchObject({ id: job.id, attempt: job.attempt + 1 });
  });
});

describe('the lease routes’ authentication', () => {
  it('a path ending in /heartbeat is not let through without a token; unknown internal paths are 404', async () => {
    expect((await api(null, '/internal/v1/lease/artifacts/heartbeat')).status).toBe(401);
    expect((await api(null, '/internal/v1/lease/results/heartbeat', { method: 'PUT', body: 'x' })).status).toBe(401);
    expect(
      (await api(null, '/internal/v1/lease/heartbeat', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }))
        .status,
    ).toBe(401);
    expect((await api(null, '/internal/v1/lease/nothing/heartbeat')).status).toBe(404);
    expect((await api(null, '/internal/v1/lease/nothing')).status).toBe(404);
    expect((await api(null, '/internal/v1/nothing/heartbeat', { method: 'POST' })).status).toBe(404);
  });
});
