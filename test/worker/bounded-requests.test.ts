// Issue 21 (per request): a request is authenticated before its body costs anything,
// every computation over a body is linear and bounded, and the edges are strict
// (hostnames, percent escapes, ranges, filenames). Each finding, retried as found.
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { app } from '../../src/app.ts';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { exports } from 'cloudflare:workers';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { StreamSearch } from '../../src/lib/bytes.ts';
import { MAX_CHILD_PROOF_BYTES, MAX_FILENAME_LENGTH } from '../../src/lib/limits.ts';
import { webhookUrlProblem } from '../../src/features/webhooks/url-policy.ts';
import { as, seedUser, signIn } from './console-helpers.ts';
import {
  api,
  BASE,
  countRows,
  guest,
  json,
  markReady,
  registerProgram,
  seededRandom,
  seedConfig,
  seedTenant,
  VMEXE,
  type Tenant,
} from './helpers.ts';
import { publishKey, seedPublisher } from './key-helpers.ts';

afterEach(() => vi.restoreAllMocks());

let tenant: Tenant;
let program: string;
beforeAll(async () => {
  tenant = await seedTenant();
  program = await registerProgram(tenant, await seedConfig({ deferral_enabled: true }));
  await markReady(program);
});

/** A body that records whether anything asked it for a byte. */
function watchedBody(bytes: Uint8Array) {
  const seen = { pulled: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        seen.pulled = true;
        controller.enqueue(bytes);
        controller.close();
      },
    },
    { highWaterMark: 0 },
  ); // nothing is pulled until a reader asks
  return { stream, seen };
}

const MADE_UP_KEY = 'sk_made_up_' + 'x'.repeat(40);

/**
 * The app called in this isolate, so the body stream is the test's own (through the
 * Worker's loopback, workerd pumps a request body whether or not it is read).
 */
