import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { MAX_INPUT_BYTES } from '../../src/lib/limits.ts';
import {
  api,
  countRows,
  eventually,
  json,
  markReady,
  r2Keys,
  registerProgram,
  seedConfig,
  seedTenant,
  watchQueue,
  type Tenant,
} from './helpers.ts';

afterEach(() => vi.restoreAllMocks());

const STARK = { version: 'v1.0', proof: '0xdeadbeef', user_pvs_proof: '00ff', deferral_merkle_proofs: null };

async function readyProgram(t: Tenant, cfg?: string) {
  const id = await registerProgram(t, cfg ?? (await seedConfig()));
  await markReady(id);
  return id;
}

const submit = (t: Tenant, query: string, body: unknown) =>
  api(t, `/v1/proofs?${query}`, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

function childForm(input: unknown, children: (string | Uint8Array)[]) {
  const form = new FormData();
  form.append('input', typeof input === 'string' ? input : JSON.stringify(input));
  for (const c of children) form.append('child_proofs', new File([c], 'child.json', { type: 'application/json' }));
  return form;
}

/**
 * A STARK proof in the zkVM's binary codec, built here byte by byte from the layout
 * (stark-backend v2.0.1 codec.rs): u32-LE length + bytes for the version string and
 * each byte vector, then one presence byte for the optional deferral proofs.
 */
function codecChild(p: { version: string; proof: number[]; user_pvs_proof: number[]; deferral?: number[] }): Uint8Array {
  const out: number[] = [];
  const lenPrefixed = (bytes: number[]) => {
    const n = bytes.length;
    out.push(n & 0xff, (n >> 8) & 0xff, (n >> 16) & 0xff, n >>> 24, ...bytes);
  };
  lenPrefixed([...new TextEncoder().encode(p.version)]);
  lenPrefixed(p.proof);
  lenPrefixed(p.user_pvs_proof);
  if (p.deferral) {
    out.push(1);
    lenPrefixed(p.deferral);
  } else out.push(0);
  return new Uint8Array(out);
}

describe('POST /v1/proofs', () => {
  it('queues a proof: input stored, record Queued with defaults, job dispatched', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const send = watchQueue();
    const { id } = await json(
      await submit(t, `program_id=${program}`, { input: ['0x0148656c6c6f', '02010000000200000000'.slice(0, 18)] }),
      200,
    );
    const proof = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(proof).toEqual({
      id,
      created_at: expect.any(String),
      state: 'Queued',
      proof_type: 'stark',
      program_uuid: program,
      launched_at: null,
      terminated_at: null,
      created_by: t.owner,
      cells_used: 0,
      cost: 0,
      machine_type: '',
      num_gpus: 8, // the program's default_num_gpus
      priority: 5,
      error_message: '',
      proof_size: 0,
      num_instructions: null,
      num_deferred_proofs: 0,
      // limits and the wait (README "Job limits", "Why a job waits")
      cycle_limit: null,
      cost_limit: null,
      deadline_at: null,
      waiting_reason: expect.stringMatching(/^(jobs_ahead|starting)$/),
      waiting_detail: null,
      jobs_ahead: expect.any(Number),
      estimated_start_at: null,
      estimated_start_detail: expect.stringMatching(/^No estimate: /),
    });
    expect(JSON.parse(await (await env.ARTIFACTS.get(`proofs/${id}/input.json`))!.text())).toEqual({
      input: ['0x0148656c6c6f', '020100000002000000'],
    });
    const job = await env.DB.prepare(`SELECT * FROM jobs WHERE kind = 'proof' AND subject_id = ?`).bind(id).first<any>();
    expect(job).toMatchObject({ status: 'queued', priority: 5, num_gpus: 8 });
    expect(send).toHaveBeenCalledWith({ job_id: job.id, kind: 'proof' }, { contentType: 'json' });
  });

  it('takes proof_type, num_gpus and priority from the query', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await json(await submit(t, `program_id=${program}&proof_type=evm&num_gpus=2&priority=10`, { input: [] }), 200);
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ proof_type: 'evm', num_gpus: 2, priority: 10 });
  });

  it('reports every bad input entry at its index', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const body = await json(
      await submit(t, `program_id=${program}`, { input: ['0x01ab', 'zz', '0x01abc', '0x03ab', '0x0201', 7, '01', '0x020100000002000000'] }),
      422,
    );
    expect(body.detail.map((d: any) => d.loc)).toEqual([
      ['body', 'input', 1],
      ['body', 'input', 2],
      ['body', 'input', 3],
      ['body', 'input', 4],
      ['body', 'input', 5],
    ]);
    expect(body.detail[0].msg).toMatch(/not hexadecimal/);
    expect(body.detail[1].msg).toMatch(/odd number/);
    expect(body.detail[2].msg).toMatch(/prefix 03/);
    expect(body.detail[3].msg).toMatch(/whole 32-bit/);
    expect(body.detail[4]).toMatchObject({ type: 'string_type' });
    expect(await countRows('proofs', 'program_id = ?', program)).toBe(0);
  });

  it('a multipart content type with no body (or an empty one) is a client error that creates nothing', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    for (const body of [undefined, '']) {
      const res = await api(t, `/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'multipart/form-data; boundary=XyZ' },
      });
      expect([400, 422]).toContain(res.status);
      expect(await res.json()).toHaveProperty('detail');
    }
    expect((await json(await api(t, `/v1/proofs?program_id=${program}`), 200)).pagination.total).toBe(0);
  });

  it('422s malformed JSON, a missing input, and out-of-range query values', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const malformed = await api(t, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: '{"input": [',
      headers: { 'content-type': 'application/json' },
    });
    expect((await json(malformed, 422)).detail[0]).toMatchObject({ loc: ['body', expect.any(Number)], type: 'json_invalid' });
    expect((await json(await submit(t, `program_id=${program}`, {}), 422)).detail).toEqual([
      { loc: ['body', 'input'], msg: 'Field required', type: 'missing' },
    ]);
    const q = async (query: string) => (await json(await submit(t, query, { input: [] }), 422)).detail[0];
    expect(await q(`program_id=${program}&priority=11`)).toMatchObject({ loc: ['query', 'priority'], type: 'less_than_equal' });
    expect(await q(`program_id=${program}&priority=0`)).toMatchObject({ loc: ['query', 'priority'], type: 'greater_than_equal' });
    expect(await q(`program_id=${program}&num_gpus=abc`)).toMatchObject({ loc: ['query', 'num_gpus'], type: 'int_parsing' });
    expect(await q(`program_id=${program}&proof_type=snark`)).toMatchObject({
      loc: ['query', 'proof_type'],
      type: 'literal_error',
      msg: "Input should be 'stark' or 'evm'",
    });
    expect(await q(``)).toMatchObject({ loc: ['query', 'program_id'], type: 'missing' });
  });

  it('refuses a program that is not ready, saying its status', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    const body = await json(await submit(t, `program_id=${program}`, { input: [] }), 409);
    expect(body.detail).toMatch(/not_ready/);
    // The request itself is validated first, as the reference (FastAPI) does.
    expect((await json(await submit(t, `program_id=${program}`, { input: ['0x07'] }), 422)).detail[0].loc).toEqual(['body', 'input', 0]);
  });

  it('404s another organization’s program', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const program = await readyProgram(other);
    await json(await submit(t, `program_id=${program}`, { input: [] }), 404);
  });

  describe('with deferred child proofs (multipart)', () => {
    it('stores children in packing order and counts them', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const a = JSON.stringify({ ...STARK, proof: '0xaa' });
      const b = JSON.stringify({ ...STARK, proof: 'bb' });
      const { id } = await json(
        await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: childForm({ input: ['0x01'] }, [a, b]) }),
        200,
      );
      expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ num_deferred_proofs: 2 });
      const keys = await r2Keys(`proofs/${id}/children/`);
      expect(keys).toHaveLength(2);
      expect(await (await env.ARTIFACTS.get(keys[0]))!.text()).toBe(a);
      expect(await (await env.ARTIFACTS.get(keys[1]))!.text()).toBe(b);
    });

    it('accepts children in the zkVM binary codec (what the published client sends) and stores them as JSON', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const form = new FormData();
      form.append('input', '{"input": []}');
      const binary = codecChild({ version: 'v2.0', proof: [0xde, 0xad], user_pvs_proof: [0x01], deferral: [0xbe, 0xef] });
      form.append('child_proofs', new File([binary], 'child.bin', { type: 'application/octet-stream' }));
      form.append(
        'child_proofs',
        new File([codecChild({ version: 'v2.0', proof: [], user_pvs_proof: [0xff] })], 'child2.bin', { type: 'application/octet-stream' }),
      );
      form.append('child_proofs', new File(['  \n' + JSON.stringify(STARK)], 'child3.json', { type: 'application/json' }));
      const { id } = await json(await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: form }), 200);
      const keys = await r2Keys(`proofs/${id}/children/`);
      const stored = await Promise.all(keys.map(async (k) => JSON.parse(await (await env.ARTIFACTS.get(k))!.text())));
      expect(stored).toEqual([
        { version: 'v2.0', proof: '0xdead', user_pvs_proof: '0x01', deferral_merkle_proofs: '0xbeef' },
        { version: 'v2.0', proof: '0x', user_pvs_proof: '0xff', deferral_merkle_proofs: null },
        STARK,
      ]);
    });

    it('422s binary children whose framing is broken, saying where', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const good = codecChild({ version: 'v2.0', proof: [1, 2, 3], user_pvs_proof: [4] });
      const form = new FormData();
      form.append('input', '{"input": []}');
      for (const bad of [
        good.slice(0, good.length - 3),
        new Uint8Array([...good, 0]),
        codecChild({ version: 'nope', proof: [], user_pvs_proof: [] }),
      ]) {
        form.append('child_proofs', new File([bad], 'c.bin', { type: 'application/octet-stream' }));
      }
      const body = await json(await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: form }), 422);
      expect(body.detail.map((d: { loc: unknown[]; msg: string }) => [d.loc[2], d.msg])).toEqual([
        [0, expect.stringMatching(/binary codec: ends inside the length of "user_pvs_proof"/)],
        [1, expect.stringMatching(/1 trailing bytes/)],
        [2, expect.stringMatching(/"version" is "nope"/)],
      ]);
      expect((await json(await api(t, `/v1/proofs?program_id=${program}`), 200)).pagination.total).toBe(0);
    });

    it('422s child proofs when the config is not deferral-enabled', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t);
      const body = await json(
        await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: childForm({ input: [] }, [JSON.stringify(STARK)]) }),
        422,
      );
      expect(body.detail[0]).toMatchObject({ loc: ['body', 'child_proofs'], type: 'value_error' });
      expect(body.detail[0].msg).toMatch(/not deferral-enabled/);
    });

    it('422s children that are not STARK proofs, naming each index', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const body = await json(
        await api(t, `/v1/proofs?program_id=${program}`, {
          method: 'POST',
          body: childForm({ input: [] }, [JSON.stringify(STARK), '{not json', JSON.stringify({ ...STARK, proof: 'xyz' })]),
        }),
        422,
      );
      expect(body.detail.map((d: any) => d.loc)).toEqual([
        ['body', 'child_proofs', 1],
        ['body', 'child_proofs', 2],
      ]);
    });

    it('caps the number of children (422) and the size of each (413), storing nothing', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const before = await r2Keys('proofs/');
      const many = Array.from({ length: 17 }, () => JSON.stringify(STARK));
      const tooMany = await json(
        await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: childForm({ input: [] }, many) }),
        422,
      );
      expect(tooMany.detail[0]).toMatchObject({ loc: ['body', 'child_proofs'], type: 'too_long' });
      const huge = JSON.stringify({ ...STARK, proof: '00'.repeat(8 * 1024 * 1024 + 1) });
      await json(await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: childForm({ input: [] }, [huge]) }), 413);
      expect(await r2Keys('proofs/')).toEqual(before);
      expect(await countRows('proofs', 'program_id = ?', program)).toBe(0);
    });

    /**
     * A multipart body sent in two halves: the second only once `ready()` holds (the
     * first is seen through the Worker's own storage), so what the Worker does with a
     * part before the form ends is observable.
     */
    async function sendInHalves(t: Tenant, program: string, first: string, second: string, ready: () => Promise<boolean>) {
      const boundary = 'halves-7c1d';
      const enc = new TextEncoder();
      let release!: () => void;
      const released = new Promise<void>((r) => (release = r));
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(enc.encode(first.replaceAll('BOUNDARY', boundary)));
          await released;
          controller.enqueue(enc.encode(second.replaceAll('BOUNDARY', boundary)));
          controller.close();
        },
      });
      const res = api(t, `/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        duplex: 'half',
      } as RequestInit);
      // However long the Worker takes to store it.
      await eventually(async () => expect(await ready()).toBe(true));
      release();
      return await res;
    }
    const inputPart = (input: unknown) => `--BOUNDARY\r\ncontent-disposition: form-data; name="input"\r\n\r\n${JSON.stringify(input)}\r\n`;
    const childPart = (proof: string) =>
      `--BOUNDARY\r\ncontent-disposition: form-data; name="child_proofs"; filename="c.json"\r\n\r\n${proof}\r\n`;
    const newInputKeys = async (before: string[]) =>
      (await r2Keys('proofs/')).filter((k) => k.endsWith('/input.json') && !before.includes(k));

    it('streams a form’s input to storage as it arrives, before the form ends; the last input counts', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const before = await r2Keys('proofs/');
      // Past one R2 upload part (R2_PART_SIZE), so the input goes up in parts.
      const big = { input: ['0x01' + 'ab'.repeat(9 * 1024 * 1024)] };
      const res = await sendInHalves(
        t,
        program,
        inputPart({ input: ['0x0107'] }) + childPart(JSON.stringify(STARK)),
        inputPart(big) + '--BOUNDARY--\r\n',
        async () => (await newInputKeys(before)).length > 0,
      );
      const { id } = await json(res, 200);
      expect(await (await env.ARTIFACTS.get(`proofs/${id}/input.json`))!.text()).toBe(JSON.stringify(big));
      expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ num_deferred_proofs: 1 });
    });

    it('a form refused after its input was stored (a bad child, a later bad or oversized input, too large, not ready) leaves nothing stored', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const before = await r2Keys('proofs/');
      const stored = async () => (await newInputKeys(before)).length > 0;
      // A part ends at the next part's boundary: the first half holds one after the input.
      const first = inputPart({ input: ['0x0107'] }) + childPart(JSON.stringify(STARK));
      const cases: [string, number][] = [
        [childPart('not a proof') + '--BOUNDARY--\r\n', 422],
        [inputPart({ input: ['0x05'] }) + '--BOUNDARY--\r\n', 422],
        [childPart(JSON.stringify({ ...STARK, proof: '00'.repeat(8 * 1024 * 1024 + 1) })) + '--BOUNDARY--\r\n', 413],
        // A later input past MAX_INPUT_BYTES, refused with its R2 multipart upload under way.
        [inputPart({ input: ['0x01' + 'ab'.repeat(MAX_INPUT_BYTES / 2)] }) + '--BOUNDARY--\r\n', 413],
      ];
      for (const [rest, status] of cases) {
        const res = await sendInHalves(t, program, first, rest, stored);
        await json(res, status);
        expect(await r2Keys('proofs/')).toEqual(before);
      }
      await env.DB.prepare("UPDATE programs SET status = 'processing' WHERE id = ?").bind(program).run();
      const res = await sendInHalves(t, program, first, '--BOUNDARY--\r\n', stored);
      await json(res, 409);
      expect(await r2Keys('proofs/')).toEqual(before);
      expect(await countRows('proofs', 'program_id = ?', program)).toBe(0);
    });

    it('422s a multipart submission without an input field or with bad input', async () => {
      const t = await seedTenant();
      const program = await readyProgram(t, await seedConfig({ deferral_enabled: true }));
      const noInput = new FormData();
      noInput.append('child_proofs', new File([JSON.stringify(STARK)], 'c.json'));
      expect(
        (await json(await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: noInput }), 422)).detail[0],
      ).toMatchObject({
        loc: ['body', 'input'],
        type: 'missing',
      });
      const bad = await json(
        await api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: childForm({ input: ['0x05'] }, []) }),
        422,
      );
      expect(bad.detail[0].loc).toEqual(['body', 'input', 0]);
    });
  });
});

