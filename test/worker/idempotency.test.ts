// Idempotent submissions (issue 15 item 4): the Idempotency-Key header on every POST
// that creates something. Retries replay the first answer and create nothing; a
// different request with the key is 422; a retry while the first runs is 409; ten at
// once create one record; keys are per organization, expire after 24 h, and answers
// that must not be replayed free the key.
import { env } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { createApiKey, revokeApiKey, setOrganizationLimits } from '../../src/admin/statements.ts';
import { sweep } from '../../src/jobs/sweep.ts';
import { IDEMPOTENCY_KEY_TTL_MS, IDEMPOTENCY_SWEEP_BATCH, IDEMPOTENCY_SWEEP_BATCHES } from '../../src/middleware/idempotency/store.ts';
import { recordD1Calls } from './d1-calls.ts';
import { drainQueuedJobs } from './fleet-helpers.ts';
import {
  api,
  BASE,
  countRows,
  guest,
  json,
  markReady,
  programForm,
  registerProgram,
  runAdmin,
  seedConfig,
  seedTenant,
  VMEXE,
  watchQueue,
  type Tenant,
  cronPart,
} from './helpers.ts';

afterEach(() => vi.restoreAllMocks());

const STARK = JSON.stringify({ version: 'v1.1', proof: 'abcd', user_pvs_proof: '0011', deferral_merkle_proofs: null });
const JSON_TYPE = { 'content-type': 'application/json' };
const newKey = () => crypto.randomUUID();

async function readyProgram(t: Tenant) {
  const id = await registerProgram(t, await seedConfig());
  await markReady(id);
  await drainQueuedJobs();
  return id;
}

function proofFileForm(text: string) {
  const form = new FormData();
  form.append('proof', new File([text], 'proof.json', { type: 'application/json' }));
  return form;
}

/** One creating request, made afresh each call (a new multipart boundary every time, as clients do). */
interface Creating {
  name: string;
  status: number;
  table: string;
  send(t: Tenant, key: string, variant?: boolean): Promise<Response>;
}

function creatingRoutes(config: string, program: string): Creating[] {
  const post = (t: Tenant, path: string, key: string, body: BodyInit, headers: Record<string, string> = {}) =>
    api(t, path, { method: 'POST', body, headers: { 'Idempotency-Key': key, ...headers } });
  return [
    {
      name: 'POST /v1/programs',
      status: 201,
      table: 'programs',
      send: (t, key, variant) =>
        post(t, `/v1/programs?config_id=${config}`, key, programForm(guest(variant ? 'loop.elf' : 'hello.elf'), VMEXE)),
    },
    {
      name: 'POST /v1/proofs',
      status: 200,
      table: 'proofs',
      send: (t, key, variant) =>
        post(t, `/v1/proofs?program_id=${program}`, key, JSON.stringify({ input: [variant ? '0x0102' : '0x0101'] }), JSON_TYPE),
    },
    {
      name: 'POST /v1/executions',
      status: 200,
      table: 'executions',
      send: (t, key, variant) =>
        post(t, `/v1/executions?program_id=${program}`, key, JSON.stringify({ input: [variant ? '0x0102' : '0x0101'] }), JSON_TYPE),
    },
    {
      name: 'POST /v1/verify',
      status: 200,
      table: 'verifications',
      send: (t, key, variant) =>
        post(t, `/v1/verify?program_id=${program}`, key, proofFileForm(variant ? STARK.replace('abcd', 'abce') : STARK)),
    },
    {
      name: 'POST /v1/verify/stark',
      status: 200,
      table: 'verifications',
      send: (t, key, variant) =>
        post(t, `/v1/verify/stark?program_id=${program}`, key, proofFileForm(variant ? STARK.replace('abcd', 'abce') : STARK)),
    },
    {
      name: 'POST /v1/projects',
      status: 201,
      table: 'projects',
      send: (t, key, variant) => post(t, '/v1/projects', key, JSON.stringify(variant ? 'other project' : 'a project'), JSON_TYPE),
    },
    {
      name: 'POST /v1/webhooks',
      status: 201,
      table: 'webhook_endpoints',
      send: (t, key, variant) =>
        post(
          t,
          '/v1/webhooks',
          key,
          JSON.stringify({ url: variant ? 'https://example.com/other' : 'https://example.com/hook' }),
          JSON_TYPE,
        ),
    },
  ];
}

