// Issue 14, "global in fact": D1 sessions and bookmarks, one round trip per request,
// the fleet's lease checks, presence and leave. (The scheduler's order and the counters
// behind it: test/worker/scheduler.test.ts.)
import { env } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BOOKMARK_HEADER } from '../../src/db/sessions.ts';
import { checkLease } from '../../src/jobs/lease-checks.ts';
import { QUEUE_TOKEN_TTL_MS } from '../../src/features/fleet/queue-token.ts';
import {
  api,
  eventually,
  json,
  markReady,
  registerProgram,
  seedConfig,
  seedTenant,
  watchQueue,
  cronPart,
  leaseCheckBindings,
} from './helpers.ts';
import { claim, claimJob, drainQueuedJobs, lease, makeOverdue, presence, seedAgent } from './fleet-helpers.ts';
import { recordD1Calls } from './d1-calls.ts';
import { signIn, seedUser } from './console-helpers.ts';
import { sweep } from '../../src/jobs/sweep.ts';

beforeEach(drainQueuedJobs);
afterEach(() => vi.restoreAllMocks());

const BOOKMARK = /^[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{8}-[0-9a-f]{32}$/;

async function readyProgram() {
  const t = await seedTenant();
  const program = await registerProgram(t, await seedConfig());
  await markReady(program);
  await drainQueuedJobs();
  return { t, program };
}

const submit = (t: Awaited<ReturnType<typeof seedTenant>>, program: string, headers: Record<string, string> = {}) =>
  api(t, `/v1/proofs?program_id=${program}`, {
    method: 'POST',
    body: '{"input": ["0x0101"]}',
    headers: { 'content-type': 'application/json', ...headers },
  });

describe('D1 sessions and bookmarks', () => {
  it('every /v1 answer carries the session’s bookmark, errors included', async () => {
    const { t, program } = await readyProgram();
    const post = await submit(t, program);
    expect(post.headers.get(BOOKMARK_HEADER)).toMatch(BOOKMARK);
    const { id } = await json<{ id: string }>(post, 200);
    for (const res of [
      await api(t, `/v1/proofs/${id}`),
      await api(t, `/v1/proofs/${crypto.randomUUID()}`),
      await api(t, '/v1/proofs?program_id=x'),
    ]) {
      expect(res.headers.get(BOOKMARK_HEADER), String(res.status)).toMatch(BOOKMARK);
      await res.body?.cancel();
    }
  });

  it('a request that sends a bookmark back reads at least that fresh, and is given one no older', async () => {
    const { t, program } = await readyProgram();
    const post = await submit(t, program);
    const mark = post.headers.get(BOOKMARK_HEADER)!;
    const { id } = await json<{ id: string }>(post, 200);
    const calls = recordD1Calls();
    const res = await api(t, `/v1/proofs/${id}`, { headers: { [BOOKMARK_HEADER]: mark } });
    expect((await json(res, 200)).id).toBe(id);
    expect(calls.calls.map((c) => c.via)).toEqual(['bookmark']); // the session started from it
    expect(res.headers.get(BOOKMARK_HEADER)! >= mark).toBe(true);
  });

  it('without a bookmark reads start unconstrained (the nearest replica); the fleet’s go to the primary by the binding itself, no session', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json<{ id: string }>(await submit(t, program), 200);
    const agent = await seedAgent({}, { online: false });
    const calls = recordD1Calls();
    await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(calls.calls.map((c) => c.via)).toEqual(['first-unconstrained']);
    calls.clear();
    await claim(agent);
    // The agent's token, read at the claim's door (this agent never reported its presence), and the claim's batch:
    // on the binding, which sends every query to the primary (src/db/sessions.ts).
    expect(calls.calls.map((c) => c.via)).toEqual(['binding', 'binding']);
  });

  it('a malformed bookmark is a clear 400, never a 500; an empty one starts a fresh session', async () => {
    const t = await seedTenant();
    for (const bad of [
      'nope',
      '00000000-00000001-00000000',
      'x'.repeat(5000),
      '00000000-00000007-00000000-0000000000000000000000000000000z',
    ]) {
      const res = await api(t, '/v1/validate_api_key', { headers: { [BOOKMARK_HEADER]: bad } });
      expect(res.status, bad).toBe(400);
      expect((await res.json<{ detail: string }>()).detail).toMatch(/x-d1-bookmark/);
    }
    expect((await api(t, '/v1/validate_api_key', { headers: { [BOOKMARK_HEADER]: '' } })).status).toBe(200);
  });

  it('console answers carry the bookmark too', async () => {
    const t = await seedTenant();
    const s = await signIn(await seedUser(t.orgId, 'member'));
    const { consoleFetch } = await import('./console-helpers.ts');
    const res = await consoleFetch(`/console/v1/orgs/${t.orgId}/proofs`, { token: s.token });
    expect(res.status).toBe(200);
    expect(res.headers.get(BOOKMARK_HEADER)).toMatch(BOOKMARK);
  });
});