describe('reading proofs', () => {
  it('lists a program’s proofs with pagination edges', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await json(await submit(t, `program_id=${program}`, { input: [] }), 200)).id);
    const page1 = await json(await api(t, `/v1/proofs?program_id=${program}&page=1&page_size=2`), 200);
    expect(page1.pagination).toEqual({ total: 5, page: 1, page_size: 2, pages: 3 });
    expect(page1.items).toHaveLength(2);
    const page3 = await json(await api(t, `/v1/proofs?program_id=${program}&page=3&page_size=2`), 200);
    expect(page3.items).toHaveLength(1);
    const beyond = await json(await api(t, `/v1/proofs?program_id=${program}&page=9&page_size=2`), 200);
    expect(beyond).toEqual({ items: [], pagination: { total: 5, page: 9, page_size: 2, pages: 3 } });
    const all = await json(await api(t, `/v1/proofs?program_id=${program}`), 200);
    expect(all.pagination).toEqual({ total: 5, page: 1, page_size: 20, pages: 1 });
    expect(all.items.map((p: any) => p.id).sort()).toEqual([...ids].sort());
    const v = async (q: string) => (await json(await api(t, `/v1/proofs?program_id=${program}&${q}`), 422)).detail[0];
    expect(await v('page=0')).toMatchObject({ loc: ['query', 'page'], type: 'greater_than_equal' });
    expect(await v('page_size=101')).toMatchObject({ loc: ['query', 'page_size'], type: 'less_than_equal' });
    expect(await v('page_size=0')).toMatchObject({ loc: ['query', 'page_size'], type: 'greater_than_equal' });
    expect(await v('page=x')).toMatchObject({ loc: ['query', 'page'], type: 'int_parsing' });
    expect((await json(await api(t, `/v1/proofs`), 422)).detail[0]).toMatchObject({ loc: ['query', 'program_id'], type: 'missing' });
  });

  it('404s proof files until they exist, serves empty logs, 422s a bad kind', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await json(await submit(t, `program_id=${program}`, { input: [] }), 200);
    expect((await json(await api(t, `/v1/proofs/${id}/proof/stark`), 404)).detail).toMatch(/Queued/);
    const logs = await api(t, `/v1/proofs/${id}/logs`);
    expect(logs.status).toBe(200);
    expect(logs.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await logs.text()).toBe('');
    expect((await json(await api(t, `/v1/proofs/${id}/proof/plonk`), 422)).detail[0].loc).toEqual(['path', 'kind']);
    expect((await json(await api(t, `/v1/proofs/not-a-uuid`), 422)).detail[0]).toMatchObject({
      loc: ['path', 'proof_id'],
      type: 'uuid_parsing',
    });
  });
});