describe('Idempotency-Key on POST /v1/webhooks', () => {
  it('a replay shows the same signing secret, which is stored encrypted, never in the clear', async () => {
    const t = await seedTenant();
    const key = newKey();
    const send = () =>
      api(t, '/v1/webhooks', {
        method: 'POST',
        body: JSON.stringify({ url: 'https://example.com/replayed' }),
        headers: { 'Idempotency-Key': key, ...JSON_TYPE },
      });
    const first = await json<{ id: string; secret: string }>(await send(), 201);
    const again = await send();
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await json(again, 201)).toEqual(first);
    const stored = await env.DB.prepare('SELECT response FROM idempotency_keys WHERE org_id = ? AND key = ?')
      .bind(t.orgId, key)
      .first<{ response: string }>();
    expect(stored!.response).not.toContain(first.secret);
    expect(stored!.response).not.toContain('whsec_');
    expect(await countRows('webhook_endpoints', 'org_id = ?', t.orgId)).toBe(1);
  });
});

describe('Idempotency-Key on every creating route', () => {
  it('a retry gets the first answer (same status and id, Idempotent-Replayed: true) and creates nothing; a different request is 422', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const program = await readyProgram(t);
    for (const route of creatingRoutes(config, program)) {
      const key = newKey();
      const before = await countRows(route.table, 'org_id = ?', t.orgId);
      const send = watchQueue();
      const first = await route.send(t, key);
      const body = await json<{ id: string }>(first, route.status);
      expect(first.headers.get('Idempotent-Replayed'), route.name).toBeNull();
      const sent = send.mock.calls.length;
      for (let i = 0; i < 2; i++) {
        const again = await route.send(t, key);
        expect(await json(again, route.status), route.name).toEqual(body);
        expect(again.headers.get('Idempotent-Replayed'), route.name).toBe('true');
      }
      expect(await countRows(route.table, 'org_id = ?', t.orgId), route.name).toBe(before + 1);
      expect(send.mock.calls.length, route.name).toBe(sent); // no second job notice
      send.mockRestore();

      const different = await json(await route.send(t, key, true), 422);
      expect(different.detail[0], route.name).toMatchObject({ loc: ['header', 'Idempotency-Key'], type: 'idempotency_key_reused' });
      expect(different.detail[0].msg).toMatch(/different request/);
      expect(await countRows(route.table, 'org_id = ?', t.orgId), route.name).toBe(before + 1);
    }
  });

  it('is the same request whatever multipart boundary a retry picks, and not with another query, path or media type', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const program = await readyProgram(t);
    const key = newKey();
    const upload = (boundary: string, path = `/v1/programs?config_id=${config}&program_name=p`) => {
      const part = (name: string, file: string, bytes: Uint8Array) => [
        `--${boundary}\r\nContent-Disposition: form-data; name="${name}"; filename="${file}"\r\nContent-Type: application/octet-stream\r\n\r\n`,
        bytes,
        '\r\n',
      ];
      const body = new Blob([
        ...part('elf', 'hello.elf', guest('hello.elf')),
        ...part('vmexe', 'hello.vmexe', VMEXE),
        `--${boundary}--\r\n`,
      ]);
      return api(t, path, {
        method: 'POST',
        body,
        headers: { 'Idempotency-Key': key, 'content-type': `multipart/form-data; boundary=${boundary}` },
      });
    };
    const { id } = await json(await upload('----a-short-one'), 201);
    const replay = await upload('----------------------------a-much-longer-boundary-1234567890');
    expect(await json(replay, 201)).toEqual({ id });
    expect(replay.headers.get('Idempotent-Replayed')).toBe('true');
    // The query is the request's too (its order is not).
    expect((await upload('x', `/v1/programs?program_name=p&config_id=${config}`)).status).toBe(201);
    expect((await upload('x', `/v1/programs?config_id=${config}&program_name=q`)).status).toBe(422);
    // Another path, another media type: another request.
    const asProof = await api(t, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: '{"input": []}',
      headers: { ...JSON_TYPE, 'Idempotency-Key': key },
    });
    expect(asProof.status).toBe(422);
    expect(await countRows('programs', 'org_id = ?', t.orgId)).toBe(2); // readyProgram's and this one
  });

  it('takes the draft’s quoted form and the bare form as the same key', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const send = (key: string) =>
      api(t, `/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body: '{"input": []}',
        headers: { ...JSON_TYPE, 'Idempotency-Key': key },
      });
    const { id } = await json(await send('"order-7 \\"b\\""'), 200);
    const bare = await send('order-7 "b"');
    expect(await json(bare, 200)).toEqual({ id });
    expect(bare.headers.get('Idempotent-Replayed')).toBe('true');
    // 255 characters is the longest key.
    expect((await send('k'.repeat(255))).status).toBe(200);
  });

  it('refuses a malformed key with 400 (and a bad API key with 401 first), creating nothing', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const send = (who: Tenant | null, key: string) =>
      api(who, `/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body: '{"input": []}',
        headers: { ...JSON_TYPE, 'Idempotency-Key': key },
      });
    for (const bad of [
      '',
      '   ',
      '""',
      'k'.repeat(256),
      `"${'k'.repeat(256)}"`,
      'caf\u00e9',
      'tab\there',
      '"unterminated',
      '"a"b"',
      '"back\\slash"',
    ]) {
      const res = await send(t, bad);
      const body = await json(res, 400);
      expect(body.detail, JSON.stringify(bad)).toMatch(/^Malformed Idempotency-Key header/);
    }
    expect((await send(null, '')).status).toBe(401);
    expect((await send({ ...t, key: 'sk_nope' }, 'k'.repeat(300))).status).toBe(401);
    expect(await countRows('proofs', 'program_id = ?', program)).toBe(0);
    expect(await countRows('idempotency_keys', 'org_id = ?', t.orgId)).toBe(0);
  });

  it('keys are per organization', async () => {
    const [a, b] = [await seedTenant(), await seedTenant()];
    const key = 'shared-key-1';
    const ids = [];
    for (const t of [a, b]) {
      const program = await readyProgram(t);
      const send = () =>
        api(t, `/v1/proofs?program_id=${program}`, {
          method: 'POST',
          body: '{"input": []}',
          headers: { ...JSON_TYPE, 'Idempotency-Key': key },
        });
      const { id } = await json(await send(), 200);
      expect(await json(await send(), 200)).toEqual({ id });
      ids.push(id);
    }
    expect(ids[0]).not.toBe(ids[1]);
    // Another API key of the same organization shares its keys.
    const a2 = { ...a, key: await runAdmin(createApiKey(a.orgId, 'second@example.com')) };
    const again = await api(a2, '/v1/projects', { method: 'POST', body: '"p"', headers: { ...JSON_TYPE, 'Idempotency-Key': key } });
    expect(again.status).toBe(422); // the same key, for another request of organization A
  });
});

