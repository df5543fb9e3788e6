import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { api, json, markReady, r2Keys, registerProgram, seedConfig, seedTenant, watchQueue } from './helpers.ts';

afterEach(() => vi.restoreAllMocks());

const STARK = { version: 'v1.1', proof: 'abcd', user_pvs_proof: '0011', deferral_merkle_proofs: null };

function proofForm(text: string | null) {
  const form = new FormData();
  if (text !== null) form.append('proof', new File([text], 'proof.json', { type: 'application/json' }));
  return form;
}

describe('/v1/verify', () => {
  it('records a verification as processing, stores the proof, dispatches it; both read paths answer', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    await markReady(program);
    const send = watchQueue();
    const { id } = await json(await api(t, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }), 200);
    const expected = { id, created_at: expect.any(String), result: 'processing', proof_type: 'stark', program_uuid: program, error_message: '' };
    expect(await json(await api(t, `/v1/verify/${id}`), 200)).toEqual(expected);
    expect(await json(await api(t, `/v1/verify/stark/${id}`), 200)).toEqual(expected);
    expect(JSON.parse(await (await env.ARTIFACTS.get(`verifications/${id}/proof.json`))!.text())).toEqual(STARK);
    const job = await env.DB.prepare(`SELECT id FROM jobs WHERE kind = 'verify' AND subject_id = ?`).bind(id).first<{ id: string }>();
    expect(send).toHaveBeenCalledWith({ job_id: job!.id, kind: 'verify' }, { contentType: 'json' });
  });

  it('422s a missing part, non-JSON, and the wrong shape; 400s a non-multipart body; stores nothing', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    await markReady(program);
    const before = await r2Keys('verifications/');
    const post = (body: FormData | string) =>
      api(t, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body, ...(typeof body === 'string' ? { headers: { 'content-type': 'application/json' } } : {}) });
    expect((await json(await post(proofForm(null)), 422)).detail[0]).toMatchObject({ loc: ['body', 'proof'], type: 'missing' });
    expect((await json(await post(proofForm('not json')), 422)).detail[0].msg).toMatch(/not valid JSON/);
    expect((await json(await post(proofForm(JSON.stringify({ ...STARK, proof: 12 }))), 422)).detail[0].msg).toMatch(/"proof"/);
    expect((await json(await post(proofForm(JSON.stringify({ ...STARK, version: 3 }))), 422)).detail[0].msg).toMatch(/version/);
    expect((await json(await post(JSON.stringify(STARK)), 400)).detail).toMatch(/multipart/);
    expect(await r2Keys('verifications/')).toEqual(before);
  });

  it('409s a program that is not ready; 404s foreign programs and verifications', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const cfg = await seedConfig();
    const notReady = await registerProgram(t, cfg);
    expect((await json(await api(t, `/v1/verify/stark?program_id=${notReady}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }), 409)).detail).toMatch(
      /not_ready/,
    );
    const foreign = await registerProgram(other, cfg);
    await markReady(foreign);
    await json(await api(t, `/v1/verify/stark?program_id=${foreign}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }), 404);
    const { id } = await json(await api(other, `/v1/verify/stark?program_id=${foreign}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }), 200);
    await json(await api(t, `/v1/verify/${id}`), 404);
    expect((await json(await api(t, `/v1/verify/xyz`), 422)).detail[0].loc).toEqual(['path', 'verify_id']);
  });
});
