// A queue that explains itself (docs/callers.md "Why a job waits"): a queued proof's or
// execution's record says why it is not running, and a job no online agent could take
// for UNSERVABLE_EVENT_SECONDS raises its *.unservable webhook event once.
import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { sweep } from '../../src/jobs/sweep.ts';
import { api, json, markReady, registerProgram, seedConfig, seedTenant, type Tenant, cronPart } from './helpers.ts';
import { claim, claimJob, drainQueuedJobs, seedAgent } from './fleet-helpers.ts';

beforeEach(async () => {
  await drainQueuedJobs();
  await env.DB.prepare('DELETE FROM agents').run();
});

const post = (t: Tenant, path: string) =>
  api(t, path, { method: 'POST', body: '{"input": []}', headers: { 'content-type': 'application/json' } });

async function readyProgram(cfg = {}, t?: Tenant) {
  const tenant = t ?? (await seedTenant());
  const configId = await seedConfig(cfg);
  const program = await registerProgram(tenant, configId);
  await markReady(program);
  await drainQueuedJobs();
  return { t: tenant, program, configId };
}

/** Makes the sweep look at every lane now (their notices are old). */
const staleNotices = () => env.DB.prepare(`UPDATE jobs SET notified_at = 0 WHERE status = 'queued'`).run();