describe('concurrent requests with one key', () => {
  /** A POST whose body the test sends in two parts, the second when it says so. */
  function heldUpload(t: Tenant, path: string, key: string, form: FormData) {
    let release!: () => void;
    const released = new Promise<void>((r) => (release = r));
    const made = new Response(form);
    const contentType = made.headers.get('content-type')!;
    const body = (async () => new Uint8Array(await made.arrayBuffer()))();
    const stream = new ReadableStream<Uint8Array>({
      async start(controller) {
        const bytes = await body;
        controller.enqueue(bytes.slice(0, 100));
        await released;
        controller.enqueue(bytes.slice(100));
        controller.close();
      },
    });
    const res = exports.default.fetch(
      new Request(BASE + path, {
        method: 'POST',
        body: stream,
        duplex: 'half',
        headers: { 'Service-API-Key': t.key, 'Idempotency-Key': key, 'content-type': contentType },
      } as RequestInit),
    );
    return { res, release };
  }

  const claimed = async (orgId: string, key: string) => {
    for (;;) {
      const row = await env.DB.prepare('SELECT state FROM idempotency_keys WHERE org_id = ? AND key = ?')
        .bind(orgId, key)
        .first<{ state: string }>();
      if (row) return row.state;
      await new Promise((r) => setTimeout(r, 10));
    }
  };

  it('a retry while the first is in flight is 409; after it, the replay', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const key = newKey();
    const path = `/v1/programs?config_id=${config}`;
    const first = heldUpload(t, path, key, programForm(guest('hello.elf'), VMEXE));
    expect(await claimed(t.orgId, key)).toBe('in_flight');
    const during = await api(t, path, {
      method: 'POST',
      body: programForm(guest('hello.elf'), VMEXE),
      headers: { 'Idempotency-Key': key },
    });
    const conflict = await json(during, 409);
    expect(conflict.detail).toMatch(/still being processed/);
    expect(during.headers.get('Retry-After')).toBe('1');
    first.release();
    const { id } = await json(await first.res, 201);
    const after = await api(t, path, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE), headers: { 'Idempotency-Key': key } });
    expect(await json(after, 201)).toEqual({ id });
    expect(after.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await countRows('programs', 'org_id = ?', t.orgId)).toBe(1);
  });

  it('ten at once create exactly one record; the others get 409 or the replay', async () => {
    for (const kind of ['proofs', 'programs'] as const) {
      const t = await seedTenant();
      const config = await seedConfig();
      const program = kind === 'proofs' ? await readyProgram(t) : '';
      const key = newKey();
      const send = () =>
        kind === 'proofs'
          ? api(t, `/v1/proofs?program_id=${program}`, {
              method: 'POST',
              body: '{"input": ["0x0101"]}',
              headers: { ...JSON_TYPE, 'Idempotency-Key': key },
            })
          : api(t, `/v1/programs?config_id=${config}`, {
              method: 'POST',
              body: programForm(guest('hello.elf'), VMEXE),
              headers: { 'Idempotency-Key': key },
            });
      const before = await countRows(kind, 'org_id = ?', t.orgId);
      const answers = await Promise.all(
        Array.from({ length: 10 }, async () => {
          const res = await send();
          return { status: res.status, replayed: res.headers.get('Idempotent-Replayed'), body: await res.json<{ id?: string }>() };
        }),
      );
      const created = answers.filter((a) => a.status < 300 && !a.replayed);
      expect(created, kind).toHaveLength(1);
      for (const a of answers) {
        if (a.status === 409) continue;
        expect(a.status, kind).toBe(created[0].status);
        expect(a.body, kind).toEqual(created[0].body);
      }
      expect(await countRows(kind, 'org_id = ?', t.orgId), kind).toBe(before + 1);
    }
  });

  it('a request that outlives its lock loses the key to a retry and creates nothing', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const key = newKey();
    const path = `/v1/programs?config_id=${config}`;
    const objectsBefore = new Set((await env.ARTIFACTS.list({ prefix: 'programs/' })).objects.map((o) => o.key));
    const slow = heldUpload(t, path, key, programForm(guest('hello.elf'), VMEXE));
    await claimed(t.orgId, key);
    // As if its Worker had died: the lock runs out and a retry takes the key over.
    await env.DB.prepare('UPDATE idempotency_keys SET locked_until = 0 WHERE org_id = ? AND key = ?').bind(t.orgId, key).run();
    const retry = await api(t, path, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE), headers: { 'Idempotency-Key': key } });
    const { id } = await json(retry, 201);
    slow.release();
    const lost = await json(await slow.res, 409);
    expect(lost.detail).toMatch(/took it over: nothing was created/);
    expect(await countRows('programs', 'org_id = ?', t.orgId)).toBe(1);
    // Its files were deleted with the refusal: only the retry's are new.
    const added = (await env.ARTIFACTS.list({ prefix: 'programs/' })).objects.map((o) => o.key).filter((k) => !objectsBefore.has(k));
    expect(added.every((k) => k.startsWith(`programs/${id}/`))).toBe(true);
    expect(
      await json(
        await api(t, path, { method: 'POST', body: programForm(guest('hello.elf'), VMEXE), headers: { 'Idempotency-Key': key } }),
        201,
      ),
    ).toEqual({ id });
  });
});