async function inIsolate(path: string, init: RequestInit & { headers: Record<string, string> }): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(
    new Request(BASE + path, { ...init, headers: { 'Service-API-Key': MADE_UP_KEY, ...init.headers } }),
    env,
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

describe('a request is refused before its body is read', () => {
  const json64k = new TextEncoder().encode(JSON.stringify({ name: 'x'.repeat(64 * 1024 - 20) }));
  const dashes = '-'.repeat(4000);
  const multipart = new TextEncoder().encode(
    `--${dashes}\r\ncontent-disposition: form-data; name="elf"; filename="a.elf"\r\n\r\n${'-'.repeat(60_000)}\r\n--${dashes}--\r\n`,
  );
  const routes: [string, string, Uint8Array, string][] = [
    ['POST', '/v1/projects', json64k, 'application/json'],
    ['POST', '/v1/webhooks', json64k, 'application/json'],
    ['PATCH', `/v1/webhooks/${crypto.randomUUID()}`, json64k, 'application/json'],
    ['PUT', `/v1/programs/${crypto.randomUUID()}`, json64k, 'application/json'],
    ['POST', `/v1/proofs?program_id=${crypto.randomUUID()}`, json64k, 'application/json'],
    ['POST', `/v1/executions?program_id=${crypto.randomUUID()}`, json64k, 'application/json'],
    ['POST', `/v1/programs?config_id=${crypto.randomUUID()}`, multipart, `multipart/form-data; boundary=${dashes}`],
    ['POST', `/v1/proofs?program_id=${crypto.randomUUID()}`, multipart, `multipart/form-data; boundary=${dashes}`],
    ['POST', `/v1/verify/stark?program_id=${crypto.randomUUID()}`, multipart, `multipart/form-data; boundary=${dashes}`],
    ['POST', `/v1/verify?program_id=${crypto.randomUUID()}`, multipart, `multipart/form-data; boundary=${dashes}`],
  ];
  for (const [method, path, bytes, type] of routes)
    for (const idem of [false, true])
      it(`${method} ${path.split('?')[0]} (${type.split(';')[0]}${idem ? ', Idempotency-Key' : ''}): 401, body never pulled`, async () => {
        const { stream, seen } = watchedBody(bytes);
        const headers: Record<string, string> = { 'content-type': type };
        if (idem) headers['Idempotency-Key'] = crypto.randomUUID();
        const res = await inIsolate(path, { method, body: stream, headers, duplex: 'half' } as RequestInit & {
          headers: Record<string, string>;
        });
        expect((await json<{ detail: string }>(res, 401)).detail).toMatch(/^Invalid API key: no key has this secret/);
        expect(seen.pulled).toBe(false);
      });

  it('a live key still gets its body read (and a dead one is refused even when the route reads first)', async () => {
    const res = await api(tenant, '/v1/projects', {
      method: 'POST',
      body: JSON.stringify({ name: 'after the gate' }),
      headers: { 'content-type': 'application/json' },
    });
    expect((await json<{ id: string }>(res, 201)).id).toMatch(/-/);
  });
});

describe('the fingerprint finds a multipart boundary in linear time, as before', () => {
  /** The naive answer: the stream with every non-overlapping `needle` replaced by `|`. */
  const naive = (hay: string, needle: string) => hay.split(needle).join('|');
  it('StreamSearch gives the same bytes and matches as a whole-string search, however the stream is split', () => {
    const rand = seededRandom(21);
    const dec = new TextDecoder();
    for (let trial = 0; trial < 300; trial++) {
      const alphabet = 'ab-';
      const needle = Array.from({ length: 1 + Math.floor(rand() * 6) }, () => alphabet[Math.floor(rand() * 3)]).join('');
      const hay = Array.from({ length: Math.floor(rand() * 80) }, () => alphabet[Math.floor(rand() * 3)]).join('');
      const bytes = new TextEncoder().encode(hay);
      let out = '';
      const search = new StreamSearch(new TextEncoder().encode(needle));
      for (let at = 0; at < bytes.length;) {
        const n = 1 + Math.floor(rand() * 10);
        search.write(
          bytes.subarray(at, at + n),
          (b) => (out += dec.decode(b)),
          () => (out += '|'),
        );
        at += n;
      }
      search.end((b) => (out += dec.decode(b)));
      expect(out, `${needle} in ${hay}`).toBe(naive(hay, needle));
    }
  });

  it('a 4,000-dash boundary over a body of dashes: the retry with a new boundary is recognized', async () => {
    const config = await seedConfig();
    const send = (boundary: string) => {
      const part = (name: string, filename: string, bytes: Uint8Array) => [
        new TextEncoder().encode(
          `--${boundary}\r\ncontent-disposition: form-data; name="${name}"; filename="${filename}"\r\ncontent-type: application/octet-stream\r\n\r\n`,
        ),
        bytes,
        new TextEncoder().encode('\r\n'),
      ];
      const body = new Blob([
        ...part('elf', 'hello.elf', guest('hello.elf')),
        ...part('vmexe', 'v', new TextEncoder().encode('-'.repeat(200_000))),
        new TextEncoder().encode(`--${boundary}--\r\n`),
      ]);
      return api(tenant, `/v1/programs?config_id=${config}`, {
        method: 'POST',
        body,
        headers: { 'content-type': `multipart/form-data; boundary=${boundary}`, 'Idempotency-Key': 'dashes' },
      });
    };
    // Every dash of the body starts a 4,000-byte partial match of the boundary: a naive search rescans each.
    const first = await json<{ id: string }>(await send('-'.repeat(4000) + 'Z'), 201);
    const retry = await send('-'.repeat(4000) + 'Y');
    expect(retry.headers.get('Idempotent-Replayed')).toBe('true');
    expect(await json<{ id: string }>(retry, 201)).toEqual(first);
  });
});

/** A STARK proof JSON whose `proof` has `digits` hex digits. */
const longHexProof = (digits: number) =>
  `{"version":"v2.0","proof":"${'ab'.repeat(digits >> 1)}${digits % 2 ? 'a' : ''}","user_pvs_proof":"00","deferral_merkle_proofs":null}`;
const fileForm = (field: string, text: string | Uint8Array, extra: Record<string, string> = {}) => {
  const form = new FormData();
  for (const [k, v] of Object.entries(extra)) form.append(k, v);
  form.append(field, new File([text], 'proof.bin', { type: 'application/octet-stream' }));
  return form;
};

describe('hex is checked in linear time (no regex stack overflow)', () => {
  const DIGITS = 8_400_000;
  it('POST /v1/verify/stark: 8.4 M hex digits are a proof (200), and one more digit is a 422, never a 500', async () => {
    await json(
      await api(tenant, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body: fileForm('proof', longHexProof(DIGITS)) }),
      200,
    );
    const odd = await json<{ detail: { msg: string }[] }>(
      await api(tenant, `/v1/verify/stark?program_id=${program}`, { method: 'POST', body: fileForm('proof', longHexProof(DIGITS + 1)) }),
      422,
    );
    expect(odd.detail[0].msg).toMatch(/"proof" is not hex/);
  });

  it('POST /v1/verify: the same', async () => {
    await json(
      await api(tenant, `/v1/verify?program_id=${program}`, { method: 'POST', body: fileForm('proof', longHexProof(DIGITS)) }),
      200,
    );
    await json(
      await api(tenant, `/v1/verify?program_id=${program}`, { method: 'POST', body: fileForm('proof', longHexProof(DIGITS + 1)) }),
      422,
    );
  });

  it('POST /v1/proofs: a JSON child proof of 8.4 M digits is stored as sent; one more digit is a 422', async () => {
    const input = JSON.stringify({ input: ['0x0101'] });
    const { id } = await json<{ id: string }>(
      await api(tenant, `/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body: fileForm('child_proofs', longHexProof(DIGITS), { input }),
      }),
      200,
    );
    const stored = await env.ARTIFACTS.get(artifactKey.proofChild(id, 0));
    expect(await stored!.text()).toBe(longHexProof(DIGITS));
    const bad = await json<{ detail: { loc: unknown[] }[] }>(
      await api(tenant, `/v1/proofs?program_id=${program}`, {
        method: 'POST',
        body: fileForm('child_proofs', longHexProof(DIGITS + 1), { input }),
      }),
      422,
    );
    expect(bad.detail[0].loc).toEqual(['body', 'child_proofs', 0]);
  });
});

describe('a cap-sized binary child proof', () => {
  it('is decoded and stored as its JSON form, hex streamed to storage (16 MiB in, 32 MB of hex out)', async () => {
    const version = new TextEncoder().encode('v2.0');
    const proofLength = MAX_CHILD_PROOF_BYTES - 4 - version.length - 4 - 4 - 2 - 1 - 4 - 3;
    const codec = new Uint8Array(MAX_CHILD_PROOF_BYTES);
    const view = new DataView(codec.buffer);
    let at = 0;
    const field = (bytes: Uint8Array | number) => {
      const n = typeof bytes === 'number' ? bytes : bytes.length;
      view.setUint32(at, n, true);
      at += 4;
      if (typeof bytes === 'number') for (let i = 0; i < n; i++) codec[at + i] = i & 0xff;
      else codec.set(bytes, at);
      at += n;
    };
    field(version);
    field(proofLength);
    field(new Uint8Array([0x12, 0x34]));
    codec[at++] = 1;
    field(new Uint8Array([0xab, 0xcd, 0xef]));
    expect(at).toBe(MAX_CHILD_PROOF_BYTES);

    const input = JSON.stringify({ input: ['0x0101'] });
    const { id } = await json<{ id: string }>(
      await api(tenant, `/v1/proofs?program_id=${program}`, { method: 'POST', body: fileForm('child_proofs', codec, { input }) }),
      200,
    );
    const stored = await env.ARTIFACTS.get(artifactKey.proofChild(id, 0));
    // What JSON.stringify of the decoded fields gives, built here from the byte pattern.
    const cycle = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0')).join('');
    const hex = cycle.repeat(proofLength >> 8) + cycle.slice(0, (proofLength & 0xff) * 2);
    const expected = `{"version":"v2.0","proof":"0x${hex}","user_pvs_proof":"0x1234","deferral_merkle_proofs":"0xabcdef"}`;
    expect(stored!.size).toBe(expected.length);
    const digest = async (bytes: ArrayBuffer | Uint8Array) => new Uint8Array(await crypto.subtle.digest('SHA-256', bytes));
    expect(await digest(await stored!.arrayBuffer())).toEqual(await digest(new TextEncoder().encode(expected)));
  });

  it('a malformed one is a 422 naming it, and nothing is stored', async () => {
    const before = await countRows('proofs');
    const input = JSON.stringify({ input: ['0x0101'] });
    const res = await api(tenant, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: fileForm('child_proofs', new Uint8Array([4, 0, 0, 0, 0x76, 0x32, 0x2e, 0x30, 9, 9]), { input }),
    });
    expect((await json<{ detail: { loc: unknown[]; msg: string }[] }>(res, 422)).detail[0].msg).toMatch(/binary codec/);
    expect(await countRows('proofs')).toBe(before);
  });
});

describe('strict edges', () => {
  it('webhook hosts ending in dots are judged without them (..: refused)', async () => {
    for (const url of ['https://127.0.0.1.../x', 'https://LOCALHOST../', 'https://0x7f.1../'])
      expect(webhookUrlProblem(url, { allowLoopback: false }), url).toMatch(/loopback/);
    // (The test Worker allows loopback hosts, as local development does: the API is tried on the others.)
    for (const url of [
      'https://10.0.0.1../',
      'https://169.254.169.254../',
      'https://10.0.0.1.',
      'https://a..example.com/',
      'https://0xa.1../',
    ]) {
      expect(webhookUrlProblem(url, { allowLoopback: false }), url).not.toBeNull();
      const res = await api(tenant, '/v1/webhooks', {
        method: 'POST',
        body: JSON.stringify({ url, events: ['proof.succeeded'] }),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status, url).toBe(422);
    }
    expect(webhookUrlProblem('https://hooks.example.org./in', { allowLoopback: false })).toBeNull();
    expect(webhookUrlProblem('https://BÜCHER.de./in', { allowLoopback: false })).toBeNull();
  });

  it('a malformed percent escape in a path is a 400, not a 500', async () => {
    const t = await seedTenant();
    const session = await signIn(await seedUser(t.orgId, 'owner'));
    const body = await as<{ detail: string }>(session, '/console/v1/orgs/%E0%A4%A/members', 400);
    expect(body.detail).toMatch(/percent-encoding/);
    expect((await api(tenant, '/v1/proofs/%E0%A4%A')).status).toBeLessThan(500);
  });

  it('an unsatisfiable Range on a signed download is 416 with Content-Range: bytes */size', async () => {
    const cfg = await seedConfig();
    await json(
      await publishKey(
        await seedPublisher([cfg]),
        cfg,
        'agg_pk',
        new Uint8Array(1000).map((_, i) => i % 251),
      ),
      200,
    );
    const { download_url } = await json<{ download_url: string }>(await api(tenant, `/v1/configs/${cfg}/pk/agg`), 200);
    for (const range of ['bytes=999999-', 'bytes=1000-', 'bytes=1000-2000', 'bytes=-0']) {
      const res = await exports.default.fetch(new Request(download_url, { headers: { range } }));
      expect(res.status, range).toBe(416);
      expect(res.headers.get('content-range'), range).toBe('bytes */1000');
      await res.body?.cancel();
    }
    const last = await exports.default.fetch(new Request(download_url, { headers: { range: 'bytes=999-5000' } }));
    expect(last.status).toBe(206);
    expect(last.headers.get('content-range')).toBe('bytes 999-999/1000');
    expect(new Uint8Array(await last.arrayBuffer())).toEqual(new Uint8Array([999 % 251]));
    // A Range that is not one byte range is ignored: the whole file.
    const odd = await exports.default.fetch(new Request(download_url, { headers: { range: 'bytes=5-1' } }));
    expect(odd.status).toBe(200);
    expect((await odd.arrayBuffer()).byteLength).toBe(1000);
  });

  it('a program named after its ELF file: at most 256 characters, no control characters', async () => {
    const config = await seedConfig();
    const boundary = 'b0undary';
    const enc = new TextEncoder();
    const register = async (disposition: string) => {
      const body = new Blob([
        enc.encode(`--${boundary}\r\ncontent-disposition: form-data; name="elf"; ${disposition}\r\n\r\n`),
        guest('hello.elf'),
        enc.encode(`\r\n--${boundary}\r\ncontent-disposition: form-data; name="vmexe"; filename="v"\r\n\r\n`),
        VMEXE,
        enc.encode(`\r\n--${boundary}--\r\n`),
      ]);
      const { id } = await json<{ id: string }>(
        await api(tenant, `/v1/programs?config_id=${config}`, {
          method: 'POST',
          body,
          headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
        }),
        201,
      );
      return (await json<{ name: string }>(await api(tenant, `/v1/programs/${id}`), 200)).name;
    };
    const long = await register(`filename="${'n'.repeat(12_000)}"`);
    expect(long).toBe('n'.repeat(MAX_FILENAME_LENGTH));
    const controls = await register(`filename*=UTF-8''evil%0D%0AX-Injected%3A%201%00%7F%C2%85%1B.elf`);
    expect(controls).toBe('evilX-Injected: 1');
  });
});
