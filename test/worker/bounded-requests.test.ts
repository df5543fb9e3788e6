// Issue 21 (per request): a request is authenticated before its body costs anything,
// every computation over a body is linear and bounded, and the edges are strict
// (hostnames, percent escapes, ranges, filenames). Each finding, retried as found.
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { app } from '../../src/app.ts';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { api, BASE, json, markReady, registerProgram, seedConfig, seedTenant, type Tenant } from './helpers.ts';

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
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      seen.pulled = true;
      controller.enqueue(bytes);
      controller.close();
    },
  }, { highWaterMark: 0 }); // nothing is pulled until a reader asks
  return { stream, seen };
}

const MADE_UP_KEY = 'sk_made_up_' + 'x'.repeat(40);

/**
 * The app called in this isolate, so the body stream is the test's own (through the
 * Worker's loopback, workerd pumps a request body whether or not it is read).
 */
async function inIsolate(path: string, init: RequestInit & { headers: Record<string, string> }): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await app.fetch(new Request(BASE + path, { ...init, headers: { 'Service-API-Key': MADE_UP_KEY, ...init.headers } }), env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

describe('a request is refused before its body is read', () => {
  const json64k = new TextEncoder().encode(JSON.stringify({ name: 'x'.repeat(64 * 1024 - 20) }));
  const dashes = '-'.repeat(4000);
  const multipart = new TextEncoder().encode(`--${dashes}\r\ncontent-disposition: form-data; name="elf"; filename="a.elf"\r\n\r\n${'-'.repeat(60_000)}\r\n--${dashes}--\r\n`);
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
        const res = await inIsolate(path, { method, body: stream, headers, duplex: 'half' } as RequestInit & { headers: Record<string, string> });
        expect((await json<{ detail: string }>(res, 401)).detail).toBe('Invalid or revoked API key');
        expect(seen.pulled).toBe(false);
      });

  it('a live key still gets its body read (and a dead one is refused even when the route reads first)', async () => {
    const res = await api(tenant, '/v1/projects', { method: 'POST', body: JSON.stringify({ name: 'after the gate' }), headers: { 'content-type': 'application/json' } });
    expect((await json<{ id: string }>(res, 201)).id).toMatch(/-/);
  });
});