describe('one D1 round trip per request', () => {
  it('a GET is one read with the key folded in; "last used" is written at most once a minute, after the answer', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json<{ id: string }>(await submit(t, program), 200);
    await json(await api(t, `/v1/proofs/${id}`), 200); // "last used" is fresh from here on
    const calls = recordD1Calls();
    for (const path of [
      `/v1/proofs/${id}`,
      `/v1/programs/${program}`,
      `/v1/proofs?program_id=${program}`,
      `/v1/executions?program_id=${program}`,
      '/v1/projects',
      '/v1/validate_api_key',
    ]) {
      calls.clear();
      await json(await api(t, path), 200);
      expect(calls.calls, path).toHaveLength(1);
      expect(calls.writes(), path).toEqual([]);
      expect(calls.calls[0].sql[0], path).toMatch(/from "api_keys"/);
    }
  });

  it('an unknown key is refused after one more read, on the primary (a replica may not have a new key yet)', async () => {
    const calls = recordD1Calls();
    expect((await api({ orgId: '', owner: '', key: 'sk_unknown' }, '/v1/validate_api_key')).status).toBe(401);
    expect(calls.calls.map((c) => c.via)).toEqual(['first-unconstrained', 'first-primary']);
  });

  it('a proof submission is one read and one write batch (key, quotas and rows checked inside it)', async () => {
    const { t, program } = await readyProgram();
    await json(await api(t, '/v1/validate_api_key'), 200);
    const calls = recordD1Calls();
    await json(await submit(t, program), 200);
    expect(calls.calls).toHaveLength(2);
    expect(calls.writes()).toHaveLength(1);
  });

  it('a claim is one batch, and a claim that finds nothing writes nothing', async () => {
    const { t, program } = await readyProgram();
    const agent = await seedAgent();
    const calls = recordD1Calls();
    expect((await claim(agent)).job).toBeNull();
    expect(calls.calls).toHaveLength(1);
    expect(calls.writes()).toEqual([]);
    await json(await submit(t, program), 200);
    calls.clear();
    const job = (await claim(agent)).job!;
    expect(job).not.toBeNull();
    expect(calls.calls).toHaveLength(1);
    calls.clear();
    expect(await json(await lease(job, '/heartbeat', { phase: 'Executed' }), 200)).toMatchObject({ cancel: false });
    expect(calls.calls).toHaveLength(1); // the heartbeat resolves its token inside its batch
    calls.clear();
    await lease(job, '/artifacts/input');
    expect(calls.calls).toHaveLength(1); // the artifact's R2 key was worked out at claim
  });

  it('a claim names the job’s files by their keys once, at claim', async () => {
    const { t, program } = await readyProgram();
    await json(await submit(t, program), 200);
    const job = await claimJob(await seedAgent());
    const row = await env.DB.prepare('SELECT artifacts FROM leases WHERE id = ?').bind(job.lease_id).first<{ artifacts: string }>();
    expect(Object.keys(JSON.parse(row!.artifacts))).toEqual(job.artifacts);
    expect(JSON.parse(row!.artifacts).input).toBe(`proofs/${job.subject_id}/input.json`);
  });
});