describe('why a job waits', () => {
  it('no online agent: no_agent, with the sentence, on GET, the list and the event stream', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}`), 200);
    // before the sweep has looked: servable as far as the service knows, and next
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({
      waiting_reason: 'starting',
      jobs_ahead: 0,
      estimated_start_at: null,
    });
    await staleNotices();
    await sweep(cronPart('sweep'));
    const proof = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(proof).toMatchObject({ state: 'Queued', waiting_reason: 'no_agent', waiting_detail: 'no prover agent is online' });
    expect((await json(await api(t, `/v1/proofs?program_id=${program}`), 200)).items[0]).toMatchObject({ waiting_reason: 'no_agent' });
    const stream = await api(t, `/v1/proofs/${id}/events`, { headers: { accept: 'text/event-stream' } });
    const reader = stream.body!.getReader();
    let text = '';
    while (!text.includes('event: state')) text += new TextDecoder().decode((await reader.read()).value);
    await reader.cancel();
    expect(text).toContain('"waiting_reason":"no_agent"');
  });

  it('an agent of another engine or config: no_agent naming it; too few GPUs: not_enough_gpus', async () => {
    const a = await readyProgram({ engine: 'openvm' });
    const b = await readyProgram({ engine: 'openvm' });
    const { id: p1 } = await json(await post(a.t, `/v1/proofs?program_id=${a.program}`), 200);
    const { id: p2 } = await json(await post(b.t, `/v1/proofs?program_id=${b.program}`), 200);
    await claim(await seedAgent({ engines: ['dev'] }));
    await claim(await seedAgent({ engines: ['openvm'], gpus: 0, configs: [b.configId] }));
    await staleNotices();
    await sweep(cronPart('sweep'));
    expect(await json(await api(a.t, `/v1/proofs/${p1}`), 200)).toMatchObject({
      waiting_reason: 'no_agent',
      waiting_detail: `no online agent serves config ${a.configId}`,
    });
    expect(await json(await api(b.t, `/v1/proofs/${p2}`), 200)).toMatchObject({ waiting_reason: 'not_enough_gpus' });
  });

  it('servable: jobs_ahead counts the jobs the same agents run first, and the reason clears once it runs', async () => {
    const { t, program } = await readyProgram();
    const other = await seedTenant();
    const { program: p2 } = await readyProgram({}, other);
    await env.DB.prepare('UPDATE programs SET config_id = (SELECT config_id FROM programs WHERE id = ?) WHERE id = ?')
      .bind(program, p2)
      .run();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json(await post(t, `/v1/executions?program_id=${program}`), 200)).id);
    const { id: urgent } = await json(await post(t, `/v1/proofs?program_id=${program}&priority=10`), 200);
    expect(await json(await api(t, `/v1/proofs/${urgent}`), 200)).toMatchObject({ waiting_reason: 'starting', jobs_ahead: 0 });
    expect(await json(await api(t, `/v1/executions/${ids[0]}`), 200)).toMatchObject({ waiting_reason: 'jobs_ahead', jobs_ahead: 1 });
    expect(await json(await api(t, `/v1/executions/${ids[2]}`), 200)).toMatchObject({ waiting_reason: 'jobs_ahead', jobs_ahead: 3 });
    // Another organization on the same config: its queued jobs share the agents by turns.
    for (let i = 0; i < 5; i++) await post(other, `/v1/executions?program_id=${p2}`);
    expect(await json(await api(t, `/v1/executions/${ids[0]}`), 200)).toMatchObject({ jobs_ahead: 1 + 2 });
    const agent = await seedAgent();
    const claimed = await claim(agent);
    const running = claimed.job!.subject_id;
    const path = running === urgent ? `/v1/proofs/${running}` : `/v1/executions/${running}`;
    expect(await json(await api(running === urgent ? t : other, path), 200)).toMatchObject({ waiting_reason: null, jobs_ahead: null });
  });

  it('jobs_ahead: jobs queued in the same millisecond go by job id (the lane index’s order)', async () => {
    const { t, program } = await readyProgram();
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) ids.push((await json(await post(t, `/v1/executions?program_id=${program}`), 200)).id);
    const placeholders = ids.map(() => '?').join(', ');
    await env.DB.prepare(`UPDATE jobs SET queued_at = 1000 WHERE kind = 'execute' AND subject_id IN (${placeholders})`)
      .bind(...ids)
      .run();
    const { results } = await env.DB.prepare(
      `SELECT subject_id FROM jobs WHERE kind = 'execute' AND subject_id IN (${placeholders}) ORDER BY id`,
    )
      .bind(...ids)
      .all<{ subject_id: string }>();
    const byJobId = results.map((r) => r.subject_id);
    for (const [ahead, id] of byJobId.entries())
      expect(await json(await api(t, `/v1/executions/${id}`), 200)).toMatchObject({ jobs_ahead: ahead });
  });

  it('estimated_start_at: from the measured rates of its config and the jobs running and ahead; null, saying why, without rates or while held', async () => {
    const { t, program, configId } = await readyProgram();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json(await post(t, `/v1/proofs?program_id=${program}`), 200)).id);
    expect(await json(await api(t, `/v1/proofs/${ids[1]}`), 200)).toMatchObject({
      estimated_start_at: null,
      estimated_start_detail: 'No estimate: no proof of its config on the CPU has succeeded on the fleet yet',
    });
    // Four proofs measured on the config (a dev job holds no GPU): 100 s each on average.
    await env.DB.prepare(
      `INSERT INTO proving_rates (config_id, machine_type, gpus, proof_type, jobs, cycles, proving_ms, cost) VALUES (?, 'test-machine', 0, 'stark', 4, 400, 400000, 0)`,
    )
      .bind(configId)
      .run();
    const agent = await seedAgent();
    const job = await claimJob(agent);
    expect(job.subject_id).toBe(ids[0]);
    // Running for 40 s: about 60 s left at the mean.
    await env.DB.prepare('UPDATE leases SET claimed_at = claimed_at - 40000 WHERE id = ?').bind(job.lease_id).run();
    const claimedAt = async (leaseId: string) =>
      (await env.DB.prepare('SELECT claimed_at FROM leases WHERE id = ?').bind(leaseId).first<{ claimed_at: number }>())!.claimed_at;
    const first = await claimedAt(job.lease_id);
    // An estimate counts the time left from the moment the read ran, which is somewhere between
    // the two readings of the clock however slow the host: its start is exact, its words in a bracket.
    const startIn = async (id: string, runningLeft: (now: number) => number) => {
      const before = Date.now();
      const p = await json(await api(t, `/v1/proofs/${id}`), 200);
      const after = Date.now();
      const left = Number(/ with about (\d+(?:\.\d)?) s left between them/.exec(p.estimated_start_detail)?.[1]) * 1000;
      expect(left).toBeGreaterThanOrEqual(runningLeft(after) - 50); // rounded to a tenth of a second
      expect(left).toBeLessThanOrEqual(runningLeft(before) + 50);
      return { p, at: Date.parse(p.estimated_start_at) };
    };
    const MEAN = 100_000;
    const firstLeft = (now: number) => first + MEAN - now;
    const next = await startIn(ids[1], firstLeft);
    expect(next.p).toMatchObject({ waiting_reason: 'starting', jobs_ahead: 0 });
    expect(next.p.estimated_start_detail).toMatch(
      /^From 4 succeeded proof of its config on the CPU \(mean 100 s\): 1 running on its config with about [\d.]+ s left between them, 0 ahead, 1 at a time$/,
    );
    expect(Math.abs(next.at - (first + MEAN))).toBeLessThanOrEqual(1); // when the running one ends
    const last = await startIn(ids[2], firstLeft);
    expect(last.p).toMatchObject({ waiting_reason: 'jobs_ahead', jobs_ahead: 1 });
    expect(last.p.estimated_start_detail).toMatch(/ 1 ahead, 1 at a time$/);
    expect(Math.abs(last.at - (first + 2 * MEAN))).toBeLessThanOrEqual(1); // the running one, then one job ahead at the mean
    // A second agent takes the next: two at a time, (the time left to both + 0 ahead) / 2 for the last.
    const second = await claimJob(await seedAgent());
    expect(second.subject_id).toBe(ids[1]);
    const secondAt = await claimedAt(second.lease_id);
    const two = await startIn(ids[2], (now) => firstLeft(now) + secondAt + MEAN - now);
    expect(two.p).toMatchObject({ waiting_reason: 'starting', jobs_ahead: 0 });
    expect(two.p.estimated_start_detail).toMatch(/: 2 running on its config with about [\d.]+ s left between them, 0 ahead, 2 at a time$/);
    expect(Math.abs(two.at - ((first + secondAt) / 2 + MEAN))).toBeLessThanOrEqual(1);
    // Held: no agent left online for the config, so no start to estimate.
    await env.DB.prepare('DELETE FROM agents').run();
    await staleNotices();
    await sweep(cronPart('sweep'));
    expect(await json(await api(t, `/v1/proofs/${ids[2]}`), 200)).toMatchObject({
      waiting_reason: 'no_agent',
      estimated_start_at: null,
      estimated_start_detail: 'No estimate: it cannot start while its waiting reason (no_agent) holds',
    });
    // Running: nothing to estimate.
    expect(await json(await api(t, `/v1/proofs/${ids[0]}`), 200)).toMatchObject({ estimated_start_at: null, estimated_start_detail: null });
  });

  it('org_quota: an organization whose running jobs are at a quota lowered below what it has is held, naming the quota, and never announced unservable', async () => {
    const { t, program } = await readyProgram();
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json(await post(t, `/v1/executions?program_id=${program}`), 200)).id);
    const agent = await seedAgent();
    expect((await claimJob(agent)).subject_id).toBe(ids[0]);
    // The operator lowers the quota below the three it has queued or running.
    await env.DB.prepare('UPDATE organizations SET max_active_jobs = 1 WHERE id = ?').bind(t.orgId).run();
    expect((await claim(agent)).job).toBeNull(); // held by the claim itself
    // Its queue notice is not retried over and over: the sweep notifies the lane again once it may start.
    const heldJob = await env.DB.prepare('SELECT id FROM jobs WHERE subject_id = ?').bind(ids[1]).first<{ id: string }>();
    expect(await claim(agent, { hint_job_id: heldJob!.id })).toMatchObject({ job: null, hint: 'not-servable' });
    await staleNotices();
    await sweep(cronPart('sweep'));
    expect(await json(await api(t, `/v1/executions/${ids[1]}`), 200)).toMatchObject({
      status: 'Queued',
      waiting_reason: 'org_quota',
      waiting_detail: 'its organization runs 1 jobs and its max_active_jobs quota is 1',
      estimated_start_at: null,
      estimated_start_detail: 'No estimate: it cannot start while its waiting reason (org_quota) holds',
    });
    // Not a lane no agent can take: never counted toward the *.unservable event.
    const lane = await env.DB.prepare('SELECT waiting_code, unservable_since FROM queue_lanes WHERE org_id = ? AND head_job_id IS NOT NULL')
      .bind(t.orgId)
      .first();
    expect(lane).toEqual({ waiting_code: 'org_quota', unservable_since: null });
    // Raised again: the next claim takes it.
    await env.DB.prepare('UPDATE organizations SET max_active_jobs = 2 WHERE id = ?').bind(t.orgId).run();
    expect((await claimJob(agent)).subject_id).toBe(ids[1]);
    expect((await claim(agent)).job).toBeNull();
  });

  it('org_quota: running jobs holding max_gpus hold a job that needs one more', async () => {
    const { t, program } = await readyProgram({ engine: 'openvm' });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) ids.push((await json(await post(t, `/v1/proofs?program_id=${program}`), 200)).id);
    const agent = await seedAgent({ engines: ['openvm'], gpus: 8 });
    expect((await claimJob(agent)).subject_id).toBe(ids[0]);
    await env.DB.prepare('UPDATE organizations SET max_gpus = 1 WHERE id = ?').bind(t.orgId).run();
    expect((await claim(agent)).job).toBeNull();
    await staleNotices();
    await sweep(cronPart('sweep'));
    expect(await json(await api(t, `/v1/proofs/${ids[1]}`), 200)).toMatchObject({
      waiting_reason: 'org_quota',
      waiting_detail: "its organization's running jobs hold 1 GPUs, its max_gpus quota is 1 and the job needs 1",
    });
  });

  it('a job no agent could take for UNSERVABLE_EVENT_SECONDS raises proof.unservable once', async () => {
    const { t, program } = await readyProgram();
    const hook = await json(
      await api(t, '/v1/webhooks', {
        method: 'POST',
        body: JSON.stringify({ url: 'https://hooks.example.com/x', events: ['proof.unservable'] }),
        headers: { 'content-type': 'application/json' },
      }),
      201,
    );
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}`), 200);
    await staleNotices();
    const now = Date.now();
    await sweep(cronPart('sweep'), now);
    expect((await sweep(cronPart('sweep'), now + 1000)).unservableAnnounced).toBe(0); // not yet 10 minutes
    expect((await sweep(cronPart('sweep'), now + 601_000)).unservableAnnounced).toBe(1);
    expect((await sweep(cronPart('sweep'), now + 700_000)).unservableAnnounced).toBe(0); // once
    const rows = await env.DB.prepare('SELECT event_type, subject_kind, subject_id FROM webhook_deliveries WHERE endpoint_id = ?')
      .bind(hook.id)
      .all();
    expect(rows.results).toEqual([{ event_type: 'proof.unservable', subject_kind: 'proof', subject_id: id }]);
  });

  it('a lane an agent can serve again clears its reason at the next sweep', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}`), 200);
    await staleNotices();
    await sweep(cronPart('sweep'));
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ waiting_reason: 'no_agent' });
    await seedAgent();
    await staleNotices();
    await sweep(cronPart('sweep'));
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ waiting_reason: 'starting', waiting_detail: null });
  });
});
