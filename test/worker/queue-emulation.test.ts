// The agents' queue gateway (/internal/v1/queue): queue tokens from presence reports,
// the local emulation of Cloudflare Queues' pull consumer behind it, and the real API
// it calls when deployed.
import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import worker from '../../src/index.ts';
import { app } from '../../src/app.ts';
import type { JobNotice } from '../../src/env.ts';
import { issueQueueToken, QUEUE_TOKEN_TTL_MS } from '../../src/features/fleet/queue-token.ts';
import { revokeAgentToken } from '../../src/admin/statements.ts';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { api, eventually, json, runAdmin } from './helpers.ts';
import { presence, seedAgent } from './fleet-helpers.ts';

beforeEach(async () => {
  await env.DB.prepare('DELETE FROM emulated_queue_messages').run();
});
afterEach(() => vi.restoreAllMocks());

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

/** An online agent's queue token. */
async function queueToken(): Promise<string> {
  return (await presence(await seedAgent())).queue_token;
}

async function call(token: string, action: 'pull' | 'ack', body: unknown) {
  return api(null, `/internal/v1/queue/${action}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  });
}

const decode = (b64: string) => JSON.parse(new TextDecoder().decode(Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))));

describe('the agents’ queue gateway', () => {
  it('serves delivered notices in the Queues API’s message shape, leased until acked', async () => {
    const token = await queueToken();
    await deliver({ job_id: 'j1', kind: 'proof' }, { job_id: 'j2', kind: 'commit' });
    const res = await json(await call(token, 'pull', { batch_size: 10, visibility_timeout_ms: 30_000 }), 200);
    expect(res.messages).toHaveLength(2);
    const [m] = res.messages;
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
    expect((await json(await call(token, 'pull', {}), 200)).messages).toEqual([]);
    const ack = await json(await call(token, 'ack', { acks: res.messages.map((x: any) => ({ lease_id: x.lease_id })), retries: [] }), 200);
    expect(ack).toEqual({ ack_count: 2, retry_count: 0 });
    expect(await env.DB.prepare('SELECT count(*) AS n FROM emulated_queue_messages').first('n')).toBe(0);
  });

  it('redelivers after the visibility timeout with attempts counted, and retries with a delay', async () => {
    const token = await queueToken();
    await deliver({ job_id: 'j3', kind: 'proof' });
    const first = (await json(await call(token, 'pull', { batch_size: 1, visibility_timeout_ms: 0 }), 200)).messages[0];
    const second = (await json(await call(token, 'pull', { batch_size: 1 }), 200)).messages[0];
    expect(second.id).toBe(first.id);
    expect(second.attempts).toBe(2);
    expect(second.lease_id).not.toBe(first.lease_id);
    const retried = await json(await call(token, 'ack', { acks: [], retries: [{ lease_id: second.lease_id, delay_seconds: 600 }] }), 200);
    expect(retried.retry_count).toBe(1);
    expect((await json(await call(token, 'pull', {}), 200)).messages).toEqual([]); // delayed
    await env.DB.prepare('UPDATE emulated_queue_messages SET visible_at = 0').run();
    expect((await json(await call(token, 'pull', {}), 200)).messages[0].attempts).toBe(3);
  });

  it('dead-letters a message after max_retries deliveries', async () => {
    const token = await queueToken();
    await deliver({ job_id: 'j4', kind: 'proof' });
    for (let i = 1; i <= 3; i++) {
      const m = (await json(await call(token, 'pull', { visibility_timeout_ms: 0 }), 200)).messages;
      expect(m[0].attempts).toBe(i);
    }
    expect((await json(await call(token, 'pull', {}), 200)).messages).toEqual([]);
    expect(await env.DB.prepare('SELECT dead_lettered_at FROM emulated_queue_messages').first('dead_lettered_at')).toEqual(
      expect.any(Number),
    );
  });

  it('acks a full batch of 100 in one call', async () => {
    const token = await queueToken();
    for (let i = 0; i < 5; i++) await deliver(...Array.from({ length: 20 }, (_, j) => ({ job_id: `bulk-${i}-${j}`, kind: 'proof' })));
    const msgs = (await json(await call(token, 'pull', { batch_size: 100 }), 200)).messages;
    expect(msgs).toHaveLength(100);
    const ack = await json(await call(token, 'ack', { acks: msgs.map((m: any) => ({ lease_id: m.lease_id })) }), 200);
    expect(ack.ack_count).toBe(100);
  });

  it('checks batch_size and visibility bounds', async () => {
    const token = await queueToken();
    const bad = await json(await call(token, 'pull', { batch_size: 101 }), 422);
    expect(bad.detail[0]).toMatchObject({ loc: ['body', 'batch_size'] });
    expect((await call(token, 'pull', { visibility_timeout_ms: -1 })).status).toBe(422);
  });

  it('takes only queue tokens: not agent tokens, not forged, expired or another service’s', async () => {
    const agent = await seedAgent();
    expect((await call(agent.token, 'pull', {})).status).toBe(401);
    expect((await call('nope', 'pull', {})).status).toBe(401);
    const expired = await issueQueueToken(env, { tokenId: 'x', agentId: agent.caps.agent_id }, Date.now() - QUEUE_TOKEN_TTL_MS - 60_000);
    expect((await call(expired.token, 'pull', {})).status).toBe(401);
    const forged = await issueQueueToken(
      { ...env, FLEET_TOKEN_SECRET: 'another-secret-of-at-least-32-characters!!' },
      { tokenId: 'x', agentId: 'y' },
    );
    expect((await call(forged.token, 'pull', {})).status).toBe(401);
  });

  it('a revoked agent token gets no new queue token', async () => {
    const agent = await seedAgent();
    await runAdmin(revokeAgentToken(agent.token));
    const res = await api(null, '/internal/v1/agents/presence', {
      method: 'POST',
      body: JSON.stringify({ agent_id: agent.caps.agent_id, name: 'x', machine_type: 'm', gpus: 0, engines: ['dev'], configs: [] }),
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
    });
    expect(res.status).toBe(401);
  });

  it('an empty pull reads nothing of the service’s but its agent token’s row (whether it was revoked), besides the emulated queue', async () => {
    const token = await queueToken();
    const statements: string[] = [];
    const prepare = env.DB.prepare.bind(env.DB);
    vi.spyOn(env.DB, 'prepare').mockImplementation((q: string) => (statements.push(q), prepare(q)));
    const withSession = env.DB.withSession.bind(env.DB);
    vi.spyOn(env.DB, 'withSession').mockImplementation((c?: string) => {
      const s = withSession(c);
      const p = s.prepare.bind(s);
      s.prepare = (q: string) => (statements.push(q), p(q));
      return s;
    });
    expect((await json(await call(token, 'pull', { batch_size: 10 }), 200)).messages).toEqual([]);
    expect(statements.length).toBeGreaterThan(0);
    const service = statements.filter((q) => !/^select .* from "emulated_queue_messages"/i.test(q));
    expect(service).toEqual([
      expect.stringMatching(/^select "id" from "agent_tokens" where \("agent_tokens"."id" = \? and "agent_tokens"."revoked_at" is null\)/i),
    ]);
  });

  it('when deployed, pulls and acks through Cloudflare’s HTTP pull API with the Worker’s own credentials', async () => {
    const token = await queueToken();
    const deployed = {
      ...env,
      DEV_QUEUE_EMULATION: undefined,
      QUEUES_ACCOUNT_ID: 'acct-1',
      JOBS_QUEUE_ID: 'queue-9',
      QUEUES_API_TOKEN: 'cf-secret',
    };
    const seen: { url: string; auth: string | null; body: unknown }[] = [];
    vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
      const req = new Request(input, init);
      seen.push({ url: req.url, auth: req.headers.get('authorization'), body: await req.json() });
      const result = req.url.endsWith('/pull')
        ? {
            messages: [
              {
                id: 'm1',
                body: btoa('{"job_id":"j"}'),
                attempts: 1,
                lease_id: 'l1',
                timestamp_ms: 1,
                metadata: { 'CF-Content-Type': 'json' },
              },
            ],
          }
        : { ackCount: 1, retryCount: 0 };
      return Response.json({ success: true, errors: [], messages: [], result });
    });
    const send = (action: string, body: unknown) =>
      app.request(
        `https://api.test/internal/v1/queue/${action}`,
        { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
        deployed,
      );
    const pulled = await json(await send('pull', { batch_size: 3, visibility_timeout_ms: 1000 }), 200);
    expect(pulled.messages[0]).toMatchObject({ id: 'm1', lease_id: 'l1' });
    expect(await json(await send('ack', { acks: [{ lease_id: 'l1' }] }), 200)).toEqual({ ack_count: 1, retry_count: 0 });
    expect(seen).toEqual([
      {
        url: 'https://api.cloudflare.com/client/v4/accounts/acct-1/queues/queue-9/messages/pull',
        auth: 'Bearer cf-secret',
        body: { batch_size: 3, visibility_timeout_ms: 1000 },
      },
      {
        url: 'https://api.cloudflare.com/client/v4/accounts/acct-1/queues/queue-9/messages/ack',
        auth: 'Bearer cf-secret',
        body: { acks: [{ lease_id: 'l1' }], retries: [] },
      },
    ]);
  });

  it('when deployed without the queue’s credentials, says what to configure (503)', async () => {
    const token = await queueToken();
    const res = await app.request(
      'https://api.test/internal/v1/queue/pull',
      { method: 'POST', body: '{}', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
      { ...env, DEV_QUEUE_EMULATION: undefined },
    );
    expect(res.status).toBe(503);
    expect((await res.json<{ detail: string }>()).detail).toMatch(/QUEUES_API_TOKEN/);
  });

  it('is fed by the real local queue', async () => {
    const token = await queueToken();
    await env.JOBS.send({ job_id: 'from-the-queue', kind: 'proof' }, { contentType: 'json' });
    // The local queue delivers it when it does: pulls go on until it is there.
    await eventually(async () => {
      const msgs = (await json(await call(token, 'pull', { batch_size: 100, visibility_timeout_ms: 0 }), 200)).messages;
      expect(msgs.some((m: any) => decode(m.body).job_id === 'from-the-queue')).toBe(true);
    });
  });
});