describe('which answers are kept', () => {
  const submit = (t: Tenant, program: string, key: string, body = '{"input": ["0x0101"]}', query = '') =>
    api(t, `/v1/proofs?program_id=${program}${query}`, { method: 'POST', body, headers: { ...JSON_TYPE, 'Idempotency-Key': key } });

  it('refusals of the request itself, once its body was read, are replayed (400, 404, 422)', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const badInput = newKey();
    const first = await json(await submit(t, program, badInput, '{"input": ["0x03"]}'), 422);
    const again = await submit(t, program, badInput, '{"input": ["0x03"]}');
    expect(await json(again, 422)).toEqual(first);
    expect(again.headers.get('Idempotent-Replayed')).toBe('true');

    const missing = newKey();
    const nowhere = crypto.randomUUID();
    expect(await json(await submit(t, nowhere, missing), 404)).toEqual({ detail: 'Program not found' });
    expect((await submit(t, nowhere, missing)).headers.get('Idempotent-Replayed')).toBe('true');

    const notUtf8 = newKey();
    const bytes = Uint8Array.of(0x7b, 0xff, 0x7d);
    expect(
      (
        await api(t, `/v1/proofs?program_id=${program}`, {
          method: 'POST',
          body: bytes,
          headers: { ...JSON_TYPE, 'Idempotency-Key': notUtf8 },
        })
      ).status,
    ).toBe(400);
    const replayed = await api(t, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: bytes,
      headers: { ...JSON_TYPE, 'Idempotency-Key': notUtf8 },
    });
    expect(replayed.status).toBe(400);
    expect(replayed.headers.get('Idempotent-Replayed')).toBe('true');
  });

  it('refusals given before the body was read, 409, 413, 429, 401 and 5xx free the key: the retry runs again', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    await drainQueuedJobs();

    // 409: the program is not ready yet. Once it is, the same key submits.
    const early = newKey();
    expect((await submit(t, program, early)).status).toBe(409);
    await markReady(program);
    const created = await submit(t, program, early);
    expect(created.status).toBe(200);
    expect(created.headers.get('Idempotent-Replayed')).toBeNull();

    // 422 on the query, decided before the body was read: not kept.
    const badQuery = newKey();
    expect((await submit(t, program, badQuery, undefined, '&priority=11')).status).toBe(422);
    const rerun = await submit(t, program, badQuery, undefined, '&priority=11');
    expect(rerun.status).toBe(422);
    expect(rerun.headers.get('Idempotent-Replayed')).toBeNull();

    // 413: too large.
    const large = newKey();
    const huge = JSON.stringify({ input: ['0x01' + '00'.repeat(17 * 1024 * 1024)] });
    expect((await submit(t, program, large, huge)).status).toBe(413);
    expect((await submit(t, program, large)).status).toBe(200);

    // 429: over the organization's job quota. Under it again, the same key submits.
    const quota = newKey();
    await runAdmin(setOrganizationLimits(t.orgId, { maxActiveJobs: 0 }));
    expect((await submit(t, program, quota)).status).toBe(429);
    await runAdmin(setOrganizationLimits(t.orgId, { maxActiveJobs: null }));
    expect((await submit(t, program, quota)).status).toBe(200);

    // 5xx: storage failed mid-request. The retry goes through.
    const failing = newKey();
    vi.spyOn(env.ARTIFACTS, 'put').mockRejectedValueOnce(new Error('R2 is down'));
    expect((await submit(t, program, failing)).status).toBe(500);
    vi.restoreAllMocks();
    const recovered = await submit(t, program, failing);
    expect(recovered.status).toBe(200);
    expect(recovered.headers.get('Idempotent-Replayed')).toBeNull();

    // 401: a revoked API key claims nothing; the organization's live key may use the key.
    const revoked = { ...t, key: await runAdmin(createApiKey(t.orgId, t.owner)) };
    await runAdmin(revokeApiKey(revoked.key));
    const keyOfRevoked = newKey();
    expect((await submit(revoked, program, keyOfRevoked)).status).toBe(401);
    expect((await submit(t, program, keyOfRevoked)).status).toBe(200);

    expect(await countRows('proofs', 'program_id = ?', program)).toBe(5);
    expect(await countRows('idempotency_keys', `org_id = ? AND state = 'in_flight'`, t.orgId)).toBe(0);
  });
});

