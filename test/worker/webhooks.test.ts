// Webhooks (docs/callers.md "Webhooks"), in workerd with the real local D1 and queues: endpoints
// through /v1 and the console, events emitted by the state machine's own transactions,
// signed attempts, retries, disabling, redelivery, the sweep. Receivers are a stand-in
// for fetch (one URL; everything else passes through), and queue messages are captured
// so each attempt is driven here, except where the real local queue delivers them.
import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { Webhook } from 'standardwebhooks';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/admin/statements.ts';
import { app } from '../../src/app.ts';
import {
  deliverWebhook,
  DISABLE_AFTER_FAILED_DELIVERIES,
  RETRY_DELAYS_SECONDS,
  sendAttempt,
} from '../../src/features/webhooks/delivery.ts';
import { sweepWebhooks } from '../../src/jobs/webhooks.ts';
import { openDb } from '../../src/db/client.ts';
import type { WebhookMessage } from '../../src/env.ts';
import { MAX_JSON_BODY_BYTES } from '../../src/lib/limits.ts';
import { MAX_WEBHOOK_ENDPOINTS } from '../../src/features/webhooks/data.ts';
import { webhookUrlProblem } from '../../src/features/webhooks/url-policy.ts';
import { WEBHOOK_EVENTS } from '../../src/db/schema.ts';
import { as, consoleFetch, postJson, seedUser, signIn } from './console-helpers.ts';
import { recordD1Calls } from './d1-calls.ts';
import { claimJob, drainQueuedJobs, jobRow, lease, makeOverdue, seedAgent, upload, devProofOf, sealedDevProof } from './fleet-helpers.ts';
import {
  api,
  eventually,
  json,
  markReady,
  registerProgram,
  runAdmin,
  seedConfig,
  seedTenant,
  type Tenant,
  leaseCheckBindings,
} from './helpers.ts';
import { checkLease } from '../../src/jobs/lease-checks.ts';

const HOOK = 'http://127.0.0.1:9/hook';
const BASELINE = JSON.stringify({ app_exe_commit: '0x' + '11'.repeat(32), memory_dimensions: {}, num_user_pvs: 32 });

// ---------------------------------------------------------------------------
// A receiver, and the queue's messages

interface Received {
  url: string;
  headers: Record<string, string>;
  body: string;
  redirect: string | undefined;
}

/** Answers every request to HOOK (or to other URLs under http://127.0.0.1:9/) with `respond`; records them. */
const realFetch = globalThis.fetch;
function receiver(respond: (r: Received, n: number) => Response | Promise<Response> = () => new Response('ok')) {
  const received: Received[] = [];
  vi.spyOn(globalThis, 'fetch').mockImplementation(async (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    if (!url.startsWith('http://127.0.0.1:9/') && !url.startsWith('https://hooks.')) return realFetch(input, init);
    const r = { url, headers: Object.fromEntries(new Headers(init?.headers)), body: String(init?.body), redirect: init?.redirect };
    received.push(r);
    return respond(r, received.length);
  });
  return received;
}

interface Sent {
  body: WebhookMessage;
  delaySeconds: number;
}
let sent: Sent[] = [];

beforeEach(async () => {
  await drainQueuedJobs();
  sent = [];
  // Captured, not sent: each test makes the attempts itself.
  vi.spyOn(env.WEBHOOKS, 'sendBatch').mockImplementation(async (msgs) => {
    for (const m of msgs) sent.push({ body: m.body, delaySeconds: m.delaySeconds ?? 0 });
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };
  });
});
afterEach(() => vi.restoreAllMocks());

/** Makes the attempt of every captured message, until none is left. */
async function deliverAll(now?: number) {
  const reports = [];
  while (sent.length) reports.push(await deliverWebhook(env, sent.shift()!.body, now));
  return reports;
}

// ---------------------------------------------------------------------------
// Callers and jobs

const post = (t: Tenant, path: string, body?: unknown) =>
  api(t, path, {
    method: 'POST',
    ...(body === undefined ? {} : { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } }),
  });
const patch = (t: Tenant, path: string, body: unknown) =>
  api(t, path, { method: 'PATCH', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });

async function createEndpoint(t: Tenant, body: Record<string, unknown> = {}) {
  return json<{ id: string; secret: string; [k: string]: unknown }>(await post(t, '/v1/webhooks', { url: HOOK, ...body }), 201);
}

async function readyProgram(t: Tenant) {
  const id = await registerProgram(t, await seedConfig());
  await markReady(id);
  await drainQueuedJobs();
  return id;
}

async function submitProof(t: Tenant, program: string) {
  return (await json<{ id: string }>(await post(t, `/v1/proofs?program_id=${program}`, { input: ['0x0101'] }), 200)).id;
}

/** A proof of a ready program, claimed by an agent. */
async function runningProof(t: Tenant) {
  const program = await readyProgram(t);
  const id = await submitProof(t, program);
  const job = await claimJob(await seedAgent());
  return { program, id, job };
}

const completeProof = async (job: Awaited<ReturnType<typeof claimJob>>) => {
  await upload(job, 'stark', await devProofOf(job));
  return lease(job, '/complete', { kind: 'proof', proofs: ['stark'], public_values: '0x00', metrics: { num_instructions: 7 } });
};

const deliveriesOf = async (subjectId: string) =>
  (
    await env.DB.prepare('SELECT * FROM webhook_deliveries WHERE subject_id = ? ORDER BY created_at, id')
      .bind(subjectId)
      .all<Record<string, any>>()
  ).results;

/** HMAC-SHA256 as the Standard Webhooks spec defines the signature, computed here with WebCrypto (not the library the Worker signs with). */
async function expectedSignature(secret: string, id: string, timestamp: string, body: string) {
  const key = await crypto.subtle.importKey(
    'raw',
    Uint8Array.from(atob(secret.slice('whsec_'.length)), (c) => c.charCodeAt(0)),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign'],
  );
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`${id}.${timestamp}.${body}`)));
  return `v1,${btoa(String.fromCharCode(...mac))}`;
}

// ---------------------------------------------------------------------------

