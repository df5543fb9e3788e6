import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { api, eventually, guest, json, markReady, registerProgram, runAdmin, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import { inOneRateWindow, spend } from './rate-helpers.ts';
import { sha256Hex } from '../../src/lib/crypto.ts';
import {
  claim,
  claimJob,
  devProofOf,
  drainQueuedJobs,
  expectSealed,
  expireLease,
  jobRow,
  lease,
  seedAgent,
  upload,
  servedBaseline,
} from './fleet-helpers.ts';
import { createApiKey, revokeAgentToken, setOrganizationLimits } from '../../src/admin/statements.ts';
import { gpusUsed } from 'prover-agent/protocol';
import { leaseCost, type LeaseRow } from '../../src/jobs/state.ts';
import { parseMachineRates } from '../../src/jobs/rates.ts';
import { MAX_INLINE_RESULT_BYTES, MAX_INLINE_ARTIFACT_BYTES } from 'prover-agent/protocol';
import { artifactKey } from '../../src/lib/artifacts.ts';

beforeEach(drainQueuedJobs);

const BASELINE = JSON.stringify({ app_exe_commit: '0x' + '11'.repeat(32), memory_dimensions: {}, num_user_pvs: 32 });
const STARK = JSON.stringify({ version: 'v1.0-dev', proof: 'aa', user_pvs_proof: 'bb', deferral_merkle_proofs: null });

async function submitProof(t: Tenant, program: string, query = '') {
  const res = await api(t, `/v1/proofs?program_id=${program}${query}`, {
    method: 'POST',
    body: '{"input": ["0x0101"]}',
    headers: { 'content-type': 'application/json' },
  });
  return (await json<{ id: string }>(res, 200)).id;
}

async function readyProgram(t: Tenant, cfgOverrides = {}) {
  const id = await registerProgram(t, await seedConfig(cfgOverrides));
  await markReady(id);
  await drainQueuedJobs(); // its commit job is not under test here
  return id;
}

/** A tenant's proof of a ready program on a fresh openvm config, queued and asking for `numGpus`. */
async function queuedOpenvmProof(numGpus: number) {
  const t = await seedTenant();
  const openvmCfg = await seedConfig({ engine: 'openvm' });
  const program = await registerProgram(t, openvmCfg);
  await markReady(program);
  await drainQueuedJobs();
  const proofId = await submitProof(t, program, `&num_gpus=${numGpus}`);
  return { t, openvmCfg, proofId };
}

describe('agent authentication', () => {
  it('refuses API keys, unknown and revoked agent tokens', async () => {
    const t = await seedTenant();
    const agent = await seedAgent();
    const body = JSON.stringify(agent.caps);
    const post = (headers: Record<string, string>) =>
      api(null, '/internal/v1/jobs/claim', { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
    expect((await post({ 'Service-API-Key': t.key })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${t.key}` })).status).toBe(401);
    expect((await post({ authorization: `Bearer ${agent.token}` })).status).toBe(200);
    await runAdmin(revokeAgentToken(agent.token));
    expect((await post({ authorization: `Bearer ${agent.token}` })).status).toBe(401);
    expect((await lease({ job_token: 'jt_nope' }, '/heartbeat', {})).status).toBe(401);
  });
});

describe('program commit through the internal API', () => {
  it('not_ready → processing → ready with the exe commit and baseline', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const program = await registerProgram(t, cfg);
    const agent = await seedAgent();
    const job = await claimJob(agent);
    expect(job).toMatchObject({ kind: 'commit', subject_id: program, attempt: 1, artifacts: ['elf', 'vmexe'], log: { seq: 0, offset: 0 } });
    expect(job.config).toMatchObject({ id: cfg, engine: 'dev' });
    // The deployment's secret stays in the Worker: dev proofs are sealed at completion.
    expect(JSON.stringify(job)).not.toContain(env.DEV_PROOF_SECRET!);
    expect(job.config).not.toHaveProperty('dev_proof_secret');
    expect((await json(await api(t, `/v1/programs/${program}`), 200)).status).toBe('processing');

    const elf = await lease(job, '/artifacts/elf');
    expect(new Uint8Array(await elf.arrayBuffer())).toEqual(guest('hello.elf'));
    expect((await lease(job, '/artifacts/input')).status).toBe(404);

    // Completing before uploading the baseline is refused.
    const commit = { kind: 'commit', app_exe_commit: '0x' + '11'.repeat(32), app_vm_commit: job.config.app_vm_commit };
    expect((await lease(job, '/complete', commit)).status).toBe(400);
    await json(await upload(job, 'baseline', BASELINE), 200);
    expect(await json(await lease(job, '/complete', commit), 200)).toEqual({ status: 'completed' });
    expect(await json(await lease(job, '/complete', commit), 200)).toEqual({ status: 'completed' }); // idempotent

    const rec = await json(await api(t, `/v1/programs/${program}`), 200);
    expect(rec.status).toBe('ready');
    expect(rec.launched_at).toEqual(expect.any(String));
    expect(await (await api(t, `/v1/programs/${program}/download/app_exe_commit`)).text()).toBe(commit.app_exe_commit.slice(2));
    expect(await servedBaseline(program)).toBe(BASELINE);
    expect((await lease(job, '/heartbeat', {})).status).toBe(409);
  });

  it('fails the program when the engine’s vm commit is not the config’s', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    const job = await claimJob(await seedAgent());
    await upload(job, 'baseline', BASELINE);
    const mismatch = { kind: 'commit', app_exe_commit: '0x' + '11'.repeat(32), app_vm_commit: '0x' + '99'.repeat(32) };
    const first = await json(await lease(job, '/complete', mismatch), 200);
    expect(first).toMatchObject({ status: 'failed', detail: expect.stringMatching(/app_vm_commit/) });
    expect(await json(await lease(job, '/complete', mismatch), 200)).toEqual(first); // a retry gets the same answer
    const rec = await json(await api(t, `/v1/programs/${program}`), 200);
    expect(rec.status).toBe('failed');
    expect(rec.error_message).toMatch(/app_vm_commit/);
  });
});

describe('proof lifecycle through the internal API', () => {
  it('walks the states, keeps logs in order, records metrics and cost', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const proofId = await submitProof(t, program);
    const job = await claimJob(await seedAgent({ machine_type: 'm-test' }));
    expect(job).toMatchObject({ kind: 'proof', subject_id: proofId, proof: { proof_type: 'stark', num_children: 0 } });
    expect(job.artifacts).toEqual(['elf', 'vmexe', 'input', 'baseline']);
    expect(JSON.parse(await (await lease(job, '/artifacts/input')).text())).toEqual({ input: ['0x0101'] });
    const state = async () => (await json(await api(t, `/v1/proofs/${proofId}`), 200)).state;
    expect(await state()).toBe('Executing');

    expect(await json(await lease(job, '/heartbeat', { phase: 'Executed', metrics: { num_instructions: 1234 } }), 200)).toMatchObject({
      cancel: false,
    });
    expect(await state()).toBe('Executed');
    await json(await lease(job, '/heartbeat', { phase: 'AppProving' }), 200);
    await json(await lease(job, '/heartbeat', { phase: 'Executing' }), 200); // never backwards
    expect(await state()).toBe('AppProving');

    expect(await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'first\n' }), 200)).toEqual({ accepted: 'appended' });
    expect(await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'first\n' }), 200)).toEqual({ accepted: 'duplicate' });
    const gap = await json(await lease(job, '/logs', { seq: 2, offset: 6, text: 'third\n' }), 409);
    expect(gap).toMatchObject({ expected_seq: 1, expected_offset: 6 });
    await json(await lease(job, '/logs', { seq: 1, offset: 6, text: 'second\n' }), 200);
    expect(await (await api(t, `/v1/proofs/${proofId}/logs`)).text()).toBe('first\nsecond\n');

    await json(await lease(job, '/heartbeat', { phase: 'PostProcessing' }), 200);
    await json(await upload(job, 'stark', await devProofOf(job)), 200);
    expect((await lease(job, '/complete', { kind: 'execute', exit_code: 0, public_values: null, error: null, metrics: {} })).status).toBe(
      422,
    );
    await json(
      await lease(job, '/complete', {
        kind: 'proof',
        proofs: ['stark'],
        public_values: '0x00',
        metrics: { num_instructions: 1234, cells_used: 99 },
      }),
      200,
    );

    const proof = await json(await api(t, `/v1/proofs/${proofId}`), 200);
    expect(proof).toMatchObject({ state: 'Succeeded', num_instructions: 1234, cells_used: 99, machine_type: 'm-test' });
    expect(proof.terminated_at).toEqual(expect.any(String));
    expect(proof.cost).toBeGreaterThanOrEqual(0);
    // Stored sealed by the Worker (the host's engine wrote it unsealed).
    const stored = await (await api(t, `/v1/proofs/${proofId}/proof/stark`)).text();
    expectSealed(stored);
    expect(proof.proof_size).toBe(stored.length);
    expect((await api(t, `/v1/proofs/${proofId}/proof/evm`)).status).toBe(404);
    const prog = await json(await api(t, `/v1/programs/${program}`), 200);
    expect(prog).toMatchObject({ proofs_run: 1, cells_used: 99 });
  });

  it('a retryable failure requeues within the budget; a job failure ends Failed with its message', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const proofId = await submitProof(t, program);
    const agent = await seedAgent();
    const first = await claimJob(agent);
    expect(await json(await lease(first, '/fail', { error: 'disk full', retryable: true }), 200)).toEqual({ status: 'requeued' });
    expect(await json(await lease(first, '/fail', { error: 'disk full', retryable: true }), 200)).toEqual({ status: 'requeued' }); // repeat
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Queued');
    const second = await claimJob(agent);
    expect(second).toMatchObject({ id: first.id, attempt: 2 });
    expect((await lease(first, '/heartbeat', {})).status).toBe(409);
    await json(await lease(second, '/fail', { error: 'guest panicked: bad input', retryable: false }), 200);
    const proof = await json(await api(t, `/v1/proofs/${proofId}`), 200);
    expect(proof).toMatchObject({ state: 'Failed', error_message: 'guest panicked: bad input' });
  });

  it('cancel reaches the agent through its heartbeat, then Canceled', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const job = await claimJob(await seedAgent());
    expect((await lease(job, '/canceled', {})).status).toBe(409); // not canceled yet
    await json(await api(t, `/v1/proofs/${proofId}/cancel`, { method: 'POST' }), 200);
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Canceling');
    expect(await json(await lease(job, '/heartbeat', { phase: 'AppProving' }), 200)).toMatchObject({ cancel: true });
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Canceling'); // not moved on by the beat
    await json(await lease(job, '/canceled', {}), 200);
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Canceled');
    expect((await jobRow(job.id)).status).toBe('done');
  });
});

describe('a lease ends in one request', () => {
  const logsOf = async (t: Tenant, proofId: string) => (await api(t, `/v1/proofs/${proofId}/logs`)).text();

  it('a claim names the files other jobs share, by their storage keys; the proof’s own input is not among them', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    expect(job.shared_artifacts).toEqual({
      elf: artifactKey.programElf(program),
      vmexe: artifactKey.programVmexe(program),
      baseline: artifactKey.programBaseline(program),
    });
    expect(job.artifacts).toContain('input');
  });

  it('a claim carries the job’s own small input inline (base64 of the stored bytes); a larger one is left to the download', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const small = await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    const stored = new Uint8Array(await (await env.ARTIFACTS.get(artifactKey.proofInput(small)))!.arrayBuffer());
    expect(Object.keys(job.inline_artifacts!)).toEqual(['input']);
    expect(Uint8Array.from(atob(job.inline_artifacts!.input), (ch) => ch.charCodeAt(0))).toEqual(stored);
    const bigInput = JSON.stringify({ input: ['0x01' + 'ab'.repeat(MAX_INLINE_ARTIFACT_BYTES / 2)] });
    const res = await api(t, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: bigInput,
      headers: { 'content-type': 'application/json' },
    });
    const big = (await json<{ id: string }>(res, 200)).id;
    const next = await claimJob(await seedAgent());
    expect(next.subject_id).toBe(big);
    expect(next.inline_artifacts).toEqual({});
    expect((await lease(next, '/artifacts/input')).status).toBe(200);
  });

  it('/complete carries the last log chunk and a small result inline: stored with the completion, once, whatever the retries', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const proofId = await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'first\n' }), 200);
    const complete = {
      kind: 'proof',
      proofs: ['stark'],
      public_values: '0x00',
      metrics: { cells_used: 7 },
      results: { stark: await devProofOf(job) },
      log: { seq: 1, offset: 6, text: 'last\n' },
    };
    expect(await json(await lease(job, '/complete', complete), 200)).toEqual({ status: 'completed' });
    expect(await json(await lease(job, '/complete', complete), 200)).toEqual({ status: 'completed' }); // a retry: same answer, nothing twice
    const stored = await (await api(t, `/v1/proofs/${proofId}/proof/stark`)).text();
    expectSealed(stored);
    expect(await json(await api(t, `/v1/proofs/${proofId}`), 200)).toMatchObject({
      state: 'Succeeded',
      proof_size: stored.length,
      cells_used: 7,
    });
    expect(await logsOf(t, proofId)).toBe('first\nlast\n');
    expect(await jobRow(job.id)).toMatchObject({ log_seq: 2, log_bytes: 11 });
  });

  it('a commit completes with its baseline inline', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    const job = await claimJob(await seedAgent());
    const commit = {
      kind: 'commit',
      app_exe_commit: '0x' + '11'.repeat(32),
      app_vm_commit: job.config.app_vm_commit,
      results: { baseline: BASELINE },
    };
    expect(await json(await lease(job, '/complete', commit), 200)).toEqual({ status: 'completed' });
    expect((await json(await api(t, `/v1/programs/${program}`), 200)).status).toBe('ready');
    expect(await servedBaseline(program)).toBe(BASELINE);
  });

  it('refuses inline results the job’s kind does not have, or too big to ride along (422), and changes nothing', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const job = await claimJob(await seedAgent());
    const complete = { kind: 'proof', proofs: ['stark'], public_values: null, metrics: {} };
    expect(await json(await lease(job, '/complete', { ...complete, results: { baseline: BASELINE } }), 422)).toMatchObject({
      detail: expect.stringMatching(/no result 'baseline'/),
    });
    expect((await lease(job, '/complete', { ...complete, results: { stark: 'x'.repeat(MAX_INLINE_RESULT_BYTES + 1) } })).status).toBe(422);
    expect((await lease(job, '/complete', { ...complete, results: { stark: STARK, extra: '{}' } })).status).toBe(422);
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Executing');
    expect((await lease(job, '/complete', complete)).status).toBe(400); // and without it, the result must have been uploaded
  });

  it('/fail, /canceled and /release carry the last log chunk too; a chunk out of order is dropped and the ending still applies', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const failed = await submitProof(t, program);
    const first = await claimJob(await seedAgent());
    expect(
      await json(
        await lease(first, '/fail', { error: 'guest panicked', retryable: false, log: { seq: 0, offset: 0, text: 'panic!\n' } }),
        200,
      ),
    ).toEqual({ status: 'failed' });
    expect(await logsOf(t, failed)).toBe('panic!\n');

    const released = await submitProof(t, program);
    const second = await claimJob(await seedAgent());
    expect(await json(await lease(second, '/release', { log: { seq: 5, offset: 99, text: 'lost\n' } }), 200)).toEqual({
      status: 'requeued',
    });
    expect(await logsOf(t, released)).toBe('');
    const third = await claimJob(await seedAgent());
    expect(third.log).toMatchObject({ seq: 0, offset: 0 });
    expect(await json(await lease(third, '/release', { log: { seq: 0, offset: 0, text: 'shutting down\n' } }), 200)).toEqual({
      status: 'requeued',
    });
    expect(await logsOf(t, released)).toBe('shutting down\n');

    const fourth = await claimJob(await seedAgent());
    await json(await api(t, `/v1/proofs/${released}/cancel`, { method: 'POST' }), 200);
    expect(await json(await lease(fourth, '/canceled', { log: { ...fourth.log, text: 'canceled\n' } }), 200)).toEqual({
      status: 'canceled',
    });
    expect(await logsOf(t, released)).toBe('shutting down\ncanceled\n');
  });

  it('/canceled and /release take an empty body as before', async () => {
    const t = await seedTenant();
    await submitProof(t, await readyProgram(t));
    const job = await claimJob(await seedAgent());
    const res = await api(null, '/internal/v1/lease/release', { method: 'POST', headers: { authorization: `Bearer ${job.job_token}` } });
    expect(await json(res, 200)).toEqual({ status: 'requeued' });
  });
});

describe('a completion that claims the agent’s next job', () => {
  /** Two queued proofs of one tenant's ready program, and an agent that claimed the first. */
  async function twoProofs(opts: Parameters<typeof seedAgent>[1] = {}) {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const first = await submitProof(t, program);
    const second = await submitProof(t, program);
    const agent = await seedAgent({ gpus: 0 }, opts);
    const job = await claimJob(agent);
    expect(job.subject_id).toBe(first);
    const { hint_job_id: _, ...nextClaim } = agent.caps;
    const complete = async (extra: object = {}) => ({
      kind: 'proof',
      proofs: ['stark'],
      public_values: '0x00',
      metrics: {},
      results: { stark: await devProofOf(job) },
      next_claim: nextClaim,
      ...extra,
    });
    return { t, program, first, second, agent, job, nextClaim, complete };
  }

  const leasesOf = (jobId: string) =>
    env.DB.prepare('SELECT id, agent_id, agent_token_id, outcome, response FROM leases WHERE job_id = ? ORDER BY claimed_at')
      .bind(jobId)
      .all<{ id: string; agent_id: string; agent_token_id: string; outcome: string | null; response: string | null }>()
      .then((r) => r.results);

  it('answers with the next job and a job token of its own, for the lease’s agent token; a retry answers the stored completion and claims nothing', async () => {
    const { t, program, first, second, agent, job, complete } = await twoProofs();
    const body = await complete();
    const answer = await json(await lease(job, '/complete', body), 200);
    expect(answer).toMatchObject({ status: 'completed', next: { kind: 'proof', subject_id: second, attempt: 1 } });
    const next = answer.next;
    expect(next.job_token).not.toBe(job.job_token);
    expect((await json(await api(t, `/v1/proofs/${first}`), 200)).state).toBe('Succeeded');
    expect((await json(await api(t, `/v1/proofs/${second}`), 200)).state).toBe('Executing');
    // The next lease is held by the same agent under the same agent token, and its token works.
    const [done] = await leasesOf(job.id);
    const [held] = await leasesOf(next.id);
    expect(held).toMatchObject({ agent_id: agent.caps.agent_id, agent_token_id: done.agent_token_id, outcome: null });
    expect((await lease(next, '/heartbeat', {})).status).toBe(200);
    // What a retry is answered with is stored without the next job's token.
    expect(JSON.parse(done.response!)).toEqual({ status: 'completed' });
    // A retry claims nothing: a third job waits.
    const third = await submitProof(t, program);
    expect(await json(await lease(job, '/complete', body), 200)).toEqual({ status: 'completed' });
    expect((await json(await api(t, `/v1/proofs/${third}`), 200)).state).toBe('Queued');
  });

  it('null when there is nothing for the agent; a next claim of another agent than the lease’s is refused (422) before anything is written', async () => {
    const { t, first, second, job, nextClaim, complete } = await twoProofs();
    const other = await complete({ next_claim: { ...nextClaim, agent_id: crypto.randomUUID() } });
    expect(await json(await lease(job, '/complete', other), 422)).toMatchObject({ detail: expect.stringMatching(/next_claim\.agent_id/) });
    expect((await json(await api(t, `/v1/proofs/${first}`), 200)).state).toBe('Executing');
    await api(t, `/v1/proofs/${second}/cancel`, { method: 'POST' });
    expect(await json(await lease(job, '/complete', await complete()), 200)).toEqual({ status: 'completed', next: null });
  });

  it('a claim the agent token may not make (another machine type, or past the token’s budget): the completion stands, with no next job', async () => {
    const { t, second, job, nextClaim, complete } = await twoProofs();
    const elsewhere = await complete({ next_claim: { ...nextClaim, machine_type: 'other-machine' } });
    expect(await json(await lease(job, '/complete', elsewhere), 200)).toEqual({ status: 'completed' });
    expect((await json(await api(t, `/v1/proofs/${second}`), 200)).state).toBe('Queued');

    // Its agent token's budget spent: the claims it makes by itself get 429, and so does the one a completion would make.
    const r = await inOneRateWindow(async () => {
      const spent = await twoProofs();
      await spend(env.RATE_LIMIT_AGENT, await sha256Hex(spent.agent.token), 280); // its presence and claim counted already
      // A read counted against the same budget, after its answer: this isolate then knows the budget is spent.
      const read = () =>
        api(null, `/internal/v1/configs/${spent.job.config.id}`, { headers: { authorization: `Bearer ${spent.agent.token}` } });
      await eventually(async () => expect((await read()).status).toBe(429));
      return { spent, answer: await json(await lease(spent.job, '/complete', await spent.complete()), 200) };
    });
    expect(r.answer).toEqual({ status: 'completed' });
    expect((await json(await api(r.spent.t, `/v1/proofs/${r.spent.second}`), 200)).state).toBe('Queued');
  });

  it('the token’s lease count makes room for the next job: a token of one lease completes one job and holds the next', async () => {
    const { t, second, job, complete } = await twoProofs({ limits: { maxLeases: 1 } });
    expect(await json(await lease(job, '/complete', await complete()), 200)).toMatchObject({ next: { subject_id: second } });
    expect((await json(await api(t, `/v1/proofs/${second}`), 200)).state).toBe('Executing');
  });
});

describe('cancel of a running proof', () => {
  /** A claimed proof whose lease began an hour ago and whose cancel came half an hour in. */
  async function canceledHalfwayThroughAnHour() {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const proofId = await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    const claimedAt = Date.now() - 3_600_000;
    await env.DB.prepare('UPDATE leases SET claimed_at = ? WHERE id = ?').bind(claimedAt, job.lease_id).run();
    expect(await json(await api(t, `/v1/proofs/${proofId}/cancel`, { method: 'POST' }), 200)).toMatchObject({
      state: 'Canceling',
      message: expect.stringMatching(/ends Canceled/),
    });
    await env.DB.prepare('UPDATE jobs SET cancel_requested_at = ? WHERE id = ?')
      .bind(claimedAt + 1_800_000, job.id)
      .run();
    return { t, program, proofId, job };
  }
  // MACHINE_RATES is {"*": 1.0} (wrangler.toml): half an hour of one billing unit.
  const HALF_AN_HOUR = 500_000;

  it('a result that arrives after the cancel is dropped: Canceled, charged only until the cancel', async () => {
    const { t, program, proofId, job } = await canceledHalfwayThroughAnHour();
    await json(await upload(job, 'stark', STARK), 200);
    const complete = { kind: 'proof', proofs: ['stark'], public_values: null, metrics: { cells_used: 5 } };
    expect(await json(await lease(job, '/complete', complete), 200)).toEqual({ status: 'canceled' });
    expect(await json(await lease(job, '/complete', complete), 200)).toEqual({ status: 'canceled' }); // a retry, same answer
    const proof = await json(await api(t, `/v1/proofs/${proofId}`), 200);
    expect(proof).toMatchObject({ state: 'Canceled', cost: HALF_AN_HOUR });
    expect((await api(t, `/v1/proofs/${proofId}/proof/stark`)).status).not.toBe(200);
    expect(await json(await api(t, `/v1/programs/${program}`), 200)).toMatchObject({ proofs_run: 0, cells_used: 0 });
    expect((await jobRow(job.id)).status).toBe('done');
    expect((await api(t, `/v1/proofs/${proofId}/cancel`, { method: 'POST' })).status).toBe(409); // finished: nothing to cancel
  });

  it('the agent’s acknowledgement, a failure or a release after the cancel all end Canceled, charged until the cancel, never requeued', async () => {
    for (const [path, body] of [
      ['/canceled', {}],
      ['/fail', { error: 'engine killed by SIGTERM', retryable: true }],
      ['/release', {}],
    ] as const) {
      const { t, proofId, job } = await canceledHalfwayThroughAnHour();
      expect(await json(await lease(job, path, body), 200), path).toEqual({ status: 'canceled' });
      expect(await json(await api(t, `/v1/proofs/${proofId}`), 200), path).toMatchObject({ state: 'Canceled', cost: HALF_AN_HOUR });
      expect((await jobRow(job.id)).status, path).toBe('done');
    }
  });

  it('an agent that dies after the cancel: the expired lease ends the proof Canceled, charged until the cancel', async () => {
    const { t, proofId, job } = await canceledHalfwayThroughAnHour();
    expect(await expireLease(job)).toBe('expired');
    expect(await json(await api(t, `/v1/proofs/${proofId}`), 200)).toMatchObject({ state: 'Canceled', cost: HALF_AN_HOUR });
  });

  it('GET /lease/status tells the agent of a cancel without renewing the lease; 409 once the lease is superseded', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const job = await claimJob(await seedAgent());
    const expires = (await jobRow(job.id)).lease_expires_at;
    expect(await json(await lease(job, '/status'), 200)).toEqual({ cancel: false });
    await json(await api(t, `/v1/proofs/${proofId}/cancel`, { method: 'POST' }), 200);
    expect(await json(await lease(job, '/status'), 200)).toEqual({ cancel: true });
    expect((await jobRow(job.id)).lease_expires_at).toBe(expires); // read only

    const other = await submitProof(t, await readyProgram(t));
    const second = await claimJob(await seedAgent());
    expect(second.subject_id).toBe(other);
    await expireLease(second);
    await claimJob(await seedAgent());
    expect((await lease(second, '/status')).status).toBe(409);
  });
});

describe('dispatch', () => {
  it('a claim says how often to renew the lease and to look for a cancel: one write per 5 s, within a 12 s lease', async () => {
    const t = await seedTenant();
    await submitProof(t, await readyProgram(t));
    const before = Date.now();
    const job = await claimJob(await seedAgent());
    expect(job).toMatchObject({ heartbeat_interval_ms: 5000, cancel_check_interval_ms: 1000 });
    expect(job.lease_expires_at - before).toBeGreaterThanOrEqual(12_000);
    expect(job.lease_expires_at - Date.now()).toBeLessThanOrEqual(12_000);
  });

  it('a claim naming 10 engines and 50 configs stays within D1’s bound parameters', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const program = await registerProgram(t, cfg);
    const agent = await seedAgent({
      engines: ['dev', ...Array.from({ length: 9 }, (_, i) => `engine-${i}`)],
      configs: [cfg, ...Array.from({ length: 49 }, (_, i) => `cfg_${i}`)],
    });
    expect((await claimJob(agent)).subject_id).toBe(program);
  });

  it('fair share: after org A queues 500 jobs, org B’s 5 all start within the next 10 claims', async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    const programA = await readyProgram(a);
    const programB = await readyProgram(b);
    // Ten keys of org A, 50 submissions each: under the per-key rate limit of the test pool.
    const aKeys = [
      a,
      ...(await Promise.all(Array.from({ length: 9 }, async () => ({ ...a, key: await runAdmin(createApiKey(a.orgId, a.owner)) })))),
    ];
    for (const key of aKeys) await Promise.all(Array.from({ length: 50 }, () => submitProof(key, programA, '&priority=10')));
    const bProofs = new Set<string>();
    for (let i = 0; i < 5; i++) bProofs.add(await submitProof(b, programB, '&priority=1'));
    const agent = await seedAgent();
    const claimed: string[] = [];
    for (let i = 0; i < 10; i++) claimed.push((await claimJob(agent)).subject_id);
    expect(claimed.filter((p) => bProofs.has(p))).toHaveLength(5);
  }, 300_000); // 505 submissions through the API: over a minute on a loaded 2-core host

  it('fair share follows the organizations’ weights; an organization’s own jobs still go by priority', async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    await runAdmin(setOrganizationLimits(a.orgId, { shareWeight: 3 }));
    const programA = await readyProgram(a);
    const programB = await readyProgram(b);
    const aLow = await submitProof(a, programA, '&priority=1');
    const aProofs = [aLow];
    for (let i = 0; i < 7; i++) aProofs.push(await submitProof(a, programA, '&priority=9'));
    for (let i = 0; i < 8; i++) await submitProof(b, programB);
    const agent = await seedAgent();
    const claimed: string[] = [];
    for (let i = 0; i < 8; i++) claimed.push((await claimJob(agent)).subject_id);
    const ofA = claimed.filter((p) => aProofs.includes(p));
    expect(ofA).toHaveLength(6); // 3 running jobs of A for each of B's
    expect(ofA).not.toContain(aLow); // A's priority-9 jobs first
  });

  it('claims the highest priority first, then the oldest', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const low = await submitProof(t, program, '&priority=1');
    const midOld = await submitProof(t, program, '&priority=5');
    const high = await submitProof(t, program, '&priority=10');
    const midNew = await submitProof(t, program, '&priority=5');
    const agent = await seedAgent();
    const order = [];
    for (let i = 0; i < 4; i++) order.push((await claimJob(agent)).subject_id);
    expect(order).toEqual([high, midOld, midNew, low]);
    expect(await claim(agent)).toEqual({ job: null, hint: 'none' });
  });

  it('matches capabilities: engine, config, GPUs (GPU-less dev takes any num_gpus; openvm needs one)', async () => {
    const { t, openvmCfg, proofId } = await queuedOpenvmProof(8);
    const devOnly = await seedAgent({ engines: ['dev'], gpus: 0 });
    const noGpu = await seedAgent({ engines: ['openvm'], gpus: 0 });
    const otherConfig = await seedAgent({ engines: ['openvm'], gpus: 8, configs: [await seedConfig({ engine: 'openvm' })] });
    const oneGpu = await seedAgent({ engines: ['openvm'], gpus: 1, configs: [openvmCfg] });
    const jobId = (await env.DB.prepare('SELECT id FROM jobs WHERE subject_id = ?').bind(proofId).first<{ id: string }>())!.id;
    expect(await claim(devOnly, { hint_job_id: jobId })).toEqual({ job: null, hint: 'not-servable' });
    expect((await claim(noGpu)).job).toBeNull();
    expect((await claim(otherConfig)).job).toBeNull();
    const got = await claim(oneGpu, { hint_job_id: jobId });
    expect(got.hint).toBe('claimed');
    expect(got.job).toMatchObject({ subject_id: proofId, num_gpus: 1 });
    expect(await claim(oneGpu, { hint_job_id: jobId })).toEqual({ job: null, hint: 'not-queued' });

    const devProgram = await readyProgram(t);
    const devProof = await submitProof(t, devProgram, '&num_gpus=64');
    expect((await claimJob(devOnly)).subject_id).toBe(devProof);
    expect((await json(await api(t, `/v1/proofs/${devProof}`), 200)).num_gpus).toBe(64);
  });

  it('an openvm proof asking for 8 GPUs runs on the one the CLI uses: the proof says 1 and the lease holds and bills 1', async () => {
    const { t, proofId } = await queuedOpenvmProof(8);
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).num_gpus).toBe(8); // as asked, until it runs
    const agent = await seedAgent({ engines: ['openvm'], gpus: 2 });
    const job = await claimJob(agent);
    expect(job).toMatchObject({ subject_id: proofId, num_gpus: 1 });
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).num_gpus).toBe(1);
    const held = await env.DB.prepare('SELECT * FROM leases WHERE id = ?').bind(job.lease_id).first<LeaseRow>();
    expect(held!.gpus).toBe(1);
    // One GPU-hour at the machine's rate, not eight.
    const settings = {
      leaseTtlMs: 60_000,
      maxLeaseMs: 3_600_000,
      maxAttempts: 3,
      maxRetries: 2,
      machineRates: parseMachineRates('{"*": 2}'),
    };
    expect(leaseCost(held!, settings, held!.claimed_at + 3_600_000)).toBe(2_000_000);
    expect(gpusUsed('openvm', 8)).toBe(1);
    expect(gpusUsed('dev', 8)).toBe(0);
  });
});

describe('leases', () => {
  it('an expired lease requeues the job (attempt+1) and refuses the old agent’s callbacks', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const a = await seedAgent();
    const b = await seedAgent();
    const first = await claimJob(a);
    await json(await lease(first, '/heartbeat', { phase: 'AppProving' }), 200);
    expect(await expireLease(first)).toBe('expired'); // its lease check finds it expired and requeues it
    const second = await claimJob(b);
    expect(second).toMatchObject({ id: first.id, attempt: 2 });
    expect((await jobRow(first.id)).retries).toBe(0); // infrastructure loss is not charged
    await upload(second, 'stark', await devProofOf(second));
    for (const [path, body] of [
      ['/heartbeat', {}],
      ['/complete', { kind: 'proof', proofs: ['stark'], public_values: null, metrics: {} }],
      ['/fail', { error: 'x', retryable: false }],
      ['/logs', { seq: 0, offset: 0, text: 'late' }],
    ] as const) {
      expect((await lease(first, path, body)).status, path).toBe(409);
    }
    expect((await upload(first, 'stark', 'stale')).status).toBe(409);
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Executing');
    await json(await lease(second, '/complete', { kind: 'proof', proofs: ['stark'], public_values: '0x00', metrics: {} }), 200);
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Succeeded');
    expectSealed(await (await api(t, `/v1/proofs/${proofId}/proof/stark`)).text());
  });

  it('after MAX_ATTEMPTS lost leases the job fails saying why', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const agent = await seedAgent();
    for (let i = 0; i < 5; i++) expect(await expireLease(await claimJob(agent))).toBe('expired');
    expect((await claim(agent)).job).toBeNull();
    const proof = await json(await api(t, `/v1/proofs/${proofId}`), 200);
    expect(proof.state).toBe('Failed');
    expect(proof.error_message).toMatch(/Gave up after 5 attempts/);
  });

  it('release hands the job back at once without charging its budget', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const agent = await seedAgent();
    const job = await claimJob(agent);
    expect(await json(await lease(job, '/release', {}), 200)).toEqual({ status: 'requeued' });
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Queued');
    const again = await claimJob(agent);
    expect(again.attempt).toBe(2);
    expect((await jobRow(job.id)).retries).toBe(0);
  });
});