describe('lease checks: recovery without idle claims', () => {
  it('a claim schedules a look at its lease for when it expires', async () => {
    const { t, program } = await readyProgram();
    await json(await submit(t, program), 200);
    const send = vi.spyOn(env.LEASE_CHECKS, 'send');
    const job = await claimJob(await seedAgent());
    await eventually(() => expect(send).toHaveBeenCalled());
    const [body, opts] = send.mock.calls[0];
    expect(body).toEqual({ type: 'lease-check', job_id: job.id, lease_id: job.lease_id });
    // The lease is 12 s: the look comes as it runs out, rounded up to a whole second.
    expect(opts?.delaySeconds).toBeGreaterThanOrEqual(12);
    expect(opts?.delaySeconds).toBeLessThanOrEqual(13);
  });

  it('a renewed lease is looked at again when its new expiry comes; an ended one is left alone', async () => {
    const { t, program } = await readyProgram();
    await json(await submit(t, program), 200);
    const job = await claimJob(await seedAgent());
    await json(await lease(job, '/heartbeat', {}), 200);
    const send = vi.spyOn(env.LEASE_CHECKS, 'send');
    expect(await checkLease(leaseCheckBindings(), { type: 'lease-check', job_id: job.id, lease_id: job.lease_id })).toBe('renewed');
    expect(send).toHaveBeenCalledTimes(1);
    await json(await lease(job, '/fail', { error: 'boom', retryable: false }), 200);
    send.mockClear();
    expect(await checkLease(leaseCheckBindings(), { type: 'lease-check', job_id: job.id, lease_id: job.lease_id })).toBe('ended');
    expect(send).not.toHaveBeenCalled();
  });

  it('an expired lease goes back to the queue with a fresh notice, and an idle agent takes it', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json<{ id: string }>(await submit(t, program), 200);
    const job = await claimJob(await seedAgent());
    await makeOverdue(job.id);
    const notices = watchQueue();
    expect(await checkLease(leaseCheckBindings(), { type: 'lease-check', job_id: job.id, lease_id: job.lease_id })).toBe('expired');
    expect(notices).toHaveBeenCalledWith({ job_id: job.id, kind: 'proof' }, { contentType: 'json' });
    expect((await json(await api(t, `/v1/proofs/${id}`), 200)).state).toBe('Queued');
    expect(await claimJob(await seedAgent())).toMatchObject({ id: job.id, attempt: 2 });
    // A second look at the same (old) lease finds it ended.
    expect(await checkLease(leaseCheckBindings(), { type: 'lease-check', job_id: job.id, lease_id: job.lease_id })).toBe('ended');
  });

  it('the queue handler runs lease checks and acks them', async () => {
    const { createMessageBatch, createExecutionContext, getQueueResult } = await import('cloudflare:test');
    const worker = (await import('../../src/index.ts')).default;
    const batch = createMessageBatch('zk-proving-lease-checks-local', [
      { id: 'lc-1', timestamp: new Date(), attempts: 1, body: { type: 'lease-check', job_id: 'no-such-job', lease_id: 'no-such-lease' } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch as never, env);
    const result = await getQueueResult(batch, ctx);
    expect(result.explicitAcks).toEqual(['lc-1']);
  });
});

describe('presence and leave', () => {
  it('presence is what the fleet knows of an agent; leaving takes it out of the fleet at once', async () => {
    await env.DB.prepare('DELETE FROM agents').run();
    const t = await seedTenant();
    const op = await signIn(await seedUser(t.orgId, 'member', { operator: true }));
    const { consoleFetch } = await import('./console-helpers.ts');
    const fleet = async () => (await json(await consoleFetch('/console/v1/fleet', { token: op.token }), 200)).agents as { id: string }[];
    const agent = await seedAgent({ name: 'leaving-box' });
    expect((await fleet()).map((a) => a.id)).toContain(agent.caps.agent_id);
    const left = await api(null, '/internal/v1/agents/leave', {
      method: 'POST',
      body: JSON.stringify({ agent_id: agent.caps.agent_id }),
      headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
    });
    expect(await json(left, 200)).toEqual({ left: true });
    expect((await fleet()).map((a) => a.id)).not.toContain(agent.caps.agent_id);
    // The sweep no longer counts it either: a job nobody online can serve says so.
    const { program, t: owner } = await readyProgram();
    await json(await submit(owner, program), 200);
    await env.DB.prepare(`UPDATE jobs SET notified_at = 0 WHERE status = 'queued'`).run();
    expect(await sweep(cronPart('sweep'))).toMatchObject({ waiting: 1, renotified: 0 });
    // Reporting presence again brings it back.
    await presence(agent);
    expect((await fleet()).map((a) => a.id)).toContain(agent.caps.agent_id);
  });

  it('claims write nothing about the agent: presence does, once a minute', async () => {
    await env.DB.prepare('DELETE FROM agents').run();
    const agent = await seedAgent({}, { online: false });
    await claim(agent);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM agents').first('n')).toBe(0);
    const before = Date.now();
    const answer = await presence(agent);
    const after = Date.now();
    expect(answer.presence_interval_ms).toBe(60_000);
    // Its queue token lives QUEUE_TOKEN_TTL_MS from the report, which happened between the two readings of the clock.
    expect(answer.queue_token_expires_at - QUEUE_TOKEN_TTL_MS).toBeGreaterThanOrEqual(before);
    expect(answer.queue_token_expires_at - QUEUE_TOKEN_TTL_MS).toBeLessThanOrEqual(after);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM agents').first('n')).toBe(1);
  });

  it('an agent’s presence, once its token was seen, is one statement: the write that checks the token', async () => {
    const agent = await seedAgent();
    const seen = `SELECT last_seen_at FROM agents WHERE id = ?`;
    const before = await env.DB.prepare(seen).bind(agent.caps.agent_id).first<number>('last_seen_at');
    await new Promise((r) => setTimeout(r, 2)); // a later instant to record
    const calls = recordD1Calls();
    await presence(agent);
    calls.stop();
    const made = calls.calls;
    expect(made.map((c) => c.sql.length)).toEqual([1]);
    expect(made[0].sql[0]).toMatch(
      /^insert into "agents" .* where \(\("agent_tokens"."token_hash" = \? and "agent_tokens"."revoked_at" is null\)/i,
    );
    expect(await env.DB.prepare(seen).bind(agent.caps.agent_id).first<number>('last_seen_at')).toBeGreaterThan(before!);
  });
});