describe('endpoints through /v1/webhooks', () => {
  it('creates an endpoint whose secret is shown once, and stored only encrypted', async () => {
    const t = await seedTenant();
    const created = await createEndpoint(t, { description: 'CI' });
    expect(created).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      url: HOOK,
      description: 'CI',
      events: null,
      created_at: expect.any(String),
      created_by: t.owner,
      updated_at: null,
      disabled: false,
      disabled_at: null,
      disabled_reason: null,
      previous_secret_valid_until: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
    });
    expect(atob(created.secret.slice(6)).length).toBe(32);
    const { secret, ...record } = created;
    expect(await json(await api(t, `/v1/webhooks/${created.id}`), 200)).toEqual(record);
    const list = await json(await api(t, '/v1/webhooks'), 200);
    expect(list).toEqual({ items: [record], pagination: { total: 1, page: 1, page_size: 20, pages: 1 } });
    expect(JSON.stringify(list)).not.toContain('whsec_');
    const row = await env.DB.prepare('SELECT secret FROM webhook_endpoints WHERE id = ?').bind(created.id).first<{ secret: string }>();
    expect(row!.secret).toMatch(/^v1\./);
    expect(row!.secret).not.toContain(secret.slice(6, 20));
  });

  it('subscribes to the events named (in one order, once each); unknown names are 422 listing the valid ones', async () => {
    const t = await seedTenant();
    const e = await createEndpoint(t, { events: ['proof.failed', 'proof.succeeded', 'proof.failed'] });
    expect(e.events).toEqual(['proof.succeeded', 'proof.failed']);
    const bad = await json(await post(t, '/v1/webhooks', { url: HOOK, events: ['proof.succeeded', 'proof.done'] }), 422);
    expect(bad.detail[0]).toMatchObject({ loc: ['body', 'events', 1], type: 'literal_error' });
    for (const name of WEBHOOK_EVENTS) expect(bad.detail[0].msg).toContain(`'${name}'`);
    expect((await json(await post(t, '/v1/webhooks', { url: HOOK, events: [] }), 422)).detail[0]).toMatchObject({
      loc: ['body', 'events'],
      type: 'too_short',
    });
  });

  it('refuses bad bodies in the API’s shapes, never a 5xx', async () => {
    const t = await seedTenant();
    const raw = (body: BodyInit, type = 'application/json') =>
      api(t, '/v1/webhooks', { method: 'POST', body, headers: { 'content-type': type } });
    expect((await json(await raw('{}'), 422)).detail[0]).toMatchObject({ loc: ['body', 'url'], type: 'missing' });
    expect((await json(await raw('{"url": 5}'), 422)).detail[0]).toMatchObject({ loc: ['body', 'url'], type: 'string_type' });
    expect((await json(await raw(JSON.stringify({ url: 'https://hooks.example.com/' + 'a'.repeat(2100) })), 422)).detail[0]).toMatchObject({
      type: 'string_too_long',
    });
    expect((await json(await raw('{"url": '), 422)).detail[0].type).toBe('json_invalid');
    expect((await json(await raw('', 'application/json'), 422)).detail[0].type).toBe('missing');
    expect((await json(await raw('{"url": "x"}', 'text/plain'), 415)).detail).toMatch(
      /^Unsupported Content-Type "text\/plain": send this body as application\/json/,
    );
    expect((await json(await raw(Uint8Array.of(0x7b, 0xff, 0x7d)), 400)).detail).toBe('There was an error parsing the body');
    expect((await json(await raw(JSON.stringify({ url: HOOK, description: 'x'.repeat(MAX_JSON_BODY_BYTES) })), 413)).detail).toMatch(
      /too large/i,
    );
    expect((await json(await raw('{"url": "not a url"}'), 422)).detail[0]).toMatchObject({
      loc: ['body', 'url'],
      type: 'value_error',
      msg: 'Value error, not an absolute URL',
    });
    // Credentials first: a bad body from a dead key is 401.
    expect(
      (await api({ ...t, key: 'sk_nope' }, '/v1/webhooks', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } }))
        .status,
    ).toBe(401);
    await json(await api(t, '/v1/webhooks/not-a-uuid'), 422);
    await json(await api(t, `/v1/webhooks/${crypto.randomUUID()}`), 404);
    await json(await patch(t, `/v1/webhooks/${crypto.randomUUID()}`, {}), 404);
    await json(await api(t, `/v1/webhooks/${crypto.randomUUID()}`, { method: 'DELETE' }), 404);
    await json(await post(t, `/v1/webhooks/${crypto.randomUUID()}/rotate-secret`), 404);
    await json(await post(t, `/v1/webhooks/${crypto.randomUUID()}/test`), 404);
    await json(await api(t, `/v1/webhooks/${crypto.randomUUID()}/deliveries`), 404);
    const e = await createEndpoint(t);
    expect((await json(await post(t, `/v1/webhooks/${e.id}/deliveries/nope/redeliver`), 422)).detail[0].loc).toEqual([
      'path',
      'delivery_id',
    ]);
    await json(await post(t, `/v1/webhooks/${e.id}/deliveries/msg_${'0'.repeat(32)}/redeliver`), 404);
  });

  it('changes URL, events and description; disables and enables; deletes', async () => {
    const t = await seedTenant();
    const e = await createEndpoint(t);
    const changed = await json(
      await patch(t, `/v1/webhooks/${e.id}`, { url: 'http://localhost:9/other', events: ['program.ready'], description: 'moved' }),
      200,
    );
    expect(changed).toMatchObject({
      url: 'http://localhost:9/other',
      events: ['program.ready'],
      description: 'moved',
      updated_at: expect.any(String),
    });
    expect((await json(await patch(t, `/v1/webhooks/${e.id}`, { events: null }), 200)).events).toBeNull();
    expect((await json(await patch(t, `/v1/webhooks/${e.id}`, { url: 'http://10.0.0.1/' }), 422)).detail[0].loc).toEqual(['body', 'url']);
    const off = await json(await patch(t, `/v1/webhooks/${e.id}`, { disabled: true }), 200);
    expect(off).toMatchObject({
      disabled: true,
      disabled_at: expect.any(String),
      disabled_reason: expect.stringMatching(new RegExp(`^Disabled by ${t.owner} \\(API key sk_[0-9a-f]{8}…\\) at `)),
    });
    // Disabling again keeps why and since when.
    expect(await json(await patch(t, `/v1/webhooks/${e.id}`, { disabled: true }), 200)).toMatchObject({
      disabled_reason: off.disabled_reason,
      disabled_at: off.disabled_at,
    });
    expect(await json(await patch(t, `/v1/webhooks/${e.id}`, { disabled: false }), 200)).toMatchObject({
      disabled: false,
      disabled_at: null,
      disabled_reason: null,
    });
    expect(await json(await api(t, `/v1/webhooks/${e.id}`, { method: 'DELETE' }), 200)).toEqual({ message: 'Webhook endpoint deleted' });
    await json(await api(t, `/v1/webhooks/${e.id}`), 404);
  });

  it(`allows ${MAX_WEBHOOK_ENDPOINTS} endpoints per organization (409 past it); a revoked key creates nothing`, async () => {
    const t = await seedTenant();
    for (let i = 0; i < MAX_WEBHOOK_ENDPOINTS; i++) await createEndpoint(t);
    expect((await json(await post(t, '/v1/webhooks', { url: HOOK }), 409)).detail).toMatch(/20 webhook endpoints/);
    expect((await json(await api(t, '/v1/webhooks?page_size=5&page=4'), 200)).pagination).toEqual({
      total: 20,
      page: 4,
      page_size: 5,
      pages: 4,
    });
    const u = await seedTenant();
    await runAdmin(revokeApiKey(u.key));
    expect((await post(u, '/v1/webhooks', { url: HOOK })).status).toBe(401);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM webhook_endpoints WHERE org_id = ?').bind(u.orgId).first('n')).toBe(0);
  });

  it('another organization’s endpoint is not found, whatever is asked of it', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const e = await createEndpoint(t);
    await json(await api(other, `/v1/webhooks/${e.id}`), 404);
    await json(await patch(other, `/v1/webhooks/${e.id}`, { disabled: true }), 404);
    await json(await api(other, `/v1/webhooks/${e.id}`, { method: 'DELETE' }), 404);
    await json(await post(other, `/v1/webhooks/${e.id}/rotate-secret`), 404);
    await json(await post(other, `/v1/webhooks/${e.id}/test`), 404);
    await json(await api(other, `/v1/webhooks/${e.id}/deliveries`), 404);
    expect((await json(await api(other, '/v1/webhooks'), 200)).items).toEqual([]);
    expect(await json(await api(t, `/v1/webhooks/${e.id}`), 200)).toMatchObject({ disabled: false });
    // Nor do its events reach the endpoint.
    const { job } = await runningProof(other);
    await json(await completeProof(job), 200);
    expect(sent).toEqual([]);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM webhook_deliveries WHERE endpoint_id = ?').bind(e.id).first('n')).toBe(0);
  });
});

