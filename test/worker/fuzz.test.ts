// Fuzz (issue 10 item 3): every endpoint of src/app.ts and its route modules gets
// huge, deeply nested, malformed and binary bodies, junk in its path and query, and
// missing or bad credentials. Nothing may answer 5xx, and each kind of bad input gets
// its own 4xx. Seeded, with a fixed number of cases: the same requests on every run.
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/admin/statements.ts';
import { api, markReady, registerProgram, runAdmin, seedConfig, seedTenant, seededRandom, type Tenant } from './helpers.ts';
import { seedAgent } from './fleet-helpers.ts';
import { seedPublisher } from './key-helpers.ts';
import { declarationAt } from './routes.ts';

type Auth = 'key' | 'agent' | 'publisher' | 'job' | 'queue' | 'signed' | 'none';
type BodyKind = 'json' | 'multipart' | 'json-or-multipart' | 'stream' | 'none';
interface Endpoint {
  method: string;
  path: string;
  auth: Auth;
  body: BodyKind;
  /** Path with `{id}` where a junk path segment goes (a UUID or config id param). */
  junkPath?: string;
  /** Integer query parameters to fuzz. */
  intParams?: string[];
  /** It creates something: it takes an Idempotency-Key. */
  idempotent?: boolean;
}

const random = seededRandom(0x5eed);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
const enc = new TextEncoder();
/** Past every upload cap (MAX_UPLOAD_BYTES is 100 MB): one buffer, sent to each multipart endpoint. */
const PAST_UPLOAD_CAP = new Uint8Array(101 * 1024 * 1024);

const deepArray = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
const deepObject = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
/** How deep a JSON text nests (its brackets outside strings; the texts here have no brackets in strings). */
function nestingOf(text: string): number {
  let depth = 0;
  let most = 0;
  for (const ch of text) {
    if (ch === '[' || ch === '{') most = Math.max(most, ++depth);
    else if (ch === ']' || ch === '}') depth--;
  }
  return most;
}
/** Junk path segments: no `/`, `.`, `?` or `#` (those change which route is asked). */
function junkSegment(): string {
  const alphabet = "abcxyz0123456789-_~!$&'()*+,;=:@%ZÄ€😀\u0000\u007f ";
  const s = Array.from({ length: 1 + Math.floor(random() * 60) }, () => pick([...alphabet])).join('');
  return encodeURIComponent(s);
}
const junkInt = () =>
  pick([
    '0x10',
    '1e3',
    '-1',
    '0',
    '',
    ' ',
    'NaN',
    'Infinity',
    '9'.repeat(40),
    '1.5',
    '٣',
    '5 5',
    '+-5',
    'abc',
    '%00',
    '1' + '0'.repeat(400),
  ]);

interface Case {
  name: string;
  init: RequestInit & { headers: Record<string, string> };
  path?: string;
  expect: number[];
}

