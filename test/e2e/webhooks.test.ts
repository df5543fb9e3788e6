// Webhooks end to end: a Worker under wrangler dev, a real prover-agent, and a real HTTP
// receiver on loopback (node:http). A proof submitted through the API reaches the
// receiver as a signed proof.succeeded; a receiver that fails first gets the retry
// under the same webhook-id; and a Worker restarted while deliveries are pending (its
// queued messages gone with it) loses none of them: the sweep sends them again.
import { createHmac } from 'node:crypto';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { caller, registerGuest, startStack, type Stack } from './stack.ts';

interface Hit {
  path: string;
  headers: Record<string, string>;
  body: string;
  status: number;
}

/** A receiver: answers each request with what `answer` says for its path, and keeps every request. */
async function startReceiver() {
  const hits: Hit[] = [];
  let answer: (path: string, n: number) => number = () => 200;
  const server: Server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      const path = req.url ?? '/';
      const status = answer(path, hits.filter((h) => h.path === path).length + 1);
      hits.push({ path, headers: req.headers as Record<string, string>, body, status });
      res.writeHead(status, { 'content-type': 'text/plain' }).end(status < 300 ? 'ok' : 'not now');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: (path: string) => `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    hits,
    on: (fn: typeof answer) => void (answer = fn),
    close: () => new Promise((r) => server.close(r)),
  };
}

let stack: Stack;
let api: ReturnType<typeof caller>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let program: string;

beforeAll(async () => {
  // The sweep re-sends a delivery overdue by a second (default 60 s), so the restart test need not wait a minute.
  stack = await startStack({ vars: { WEBHOOK_REQUEUE_AFTER_SECONDS: '1' } });
  api = caller(stack);
  receiver = await startReceiver();
  await stack.startAgent({ name: 'webhooks-agent' });
  program = await registerGuest(api, stack.devConfig, 'hello.elf');
});
afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
});

const until = async <T>(what: string, f: () => T | undefined | Promise<T | undefined>, timeoutMs = 60_000): Promise<T> => {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await f();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
};

const prove = async () => (await api.json<{ id: string }>('POST', `/v1/proofs?program_id=${program}`, { input: ['0x0168656c6c6f'] })).id;
const hitsAt = (path: string) => receiver.hits.filter((h) => h.path === path);
const bodyOf = (h: Hit) => JSON.parse(h.body) as { type: string; timestamp: string; data: { id: string } & Record<string, unknown> };

/** The signature as the Standard Webhooks spec defines it, with node:crypto. */
const spec = (secret: string, h: Hit) =>
  `v1,${createHmac('sha256', Buffer.from(secret.slice('whsec_'.length), 'base64'))
    .update(`${h.headers['webhook-id']}.${h.headers['webhook-timestamp']}.${h.body}`)
    .digest('base64')}`;

describe('webhooks end to end', () => {
  it('a proof submitted through the API reaches the receiver as a signed proof.succeeded with its record', async () => {
    const endpoint = await api.json('POST', '/v1/webhooks', { url: receiver.url('/ok'), events: ['proof.succeeded'] });
    const proof = await prove();
    const hit = await until('proof.succeeded', () => hitsAt('/ok').find((h) => bodyOf(h).data.id === proof));
    expect(new Webhook(endpoint.secret).verify(hit.body, hit.headers)).toMatchObject({
      type: 'proof.succeeded',
      data: { id: proof, state: 'Succeeded' },
    });
    expect(hit.headers['webhook-signature']).toBe(spec(endpoint.secret, hit));
    expect(bodyOf(hit).data).toEqual(await api.json('GET', `/v1/proofs/${proof}`));
    // Only what it subscribed to: the program's readiness came before it existed, and nothing else was sent.
    expect(hitsAt('/ok').map((h) => bodyOf(h).type)).toEqual(['proof.succeeded']);
    const deliveries = await until('the attempt recorded', async () => {
      const page = await api.json('GET', `/v1/webhooks/${endpoint.id}/deliveries`);
      return page.items[0]?.status === 'delivered' ? page : undefined;
    });
    expect(deliveries.items[0]).toMatchObject({
      id: hit.headers['webhook-id'],
      type: 'proof.succeeded',
      subject_id: proof,
      attempts: [{ attempt: 1, status_code: 200, error: null, response_excerpt: 'ok' }],
    });
  });

  it('a receiver that fails first gets the retry, with the same webhook-id and the same body', async () => {
    receiver.on((path, n) => (path === '/flaky' && n === 1 ? 500 : 200));
    const endpoint = await api.json('POST', '/v1/webhooks', { url: receiver.url('/flaky'), events: ['proof.succeeded'] });
    const proof = await prove();
    await until('the retry', () => hitsAt('/flaky').length >= 2, 90_000);
    const [first, retry] = hitsAt('/flaky');
    expect([first.status, retry.status]).toEqual([500, 200]);
    expect(retry.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(retry.body).toBe(first.body);
    expect(bodyOf(retry).data.id).toBe(proof);
    for (const h of [first, retry]) expect(new Webhook(endpoint.secret).verify(h.body, h.headers)).toBeTruthy();
    const page = await until('both attempts recorded', async () => {
      const p = await api.json('GET', `/v1/webhooks/${endpoint.id}/deliveries`);
      return p.items[0]?.status === 'delivered' ? p : undefined;
    });
    expect(page.items[0].attempts.map((a: { status_code: number }) => a.status_code)).toEqual([500, 200]);
  });

  it('a Worker restarted while deliveries are pending loses none of them: the sweep sends them again', async () => {
    let down = true;
    receiver.on((path) => (path === '/down' && down ? 503 : 200));
    const endpoint = await api.json('POST', '/v1/webhooks', { url: receiver.url('/down'), events: ['proof.succeeded'] });
    const proofs = [await prove(), await prove()];
    // Both events committed and tried once; their retries now wait as delayed messages in the Worker's queue...
    await until('a first attempt of each', () => proofs.every((p) => hitsAt('/down').some((h) => bodyOf(h).data.id === p)), 90_000);
    const ids = new Map(proofs.map((p) => [p, hitsAt('/down').find((h) => bodyOf(h).data.id === p)!.headers['webhook-id']]));
    // ...which the restart throws away (local queues are not persisted; D1 is).
    const logsBefore = stack.workerLogs().length;
    await stack.restartWorker();
    down = false;
    // The cron sweep (fired here, once a second: wrangler dev runs no cron) finds them
    // overdue and sends them again.
    let swept = 0;
    for (const proof of proofs) {
      const delivered = await until(
        `${proof}'s event after the restart`,
        async () => {
          const hit = hitsAt('/down').find((h) => h.status === 200 && bodyOf(h).data.id === proof);
          if (!hit && Date.now() - swept > 1000) {
            swept = Date.now();
            await stack.sweep();
          }
          return hit;
        },
        90_000,
      );
      expect(delivered.headers['webhook-id']).toBe(ids.get(proof));
      expect(new Webhook(endpoint.secret).verify(delivered.body, delivered.headers)).toMatchObject({
        type: 'proof.succeeded',
        data: { id: proof },
      });
    }
    // It was the sweep that sent them: its log says so (it may also have re-sent another
    // endpoint's delivery whose message the restart caught in flight).
    const requeued = () =>
      stack
        .workerLogs()
        .slice(logsBefore)
        .filter((l) => l.includes('"msg":"sweep"'))
        .reduce((n, l) => n + (JSON.parse(l.slice(l.indexOf('{'))) as { webhooksRequeued: number }).webhooksRequeued, 0);
    expect(await until('the sweep’s log line', () => requeued() >= proofs.length && requeued(), 10_000)).toBeGreaterThanOrEqual(
      proofs.length,
    );
    const rows = await stack.sql(
      `SELECT subject_id, status FROM webhook_deliveries WHERE endpoint_id = '${endpoint.id}' ORDER BY subject_id`,
    );
    expect(rows).toEqual(proofs.sort().map((p) => ({ subject_id: p, status: 'delivered' })));
  });
});