describe('which URLs', () => {
  const production = { allowLoopback: false };
  it.each([
    ['https://hooks.example.com/x', null],
    ['https://hooks.example.com:8443/x?a=1', null],
    ['https://93.184.215.14/', null],
    ['https://[2606:4700::1111]/', null],
    ['http://hooks.example.com/', /only https/],
    ['ftp://hooks.example.com/', /only https/],
    ['https://user:pw@hooks.example.com/', /credentials/],
    ['https://localhost/', /loopback/],
    ['https://api.localhost/', /loopback/],
    ['https://127.0.0.1/', /loopback/],
    ['https://2130706433/', /loopback/],
    ['https://0x7f.1/', /loopback/],
    ['https://[::1]/', /loopback/],
    ['https://[::ffff:127.0.0.1]/', /loopback/],
    ['https://10.1.2.3/', /private/],
    ['https://172.16.0.1/', /private/],
    ['https://192.168.1.1/', /private/],
    ['https://169.254.169.254/latest/meta-data', /link-local/],
    ['https://100.64.0.1/', /shared/],
    ['https://0.0.0.0/', /this network/],
    ['https://224.0.0.1/', /multicast/],
    ['https://[fd00::1]/', /unique-local/],
    ['https://[fe80::1]/', /link-local/],
    ['https://[::ffff:10.0.0.1]/', /private .*inside IPv6/],
    ['https://[64:ff9b::a00:1]/', /private .*inside IPv6/],
    ['https://[2002:c0a8:101::1]/', /private .*inside IPv6/],
    ['https://[::]/', /unspecified/],
    ['https://printer.local/', /private or reserved/],
    ['https://db.internal/', /private or reserved/],
    ['https://intranet/', /no domain/],
    ['not a url', /absolute URL/],
  ])('production: %s', (url, problem) => {
    const got = webhookUrlProblem(url, production);
    if (problem === null) expect(got).toBeNull();
    else expect(got).toMatch(problem);
  });

  it('local development also takes http to loopback, and nothing else private', () => {
    const local = { allowLoopback: true };
    for (const ok of ['http://127.0.0.1:8080/hook', 'http://localhost/x', 'http://[::1]:9/', 'https://127.0.0.1/'])
      expect(webhookUrlProblem(ok, local), ok).toBeNull();
    for (const bad of ['http://10.0.0.1/', 'http://hooks.example.com/', 'http://user:pw@127.0.0.1/'])
      expect(webhookUrlProblem(bad, local), bad).not.toBeNull();
  });

  it('a deployment refuses them at creation (422), and this local one takes loopback', async () => {
    const t = await seedTenant();
    const deployed = { ...env, WEBHOOKS_ALLOW_LOOPBACK: undefined };
    const create = (url: string, e: typeof env = deployed) =>
      app.request(
        'https://api.test/v1/webhooks',
        { method: 'POST', body: JSON.stringify({ url }), headers: { 'content-type': 'application/json', 'Service-API-Key': t.key } },
        e,
        createExecutionContext(),
      );
    for (const url of [
      HOOK,
      'https://localhost/',
      'https://169.254.169.254/',
      'https://[fd00::1]/',
      'https://user:pw@hooks.example.com/',
      'https://db.internal/',
    ]) {
      const res = await create(url);
      const body = await json(res, 422);
      expect(body.detail[0]).toMatchObject({ loc: ['body', 'url'], type: 'value_error' });
    }
    await json(await create('https://hooks.example.com/x'), 201);
    await json(await create(HOOK, env), 201);
  });

  it('is checked again before every attempt: an endpoint whose URL is no longer allowed is not called', async () => {
    const t = await seedTenant();
    const received = receiver();
    const e = await createEndpoint(t);
    await json(await post(t, `/v1/webhooks/${e.id}/test`), 202);
    await env.DB.prepare('UPDATE webhook_endpoints SET url = ? WHERE id = ?').bind('https://10.0.0.7/hook', e.id).run();
    expect((await deliverAll())[0].outcome).toBe('retrying');
    expect(received).toEqual([]);
    const [d] = (await json(await api(t, `/v1/webhooks/${e.id}/deliveries`), 200)).items;
    expect(d.attempts[0]).toMatchObject({
      status_code: null,
      error: expect.stringMatching(/^not sent: 10\.0\.0\.7 is a private address/),
      latency_ms: 0,
    });
  });
});

