// Live status streams (issue 15 item 3): GET /v1/proofs/{id}/events and
// GET /v1/executions/{id}/events, read as an EventSource reads them, while the job is
// driven through the fleet's internal API.
import { env } from 'cloudflare:test';
import { SSEStreamingApi } from 'hono/streaming';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/admin/statements.ts';
import {
  EVENT_HEARTBEAT_MS,
  EVENT_LOG_MAX_BYTES,
  EVENT_POLL_MS,
  EVENT_POLLS_PER_READ,
  EVENT_STREAM_MAX_MS,
  follow,
  pollBudget,
} from '../../src/features/runs/events.ts';
import type { SubjectRow } from '../../src/features/runs/data.ts';
import { proofEvents } from '../../src/features/proofs/data.ts';
import { sha256Hex } from '../../src/lib/crypto.ts';
import { SseReader, type SseEvent } from '../sse.ts';
import { recordD1Calls } from './d1-calls.ts';
import { claimJob, drainQueuedJobs, lease, seedAgent, upload, devProofOf } from './fleet-helpers.ts';
import { api, json, markReady, registerProgram, runAdmin, seedConfig, seedTenant, type Tenant } from './helpers.ts';

beforeEach(drainQueuedJobs);
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const EVENT_ID = /^(\d+)\.([0-9a-f]{16})$/;

async function readyProgram(t: Tenant) {
  const id = await registerProgram(t, await seedConfig());
  await markReady(id);
  await drainQueuedJobs(); // its commit job is not under test
  return id;
}

async function queuedProof() {
  const t = await seedTenant();
  const program = await readyProgram(t);
  const { id } = await json<{ id: string }>(
    await api(t, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: '{"input": ["0x0101"]}',
      headers: { 'content-type': 'application/json' },
    }),
    200,
  );
  return { t, program, proofId: id };
}

async function open(t: Tenant, path: string, lastEventId?: string) {
  const res = await api(t, path, lastEventId ? { headers: { 'Last-Event-ID': lastEventId } } : {});
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  return new SseReader(res.body!);
}

const offsetOf = (e: SseEvent) => Number(EVENT_ID.exec(e.id!)![1]);
const hashOf = (e: SseEvent) => EVENT_ID.exec(e.id!)![2];

/** The next event, which must be `event` (with its data parsed when it is JSON). */
async function expectEvent(sse: SseReader, event: string) {
  const e = await sse.next();
  expect(e, `expected an ${event} event`).not.toBeNull();
  expect(e!.event, e!.data).toBe(event);
  expect(e!.id).toMatch(EVENT_ID);
  return e!;
}

const completeProof = async (job: Awaited<ReturnType<typeof claimJob>>) => {
  await json(await upload(job, 'stark', await devProofOf(job)), 200);
  await json(
    await lease(job, '/complete', { kind: 'proof', proofs: ['stark'], public_values: '0x00', metrics: { num_instructions: 42 } }),
    200,
  );
};