describe('expiry', () => {
  it('a key is free again after 24 hours', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const key = newKey();
    const send = (input: string) =>
      api(t, `/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body: JSON.stringify({ input: [input] }),
        headers: { ...JSON_TYPE, 'Idempotency-Key': key },
      });
    const { id } = await json(await send('0x0101'), 200);
    const row = await env.DB.prepare('SELECT created_at, expires_at FROM idempotency_keys WHERE org_id = ? AND key = ?')
      .bind(t.orgId, key)
      .first<{ created_at: number; expires_at: number }>();
    expect(row!.expires_at - row!.created_at).toBe(IDEMPOTENCY_KEY_TTL_MS);
    await env.DB.prepare('UPDATE idempotency_keys SET expires_at = ? WHERE org_id = ? AND key = ?')
      .bind(Date.now() - 1, t.orgId, key)
      .run();
    const later = await json<{ id: string }>(await send('0x0102'), 200);
    expect(later.id).not.toBe(id);
    expect(await json(await send('0x0102'), 200)).toEqual(later);
  });

  it('the sweep deletes expired keys in bounded batches and keeps live ones', async () => {
    await env.DB.prepare('DELETE FROM idempotency_keys').run();
    const now = Date.now();
    const perSweep = IDEMPOTENCY_SWEEP_BATCH * IDEMPOTENCY_SWEEP_BATCHES;
    const expired = perSweep + 123;
    await env.DB.prepare(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO idempotency_keys (org_id, key, claim_id, state, status, response, created_at, locked_until, expires_at)
       SELECT 'org_sweep', 'k' || i, 'c', 'done', 200, '{}', ?, ?, ? FROM n`,
    )
      .bind(expired, now - IDEMPOTENCY_KEY_TTL_MS - 10, now - IDEMPOTENCY_KEY_TTL_MS - 10, now - 10)
      .run();
    await env.DB.prepare(
      `INSERT INTO idempotency_keys (org_id, key, claim_id, state, created_at, locked_until, expires_at) VALUES ('org_sweep', 'live', 'c', 'in_flight', ?, ?, ?)`,
    )
      .bind(now, now + 60_000, now + IDEMPOTENCY_KEY_TTL_MS)
      .run();
    const d1 = recordD1Calls();
    expect((await sweep(cronPart('sweep'), now)).idempotencyKeysDeleted).toBe(perSweep);
    const deletes = d1.calls.filter((c) => c.sql.some((q) => /delete from "idempotency_keys"/i.test(q)));
    expect(deletes).toHaveLength(IDEMPOTENCY_SWEEP_BATCHES);
    expect(deletes.every((c) => c.rowsWritten <= IDEMPOTENCY_SWEEP_BATCH)).toBe(true);
    d1.stop();
    expect((await sweep(cronPart('sweep'), now)).idempotencyKeysDeleted).toBe(123);
    expect((await sweep(cronPart('sweep'), now)).idempotencyKeysDeleted).toBe(0);
    expect(await countRows('idempotency_keys', `org_id = 'org_sweep'`)).toBe(1);
  });
});

