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
    const { id } = await json(
      await api(t, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }),
      200,
    );
    const cfg = (await env.DB.prepare('SELECT config_id FROM programs WHERE id = ?').bind(program).first<{ config_id: string }>())!
      .config_id;
    const expected = {
      id,
      created_at: expect.any(String),
      result: 'processing',
      proof_type: 'stark',
      program_uuid: program,
      config_id: cfg,
      error_message: '',
    };
    expect(await json(await api(t, `/v1/verify/${id}`), 200)).toEqual(expected);
    expect(await json(await api(t, `/v1/verify/stark/${id}`), 200)).toEqual(expected);
    expect(JSON.parse(await (await env.ARTIFACTS.get(`verifications/${id}/proof.json`))!.text())).toEqual(STARK);
    const job = await env.DB.prepare(`SELECT id FROM jobs WHERE kind = 'verify' AND subject_id = ?`).bind(id).first<{ id: string }>();
    expect(send).toHaveBeenCalledWith({ job_id: job!.id, kind: 'verify' }, { contentType: 'json' });
  });

  it('422s a missing part, non-JSON, and the wrong shape; 415s a non-multipart body; stores nothing', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    await markReady(program);
    const before = await r2Keys('verifications/');
    const post = (body: FormData | string) =>
      api(t, `/v1/verify/stark?program_id=${program}`, {
        method: 'POST',
        body,
        ...(typeof body === 'string' ? { headers: { 'content-type': 'application/json' } } : {}),
      });
    expect((await json(await post(proofForm(null)), 422)).detail[0]).toMatchObject({ loc: ['body', 'proof'], type: 'missing' });
    expect((await json(await post(proofForm('not json')), 422)).detail[0].msg).toMatch(/not valid JSON/);
    expect((await json(await post(proofForm(JSON.stringify({ ...STARK, proof: 12 }))), 422)).detail[0].msg).toMatch(/"proof"/);
    expect((await json(await post(proofForm(JSON.stringify({ ...STARK, version: 3 }))), 422)).detail[0].msg).toMatch(/version/);
    expect((await json(await post(JSON.stringify(STARK)), 415)).detail).toMatch(/send this body as multipart\/form-data/);
    expect(await r2Keys('verifications/')).toEqual(before);
  });

  it('409s a program that is not ready; 404s foreign programs and verifications', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const cfg = await seedConfig();
    const notReady = await registerProgram(t, cfg);
    expect(
      (await json(await api(t, `/v1/verify/stark?program_id=${notReady}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }), 409))
        .detail,
    ).toMatch(/not_ready/);
    const foreign = await registerProgram(other, cfg);
    await markReady(foreign);
    await json(await api(t, `/v1/verify/stark?program_id=${foreign}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }), 404);
    const { id } = await json(
      await api(other, `/v1/verify/stark?program_id=${foreign}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }),
      200,
    );
    await json(await api(t, `/v1/verify/${id}`), 404);
    expect((await json(await api(t, `/v1/verify/xyz`), 422)).detail[0].loc).toEqual(['path', 'verify_id']);
  });

  describe('the unified endpoint POST /v1/verify', () => {
    const hex32 = (b: string) => b.repeat(32);
    // As the published client uploads it: every 0x removed from the file's text.
    const EVM = {
      version: 'v2.0',
      app_exe_commit: hex32('cd'),
      app_vm_commit: hex32('ab'),
      user_public_values: '0011',
      proof_data: { accumulator: '00', proof: 'beef' },
    };

    it('takes an EVM proof against a config alone (0x optional), records and dispatches it', async () => {
      const t = await seedTenant();
      const cfg = await seedConfig();
      const send = watchQueue();
      const lower = 'cfg_' + cfg.slice(4).toLowerCase();
      const { id } = await json(
        await api(t, `/v1/verify?config_id=${lower}`, { method: 'POST', body: proofForm(JSON.stringify(EVM)) }),
        200,
      );
      expect(await json(await api(t, `/v1/verify/${id}`), 200)).toEqual({
        id,
        created_at: expect.any(String),
        result: 'processing',
        proof_type: 'evm',
        program_uuid: null,
        config_id: cfg,
        error_message: '',
      });
      const job = await env.DB.prepare(`SELECT id, config_id FROM jobs WHERE kind = 'verify' AND subject_id = ?`)
        .bind(id)
        .first<{ id: string; config_id: string }>();
      expect(job!.config_id).toBe(cfg);
      expect(send).toHaveBeenCalledWith({ job_id: job!.id, kind: 'verify' }, { contentType: 'json' });
      const with0x = { ...EVM, app_exe_commit: '0x' + EVM.app_exe_commit, proof_data: { accumulator: '0x00', proof: '0xbeef' } };
      await json(await api(t, `/v1/verify?config_id=${cfg}`, { method: 'POST', body: proofForm(JSON.stringify(with0x)) }), 200);
    });

    it('takes a STARK proof with program_id, and says which parameter is missing otherwise', async () => {
      const t = await seedTenant();
      const cfg = await seedConfig();
      const program = await registerProgram(t, cfg);
      await markReady(program);
      const { id } = await json(
        await api(t, `/v1/verify?program_id=${program}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }),
        200,
      );
      expect(await json(await api(t, `/v1/verify/${id}`), 200)).toMatchObject({
        proof_type: 'stark',
        program_uuid: program,
        config_id: cfg,
      });
      const noProgram = await json(
        await api(t, `/v1/verify?config_id=${cfg}`, { method: 'POST', body: proofForm(JSON.stringify(STARK)) }),
        422,
      );
      expect(noProgram.detail[0]).toMatchObject({ loc: ['query', 'program_id'], type: 'missing' });
      const noConfig = await json(await api(t, '/v1/verify', { method: 'POST', body: proofForm(JSON.stringify(EVM)) }), 422);
      expect(noConfig.detail[0]).toMatchObject({ loc: ['query', 'config_id'], type: 'missing' });
      // An EVM proof with a program is checked under the program's config; naming another config is refused.
      const other = await seedConfig();
      const mismatch = await json(
        await api(t, `/v1/verify?program_id=${program}&config_id=${other}`, { method: 'POST', body: proofForm(JSON.stringify(EVM)) }),
        422,
      );
      expect(mismatch.detail[0].msg).toMatch(/uses config/);
    });

    it('422s malformed EVM proofs and 404s unknown configs, storing nothing', async () => {
      const t = await seedTenant();
      const cfg = await seedConfig();
      const before = await r2Keys('verifications/');
      const post = (doc: unknown, config = cfg) =>
        api(t, `/v1/verify?config_id=${config}`, { method: 'POST', body: proofForm(JSON.stringify(doc)) });
      expect((await json(await post({ ...EVM, app_exe_commit: 'cd' }), 422)).detail[0].msg).toMatch(/app_exe_commit/);
      expect((await json(await post({ ...EVM, proof_data: { accumulator: '00' } }), 422)).detail[0].msg).toMatch(/proof_data.proof/);
      expect((await json(await post({ ...EVM, user_public_values: 'xyz' }), 422)).detail[0].msg).toMatch(/user_public_values/);
      await json(await post(EVM, 'cfg_01JD00000000000000000000ZZ'), 404);
      expect(await r2Keys('verifications/')).toEqual(before);
    });
  });
});