describe('GET /v1/proofs/{id}/events', () => {
  it('sends the record first and on each change, the log as it grows, and ends after the terminal state', { timeout: 30_000 }, async () => {
    const { t, proofId } = await queuedProof();
    const sse = await open(t, `/v1/proofs/${proofId}/events`);

    const queued = await expectEvent(sse, 'state');
    expect(JSON.parse(queued.data)).toEqual(await json(await api(t, `/v1/proofs/${proofId}`), 200));
    expect(JSON.parse(queued.data).state).toBe('Queued');
    expect(offsetOf(queued)).toBe(0);

    const job = await claimJob(await seedAgent());
    const executing = await expectEvent(sse, 'state');
    expect(JSON.parse(executing.data)).toEqual(await json(await api(t, `/v1/proofs/${proofId}`), 200));
    expect(JSON.parse(executing.data).state).toBe('Executing');
    expect(hashOf(executing)).not.toBe(hashOf(queued));

    await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'first line\n' }), 200);
    const first = await expectEvent(sse, 'log');
    expect(first.data).toBe('first line\n');
    expect(offsetOf(first)).toBe(11);
    expect(hashOf(first)).toBe(hashOf(executing)); // a log event carries the last state it follows

    await json(await lease(job, '/heartbeat', { phase: 'AppProving', metrics: { num_instructions: 42 } }), 200);
    const proving = await expectEvent(sse, 'state');
    expect(JSON.parse(proving.data)).toMatchObject({ state: 'AppProving' });
    expect(offsetOf(proving)).toBe(11);

    await json(await lease(job, '/logs', { seq: 1, offset: 11, text: 'second line\n' }), 200);
    await completeProof(job);
    const rest = await sse.rest();
    expect(rest.map((e) => e.event)).toEqual(['state', 'log']);
    expect(JSON.parse(rest[0].data)).toEqual(await json(await api(t, `/v1/proofs/${proofId}`), 200));
    expect(JSON.parse(rest[0].data).state).toBe('Succeeded');
    expect(rest[1].data).toBe('second line\n');
    expect(offsetOf(rest[1])).toBe(23);
  });

  it('resumes from Last-Event-ID without repeats, and answers 204 once everything was sent', { timeout: 30_000 }, async () => {
    const { t, proofId } = await queuedProof();
    const job = await claimJob(await seedAgent());
    await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'one\n' }), 200);
    const sse = await open(t, `/v1/proofs/${proofId}/events`);
    const state = await expectEvent(sse, 'state');
    const log = await expectEvent(sse, 'log');
    expect(log.data).toBe('one\n');
    await sse.cancel();

    // Nothing changed: a resume sends nothing until something does, then only that.
    const same = await open(t, `/v1/proofs/${proofId}/events`, log.id);
    await json(await lease(job, '/logs', { seq: 1, offset: 4, text: 'two\n' }), 200);
    const two = await expectEvent(same, 'log');
    expect(two.data).toBe('two\n');
    expect(hashOf(two)).toBe(hashOf(state));
    await same.cancel();

    // The state changed and more log came: the new state, then only the new log.
    await json(await lease(job, '/heartbeat', { phase: 'Executed' }), 200);
    await json(await lease(job, '/logs', { seq: 2, offset: 8, text: 'three\n' }), 200);
    const resumed = await open(t, `/v1/proofs/${proofId}/events`, two.id);
    const executed = await expectEvent(resumed, 'state');
    expect(JSON.parse(executed.data).state).toBe('Executed');
    const three = await expectEvent(resumed, 'log');
    expect(three.data).toBe('three\n');
    await completeProof(job);
    const end = await resumed.rest();
    expect(end.map((e) => [e.event, JSON.parse(e.data).state])).toEqual([['state', 'Succeeded']]);

    // Reconnecting after the end, with everything: 204 (EventSource stops reconnecting).
    const after = await api(t, `/v1/proofs/${proofId}/events`, { headers: { 'Last-Event-ID': resumed.lastEventId } });
    expect(after.status).toBe(204);
    // From an earlier event: only what that one is missing.
    const late = await open(t, `/v1/proofs/${proofId}/events`, three.id);
    expect((await late.rest()).map((e) => e.event)).toEqual(['state']);
    // Without Last-Event-ID: everything again, and the end.
    const whole = await (await open(t, `/v1/proofs/${proofId}/events`)).rest();
    expect(whole.map((e) => e.event)).toEqual(['state', 'log']);
    expect(whole[1].data).toBe('one\ntwo\nthree\n');
  });

  it('sends a long log in bounded pieces of whole chunks', { timeout: 30_000 }, async () => {
    const { t, proofId } = await queuedProof();
    const job = await claimJob(await seedAgent());
    const chunk = (n: number) => `${String(n).padStart(4, '0')} ${'x'.repeat(30 * 1024 - 6)}\n`;
    let offset = 0;
    for (let seq = 0; seq < 5; seq++) {
      await json(await lease(job, '/logs', { seq, offset, text: chunk(seq) }), 200);
      offset += chunk(seq).length;
    }
    await completeProof(job);
    const events = await (await open(t, `/v1/proofs/${proofId}/events`)).rest();
    const logs = events.filter((e) => e.event === 'log');
    expect(logs.length).toBeGreaterThan(1);
    for (const l of logs) expect(new TextEncoder().encode(l.data).length).toBeLessThanOrEqual(EVENT_LOG_MAX_BYTES);
    expect(logs.map((l) => l.data).join('')).toBe([0, 1, 2, 3, 4].map(chunk).join(''));
    expect(offsetOf(logs.at(-1)!)).toBe(offset);
  });

  it('refuses before streaming: 401, 404 (another organization’s too), 422, 400 for a malformed Last-Event-ID', async () => {
    const { t, proofId } = await queuedProof();
    const other = await seedTenant();
    const expectJson = async (res: Response, status: number) => {
      expect(res.headers.get('content-type')).toMatch(/application\/json/);
      return json(res, status);
    };
    expect(await expectJson(await api(null, `/v1/proofs/${proofId}/events`), 401)).toHaveProperty('detail');
    expect(await expectJson(await api({ ...t, key: 'sk_nope' }, `/v1/proofs/${proofId}/events`), 401)).toHaveProperty('detail');
    expect(await expectJson(await api(other, `/v1/proofs/${proofId}/events`), 404)).toEqual({ detail: 'Proof not found' });
    expect(await expectJson(await api(t, `/v1/proofs/${crypto.randomUUID()}/events`), 404)).toEqual({ detail: 'Proof not found' });
    expect((await expectJson(await api(t, '/v1/proofs/not-a-uuid/events'), 422)).detail[0]).toMatchObject({ loc: ['path', 'proof_id'] });
    const bad = await api(t, `/v1/proofs/${proofId}/events`, { headers: { 'Last-Event-ID': 'yesterday' } });
    expect((await expectJson(bad, 400)).detail).toMatch(/Last-Event-ID/);
    // A bad key is 401 even with a malformed Last-Event-ID (credentials first).
    expect((await api(null, `/v1/proofs/${proofId}/events`, { headers: { 'Last-Event-ID': 'yesterday' } })).status).toBe(401);
  });

  it('ends with an error event when its API key is revoked', { timeout: 30_000 }, async () => {
    const { t, proofId } = await queuedProof();
    const key = await runAdmin(createApiKey(t.orgId, t.owner));
    const sse = await open({ ...t, key }, `/v1/proofs/${proofId}/events`);
    await expectEvent(sse, 'state');
    await runAdmin(revokeApiKey(key));
    const rest = await sse.rest();
    expect(rest.map((e) => e.event)).toEqual(['error']);
    expect(JSON.parse(rest[0].data)).toEqual({
      detail: 'This API key stopped working while the stream was open (revoked, or its creator left the organization)',
    });
  });

  it(
    'reads the key with the record once, then one statement per poll, one poll per EVENT_POLL_MS of its clock, and stops when the client leaves',
    { timeout: 30_000 },
    async () => {
      const { t, proofId } = await queuedProof();
      await claimJob(await seedAgent());
      const d1 = recordD1Calls();
      // The stream's clock is the Worker's own setTimeout and Date, in this isolate: the
      // test moves it, a poll interval at a time, however slow the host.
      vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'Date'] });
      const sse = await open(t, `/v1/proofs/${proofId}/events`);
      await expectEvent(sse, 'state');
      // The first read: the key's lookup, the record and the stream's slot, one batch.
      const first = d1.calls.find((c) => c.sql.some((q) => q.includes('insert into "event_streams"')))!;
      expect(first.sql).toHaveLength(5);
      expect(first.sql[0]).toMatch(/from "api_keys"/);
      expect(first.sql[1]).toMatch(/from "proofs"/);
      expect(first.sql[4]).toMatch(/insert into "event_streams"/);

      // Polls go on while nothing changes: one per tick of its clock, none in between.
      const polls = () => d1.calls.filter((c) => c !== first && c.sql.some((q) => q.includes('log_job_id')));
      /** Waits, in turns of I/O (a D1 round trip of the test's own) in which the stream's clock stands still. */
      const until = async (done: () => boolean) => {
        while (!done()) await env.DB.prepare('SELECT 1').run();
      };
      for (let tick = 1; tick <= 3; tick++) {
        expect(polls()).toHaveLength(tick - 1);
        await vi.advanceTimersByTimeAsync(EVENT_POLL_MS);
        await until(() => polls().length >= tick);
      }
      polls().forEach((p, i) => {
        expect(p.sql).toHaveLength(1); // the record and its log position: one statement
        expect(p.via).toBe('first-unconstrained'); // the request's session (the nearest replica)
        expect(p.at - first.at).toBe((i + 1) * EVENT_POLL_MS);
      });
      // Nothing else reads or writes for the stream: its sessions carried its first read and
      // its polls alone (a lease check or a queue's delivery meanwhile has sessions of its own).
      const streams = new Set([first.session, ...polls().map((p) => p.session)]);
      expect(d1.calls.filter((c) => streams.has(c.session))).toEqual([first, ...polls()]);

      await sse.cancel();
      // The stream sees its client gone and ends: it gives back its slot, and polls no more.
      await until(() => d1.calls.some((c) => streams.has(c.session) && c.sql.some((q) => q.includes('delete from "event_streams"'))));
      const left = polls().length;
      expect(left).toBeLessThanOrEqual(4); // at most a poll already under way when it left
      await vi.advanceTimersByTimeAsync(3 * EVENT_POLL_MS);
      await env.DB.prepare('SELECT 1').run();
      expect(polls()).toHaveLength(left);
    },
  );
});