describe('cost', () => {
  it('a request without the header reads and writes exactly as before; with it, no extra round trip', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const send = (headers: Record<string, string>) =>
      api(t, `/v1/proofs?program_id=${program}`, { method: 'POST', body: '{"input": []}', headers: { ...JSON_TYPE, ...headers } });
    await send({}); // the key's last_used_at is fresh: nothing below writes it
    const d1 = recordD1Calls();
    expect((await send({})).status).toBe(200);
    const plain = d1.calls.length;
    expect(d1.calls.flatMap((c) => c.sql).some((q) => q.includes('idempotency_keys'))).toBe(false);
    d1.clear();
    expect((await send({ 'Idempotency-Key': 'cost-1' })).status).toBe(200);
    expect(d1.calls.length).toBe(plain);
    // The claim rides in the first batch; the answer in the batch that creates the proof.
    expect(d1.calls[0].sql.some((q) => /insert into "idempotency_keys".*on conflict/is.test(q))).toBe(true);
    expect(d1.calls.at(-1)!.sql.some((q) => /insert into "proofs"/i.test(q))).toBe(true);
    expect(d1.calls.at(-1)!.sql.some((q) => /update "idempotency_keys"/i.test(q))).toBe(true);
    d1.clear();
    // A replay: its claim finds the key answered, and one read on the primary fetches the answer. Nothing is written.
    expect((await send({ 'Idempotency-Key': 'cost-1' })).headers.get('Idempotent-Replayed')).toBe('true');
    expect(d1.calls).toHaveLength(2);
    expect(d1.writes()).toHaveLength(0);
    // POST /v1/projects reads its body before any batch: the key is checked first, alone
    // (issue 21: no body is read for a caller not known), then one batch: key, claim, insert and answer.
    d1.clear();
    expect(
      (await api(t, '/v1/projects', { method: 'POST', body: '"p"', headers: { ...JSON_TYPE, 'Idempotency-Key': 'cost-2' } })).status,
    ).toBe(201);
    expect(d1.calls).toHaveLength(2);
    expect(d1.calls[0].sql.some((q) => /idempotency_keys/i.test(q))).toBe(false);
    expect(d1.calls[1].sql.some((q) => /insert into "idempotency_keys".*on conflict/is.test(q))).toBe(true);
  });
});

describe('OpenAPI', () => {
  it('documents the header on every creating route and the replay header on its answer', async () => {
    const doc = await json(await api(null, '/openapi.json'), 200);
    for (const path of ['/v1/programs', '/v1/proofs', '/v1/executions', '/v1/verify', '/v1/verify/stark', '/v1/projects']) {
      const op = doc.paths[path].post;
      expect(
        op.parameters.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'Idempotency-Key'),
        path,
      ).toBe(true);
      const success = op.responses['200'] ?? op.responses['201'];
      expect(success.headers['Idempotent-Replayed'], path).toBeDefined();
      expect(op.responses['409'].description, path).toMatch(/Idempotency-Key/);
      expect(op.responses['422'].description, path).toMatch(/Idempotency-Key/);
    }
  });
});
