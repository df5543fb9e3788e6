import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { backoffDelay, fetchJson, fetchWithRetry, HttpError } from '../../prover-agent/src/agent/http.ts';
import { decodeNotice } from '../../prover-agent/src/agent/queue-client.ts';

let close: (() => void) | null = null;
afterEach(() => close?.());

/** A local server answering from a script of (status, headers) pairs, then 200. */
async function serve(script: [number, Record<string, string>?][]) {
  let calls = 0;
  const server = createServer((_req: IncomingMessage, res: ServerResponse) => {
    const [status, headers] = script[calls++] ?? [200];
    res.writeHead(status, headers).end(status === 200 ? '{"ok":true}' : 'nope');
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  close = () => server.close();
  return { url: `http://127.0.0.1:${(server.address() as { port: number }).port}/`, calls: () => calls };
}

// Quick retries; a request's own timeout only for a stuck server (a loaded host may take seconds to answer).
const fast = { attempts: 5, baseDelayMs: 1, maxDelayMs: 5, timeoutMs: 30_000 };

describe('fetchWithRetry', () => {
  it('retries 5xx and 429 with backoff, then succeeds', async () => {
    const s = await serve([[503], [429], [502]]);
    const retries: string[] = [];
    const res = await fetchWithRetry(s.url, () => ({}), 'test', { ...fast, onRetry: (r) => retries.push(r.reason) });
    expect(await res.json()).toEqual({ ok: true });
    expect(retries).toEqual(['HTTP 503', 'HTTP 429', 'HTTP 502']);
    expect(s.calls()).toBe(4);
  });

  it('finishInFlight: an abort stops the retries but lets the request already sent finish', async () => {
    let respond: () => void = () => {};
    let arrived: () => void = () => {};
    const server = createServer((_req, res) => {
      respond = () => res.writeHead(200).end('{"leased":true}');
      arrived();
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    close = () => server.close();
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/`;
    for (const finishInFlight of [true, false]) {
      const stop = new AbortController();
      const atServer = new Promise<void>((r) => (arrived = r));
      const pending = fetchWithRetry(url, () => ({}), 'claim', { ...fast, signal: stop.signal, finishInFlight }).then(
        (r) => r.json(),
        (e: Error) => e,
      );
      await atServer; // the request is at the server
      stop.abort(new Error('shutting down'));
      respond();
      const got = await pending;
      if (finishInFlight) expect(got).toEqual({ leased: true });
      else expect(got).toBeInstanceOf(Error);
    }
  });

  it('treats other 4xx as final', async () => {
    const s = await serve([[409]]);
    const err = await fetchWithRetry(s.url, () => ({}), 'test', fast).catch((e) => e);
    expect(err).toBeInstanceOf(HttpError);
    expect(err.status).toBe(409);
    expect(s.calls()).toBe(1);
  });

  it('retries network errors and gives up after the attempt budget', async () => {
    const s = await serve([]);
    close!();
    await new Promise((r) => setTimeout(r, 50));
    await expect(fetchWithRetry(s.url, () => ({}), 'test', { ...fast, attempts: 3 })).rejects.toThrow(/gave up after 3 attempts/);
  });

  it('honours Retry-After', async () => {
    const s = await serve([[503, { 'retry-after': '1' }]]);
    const delays: number[] = [];
    await fetchWithRetry(s.url, () => ({}), 'test', { ...fast, onRetry: (r) => delays.push(r.delayMs) });
    expect(delays).toEqual([1000]);
  });

  it('stops retrying when its signal aborts', async () => {
    const s = await serve(Array.from({ length: 50 }, () => [503] as [number]));
    const abort = new AbortController();
    // Aborted while it backs off after its third 503 (not after some milliseconds, which a loaded host may spend on one request).
    const onRetry = () => void (s.calls() === 3 && abort.abort(new Error('shutting down')));
    await expect(fetchWithRetry(s.url, () => ({}), 'test', { ...fast, attempts: Infinity, signal: abort.signal, onRetry })).rejects.toThrow(
      /shutting down/,
    );
    expect(s.calls()).toBe(3);
  });
});

describe('a request whose HTTP client loses its signal', () => {
  // Node's fetch follows a request's signal through weak references and can lose it to a
  // garbage collection (nodejs/node#55428): stood in for by a fetch that never settles and ignores its signal.
  afterEach(() => vi.unstubAllGlobals());
  const deaf = () => vi.stubGlobal('fetch', () => new Promise<never>(() => {}));

  it('still ends at its time limit, and still stops when told', async () => {
    deaf();
    const limited = fetchWithRetry('http://127.0.0.1:9/', () => ({}), 'claim', { ...fast, attempts: 2, timeoutMs: 20 });
    await expect(limited).rejects.toThrow(/claim: gave up after 2 attempts \(TimeoutError: no answer within 20 ms\)/);
    const stop = new AbortController();
    const stopped = fetchWithRetry('http://127.0.0.1:9/', () => ({}), 'pull', { ...fast, signal: stop.signal });
    stop.abort(new Error('shutting down'));
    await expect(stopped).rejects.toThrow(/shutting down/);
    // A request let finish in flight is still bounded by its time limit.
    const claim = fetchWithRetry('http://127.0.0.1:9/', () => ({}), 'claim', {
      ...fast,
      attempts: Infinity,
      timeoutMs: 20,
      signal: stop.signal,
      finishInFlight: true,
    });
    await expect(claim).rejects.toThrow(/shutting down/);
  });

  it('a JSON answer whose body stalls ends at the time limit too', async () => {
    // Headers came; the body never ends, and nothing aborts its read but the time limit.
    const stalled = () => new Response(new ReadableStream({ pull: () => new Promise<void>(() => {}) }), { status: 200 });
    vi.stubGlobal('fetch', async () => stalled());
    const answer = fetchJson('http://127.0.0.1:9/', () => ({}), 'presence', { ...fast, attempts: 2, timeoutMs: 20 });
    await expect(answer).rejects.toThrow(/presence: gave up after 2 attempts \(TimeoutError: no answer within 20 ms\)/);
  });
});

describe('backoff', () => {
  it('is full jitter under an exponential cap', () => {
    const p = { baseDelayMs: 250, maxDelayMs: 15_000 };
    expect(backoffDelay(0, p, () => 1)).toBe(250);
    expect(backoffDelay(3, p, () => 1)).toBe(2000);
    expect(backoffDelay(20, p, () => 1)).toBe(15_000);
    expect(backoffDelay(5, p, () => 0)).toBe(0);
    expect(backoffDelay(5, p, () => 0.5)).toBe(4000);
  });
});

describe('queue notices', () => {
  it('decode base64 json bodies and plain text bodies; garbage decodes to nothing', () => {
    const body = Buffer.from(JSON.stringify({ job_id: 'j', kind: 'proof' })).toString('base64');
    const base = { id: 'm', attempts: 1, lease_id: 'l', timestamp_ms: 0 };
    expect(decodeNotice({ ...base, body, metadata: { 'CF-Content-Type': 'json' } })).toEqual({ job_id: 'j', kind: 'proof' });
    expect(decodeNotice({ ...base, body: '{"job_id":"t"}', metadata: { 'CF-Content-Type': 'text' } })).toEqual({ job_id: 't' });
    expect(decodeNotice({ ...base, body: '%%%' })).toEqual({});
  });
});
