// Finished runs for the tests of what a finished record keeps (retention.test.ts,
// archive.test.ts): a ready program, and a proof and an execution run to their end by an
// agent (a log, a proof, public values, a cost), their logs compacted.
import { env } from 'cloudflare:test';
import { expect } from 'vitest';
import { claimJob, devProofOf, drainQueuedJobs, lease, seedAgent, upload } from './fleet-helpers.ts';
import { api, eventually, json, markReady, registerProgram, seedConfig, type Tenant } from './helpers.ts';

export const jsonPost = (body: unknown): RequestInit => ({
  method: 'POST',
  body: JSON.stringify(body),
  headers: { 'content-type': 'application/json' },
});

export async function readyProgram(t: Tenant) {
  const id = await registerProgram(t, await seedConfig());
  await markReady(id);
  await env.ARTIFACTS.put(`programs/${id}/baseline.json`, '{}');
  await drainQueuedJobs(); // its commit job is not under test
  return id;
}

/** A proof run to Succeeded by an agent: a log, a STARK proof, a cost. */
export async function succeededProof(t: Tenant, program: string) {
  const { id } = await json<{ id: string }>(await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })), 200);
  const job = await claimJob(await seedAgent());
  await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'proving\n' }), 200);
  await json(await upload(job, 'stark', await devProofOf(job)), 200);
  await json(
    await lease(job, '/complete', { kind: 'proof', proofs: ['stark'], public_values: '0x00', metrics: { num_instructions: 42 } }),
    200,
  );
  await logCompacted(job.id);
  return { id, jobId: job.id };
}

export async function succeededExecution(t: Tenant, program: string) {
  const { id } = await json<{ id: string }>(await api(t, `/v1/executions?program_id=${program}`, jsonPost({ input: [] })), 200);
  const job = await claimJob(await seedAgent());
  await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'ran\n' }), 200);
  await json(
    await lease(job, '/complete', { kind: 'execute', exit_code: 0, public_values: '0x01', error: null, metrics: { num_instructions: 7 } }),
    200,
  );
  await logCompacted(job.id);
  return { id, jobId: job.id };
}

/** Its log compacted (after the response that ended it), so its objects hold still. */
export const logCompacted = (jobId: string) =>
  eventually(async () =>
    expect(await env.DB.prepare('SELECT log_store FROM jobs WHERE id = ?').bind(jobId).first()).toEqual({ log_store: 'clean' }),
  );
