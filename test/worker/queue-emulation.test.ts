import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import worker from '../../src/index.ts';
import { app } from '../../src/app.ts';
import type { JobNotice } from '../../src/env.ts';
import { beforeEach, describe, expect, it } from 'vitest';
import { api, json } from './helpers.ts';
import { seedAgent } from './fleet-helpers.ts';

const QUEUE = '/client/v4/accounts/acct/queues/zk-proving-jobs-local/messages';

beforeEach(async () => {
  await env.DB.prepare('DELETE FROM emulated_queue_messages').run();
});

async function deliver(...bodies: unknown[]) {
  const batch = createMessageBatch(
    'zk-proving-jobs-local',
    bodies.map((body, i) => ({ id: `msg-${crypto.randomUUID()}-${i}`, timestamp: new Date(Date.now() + i), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch as MessageBatch<JobNotice>, env);
  const result = await getQueueResult(batch, ctx);
  expect(result.ackAll).toBe(true);
  return result;
}

async function call(token: string, action: 'pull' | 'ack', body: unknown) {
  return api(null, `${QUEUE}/${action}`, { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } });
}

const decode = (b64: string) => JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))));

describe('Queues HTTP pull API emulation', () => {
  it('keeps delivered notices and serves them in the real API’s shape', async () => {
    const { token } = await seedAgent();
    await deliver({ job_id: 'j1', kind: 'proof' }, { job_id: 'j2', kind: 'commit' });
    const res = await json(await call(token, 'pull', { batch_size: 10, visibility_timeout_ms: 30_000 }), 200);
    expect(res).toMatchObject({ success: true, errors: [], messages: [] });
    expect(res.result.messages).toHaveLength(2);
    const [m] = res.result.messages;
    expect(m).toEqual({
      body: expect.any(String),
      id: expect.any(String),
      timestamp_ms: expect.any(Number),
      attempts: 1,
      lease_id: expect.any(String),
      metadata: { 'CF-sourceMessageSource': expect.any(String), 'CF-Content-Type': 'json' },
    });
    expect(decode(m.body)).toEqual({ job_id: 'j1', kind: 'proof' });
    // Leased messages are invisible to other pullers.
    expect((await json(await call(token, 'pull', {}), 200)).result.messages).toEqual([]);
    const ack = await json(await call(token, 'ack', { acks: res.result.messages.map((x: any) => ({ lease_id: x.lease_id })), retries: [] }), 200);
    expect(ack).toMatchObject({ success: true, result: { ackCount: 2, retryCount: 0 } });
    expect(await env.DB.prepare('SELECT count(*) AS n FROM emulated_queue_messages').first('n')).toBe(0);
  });

  it('redelivers after the visibility timeout with attempts counted, and retries with a delay', async () => {
    const { token } = await seedAgent();
    await deliver({ job_id: 'j3', kind: 'proof' });
    const first = (await json(await call(token, 'pull', { batch_size: 1, visibility_timeout_ms: 0 }), 200)).result.messages[0];
    const second = (await json(await call(token, 'pull', { batch_size: 1 }), 200)).result.messages[0];
    expect(second.id).toBe(first.id);
    expect(second.attempts).toBe(2);
    expect(second.lease_id).not.toBe(first.lease_id);
    const retried = await json(await call(token, 'ack', { acks: [], retries: [{ lease_id: second.lease_id, delay_seconds: 600 }] }), 200);
    expect(retried.result.retryCount).toBe(1);
    expect((await json(await call(token, 'pull', {}), 200)).result.messages).toEqual([]); // delayed
    await env.DB.prepare('UPDATE emulated_queue_messages SET visible_at = 0').run();
    expect((await json(await call(token, 'pull', {}), 200)).result.messages[0].attempts).toBe(3);
  });

  it('dead-letters a message after max_retries deliveries', async () => {
    const { token } = await seedAgent();
    await deliver({ job_id: 'j4', kind: 'proof' });
    for (let i = 1; i <= 3; i++) {
      const m = (await json(await call(token, 'pull', { visibility_timeout_ms: 0 }), 200)).result.messages;
      expect(m[0].attempts).toBe(i);
    }
    expect((await json(await call(token, 'pull', {}), 200)).result.messages).toEqual([]);
    expect(await env.DB.prepare('SELECT dead_lettered_at FROM emulated_queue_messages').first('dead_lettered_at')).toEqual(expect.any(Number));
  });

  it('acks a full batch of 100 in one call', async () => {
    const { token } = await seedAgent();
    for (let i = 0; i < 5; i++) await deliver(...Array.from({ length: 20 }, (_, j) => ({ job_id: `bulk-${i}-${j}`, kind: 'proof' })));
    const msgs = (await json(await call(token, 'pull', { batch_size: 100 }), 200)).result.messages;
    expect(msgs).toHaveLength(100);
    const ack = await json(await call(token, 'ack', { acks: msgs.map((m: any) => ({ lease_id: m.lease_id })) }), 200);
    expect(ack.result.ackCount).toBe(100);
  });

  it('validates batch_size and authenticates like the real API', async () => {
    const { token } = await seedAgent();
    const bad = await json(await call(token, 'pull', { batch_size: 101 }), 400);
    expect(bad).toMatchObject({ success: false, errors: [{ code: expect.any(Number), message: expect.stringMatching(/batch_size/) }] });
    expect((await call('nope', 'pull', {})).status).toBe(401);
  });

  it('does not exist where DEV_QUEUE_EMULATION is unset (deployed environments)', async () => {
    const { token } = await seedAgent();
    const res = await app.request(`https://api.test${QUEUE}/pull`, { method: 'POST', body: '{}', headers: { authorization: `Bearer ${token}` } }, { ...env, DEV_QUEUE_EMULATION: undefined });
    expect(res.status).toBe(404);
  });

  it('is fed by the real local queue', async () => {
    const { token } = await seedAgent();
    await env.JOBS.send({ job_id: 'from-the-queue', kind: 'proof' }, { contentType: 'json' });
    let found = false;
    for (let i = 0; i < 50 && !found; i++) {
      const msgs = (await json(await call(token, 'pull', { batch_size: 100, visibility_timeout_ms: 0 }), 200)).result.messages;
      found = msgs.some((m: any) => decode(m.body).job_id === 'from-the-queue');
      if (!found) await new Promise((r) => setTimeout(r, 100));
    }
    expect(found).toBe(true);
  });
});