describe('POST /v1/proofs/{id}/cancel', () => {
  it('cancels a queued proof at once, then refuses with 409', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await json(await submit(t, `program_id=${program}`, { input: [] }), 200);
    const res = await json(
      await api(t, `/v1/proofs/${id}/cancel`, { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }),
      200,
    );
    expect(res).toMatchObject({ state: 'Canceled', message: expect.any(String) });
    const proof = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(proof.state).toBe('Canceled');
    expect(proof.terminated_at).toEqual(expect.any(String));
    expect(await env.DB.prepare(`SELECT status FROM jobs WHERE subject_id = ?`).bind(id).first('status')).toBe('done');
    const again = await json(await api(t, `/v1/proofs/${id}/cancel`, { method: 'POST' }), 409);
    expect(again.detail).toMatch(/Canceled/);
  });

  it('moves a running proof to Canceling and flags its job for the agent', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await json(await submit(t, `program_id=${program}`, { input: [] }), 200);
    // What a claim does (the fleet's part): lease the job, move the proof on.
    await env.DB.batch([
      env.DB.prepare(`UPDATE jobs SET status = 'leased', lease_id = 'L1' WHERE subject_id = ?`).bind(id),
      env.DB.prepare(`UPDATE proofs SET state = 'AppProving' WHERE id = ?`).bind(id),
    ]);
    expect(await json(await api(t, `/v1/proofs/${id}/cancel`, { method: 'POST' }), 200)).toMatchObject({ state: 'Canceling' });
    expect(await env.DB.prepare(`SELECT cancel_requested FROM jobs WHERE subject_id = ?`).bind(id).first('cancel_requested')).toBe(1);
    expect(await json(await api(t, `/v1/proofs/${id}/cancel`, { method: 'POST' }), 200)).toMatchObject({ state: 'Canceling' });
  });

  it('404s another organization’s proof', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const { id } = await json(await submit(other, `program_id=${await readyProgram(other)}`, { input: [] }), 200);
    await json(await api(t, `/v1/proofs/${id}/cancel`, { method: 'POST' }), 404);
    expect((await json(await api(other, `/v1/proofs/${id}`), 200)).state).toBe('Queued');
  });
});