describe('GET /v1/executions/{id}/events', () => {
  it('follows an execution from Queued to Succeeded with its logs', { timeout: 30_000 }, async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await json<{ id: string }>(
      await api(t, `/v1/executions?program_id=${program}`, {
        method: 'POST',
        body: '{"input": []}',
        headers: { 'content-type': 'application/json' },
      }),
      200,
    );
    const sse = await open(t, `/v1/executions/${id}/events`);
    expect(JSON.parse((await expectEvent(sse, 'state')).data).status).toBe('Queued');
    const job = await claimJob(await seedAgent());
    expect(JSON.parse((await expectEvent(sse, 'state')).data).status).toBe('InProgress');
    await json(await lease(job, '/logs', { seq: 0, offset: 0, text: 'ran\n' }), 200);
    expect((await expectEvent(sse, 'log')).data).toBe('ran\n');
    await json(
      await lease(job, '/complete', {
        kind: 'execute',
        exit_code: 0,
        public_values: '0x01',
        error: null,
        metrics: { num_instructions: 7 },
      }),
      200,
    );
    const rest = await sse.rest();
    expect(rest.map((e) => e.event)).toEqual(['state']);
    expect(JSON.parse(rest[0].data)).toEqual(await json(await api(t, `/v1/executions/${id}`), 200));
    expect(JSON.parse(rest[0].data).status).toBe('Succeeded');
    expect((await api(t, `/v1/executions/${crypto.randomUUID()}/events`)).status).toBe(404);
  });
});

