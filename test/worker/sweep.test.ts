import { env } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { sweep, whyUnservable } from '../../src/jobs/sweep.ts';
import { api, json, markReady, registerProgram, seedConfig, seedTenant, watchQueue, cronPart } from './helpers.ts';
import { claim, claimJob, drainQueuedJobs, makeOverdue, seedAgent } from './fleet-helpers.ts';

beforeEach(async () => {
  await drainQueuedJobs();
  await env.DB.prepare('DELETE FROM agents').run();
});
afterEach(() => vi.restoreAllMocks());

async function queuedProof(cfgOverrides = {}, query = '') {
  const t = await seedTenant();
  const program = await registerProgram(t, await seedConfig(cfgOverrides));
  await markReady(program);
  await drainQueuedJobs();
  const { id } = await json(
    await api(t, `/v1/proofs?program_id=${program}${query}`, {
      method: 'POST',
      body: '{"input": []}',
      headers: { 'content-type': 'application/json' },
    }),
    200,
  );
  const job = (await env.DB.prepare('SELECT id FROM jobs WHERE subject_id = ?').bind(id).first<{ id: string }>())!;
  return { t, proofId: id, jobId: job.id };
}

describe('scheduled sweep', () => {
  it('re-notifies a job left queued (its notice was lost) when an agent can serve it', async () => {
    const { jobId } = await queuedProof();
    await claim(await seedAgent({ engines: ['dev'] })); // an agent is online (and took nothing: none queued yet? it took ours)
    await env.DB.prepare(`UPDATE jobs SET status = 'queued', lease_id = NULL, notified_at = 0 WHERE id = ?`).bind(jobId).run();
    const send = watchQueue();
    const r = await sweep(cronPart('sweep'));
    expect(r.renotified).toBe(1);
    expect(send).toHaveBeenCalledWith({ job_id: jobId, kind: 'proof' }, { contentType: 'json' });
  });

  it('leaves a job nobody can serve queued and says why in its logs, once', async () => {
    const { t, proofId, jobId } = await queuedProof({ engine: 'openvm' }, '&num_gpus=16');
    // An openvm job uses one GPU whatever it asks for: only a GPU-less agent cannot serve it.
    await claim(await seedAgent({ engines: ['openvm'], gpus: 0 }));
    await env.DB.prepare('UPDATE jobs SET notified_at = 0 WHERE id = ?').bind(jobId).run();
    const send = watchQueue();
    expect(await sweep(cronPart('sweep'))).toMatchObject({ renotified: 0, waiting: 1 });
    await sweep(cronPart('sweep'));
    expect(send).not.toHaveBeenCalled();
    const logs = await (await api(t, `/v1/proofs/${proofId}/logs`)).text();
    expect(logs.match(/Waiting:/g)).toHaveLength(1);
    expect(logs).toMatch(/needs 1 GPU \(of the 16 it asked for\); the largest online agent for its config has 0/);
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Queued');
  });

  it('requeues expired leases and notifies them', async () => {
    const { t, proofId } = await queuedProof();
    const job = await claimJob(await seedAgent());
    await makeOverdue(job.id);
    const send = watchQueue();
    expect((await sweep(cronPart('sweep'))).requeued).toBe(1);
    expect(send).toHaveBeenCalledWith({ job_id: job.id, kind: 'proof' }, { contentType: 'json' });
    expect((await json(await api(t, `/v1/proofs/${proofId}`), 200)).state).toBe('Queued');
  });

  it('explains each reason a job cannot be served', () => {
    const job = { engine: 'openvm', config_id: 'cfg_A', num_gpus: 8 };
    expect(whyUnservable(job, [])).toMatch(/no prover agent is online/);
    expect(whyUnservable(job, [{ gpus: 8, engines: ['dev'], configs: [] }])).toMatch(/'openvm' engine/);
    expect(whyUnservable(job, [{ gpus: 8, engines: ['openvm'], configs: ['cfg_B'] }])).toMatch(/config cfg_A/);
    expect(whyUnservable(job, [{ gpus: 8, engines: ['openvm'], configs: ['cfg_A'] }])).toBeNull();
    expect(whyUnservable({ ...job, engine: 'dev' }, [{ gpus: 0, engines: ['dev'], configs: [] }])).toBeNull();
  });
});