describe('events: written with the change that causes them', () => {
  it('proof.succeeded: the completion’s own batch emits it and its message goes out at once; the payload is the record as GET returns it', async () => {
    const t = await seedTenant();
    const e = await createEndpoint(t);
    const { id, job } = await runningProof(t);
    expect(await deliveriesOf(id)).toEqual([]);
    await json(await completeProof(job), 200);
    const [d] = await deliveriesOf(id);
    expect(d).toMatchObject({
      endpoint_id: e.id,
      event_type: 'proof.succeeded',
      subject_kind: 'proof',
      status: 'pending',
      attempts: 0,
      payload: null,
    });
    await eventually(() => expect(sent.map((s) => s.body)).toEqual([{ type: 'webhook', delivery_id: d.id, attempt: 0, render: 'proof' }]));
    expect(sent[0].delaySeconds).toBe(0);
    const received = receiver();
    await deliverAll();
    expect(received).toHaveLength(1);
    const body = JSON.parse(received[0].body);
    expect(body).toEqual({ type: 'proof.succeeded', timestamp: d.created_at, data: await json(await api(t, `/v1/proofs/${id}`), 200) });
    expect(body.data.state).toBe('Succeeded');
  });

  it('proof.failed and proof.canceled; a retryable failure that requeues emits nothing', async () => {
    const t = await seedTenant();
    await createEndpoint(t);
    const { id, job } = await runningProof(t);
    await json(await lease(job, '/fail', { error: 'lost the GPU', retryable: true }), 200);
    expect(await deliveriesOf(id)).toEqual([]);
    const again = await claimJob(await seedAgent());
    await json(await lease(again, '/fail', { error: 'guest panicked', retryable: false }), 200);
    expect((await deliveriesOf(id)).map((d) => d.event_type)).toEqual(['proof.failed']);

    const program = await readyProgram(t);
    const queued = await submitProof(t, program);
    await json(await post(t, `/v1/proofs/${queued}/cancel`), 200);
    const [canceled] = await deliveriesOf(queued);
    expect(canceled.event_type).toBe('proof.canceled');
    await eventually(() => expect(sent.map((s) => s.body.delivery_id)).toContain(canceled.id));
  });

  it('a result that crossed a cancel emits proof.canceled, not proof.succeeded; a superseded lease emits nothing', async () => {
    const t = await seedTenant();
    await createEndpoint(t);
    const { id, job } = await runningProof(t);
    await json(await post(t, `/v1/proofs/${id}/cancel`), 200);
    expect(await deliveriesOf(id)).toEqual([]); // Canceling is not an event
    await json(await completeProof(job), 200);
    expect((await deliveriesOf(id)).map((d) => d.event_type)).toEqual(['proof.canceled']);

    const second = await runningProof(t);
    await makeOverdue(second.job.id);
    expect(await checkLease(leaseCheckBindings(), { type: 'lease-check', job_id: second.job.id, lease_id: second.job.lease_id })).toBe(
      'expired',
    );
    expect((await completeProof(second.job)).status).toBe(409);
    expect(await deliveriesOf(second.id)).toEqual([]);
  });

  it('a lease lost for the last time fails the proof: the expiry’s batch emits proof.failed', async () => {
    const t = await seedTenant();
    await createEndpoint(t);
    const { id, job } = await runningProof(t);
    await env.DB.prepare('UPDATE jobs SET attempt = 5 WHERE id = ?').bind(job.id).run();
    await makeOverdue(job.id);
    expect(await checkLease(leaseCheckBindings(), { type: 'lease-check', job_id: job.id, lease_id: job.lease_id })).toBe('expired');
    const [d] = await deliveriesOf(id);
    expect(d.event_type).toBe('proof.failed');
    expect(sent.map((s) => s.body.delivery_id)).toEqual([d.id]);
    expect((await jobRow(job.id)).status).toBe('done');
  });

  it('program.ready, program.failed, execution.succeeded, execution.failed, verification.verified, verification.failed', async () => {
    const t = await seedTenant();
    await createEndpoint(t);
    const cfg = await seedConfig();
    const agent = await seedAgent();
    const events = async (id: string) => (await deliveriesOf(id)).map((d) => d.event_type);

    const ready = await registerProgram(t, cfg);
    const commit = await claimJob(agent);
    await upload(commit, 'baseline', BASELINE);
    await json(
      await lease(commit, '/complete', {
        kind: 'commit',
        app_exe_commit: '0x' + '11'.repeat(32),
        app_vm_commit: commit.config.app_vm_commit,
      }),
      200,
    );
    expect(await events(ready)).toEqual(['program.ready']);

    const failed = await registerProgram(t, cfg);
    const bad = await claimJob(agent);
    await upload(bad, 'baseline', BASELINE);
    await json(
      await lease(bad, '/complete', { kind: 'commit', app_exe_commit: '0x' + '11'.repeat(32), app_vm_commit: '0x' + '99'.repeat(32) }),
      200,
    );
    expect(await events(failed)).toEqual(['program.failed']);

    const execute = async (exit_code: number) => {
      const { id } = await json(await post(t, `/v1/executions?program_id=${ready}`, { input: [] }), 200);
      const job = await claimJob(agent);
      await json(
        await lease(job, '/complete', { kind: 'execute', exit_code, public_values: exit_code ? null : '00', error: null, metrics: {} }),
        200,
      );
      return id as string;
    };
    expect(await events(await execute(0))).toEqual(['execution.succeeded']);
    expect(await events(await execute(3))).toEqual(['execution.failed']);

    const verify = async (verified: boolean) => {
      const form = new FormData();
      // A dev proof sealed with the deployment's secret: the Worker checks its seal.
      const config = (await env.DB.prepare(
        'SELECT c.*, p.app_exe_commit AS program_commit FROM configs c JOIN programs p ON p.config_id = c.id WHERE p.id = ?',
      )
        .bind(ready)
        .first<any>())!;
      const proof = await sealedDevProof(config.program_commit, config, '0x00', env.DEV_PROOF_SECRET!);
      form.append('proof', new File([proof], 'proof.json', { type: 'application/json' }));
      const { id } = await json(await api(t, `/v1/verify/stark?program_id=${ready}`, { method: 'POST', body: form }), 200);
      const job = await claimJob(agent);
      await json(await lease(job, '/complete', { kind: 'verify', verified, reason: verified ? null : 'bad proof' }), 200);
      return id as string;
    };
    expect(await events(await verify(true))).toEqual(['verification.verified']);
    expect(await events(await verify(false))).toEqual(['verification.failed']);

    // Each was sent as it happened, and renders as its GET does.
    const received = receiver();
    await eventually(() => expect(sent).toHaveLength(6));
    await deliverAll();
    const bodies = received.map((r) => JSON.parse(r.body));
    expect(bodies.map((b) => b.type)).toEqual([
      'program.ready',
      'program.failed',
      'execution.succeeded',
      'execution.failed',
      'verification.verified',
      'verification.failed',
    ]);
    expect(bodies[0].data).toEqual(await json(await api(t, `/v1/programs/${ready}`), 200));
    expect(bodies[3].data).toEqual(await json(await api(t, `/v1/executions/${bodies[3].data.id}`), 200));
    expect(bodies[5].data).toEqual(await json(await api(t, `/v1/verify/${bodies[5].data.id}`), 200));
  });

  it('nothing for a change that rolled back; the same change committed has its delivery', async () => {
    const t = await seedTenant();
    await createEndpoint(t);
    const program = await readyProgram(t);
    const id = await submitProof(t, program);
    const finish = env.DB.prepare(`UPDATE proofs SET state = 'Succeeded' WHERE id = ?`).bind(id);
    // The batch's last statement fails: D1 rolls the whole batch back, triggers' rows included.
    await expect(env.DB.batch([finish, env.DB.prepare(`INSERT INTO webhook_endpoints (id) VALUES (NULL)`)])).rejects.toThrow();
    expect(await env.DB.prepare('SELECT state FROM proofs WHERE id = ?').bind(id).first('state')).toBe('Queued');
    expect(await deliveriesOf(id)).toEqual([]);
    await env.DB.batch([finish]);
    expect((await deliveriesOf(id)).map((d) => d.event_type)).toEqual(['proof.succeeded']);
  });

  it('goes to each enabled endpoint subscribed to it, once', async () => {
    const t = await seedTenant();
    const all = await createEndpoint(t);
    const succeeded = await createEndpoint(t, { events: ['proof.succeeded', 'program.ready'] });
    await createEndpoint(t, { events: ['proof.failed'] });
    const off = await createEndpoint(t);
    await json(await patch(t, `/v1/webhooks/${off.id}`, { disabled: true }), 200);
    const { id, job } = await runningProof(t);
    await json(await completeProof(job), 200);
    expect((await deliveriesOf(id)).map((d) => d.endpoint_id).sort()).toEqual([all.id, succeeded.id].sort());
    const ids = (await deliveriesOf(id)).map((d) => d.id);
    expect(new Set(ids).size).toBe(2);
    await eventually(() => expect(sent.map((s) => s.body.delivery_id).sort()).toEqual(ids.sort()));
  });
});