describe('OpenAPI', () => {
  it('documents both streams as text/event-stream, with Last-Event-ID', async () => {
    const doc = await json(await api(null, '/openapi.json'), 200);
    for (const path of ['/v1/proofs/{proof_id}/events', '/v1/executions/{execution_id}/events']) {
      const op = doc.paths[path].get;
      expect(Object.keys(op.responses['200'].content), path).toEqual(['text/event-stream']);
      expect(op.responses['204'], path).toBeDefined();
      expect(
        op.parameters.some((p: { in: string; name: string }) => p.in === 'header' && p.name === 'Last-Event-ID'),
        path,
      ).toBe(true);
    }
  });
});

describe('a stream over its whole life (a virtual clock)', () => {
  /** Runs follow() on a record that never changes, with time that passes only when the stream sleeps. */
  async function run(opts: { leaveAfterPolls?: number; afterPoll?: (polls: number) => Promise<string | null> } = {}) {
    let now = 0;
    const pollTimes: number[] = [];
    const writeTimes: number[] = [];
    const { readable, writable } = new TransformStream<Uint8Array, Uint8Array>();
    const stream = new SSEStreamingApi(writable, readable);
    const write = stream.write.bind(stream);
    stream.write = (input) => (writeTimes.push(now), write(input));
    const row = (await proofQueuedRow()) as SubjectRow;
    const sse = new SseReader(stream.responseReadable);
    const reading = (async () => {
      const events: SseEvent[] = [];
      for (let e = await sse.next(); e; e = await sse.next()) events.push(e);
      return events;
    })();
    const done = follow(stream, {
      subject: proofEvents,
      first: row,
      from: { offset: 0, stateHash: null },
      poll: async () => {
        pollTimes.push(now);
        if (pollTimes.length === opts.leaveAfterPolls) void sse.cancel();
        return [row];
      },
      readLog: async () => ({ text: '', next: 0 }),
      afterPoll: opts.afterPoll,
      path: '/test',
      clock: {
        now: () => now,
        sleep: async (ms, stop) => {
          if (!stop.stopped) now += ms;
        },
      },
    });
    await done;
    await stream.close();
    return { pollTimes, writeTimes, events: await reading, comments: sse.comments, end: now };
  }

  async function proofQueuedRow() {
    const { proofId } = await queuedProof();
    const row = await env.DB.prepare('SELECT * FROM proofs WHERE id = ?').bind(proofId).first();
    return { ...row, num_deferred_proofs: Number(row!.num_deferred_proofs), log_job_id: null, log_bytes: 0 };
  }

  it('polls once a second, keeps the connection alive every 15 s of silence, and asks for a reconnect after 15 minutes', async () => {
    const { pollTimes, writeTimes, events, comments, end } = await run();
    expect(end).toBe(EVENT_STREAM_MAX_MS);
    expect(pollTimes).toHaveLength(EVENT_STREAM_MAX_MS / EVENT_POLL_MS);
    pollTimes.forEach((t, i) => expect(t).toBe((i + 1) * EVENT_POLL_MS));
    expect(events.map((e) => e.event)).toEqual(['state', 'reconnect']);
    expect(events[1].retry).toBeGreaterThan(0);
    expect(events[1].id).toBe(events[0].id); // the position is unchanged: a resume goes on from there
    expect(comments.length).toBe(Math.floor((EVENT_STREAM_MAX_MS - 1) / EVENT_HEARTBEAT_MS));
    expect(comments.every((c) => c === 'keep-alive')).toBe(true);
    // Never more than the heartbeat interval without a byte on the wire.
    for (let i = 1; i < writeTimes.length; i++) expect(writeTimes[i] - writeTimes[i - 1]).toBeLessThanOrEqual(EVENT_HEARTBEAT_MS);
  });

  it('counts its polls against the reads budgets of its key and organization, and ends with `reconnect` past them', async () => {
    const t = await seedTenant();
    const hash = await sha256Hex(t.key);
    // The key's reads budget, spent (the real binding, test/vitest.config.ts).
    while ((await env.RATE_LIMIT_READS.limit({ key: hash })).success);
    const { pollTimes, events } = await run({ afterPoll: pollBudget(env, hash, t.orgId) });
    expect(pollTimes).toHaveLength(EVENT_POLLS_PER_READ); // the first poll that costs a request
    expect(events.map((e) => e.event)).toEqual(['state', 'reconnect']);
    expect(events[1].retry).toBe(60_000);
    expect(JSON.parse(events[1].data).detail).toContain('used up the "reads" rate limit of this API key or its organization');
    // A key with budget left polls on.
    const fresh = await seedTenant();
    const more = await run({
      afterPoll: pollBudget(env, await sha256Hex(fresh.key), fresh.orgId),
      leaveAfterPolls: 3 * EVENT_POLLS_PER_READ,
    });
    expect(more.events.map((e) => e.event)).toEqual(['state']);
  });

  it('stops polling as soon as its client leaves', async () => {
    const { pollTimes, events } = await run({ leaveAfterPolls: 5 });
    expect(pollTimes).toHaveLength(5);
    expect(events.map((e) => e.event)).toEqual(['state']);
  });
});