describe('fuzz: every endpoint, bad input, never a 5xx', { timeout: 180_000 }, async () => {
  // A tenant with one of everything, so that ids in paths can exist.
  const owner = await seedTenant();
  const configId = await seedConfig();
  const programId = await registerProgram(owner, configId);
  await markReady(programId);
  const proof = await api(owner, `/v1/proofs?program_id=${programId}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ input: ['0x0101'] }),
  });
  const proofId = (await proof.json<{ id: string }>()).id;
  const projectId = (await (await api(owner, `/v1/programs/${programId}`)).json<{ project_id: string }>()).project_id;
  const agent = await seedAgent();
  const publisher = await seedPublisher([configId]);
  const webhook = await (
    await api(owner, '/v1/webhooks', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ url: 'http://127.0.0.1:9/fuzz' }),
    })
  ).json<{ id: string }>();
  const webhookId = webhook.id;

  // Fresh keys of the same organization, so the fuzz never meets the rate limits.
  let sent = 0;
  let tenant: Tenant = owner;
  async function key(): Promise<Tenant> {
    if (++sent % 20 === 0) tenant = { ...owner, key: await runAdmin(createApiKey(owner.orgId, owner.owner)) };
    return tenant;
  }

  const uuid = '0199a3c2-5b1e-7c4e-9d2a-3f6b8e1c0a11';
  const endpoints: Endpoint[] = [
    { method: 'GET', path: '/v1/validate_api_key', auth: 'key', body: 'none' },
    {
      method: 'POST',
      path: `/v1/programs?config_id=${configId}`,
      auth: 'key',
      body: 'multipart',
      intParams: ['default_num_gpus'],
      idempotent: true,
    },
    { method: 'GET', path: '/v1/programs', auth: 'key', body: 'none', intParams: ['page', 'page_size'] },
    { method: 'GET', path: `/v1/programs/${programId}`, auth: 'key', body: 'none', junkPath: '/v1/programs/{id}' },
    {
      method: 'PUT',
      path: `/v1/programs/${programId}`,
      auth: 'key',
      body: 'json',
      junkPath: '/v1/programs/{id}',
    },
    {
      method: 'GET',
      path: `/v1/programs/${programId}/download/elf`,
      auth: 'key',
      body: 'none',
      junkPath: '/v1/programs/{id}/download/elf',
    },
    { method: 'GET', path: '/v1/projects', auth: 'key', body: 'none', intParams: ['page', 'page_size'] },
    { method: 'POST', path: '/v1/projects', auth: 'key', body: 'json', idempotent: true },
    { method: 'GET', path: `/v1/projects/${projectId}`, auth: 'key', body: 'none', junkPath: '/v1/projects/{id}' },
    {
      method: 'GET',
      path: `/v1/projects/${projectId}/programs`,
      auth: 'key',
      body: 'none',
      junkPath: '/v1/projects/{id}/programs',
      intParams: ['page', 'page_size'],
    },
    {
      method: 'POST',
      path: `/v1/proofs?program_id=${programId}`,
      auth: 'key',
      body: 'json-or-multipart',
      intParams: ['num_gpus', 'priority'],
      idempotent: true,
    },
    { method: 'GET', path: `/v1/proofs?program_id=${programId}`, auth: 'key', body: 'none', intParams: ['page', 'page_size'] },
    { method: 'GET', path: `/v1/proofs/${proofId}`, auth: 'key', body: 'none', junkPath: '/v1/proofs/{id}' },
    { method: 'GET', path: `/v1/proofs/${proofId}/proof/stark`, auth: 'key', body: 'none', junkPath: '/v1/proofs/{id}/proof/stark' },
    { method: 'GET', path: `/v1/proofs/${proofId}/logs`, auth: 'key', body: 'none', junkPath: '/v1/proofs/{id}/logs' },
    { method: 'GET', path: `/v1/proofs/${proofId}/events`, auth: 'key', body: 'none', junkPath: '/v1/proofs/{id}/events' },
    { method: 'POST', path: `/v1/proofs/${uuid}/cancel`, auth: 'key', body: 'none', junkPath: '/v1/proofs/{id}/cancel' },
    { method: 'GET', path: `/v1/configs/${configId}`, auth: 'key', body: 'none', junkPath: '/v1/configs/{id}' },
    { method: 'GET', path: `/v1/configs/${configId}/config`, auth: 'key', body: 'none', junkPath: '/v1/configs/{id}/config' },
    { method: 'GET', path: `/v1/configs/${configId}/pk/app`, auth: 'key', body: 'none', junkPath: '/v1/configs/{id}/pk/app' },
    { method: 'GET', path: `/v1/configs/${configId}/vk/app`, auth: 'key', body: 'none', junkPath: '/v1/configs/{id}/vk/app' },
    { method: 'POST', path: `/v1/verify?program_id=${programId}`, auth: 'key', body: 'multipart', idempotent: true },
    { method: 'POST', path: `/v1/verify/stark?program_id=${programId}`, auth: 'key', body: 'multipart', idempotent: true },
    { method: 'GET', path: `/v1/verify/${uuid}`, auth: 'key', body: 'none', junkPath: '/v1/verify/{id}' },
    { method: 'GET', path: `/v1/verify/stark/${uuid}`, auth: 'key', body: 'none', junkPath: '/v1/verify/stark/{id}' },
    { method: 'POST', path: `/v1/executions?program_id=${programId}`, auth: 'key', body: 'json', idempotent: true },
    { method: 'GET', path: `/v1/executions?program_id=${programId}`, auth: 'key', body: 'none', intParams: ['page', 'page_size'] },
    { method: 'GET', path: `/v1/executions/${uuid}`, auth: 'key', body: 'none', junkPath: '/v1/executions/{id}' },
    { method: 'GET', path: `/v1/executions/${uuid}/logs`, auth: 'key', body: 'none', junkPath: '/v1/executions/{id}/logs' },
    { method: 'GET', path: `/v1/executions/${uuid}/events`, auth: 'key', body: 'none', junkPath: '/v1/executions/{id}/events' },
    { method: 'POST', path: '/v1/webhooks', auth: 'key', body: 'json' },
    { method: 'GET', path: '/v1/webhooks', auth: 'key', body: 'none', intParams: ['page', 'page_size'] },
    { method: 'GET', path: `/v1/webhooks/${webhookId}`, auth: 'key', body: 'none', junkPath: '/v1/webhooks/{id}' },
    {
      method: 'PATCH',
      path: `/v1/webhooks/${webhookId}`,
      auth: 'key',
      body: 'json',
      junkPath: '/v1/webhooks/{id}',
    },
    { method: 'DELETE', path: `/v1/webhooks/${uuid}`, auth: 'key', body: 'none', junkPath: '/v1/webhooks/{id}' },
    { method: 'POST', path: `/v1/webhooks/${uuid}/rotate-secret`, auth: 'key', body: 'none', junkPath: '/v1/webhooks/{id}/rotate-secret' },
    {
      method: 'GET',
      path: `/v1/webhooks/${webhookId}/deliveries`,
      auth: 'key',
      body: 'none',
      junkPath: '/v1/webhooks/{id}/deliveries',
      intParams: ['page', 'page_size'],
    },
    {
      method: 'POST',
      path: `/v1/webhooks/${webhookId}/deliveries/msg_${'0'.repeat(32)}/redeliver`,
      auth: 'key',
      body: 'none',
      junkPath: `/v1/webhooks/${webhookId}/deliveries/{id}/redeliver`,
    },
    { method: 'POST', path: `/v1/webhooks/${uuid}/test`, auth: 'key', body: 'none', junkPath: '/v1/webhooks/{id}/test' },
    { method: 'POST', path: '/internal/v1/jobs/claim', auth: 'agent', body: 'json' },
    { method: 'POST', path: '/internal/v1/lease/heartbeat', auth: 'job', body: 'json' },
    { method: 'POST', path: '/internal/v1/lease/logs', auth: 'job', body: 'json' },
    { method: 'POST', path: '/internal/v1/lease/complete', auth: 'job', body: 'json' },
    { method: 'POST', path: '/internal/v1/lease/fail', auth: 'job', body: 'json' },
    { method: 'POST', path: '/internal/v1/lease/canceled', auth: 'job', body: 'none' },
    { method: 'POST', path: '/internal/v1/lease/release', auth: 'job', body: 'none' },
    { method: 'GET', path: '/internal/v1/lease/artifacts/input', auth: 'job', body: 'none' },
    { method: 'PUT', path: '/internal/v1/lease/results/stark', auth: 'job', body: 'stream' },
    { method: 'GET', path: `/internal/v1/configs/${configId}`, auth: 'agent', body: 'none' },
    {
      method: 'POST',
      path: `/internal/v1/configs/${configId}/keys/app_pk/uploads`,
      auth: 'publisher',
      body: 'json',
    },
    { method: 'PUT', path: `/internal/v1/configs/${configId}/keys/app_pk/uploads/u1/1`, auth: 'publisher', body: 'stream' },
    { method: 'POST', path: `/internal/v1/configs/${configId}/keys/app_pk/uploads/u1/complete`, auth: 'publisher', body: 'json' },
    { method: 'POST', path: '/internal/v1/agents/presence', auth: 'agent', body: 'json' },
    { method: 'POST', path: '/internal/v1/agents/leave', auth: 'agent', body: 'json' },
    { method: 'POST', path: '/internal/v1/queue/pull', auth: 'queue', body: 'json' },
    { method: 'POST', path: '/internal/v1/queue/ack', auth: 'queue', body: 'json' },
    { method: 'GET', path: `/downloads/configs/${configId}/app_pk/1`, auth: 'signed', body: 'none' },
    { method: 'GET', path: '/healthz', auth: 'none', body: 'none' },
    { method: 'GET', path: '/openapi.json', auth: 'none', body: 'none' },
  ];

  const badCredentials = (): Record<string, string> =>
    pick<Record<string, string>>([
      {},
      { authorization: 'Bearer' },
      { authorization: `Bearer ${junkSegment()}` },
      { authorization: `Basic ${btoa('a:b')}` },
      { authorization: `Bearer ${'t'.repeat(10_000)}` },
    ]);
  const badKey = (): Record<string, string> =>
    pick<Record<string, string>>([{}, { 'Service-API-Key': junkSegment() }, { 'Service-API-Key': 'k'.repeat(10_000) }]);

  /** The bad-body cases of one endpoint, each with the one status it must get. */
  function bodyCases(e: Endpoint): Case[] {
    const cases: Case[] = [];
    const add = (name: string, body: BodyInit | null, headers: Record<string, string>, status: number) =>
      cases.push({ name, init: { method: e.method, body, headers }, expect: [status] });
    // The JSON caps the route declares at its door (src/lib/limits.ts BODY_CAPS).
    const declared = declarationAt(e.method, e.path)!.body;
    const caps = declared.kind === 'json' ? declared : declared.kind === 'multipart' ? declared.orJson : undefined;
    /** What the door answers a JSON text past its caps (413 past the bytes, 422 past the depth); null within them. */
    const refusal = (text: string) => (enc.encode(text).length > caps!.maxBytes ? 413 : nestingOf(text) > caps!.maxDepth ? 422 : null);
    if (e.body === 'json' || e.body === 'json-or-multipart') {
      const json = { 'content-type': 'application/json' };
      add('a body past the cap', new Uint8Array(caps!.maxBytes + 1), json, 413);
      for (const depth of [5_000, 200_000]) {
        add(`an array ${depth} deep`, deepArray(depth), json, refusal(deepArray(depth)) ?? 422);
        // Unknown fields are ignored (pydantic's default), so where every field is optional
        // (PUT /v1/programs/{id}, PATCH /v1/webhooks/{id}) a deep object in an unknown field within the caps is a valid no-op.
        add(
          `an object ${depth} deep`,
          deepObject(depth),
          json,
          refusal(deepObject(depth)) ?? (e.method === 'PUT' || e.method === 'PATCH' ? 200 : 422),
        );
        const deepFields = `{"input": ${deepArray(depth)}, "name": ${deepArray(depth)}}`;
        // PATCH /v1/webhooks/{id} has neither field: a valid no-op too.
        add(`input and name ${depth} deep`, deepFields, json, refusal(deepFields) ?? (e.method === 'PATCH' ? 200 : 422));
      }
      const valid = JSON.stringify({ input: ['0x0101'], name: 'n', agent_id: 'a', parts: [] });
      add('truncated JSON', valid.slice(0, 1 + Math.floor(random() * (valid.length - 2))), json, 422);
      // Random bytes are almost never UTF-8: FastAPI's 400, else json_invalid.
      add('binary as JSON', bytes(4096), json, 400);
      // A type the route does not read: 415 before a byte is read (src/middleware/door.ts).
      add('binary as octet-stream', bytes(4096), { 'content-type': 'application/octet-stream' }, 415);
      add('invalid UTF-8', Uint8Array.of(0x22, 0xff, 0xfe, 0xc3, 0x28, 0x22), json, 400);
      add('empty', null, json, 422);
    }
    if (e.body === 'multipart' || e.body === 'json-or-multipart') {
      const boundary = 'fuzz' + junkSegment().replace(/%/g, '');
      const mp = { 'content-type': `multipart/form-data; boundary=${boundary}` };
      add('binary under a multipart type', bytes(8192), mp, 400);
      add('no closing boundary', `--${boundary}\r\nContent-Disposition: form-data; name="proof"\r\n\r\n${'x'.repeat(3000)}`, mp, 400);
      add('a part with no headers', `--${boundary}\r\n\r\nx\r\n--${boundary}--\r\n`, mp, 400);
      add('part headers past 16 KiB', `--${boundary}\r\nX: ${'h'.repeat(20_000)}\r\n\r\nx\r\n--${boundary}--\r\n`, mp, 400);
      add('a multipart body past the cap', PAST_UPLOAD_CAP, mp, 413);
      const field = e.path.startsWith('/v1/verify') ? 'proof' : e.path.startsWith('/v1/proofs') ? 'input' : 'elf';
      add(
        `a deep JSON ${field}`,
        `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="f"\r\n\r\n${deepArray(50_000)}\r\n--${boundary}--\r\n`,
        mp,
        422,
      );
    }
    if (e.body === 'multipart') add('not multipart', bytes(1024), { 'content-type': 'application/octet-stream' }, 415);
    return cases;
  }

  function casesFor(e: Endpoint): Case[] {
    const cases: Case[] = [];
    const body = e.body === 'none' ? null : e.body === 'stream' ? bytes(512) : '{}';
    // The type the route reads (a form route refuses a JSON type with 415 before anything else).
    const typed = { 'content-type': e.body === 'multipart' ? 'multipart/form-data; boundary=fuzz' : 'application/json' };
    // Credentials first: whatever the body, no credential is 401.
    if (e.auth === 'key')
      for (let i = 0; i < 3; i++) cases.push({ name: 'a bad API key', init: { method: e.method, body, headers: badKey() }, expect: [401] });
    if (e.auth === 'agent' || e.auth === 'publisher' || e.auth === 'job' || e.auth === 'queue')
      for (let i = 0; i < 3; i++)
        cases.push({
          name: 'a bad token',
          init: { method: e.method, body, headers: { 'content-type': 'application/json', ...badCredentials() } },
          expect: [401],
        });
    if (e.auth === 'signed') {
      const q = () => `?expires=${junkInt()}&signature=${junkSegment()}`;
      for (let i = 0; i < 4; i++)
        cases.push({ name: 'a forged or junk signature', path: e.path + q(), init: { method: 'GET', headers: {} }, expect: [403, 422] });
    }
    if (e.auth === 'key' || (e.auth === 'agent' && e.path.endsWith('/claim')) || (e.auth === 'publisher' && e.path.endsWith('/uploads'))) {
      // With a good credential (added when sent): bad bodies, path segments, integers.
      cases.push(...bodyCases(e));
      if (e.junkPath)
        for (let i = 0; i < 3; i++)
          cases.push({
            name: 'a junk id in the path',
            path: e.junkPath.replace('{id}', junkSegment()),
            init: { method: e.method, body: e.body === 'none' ? null : '{}', headers: typed },
            expect: [422],
          });
      for (const param of e.intParams ?? [])
        for (let i = 0; i < 2; i++) {
          const sep = e.path.includes('?') ? '&' : '?';
          cases.push({
            name: `junk ${param}`,
            path: `${e.path}${sep}${param}=${encodeURIComponent(junkInt())}`,
            init: { method: e.method, body: e.body === 'none' ? null : '{}', headers: typed },
            expect: [200, 201, 400, 404, 409, 422],
          });
        }
    }
    if (e.idempotent) {
      // Junk Idempotency-Keys: 400 before anything is looked at; with a bad API key, 401 first.
      const junkKey = () =>
        pick([
          '',
          ' ',
          '""',
          '"',
          '"open',
          'k'.repeat(256 + Math.floor(random() * 1000)),
          'tab\tkey',
          'caf\u00e9',
          '"a"b"',
          '"bad\\escape"',
        ]);
      for (let i = 0; i < 3; i++)
        cases.push({
          name: 'a junk Idempotency-Key',
          init: { method: e.method, body: '{}', headers: { ...typed, 'Idempotency-Key': junkKey() } },
          expect: [400],
        });
      cases.push({
        name: 'a junk Idempotency-Key and a bad API key',
        init: { method: e.method, body: '{}', headers: { ...badKey(), 'Idempotency-Key': junkKey() } },
        expect: [401],
      });
    }
    // An event stream with a junk Last-Event-ID: 400 before streaming.
    if (e.path.endsWith('/events'))
      cases.push({
        name: 'a junk Last-Event-ID',
        init: { method: 'GET', headers: { 'Last-Event-ID': pick(['x', '1.', '.abc', '12.zz', '-1.0000000000000000', junkSegment()]) } },
        expect: [400],
      });
    if (e.auth === 'none')
      cases.push({
        name: 'junk query and body',
        path: `${e.path}?${junkSegment()}=${junkSegment()}`,
        init: { method: e.method, headers: {} },
        expect: [200],
      });
    return cases;
  }

  for (const e of endpoints) {
    it(`${e.method} ${e.path.replace(/\?.*/, '').replaceAll(programId, '{program}').replaceAll(proofId, '{proof}').replaceAll(projectId, '{project}').replaceAll(configId, '{config}')}`, async () => {
      const cases = casesFor(e);
      expect(cases.length).toBeGreaterThan(0);
      for (const c of cases) {
        const headers = { ...c.init.headers };
        if (e.auth === 'key' && !c.expect.includes(401)) headers['Service-API-Key'] = (await key()).key;
        if (e.auth === 'agent' && !c.expect.includes(401)) headers.authorization = `Bearer ${agent.token}`;
        if (e.auth === 'publisher' && !c.expect.includes(401)) headers.authorization = `Bearer ${publisher}`;
        const res = await api(null, c.path ?? e.path, { ...c.init, headers });
        const text = await res.text();
        const what = `${c.name} → ${res.status} ${text.slice(0, 300)}`;
        expect(res.status, what).toBeLessThan(500);
        expect(c.expect, what).toContain(res.status);
        // Every refusal is small JSON in the service's shape.
        if (res.status >= 400) {
          expect(text.length, what).toBeLessThan(20_000);
          expect(JSON.parse(text), what).toHaveProperty('detail');
        }
      }
    });
  }

  it('unknown routes answer 404, whatever comes with them', async () => {
    for (let i = 0; i < 10; i++) {
      const res = await api(owner, `/v1/${junkSegment()}/${junkSegment()}/${junkSegment()}`, {
        method: pick(['GET', 'POST', 'PUT', 'DELETE', 'PATCH']),
        body: null,
      });
      expect(res.status).toBe(404);
      expect(await res.json()).toEqual({ detail: 'Not Found' });
    }
  });
});