describe('attempts', () => {
  /** An endpoint with one proof.succeeded delivery whose first message is captured. */
  async function oneDelivery(t: Tenant, endpointBody: Record<string, unknown> = {}) {
    const program = await readyProgram(t); // before the endpoint: its program.ready is not this test's
    const e = await createEndpoint(t, endpointBody);
    const id = await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    await json(await completeProof(job), 200);
    await eventually(() => expect(sent).toHaveLength(1));
    const [d] = await deliveriesOf(id);
    return { e, proofId: id, deliveryId: d.id as string };
  }

  it('are signed per Standard Webhooks: the library verifies them, and so does the HMAC computed from the spec', async () => {
    const t = await seedTenant();
    const { e, deliveryId } = await oneDelivery(t);
    const received = receiver();
    const before = Math.floor(Date.now() / 1000);
    await deliverAll();
    const after = Math.ceil(Date.now() / 1000);
    const [r] = received;
    expect(r.headers).toMatchObject({
      'content-type': 'application/json',
      'webhook-id': deliveryId,
      'webhook-timestamp': expect.stringMatching(/^\d{10}$/),
      'webhook-signature': expect.stringMatching(/^v1,[A-Za-z0-9+/]{43}=$/),
    });
    // Signed when it was sent (between the two readings of the clock, however long that took).
    expect(Number(r.headers['webhook-timestamp'])).toBeGreaterThanOrEqual(before);
    expect(Number(r.headers['webhook-timestamp'])).toBeLessThanOrEqual(after);
    expect(r.headers['webhook-signature']).toBe(await expectedSignature(e.secret, deliveryId, r.headers['webhook-timestamp'], r.body));
    expect(new Webhook(e.secret).verify(r.body, r.headers)).toMatchObject({ type: 'proof.succeeded' });
    // Not with another secret, nor with the body changed.
    const other = await createEndpoint(t);
    expect(() => new Webhook(other.secret).verify(r.body, r.headers)).toThrow(/No matching signature/);
    expect(() => new Webhook(e.secret).verify(r.body.replace('Succeeded', 'Failed'), r.headers)).toThrow(/No matching signature/);
    expect(r.redirect).toBe('manual');
  });

  it('are retried on the schedule with the same webhook-id and the same bytes, then the delivery fails', async () => {
    const t = await seedTenant();
    const { e, deliveryId } = await oneDelivery(t);
    const received = receiver(() => new Response('x'.repeat(10_000) + 'é', { status: 503 }));
    const delays: number[] = [];
    for (;;) {
      const before = Date.now();
      const report = await deliverWebhook(env, sent.shift()!.body);
      if (report.outcome === 'failed') break;
      expect(report.outcome).toBe('retrying');
      const next = sent.at(-1)!;
      delays.push(next.delaySeconds);
      const row = await env.DB.prepare('SELECT next_attempt_at FROM webhook_deliveries WHERE id = ?')
        .bind(deliveryId)
        .first<{ next_attempt_at: number }>();
      expect(row!.next_attempt_at).toBeGreaterThanOrEqual(before + next.delaySeconds * 1000);
    }
    expect(delays).toEqual(RETRY_DELAYS_SECONDS);
    expect(RETRY_DELAYS_SECONDS[0]).toBeLessThanOrEqual(10);
    expect(sent).toEqual([]);
    expect(received).toHaveLength(RETRY_DELAYS_SECONDS.length + 1);
    expect(new Set(received.map((r) => r.headers['webhook-id']))).toEqual(new Set([deliveryId]));
    expect(new Set(received.map((r) => r.body)).size).toBe(1);
    for (const r of received) expect(new Webhook(e.secret).verify(r.body, r.headers)).toBeTruthy();
    const [d] = (await json(await api(t, `/v1/webhooks/${e.id}/deliveries`), 200)).items;
    expect(d).toMatchObject({ id: deliveryId, status: 'failed', next_attempt_at: null });
    expect(d.attempts.map((a: { attempt: number }) => a.attempt)).toEqual(received.map((_, i) => i + 1));
    for (const a of d.attempts) {
      expect(a).toMatchObject({ status_code: 503, error: 'HTTP 503', latency_ms: expect.any(Number), attempted_at: expect.any(String) });
      expect(new TextEncoder().encode(a.response_excerpt).length).toBeLessThanOrEqual(512);
      expect(a.response_excerpt).toBe('x'.repeat(512));
    }
  });

  it('a retry that succeeds delivers it; a redirect is a failure, not followed', async () => {
    const t = await seedTenant();
    const { e, deliveryId } = await oneDelivery(t);
    const received = receiver((_r, n) =>
      n === 1
        ? new Response(null, { status: 302, headers: { location: 'https://elsewhere.example.com/' } })
        : new Response(null, { status: 204 }),
    );
    expect((await deliverAll()).map((r) => r.outcome)).toEqual(['retrying', 'delivered']);
    expect(received.map((r) => r.url)).toEqual([HOOK, HOOK]);
    const [d] = (await json(await api(t, `/v1/webhooks/${e.id}/deliveries`), 200)).items;
    expect(d.status).toBe('delivered');
    expect(d.attempts).toEqual([
      expect.objectContaining({
        attempt: 1,
        status_code: 302,
        error: "redirect to https://elsewhere.example.com/ not followed: give the endpoint's final URL",
      }),
      expect.objectContaining({ attempt: 2, status_code: 204, error: null, response_excerpt: '' }),
    ]);
    expect(d.id).toBe(deliveryId);
  });

  it('a timeout is a failure; only a short excerpt of a body is read, cut at a whole character', async () => {
    vi.spyOn(globalThis, 'fetch').mockImplementation(
      (_input, init) => new Promise((_resolve, reject) => init!.signal!.addEventListener('abort', () => reject(init!.signal!.reason))),
    );
    const slow = await sendAttempt(HOOK, {}, '{}', 50);
    expect(slow).toMatchObject({ status_code: null, error: 'no answer within 0.05 s', response_excerpt: '' });
    vi.restoreAllMocks();
    receiver(() => new Response('a' + '€'.repeat(1000), { status: 500 }));
    const big = await sendAttempt(HOOK, {}, '{}');
    expect(big.response_excerpt).toBe('a' + '€'.repeat(170)); // 1 + 170 × 3 = 511 bytes: the next € would pass 512
    receiver(() => Promise.reject(new TypeError('connection refused')));
    expect((await sendAttempt(HOOK, {}, '{}')).error).toBe('request failed: connection refused');
  });

  it('two copies of one message make one recorded attempt and schedule one retry; a stale copy does nothing', async () => {
    const t = await seedTenant();
    const { e, deliveryId } = await oneDelivery(t);
    receiver(() => new Response('no', { status: 500 }));
    const message = sent.shift()!.body;
    const reports = await Promise.all([deliverWebhook(env, message), deliverWebhook(env, message)]);
    expect(reports.map((r) => r.outcome).sort()).toEqual(['retrying', 'stale']);
    expect(sent).toHaveLength(1);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM webhook_attempts WHERE delivery_id = ?').bind(deliveryId).first('n')).toBe(1);
    expect((await deliverWebhook(env, message)).outcome).toBe('stale');
    expect(
      await env.DB.prepare('SELECT failing_since IS NOT NULL AS failing, failed_deliveries FROM webhook_endpoints WHERE id = ?')
        .bind(e.id)
        .first(),
    ).toEqual({ failing: 1, failed_deliveries: 0 });
  });

  it('an endpoint failing for a day is disabled, says why in GET, gets nothing more until PATCH enables it', async () => {
    const t = await seedTenant();
    const { e } = await oneDelivery(t);
    const received = receiver(() => new Response('down', { status: 500 }));
    await deliverWebhook(env, sent.shift()!.body); // attempt 1 fails: the endpoint starts failing
    const day = 24 * 3600_000;
    await env.DB.prepare('UPDATE webhook_endpoints SET failing_since = failing_since - ? WHERE id = ?').bind(day, e.id).run();
    expect((await deliverWebhook(env, sent.shift()!.body)).outcome).toBe('retrying');
    const off = await json(await api(t, `/v1/webhooks/${e.id}`), 200);
    expect(off).toMatchObject({ disabled: true, disabled_at: expect.any(String) });
    expect(off.disabled_reason).toMatch(
      /^Disabled automatically at \S+: every delivery attempt since \S+ failed \(24 hours or more\); the last attempt: HTTP 500$/,
    );
    // Its pending delivery is not sent, and new events make no deliveries.
    expect((await deliverWebhook(env, sent.shift()!.body)).outcome).toBe('not-sent');
    expect(received).toHaveLength(2);
    const [d] = (await json(await api(t, `/v1/webhooks/${e.id}/deliveries`), 200)).items;
    expect(d).toMatchObject({ status: 'failed', error: `Not sent: the endpoint is disabled (${off.disabled_reason})` });
    const later = await runningProof(t);
    await json(await completeProof(later.job), 200);
    expect(await deliveriesOf(later.id)).toEqual([]);
    // Enabled again, it starts over.
    await json(await patch(t, `/v1/webhooks/${e.id}`, { disabled: false }), 200);
    expect(await env.DB.prepare('SELECT failing_since, failed_deliveries FROM webhook_endpoints WHERE id = ?').bind(e.id).first()).toEqual({
      failing_since: null,
      failed_deliveries: 0,
    });
  });

  it(`an endpoint whose last ${DISABLE_AFTER_FAILED_DELIVERIES} deliveries all failed is disabled; a success in between starts the count over`, async () => {
    const t = await seedTenant();
    const { e } = await oneDelivery(t);
    receiver(() => new Response('down', { status: 500 }));
    // As if 19 deliveries had failed already; this one is on its last attempt.
    await env.DB.prepare('UPDATE webhook_endpoints SET failed_deliveries = ? WHERE id = ?')
      .bind(DISABLE_AFTER_FAILED_DELIVERIES - 1, e.id)
      .run();
    await env.DB.prepare('UPDATE webhook_deliveries SET attempts = ?, round_start = 0 WHERE endpoint_id = ?')
      .bind(RETRY_DELAYS_SECONDS.length, e.id)
      .run();
    const last = { ...sent.shift()!.body, attempt: RETRY_DELAYS_SECONDS.length };
    expect((await deliverWebhook(env, last)).outcome).toBe('failed');
    const off = await json(await api(t, `/v1/webhooks/${e.id}`), 200);
    expect(off.disabled_reason).toMatch(
      /^Disabled automatically at \S+: 20 deliveries in a row failed after every retry; the last attempt: HTTP 500$/,
    );

    const u = await seedTenant();
    const fresh = await oneDelivery(u);
    await env.DB.prepare('UPDATE webhook_endpoints SET failed_deliveries = 7, failing_since = 1 WHERE id = ?').bind(fresh.e.id).run();
    receiver(() => new Response('ok'));
    expect((await deliverAll()).map((r) => r.outcome)).toEqual(['delivered']);
    expect(
      await env.DB.prepare('SELECT failing_since, failed_deliveries, disabled FROM webhook_endpoints WHERE id = ?')
        .bind(fresh.e.id)
        .first(),
    ).toEqual({ failing_since: null, failed_deliveries: 0, disabled: 0 });
  });

  it('a deleted endpoint’s pending deliveries are not sent', async () => {
    const t = await seedTenant();
    const { e, deliveryId } = await oneDelivery(t);
    const received = receiver();
    await json(await api(t, `/v1/webhooks/${e.id}`, { method: 'DELETE' }), 200);
    expect((await deliverAll())[0].outcome).toBe('stale'); // ended by the delete itself
    expect(await env.DB.prepare('SELECT status, last_error FROM webhook_deliveries WHERE id = ?').bind(deliveryId).first()).toEqual({
      status: 'failed',
      last_error: 'Not sent: the endpoint was deleted',
    });
    expect(received).toEqual([]);
  });

  it('after a rotation, the new secret signs and the previous one too, for a day', async () => {
    const t = await seedTenant();
    const { e } = await oneDelivery(t);
    const before = Date.now();
    const rotated = await json(await post(t, `/v1/webhooks/${e.id}/rotate-secret`), 200);
    const after = Date.now();
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(e.secret);
    // A day from the rotation, which happened between the two readings of the clock.
    expect(Date.parse(rotated.previous_secret_valid_until) - 24 * 3600_000).toBeGreaterThanOrEqual(before);
    expect(Date.parse(rotated.previous_secret_valid_until) - 24 * 3600_000).toBeLessThanOrEqual(after);
    expect(await json(await api(t, `/v1/webhooks/${e.id}`), 200)).not.toHaveProperty('secret');
    const received = receiver();
    await deliverAll();
    const [r] = received;
    expect(r.headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(rotated.secret).verify(r.body, r.headers)).toBeTruthy();
    expect(new Webhook(e.secret).verify(r.body, r.headers)).toBeTruthy();
    // Past the grace, only the new one.
    await json(await post(t, `/v1/webhooks/${e.id}/test`), 202);
    await deliverAll(Date.now() + 25 * 3600_000);
    expect(received[1].headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(() => new Webhook(e.secret).verify(received[1].body, received[1].headers)).toThrow();
  });

  it('a secret this deployment cannot decrypt (its WEBHOOK_ENCRYPTION_KEY changed) fails the attempt saying so; a rotation mends it', async () => {
    const t = await seedTenant();
    const { e } = await oneDelivery(t);
    const received = receiver();
    const otherKey = { ...env, WEBHOOK_ENCRYPTION_KEY: 'another-key-of-at-least-thirty-two-characters' };
    expect((await deliverWebhook(otherKey, sent.shift()!.body)).outcome).toBe('retrying');
    expect(received).toEqual([]);
    const [d] = (await json(await api(t, `/v1/webhooks/${e.id}/deliveries`), 200)).items;
    expect(d.attempts[0].error).toMatch(
      /^not sent: the endpoint's signing secret cannot be decrypted: WEBHOOK_ENCRYPTION_KEY is unset or not the key it was stored under/,
    );
    // Rotated under the key in use, it signs again (the previous secret, unreadable, adds no second signature).
    const rotated = await json(
      await app.request(
        `https://api.test/v1/webhooks/${e.id}/rotate-secret`,
        { method: 'POST', headers: { 'Service-API-Key': t.key } },
        otherKey,
        createExecutionContext(),
      ),
      200,
    );
    expect((await deliverWebhook(otherKey, sent.shift()!.body)).outcome).toBe('delivered');
    expect(received[0].headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(new Webhook(rotated.secret).verify(received[0].body, received[0].headers)).toBeTruthy();
  });

  it('the Worker’s queue handler makes the attempts and acks them', async () => {
    const t = await seedTenant();
    const { deliveryId } = await oneDelivery(t);
    const received = receiver();
    const worker = (await import('../../src/index.ts')).default;
    const batch = createMessageBatch('zk-proving-webhooks-local', [
      { id: 'w-1', timestamp: new Date(), attempts: 1, body: sent.shift()!.body },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env);
    expect((await getQueueResult(batch, ctx)).explicitAcks).toEqual(['w-1']);
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([deliveryId]);
  });

  it('end to end in workerd: the real local queue carries the message to the Worker, which delivers it', async () => {
    vi.restoreAllMocks(); // the real queue
    const t = await seedTenant();
    const received = receiver();
    const e = await createEndpoint(t);
    await json(await post(t, `/v1/webhooks/${e.id}/test`), 202);
    await eventually(() => expect(received).toHaveLength(1));
    expect(new Webhook(e.secret).verify(received[0].body, received[0].headers)).toMatchObject({ type: 'webhook.test' });
    await eventually(async () =>
      expect((await json(await api(t, `/v1/webhooks/${e.id}/deliveries`), 200)).items[0].status).toBe('delivered'),
    );
  });
});

describe('redeliver and test', () => {
  it('webhook.test: its payload, signed like any event; 409 for a disabled endpoint', async () => {
    const t = await seedTenant();
    const e = await createEndpoint(t);
    const d = await json(await post(t, `/v1/webhooks/${e.id}/test`), 202);
    expect(d).toMatchObject({
      id: expect.stringMatching(/^msg_[0-9a-f]{32}$/),
      type: 'webhook.test',
      subject_id: e.id,
      status: 'pending',
      attempts: [],
    });
    expect(d.payload).toEqual({
      type: 'webhook.test',
      timestamp: d.created_at,
      data: { endpoint_id: e.id, message: expect.stringContaining('test event') },
    });
    expect(sent.map((s) => s.body)).toEqual([{ type: 'webhook', delivery_id: d.id, attempt: 0 }]);
    const received = receiver();
    await deliverAll();
    expect(JSON.parse(received[0].body)).toEqual(d.payload);
    expect(new Webhook(e.secret).verify(received[0].body, received[0].headers)).toEqual(d.payload);
    await json(await patch(t, `/v1/webhooks/${e.id}`, { disabled: true }), 200);
    expect((await json(await post(t, `/v1/webhooks/${e.id}/test`), 409)).detail).toMatch(/disabled/);
  });

  it('redelivers a finished delivery as the same message; 409 while it is pending or its endpoint disabled', async () => {
    const t = await seedTenant();
    const e = await createEndpoint(t);
    const d = await json(await post(t, `/v1/webhooks/${e.id}/test`), 202);
    expect((await json(await post(t, `/v1/webhooks/${e.id}/deliveries/${d.id}/redeliver`), 409)).detail).toMatch(/still being sent/);
    const received = receiver();
    await deliverAll();
    const again = await json(await post(t, `/v1/webhooks/${e.id}/deliveries/${d.id}/redeliver`), 202);
    expect(again).toMatchObject({ id: d.id, status: 'pending', attempts: [expect.objectContaining({ attempt: 1, status_code: 200 })] });
    expect(sent.map((s) => s.body)).toEqual([{ type: 'webhook', delivery_id: d.id, attempt: 1 }]);
    await deliverAll();
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([d.id, d.id]);
    expect(received[1].body).toBe(received[0].body);
    const [after] = (await json(await api(t, `/v1/webhooks/${e.id}/deliveries`), 200)).items;
    expect(after.attempts.map((a: { attempt: number }) => a.attempt)).toEqual([1, 2]);
    await json(await patch(t, `/v1/webhooks/${e.id}`, { disabled: true }), 200);
    expect((await json(await post(t, `/v1/webhooks/${e.id}/deliveries/${d.id}/redeliver`), 409)).detail).toMatch(/disabled/);
    const other = await createEndpoint(t);
    await json(await post(t, `/v1/webhooks/${other.id}/deliveries/${d.id}/redeliver`), 404);
  });

  it('deliveries page newest first and filter by status', async () => {
    const t = await seedTenant();
    const e = await createEndpoint(t);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) ids.push((await json(await post(t, `/v1/webhooks/${e.id}/test`), 202)).id);
    receiver((r) => new Response('', { status: r.headers['webhook-id'] === ids[1] ? 500 : 200 }));
    await deliverWebhook(env, sent.shift()!.body);
    await deliverWebhook(env, sent.shift()!.body);
    const page = await json(await api(t, `/v1/webhooks/${e.id}/deliveries?page_size=2`), 200);
    expect(page.items.map((d: { id: string }) => d.id)).toEqual([ids[2], ids[1]]);
    expect(page.pagination).toEqual({ total: 3, page: 1, page_size: 2, pages: 2 });
    expect(
      (await json(await api(t, `/v1/webhooks/${e.id}/deliveries?status=delivered`), 200)).items.map((d: { id: string }) => d.id),
    ).toEqual([ids[0]]);
    expect(
      (await json(await api(t, `/v1/webhooks/${e.id}/deliveries?status=pending`), 200)).items.map((d: { id: string }) => d.id),
    ).toEqual([ids[2], ids[1]]);
    await json(await api(t, `/v1/webhooks/${e.id}/deliveries?status=lost`), 422);
  });
});

describe('the sweep', () => {
  /** Ends every pending delivery earlier tests left: the sweep looks at the whole database. */
  const settlePending = () => env.DB.prepare(`UPDATE webhook_deliveries SET status = 'failed' WHERE status = 'pending'`).run();

  it('sends a committed delivery whose message never went out, once it is overdue, and not twice', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const e = await createEndpoint(t);
    await settlePending();
    vi.mocked(env.WEBHOOKS.sendBatch).mockRejectedValueOnce(new Error('queue unavailable'));
    const id = await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    await json(await completeProof(job), 200);
    const [d] = await deliveriesOf(id);
    expect(d.status).toBe('pending');
    await eventually(() => expect(env.WEBHOOKS.sendBatch).toHaveBeenCalled());
    expect(sent).toEqual([]);
    const db = openDb(env.DB);
    // Not yet overdue: its message may still be on its way.
    expect((await sweepWebhooks(db, env)).webhooksRequeued).toBe(0);
    const later = Date.now() + 61_000;
    expect(await sweepWebhooks(db, env, later)).toMatchObject({ webhooksRequeued: 1 });
    expect(sent.map((s) => s.body)).toEqual([{ type: 'webhook', delivery_id: d.id, attempt: 0, render: 'proof' }]);
    // The message it sent is now the one in flight.
    expect((await sweepWebhooks(db, env, later + 1000)).webhooksRequeued).toBe(0);
    const received = receiver();
    await deliverAll();
    expect(received.map((r) => r.headers['webhook-id'])).toEqual([d.id]);
    expect(new Webhook(e.secret).verify(received[0].body, received[0].headers)).toMatchObject({ type: 'proof.succeeded' });
  });

  it('deletes delivered deliveries after 3 days and failed ones after 30, with their attempts', async () => {
    const t = await seedTenant();
    const e = await createEndpoint(t);
    const d = await json(await post(t, `/v1/webhooks/${e.id}/test`), 202);
    const f = await json(await post(t, `/v1/webhooks/${e.id}/test`), 202);
    receiver();
    await deliverAll();
    await env.DB.prepare(`UPDATE webhook_deliveries SET status = 'failed' WHERE id = ?`).bind(f.id).run();
    const db = openDb(env.DB);
    await settlePending();
    const count = async (id: string) => ({
      deliveries: await env.DB.prepare('SELECT count(*) AS n FROM webhook_deliveries WHERE id = ?').bind(id).first('n'),
      attempts: await env.DB.prepare('SELECT count(*) AS n FROM webhook_attempts WHERE delivery_id = ?').bind(id).first('n'),
    });
    const sweepAll = async (at: number) => {
      // At most 500 a sweep, oldest first: this test's are the newest.
      while ((await sweepWebhooks(db, env, at)).webhooksDeleted > 0);
    };
    expect((await sweepWebhooks(db, env, Date.now() + 2 * 86400_000)).webhooksDeleted).toBe(0);
    await sweepAll(Date.now() + 4 * 86400_000);
    expect(await count(d.id)).toEqual({ deliveries: 0, attempts: 0 });
    expect(await count(f.id)).toEqual({ deliveries: 1, attempts: 1 });
    expect((await sweepWebhooks(db, env, Date.now() + 29 * 86400_000)).webhooksDeleted).toBe(0);
    await sweepAll(Date.now() + 31 * 86400_000);
    expect(await count(f.id)).toEqual({ deliveries: 0, attempts: 0 });
  });
});

describe('what it costs in D1', () => {
  it('an event costs its transition one statement; an attempt two round trips, six statements before the payload is stored (a proof), five after; as logged', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await createEndpoint(t);
    await submitProof(t, program);
    const job = await claimJob(await seedAgent());
    const calls = recordD1Calls();
    await json(await completeProof(job), 200);
    const completion = calls.calls.find((c) => c.sql.some((q) => q.includes('webhook_deliveries')))!;
    expect(completion.sql.filter((q) => q.includes('webhook_deliveries'))).toHaveLength(1);
    await eventually(() => expect(sent).toHaveLength(1));
    // The ending also compacts the job's log after its response (src/jobs/logs.ts): let it finish, so only the attempts are counted.
    await eventually(async () =>
      expect((await env.DB.prepare('SELECT log_store FROM jobs WHERE id = ?').bind(job.id).first<{ log_store: string }>())?.log_store).toBe(
        'clean',
      ),
    );
    calls.clear();
    const log = vi.spyOn(console, 'log');
    // The first attempt fails; its retry reads no record (the payload is stored by then).
    receiver((_r, n) => new Response('', { status: n === 1 ? 503 : 200 }));
    const [first, retry] = await deliverAll();
    expect(first).toEqual({ outcome: 'retrying', statements: 6, roundTrips: 2 });
    expect(retry).toEqual({ outcome: 'delivered', statements: 5, roundTrips: 2 });
    expect(calls.calls).toHaveLength(first.roundTrips + retry.roundTrips);
    expect(calls.calls.reduce((n, c) => n + c.sql.length, 0)).toBe(first.statements + retry.statements);
    const parse = (line: unknown) => {
      try {
        return JSON.parse(String(line)) as Record<string, unknown>;
      } catch {
        return {};
      }
    };
    const logged = log.mock.calls.map((c) => parse(c[0])).filter((l) => l.msg === 'webhook attempt');
    expect(logged).toEqual([
      expect.objectContaining({ outcome: 'retrying', d1_statements: 6, d1_round_trips: 2 }),
      expect.objectContaining({ outcome: 'delivered', d1_statements: 5, d1_round_trips: 2 }),
    ]);
    calls.stop();
  });
});

describe('the console’s webhooks', () => {
  it('members read; owners and admins change; changes are in the audit log', async () => {
    const t = await seedTenant();
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const member = await signIn(await seedUser(t.orgId, 'member'));
    const base = `/console/v1/orgs/${t.orgId}/webhooks`;
    const created = await json(await postJson(base, { url: HOOK, events: ['proof.succeeded'] }, { token: owner.token }), 201);
    expect(created).toMatchObject({
      url: HOOK,
      events: ['proof.succeeded'],
      created_by: owner.email,
      secret: expect.stringMatching(/^whsec_/),
    });
    expect((await as(member, base)).items.map((e: { id: string }) => e.id)).toEqual([created.id]);
    expect(await as(member, `${base}/${created.id}`)).not.toHaveProperty('secret');
    expect((await as(member, `${base}/${created.id}/deliveries`)).items).toEqual([]);
    // The API sees the same endpoint.
    expect((await json(await api(t, `/v1/webhooks/${created.id}`), 200)).created_by).toBe(owner.email);

    for (const [method, path, body] of [
      ['POST', base, { url: HOOK }],
      ['PATCH', `${base}/${created.id}`, { disabled: true }],
      ['DELETE', `${base}/${created.id}`, undefined],
      ['POST', `${base}/${created.id}/rotate-secret`, undefined],
      ['POST', `${base}/${created.id}/test`, undefined],
    ] as const) {
      const res = await consoleFetch(path, { method, token: member.token, ...(body ? { body: JSON.stringify(body) } : {}) });
      expect(res.status, `${method} ${path}`).toBe(403);
    }

    const test = await json(await consoleFetch(`${base}/${created.id}/test`, { method: 'POST', token: owner.token }), 202);
    receiver();
    await deliverAll();
    expect((await as(member, `${base}/${created.id}/deliveries`)).items[0]).toMatchObject({
      id: test.id,
      status: 'delivered',
      attempts: [expect.objectContaining({ status_code: 200 })],
    });
    await json(await consoleFetch(`${base}/${created.id}/deliveries/${test.id}/redeliver`, { method: 'POST', token: owner.token }), 202);
    const off = await json(
      await consoleFetch(`${base}/${created.id}`, { method: 'PATCH', token: owner.token, body: JSON.stringify({ disabled: true }) }),
      200,
    );
    expect(off.disabled_reason).toMatch(new RegExp(`^Disabled by ${owner.email} at `));
    const rotated = await json(await consoleFetch(`${base}/${created.id}/rotate-secret`, { method: 'POST', token: owner.token }), 200);
    expect(rotated.secret).not.toBe(created.secret);
    await json(await consoleFetch(`${base}/${created.id}`, { method: 'DELETE', token: owner.token }), 200);
    await json(await consoleFetch(`${base}/${created.id}`, { token: owner.token }), 404);

    const audit = (await as(owner, `/console/v1/orgs/${t.orgId}/audit`)).items.filter((a: { action: string }) =>
      a.action.startsWith('webhook.'),
    );
    expect(audit.map((a: { action: string; actor: string; target: string }) => [a.action, a.actor, a.target])).toEqual([
      ['webhook.delete', owner.email, created.id],
      ['webhook.rotate_secret', owner.email, created.id],
      ['webhook.update', owner.email, created.id],
      ['webhook.create', owner.email, created.id],
    ]);
    // Changes made with an API key are there too, naming the key.
    const viaApi = await createEndpoint(t);
    const [entry] = (await as(owner, `/console/v1/orgs/${t.orgId}/audit`)).items;
    expect(entry).toMatchObject({
      action: 'webhook.create',
      target: viaApi.id,
      actor: expect.stringMatching(new RegExp(`^${t.owner} \\(API key sk_[0-9a-f]{8}…\\)$`)),
    });
  });

  it('another organization’s endpoints are not found from the console either', async () => {
    const t = await seedTenant();
    const other = await seedTenant();
    const e = await createEndpoint(t);
    const stranger = await signIn(await seedUser(other.orgId, 'owner'));
    await json(await consoleFetch(`/console/v1/orgs/${other.orgId}/webhooks/${e.id}`, { token: stranger.token }), 404);
    await json(await consoleFetch(`/console/v1/orgs/${other.orgId}/webhooks/${e.id}`, { method: 'DELETE', token: stranger.token }), 404);
    await json(await consoleFetch(`/console/v1/orgs/${t.orgId}/webhooks`, { token: stranger.token }), 404);
    // A fresh API key of the organization sees what the console made.
    const key = await runAdmin(createApiKey(t.orgId, 'second@example.com'));
    expect((await json(await api({ ...t, key }, '/v1/webhooks'), 200)).items.map((x: { id: string }) => x.id)).toEqual([e.id]);
  });
});
