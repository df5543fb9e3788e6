// One door (issue 28 item 1): every route declares its credential, body and rate budget
// where it is declared, and the app enforces them before the handler. Walked as an
// attacker would, over the app's route table (a route added later is walked without
// editing this file): every route with no, invalid and wrong-kind credentials and hostile
// bodies (its cap + 1 bytes, 100,000-deep nesting, a body that never ends) is refused
// with the right status, never a 500, before a byte of its body is read and with no D1
// write; a caller the route does take gets its body refused at the cap, never parsed
// whole. Then findings 1 and 3 of the issue, retried as found, and the budgets.
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { Hono } from 'hono';
import { sign } from 'hono/jwt';
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { app } from '../../src/app.ts';
import type { AppEnv } from '../../src/app-env.ts';
import { BODY_CAPS } from '../../src/lib/limits.ts';
import { declaredBy, doorGuard } from '../../src/middleware/door.ts';
import { CREDENTIALS, RATE_BUDGETS, type Credential, type Declaration } from '../../src/middleware/door-kinds.ts';
import { onError } from '../../src/lib/errors.ts';
import { CSRF, seedUser, signIn, type Session } from './console-helpers.ts';
import { recordD1Calls, type D1Call } from './d1-calls.ts';
import { claimJob, drainQueuedJobs, presence, seedAgent, type TestAgent } from './fleet-helpers.ts';
import { BASE, registerProgram, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import { seedPublisher } from './key-helpers.ts';
import { inOneRateWindow } from './rate-helpers.ts';
import { declarationOf, routeKey, servedRoutes, type Route } from './routes.ts';

afterEach(() => vi.restoreAllMocks());

// ---------------------------------------------------------------------------
// Bodies that record what was asked of them

/** What a body's reader took: bytes pulled, and whether it was read to its end. */
interface Watch {
  pulled: number;
  ended: boolean;
}

const CHUNK = 16 * 1024;

/**
 * A body of `total` bytes (Infinity: one that never ends) of `fill`, made only as it
 * is pulled (nothing is read ahead), recording what was taken.
 */
function watched(total: number, fill: number): { stream: ReadableStream<Uint8Array>; watch: Watch } {
  const watch: Watch = { pulled: 0, ended: false };
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        const n = Math.min(CHUNK, total - watch.pulled);
        if (n <= 0) {
          watch.ended = true;
          controller.close();
          return;
        }
        watch.pulled += n;
        controller.enqueue(new Uint8Array(n).fill(fill));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, watch };
}

/** A route's byte cap, as its door declares it (0: it takes no body). */
function capOf(body: Declaration['body']): number {
  if (body.kind === 'none') return 0;
  return typeof body.maxBytes === 'function' ? body.maxBytes(env) : body.maxBytes;
}

/** Whether a route reads JSON: a JSON body, or (a form's alternative) sent as one. */
const isJson = (body: Declaration['body']) => body.kind === 'json' || (body.kind === 'multipart' && !!body.orJson);

/** The caps of what a route is sent: JSON when it takes JSON at all, else its own kind. */
function sentAs(body: Declaration['body']): { cap: number; type: string } {
  if (body.kind === 'multipart' && body.orJson) return { cap: body.orJson.maxBytes, type: 'application/json' };
  if (body.kind === 'multipart') return { cap: capOf(body), type: 'multipart/form-data; boundary=door-walk' };
  if (body.kind === 'stream') return { cap: capOf(body), type: 'application/octet-stream' };
  return { cap: capOf(body), type: 'application/json' };
}

interface Hostile {
  name: string;
  /** Whether it is sent to a route declaring `body`. */
  for(body: Declaration['body']): boolean;
  make(body: Declaration['body']): { stream: ReadableStream<Uint8Array>; watch: Watch; headers: Record<string, string> };
}

const DEPTH = 100_000;
const HOSTILE: Hostile[] = [
  {
    name: 'cap + 1 bytes',
    for: () => true,
    make(body) {
      const { cap, type } = sentAs(body);
      return { ...watched(cap + 1, 0x20), headers: { 'content-type': type, 'content-length': String(cap + 1) } };
    },
  },
  {
    name: `${DEPTH.toLocaleString('en')}-deep nesting`,
    for: (body) => body.kind === 'none' || isJson(body),
    make(body) {
      return { ...watched(DEPTH, 0x5b), headers: { 'content-type': sentAs(body).type, 'content-length': String(DEPTH) } };
    },
  },
  {
    name: 'a body that never ends',
    for: () => true,
    make(body) {
      return { ...watched(Infinity, 0x5b), headers: { 'content-type': sentAs(body).type } };
    },
  },
];

// ---------------------------------------------------------------------------
// Credentials: valid ones of every kind (each wrong wherever its kind is not the route's), and invalid ones

interface World {
  tenant: Tenant;
  session: Session;
  agent: TestAgent;
  jobToken: string;
  queueToken: string;
  publisherToken: string;
  configId: string;
}

interface Presented {
  name: string;
  /** The kind it is valid as; null: valid as none. */
  kind: Credential | null;
  headers(w: World): Record<string, string>;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
/** A well-formed HS256 token signed with a key the service does not have (a console access token's or a queue token's shape). */
const forgedJwt = await sign(
  { sub: 'at_forged', sid: 'forged', aid: 'forged', typ: 'queue', exp: Math.floor(Date.now() / 1000) + 3600 },
  'not-the-service-secret-but-32-characters-long',
  'HS256',
);

const PRESENTED: Presented[] = [
  { name: 'no credential', kind: null, headers: () => ({}) },
  { name: 'a made-up API key', kind: null, headers: () => ({ 'Service-API-Key': `sk_made_up_${'x'.repeat(40)}` }) },
  { name: 'a made-up bearer token', kind: null, headers: () => bearer(`at_made_up_${'x'.repeat(40)}`) },
  { name: 'a forged JWT', kind: null, headers: () => bearer(forgedJwt) },
  { name: 'an API key', kind: 'apiKey', headers: (w) => ({ 'Service-API-Key': w.tenant.key }) },
  { name: 'an API key as a bearer token', kind: null, headers: (w) => bearer(w.tenant.key) },
  { name: 'a console session', kind: 'console', headers: (w) => bearer(w.session.token) },
  { name: 'an agent token', kind: 'agent', headers: (w) => bearer(w.agent.token) },
  { name: 'a job token', kind: 'job', headers: (w) => bearer(w.jobToken) },
  { name: 'a queue token', kind: 'queue', headers: (w) => bearer(w.queueToken) },
  { name: 'a publisher token', kind: 'publisher', headers: (w) => bearer(w.publisherToken) },
];

/** The kinds of presented credential a route's door takes. */
function takes(credential: Credential): Credential[] {
  if (credential === 'agentOrPublisher') return ['agent', 'publisher'];
  return [credential];
}

// ---------------------------------------------------------------------------
// Requests

/** Path parameters: plausible values (the door answers before any is looked up). */
const PARAMS: Record<string, (w: World) => string> = {
  org_id: (w) => w.tenant.orgId,
  config_id: (w) => w.configId,
  name: () => 'app_pk',
  artifact: () => 'elf',
  kind: () => 'stark',
  upload_id: () => `${'0'.repeat(26)}.walked`,
  part_number: () => '1',
  version: () => '1',
};

const pathOf = (route: Route, w: World) =>
  route.path.replace(/:([A-Za-z_]+)/g, (_, p: string) => encodeURIComponent(PARAMS[p]?.(w) ?? crypto.randomUUID()));

/** One address per route (198.19.0.0/16, benchmarking addresses): no route's requests meet another's address budget. */
const addressOf = (route: Route) => {
  const at = servedRoutes().findIndex((r) => routeKey(r) === routeKey(route));
  return `198.19.${(at >> 8) & 255}.${at & 255}`;
};

interface Sent {
  status: number;
  text: string;
  watch: Watch | null;
  calls: D1Call[];
}

/**
 * `route` called in this isolate (so the body stream is the test's own: through the
 * Worker's loopback, workerd pumps a body whether or not it is read), its D1 calls
 * recorded.
 */
async function send(route: Route, w: World, headers: Record<string, string>, hostile?: Hostile, query = ''): Promise<Sent> {
  const declaration = declarationOf(route)!;
  const made = hostile?.make(declaration.body);
  const request = new Request(BASE + pathOf(route, w) + query, {
    method: route.method,
    headers: { ...CSRF, origin: BASE, 'cf-connecting-ip': addressOf(route), ...headers, ...made?.headers },
    body: made?.stream,
    duplex: 'half',
  } as RequestInit);
  const recorder = recordD1Calls();
  try {
    const ctx = createExecutionContext();
    const res = await app.fetch(request, env, ctx);
    const text = res.headers.get('content-type')?.includes('text/event-stream') ? (await res.body?.cancel(), '') : await res.text();
    await waitOnExecutionContext(ctx);
    return { status: res.status, text, watch: made?.watch ?? null, calls: [...recorder.calls] };
  } finally {
    recorder.stop();
  }
}

const hasBody = (route: Route) => route.method !== 'GET' && route.method !== 'HEAD';

// ---------------------------------------------------------------------------

let w: World;
beforeAll(async () => {
  await drainQueuedJobs();
  const tenant = await seedTenant();
  const configId = await seedConfig();
  const session = await signIn(await seedUser(tenant.orgId, 'owner'));
  const agent = await seedAgent();
  await registerProgram(tenant, configId);
  const job = await claimJob(agent);
  const { queue_token } = await presence(agent);
  w = { tenant, session, agent, jobToken: job.job_token, queueToken: queue_token, publisherToken: await seedPublisher(null), configId };
});

describe('every route declares its door', () => {
  it('finds a declaration, of the kinds door-kinds.ts names, at every route app.routes serves', () => {
    const routes = servedRoutes();
    expect(routes.length).toBeGreaterThan(120);
    expect(routes.filter((r) => !declarationOf(r)).map(routeKey)).toEqual([]);
    for (const r of routes) {
      const d = declarationOf(r)!;
      expect(Object.keys(CREDENTIALS), routeKey(r)).toContain(d.credential);
      expect(Object.keys(RATE_BUDGETS), routeKey(r)).toContain(d.rate);
      // A route that takes no credential takes a few KiB at most.
      if (d.credential === 'none') expect(capOf(d.body), routeKey(r)).toBeLessThanOrEqual(BODY_CAPS.anonymous.maxBytes);
      if (!hasBody(r)) expect(d.body.kind, routeKey(r)).toBe('none');
    }
  });

  it('refuses at runtime a route that declares none, before its handler runs', async () => {
    let ran = false;
    const bare = new Hono<AppEnv>().use(doorGuard);
    bare.get('/undeclared', (c) => ((ran = true), c.text('served')));
    bare.onError(onError);
    vi.spyOn(console, 'error').mockImplementation(() => undefined);
    const res = await bare.request('/undeclared', {}, env);
    expect(res.status).toBe(500);
    expect(ran).toBe(false);
    // A path no route serves is still a plain 404.
    expect((await bare.request('/nothing-here', {}, env)).status).toBe(404);
    // And declaredBy knows a door from any other handler.
    expect(app.routes.some((r) => declaredBy(r.handler))).toBe(true);
    expect(declaredBy(() => undefined)).toBeUndefined();
  });
});

describe('the walk', () => {
  it(
    'refuses no, invalid and wrong-kind credentials at every route, with any body: 401 before a byte is read, no D1 write',
    { timeout: 300_000 },
    async () => {
      const problems: string[] = [];
      let sent = 0;
      const walked = new Set<string>();
      for (const route of servedRoutes()) {
        const d = declarationOf(route)!;
        if (d.credential === 'none') continue;
        const bodies: (Hostile | undefined)[] = hasBody(route) ? HOSTILE : [undefined];
        for (const presented of PRESENTED) {
          if (d.credential === 'signedLink') {
            // The link's signature is the credential: a forged one, whatever else comes.
            if (presented.kind !== null) continue;
          } else if (presented.kind && takes(d.credential).includes(presented.kind)) continue;
          for (const hostile of bodies) {
            const query =
              d.credential === 'signedLink' ? `?expires=${Math.floor(Date.now() / 1000) + 3600}&signature=${'0'.repeat(64)}` : '';
            const r = await send(route, w, presented.headers(w), hostile, query);
            sent++;
            walked.add(routeKey(route));
            const what = `${routeKey(route)} with ${presented.name}${hostile ? ` and ${hostile.name}` : ''}`;
            const expected = d.credential === 'signedLink' ? 403 : 401;
            if (r.status !== expected) problems.push(`${what}: ${r.status} (expected ${expected}): ${r.text.slice(0, 160)}`);
            if (r.watch && r.watch.pulled > 0) problems.push(`${what}: ${r.watch.pulled} bytes of its body were read`);
            const writes = r.calls.filter((c) => c.rowsWritten > 0);
            if (writes.length) problems.push(`${what}: wrote ${writes.map((c) => c.sql.join('; ')).join(' | ')}`);
            // An unknown credential costs at most one read (an API key's: a replica's refusal, confirmed on the primary).
            if (r.calls.length > (d.credential === 'apiKey' ? 2 : 1)) problems.push(`${what}: ${r.calls.length} D1 round trips`);
          }
        }
      }
      const credentialed = servedRoutes().filter((r) => declarationOf(r)!.credential !== 'none');
      console.log(
        `door walk, refused credentials: ${walked.size} routes × ${PRESENTED.length} credentials (those not of the route's kind) × ${HOSTILE.length} hostile bodies (none on GET): ${sent} requests`,
      );
      expect(walked.size).toBe(credentialed.length);
      expect(problems).toEqual([]);
    },
  );

  it(
    'holds every body to its cap for the callers a route takes: 413 unread past its Content-Length, cut at the cap, never parsed whole',
    { timeout: 300_000 },
    async () => {
      const problems: string[] = [];
      let sent = 0;
      // Routes that take no body last: one of them may end the very session the walk
      // presents (DELETE /console/v1/me/sessions signs out everywhere).
      const takesNone = (r: Route) => declarationOf(r)!.body.kind === 'none';
      const routes = servedRoutes()
        .filter(hasBody)
        .sort((a, b) => Number(takesNone(a)) - Number(takesNone(b)));
      for (const route of routes) {
        const d = declarationOf(route)!;
        // The caller the route takes: its own kind of credential, or none.
        const presented = d.credential === 'none' ? PRESENTED[0] : PRESENTED.find((p) => p.kind === takes(d.credential)[0])!;
        for (const hostile of HOSTILE.filter((h) => h.for(d.body))) {
          const r = await send(route, w, presented.headers(w), hostile);
          sent++;
          const what = `${routeKey(route)} (${d.body.kind}) with ${presented.name} and ${hostile.name}`;
          const { cap } = sentAs(d.body);
          const watch = r.watch!;
          if (r.status >= 500) problems.push(`${what}: ${r.status}: ${r.text.slice(0, 160)}`);
          if (d.body.kind === 'none') {
            // Its body is dropped: nothing may read it, whatever it is.
            if (watch.pulled > 0) problems.push(`${what}: a route that takes no body read ${watch.pulled} bytes`);
            continue;
          }
          if (r.status < 400) problems.push(`${what}: ${r.status}, not refused`);
          if (hostile === HOSTILE[0] && (r.status !== 413 || watch.pulled > 0))
            problems.push(`${what}: ${r.status} after reading ${watch.pulled} bytes (expected 413 with none read)`);
          if (watch.pulled > cap + CHUNK) problems.push(`${what}: read ${watch.pulled} bytes, past its cap of ${cap}`);
          // JSON is never read whole when it is hostile, so nothing could have parsed it.
          if (isJson(d.body) && watch.ended) problems.push(`${what}: read to its end (${watch.pulled} bytes)`);
          if (hostile === HOSTILE[1] && isJson(d.body) && ![413, 422].includes(r.status))
            problems.push(`${what}: ${r.status} (expected 413 or 422)`);
          if (d.body.kind === 'stream' && hostile === HOSTILE[2] && r.status !== 411)
            problems.push(`${what}: ${r.status} (a stream needs its Content-Length: 411)`);
        }
      }
      console.log(
        `door walk, callers the route takes: ${routes.length} routes with a body × ${HOSTILE.length} hostile bodies: ${sent} requests`,
      );
      expect(problems).toEqual([]);
    },
  );
});

// ---------------------------------------------------------------------------
// The issue's findings, retried as found

/** A request in this isolate with a watched body, its D1 calls recorded. */
async function post(path: string, headers: Record<string, string>, body: { stream: ReadableStream<Uint8Array>; watch: Watch } | null) {
  const recorder = recordD1Calls();
  try {
    const ctx = createExecutionContext();
    const res = await app.fetch(
      new Request(BASE + path, {
        method: 'POST',
        headers: { ...CSRF, origin: BASE, ...headers },
        body: body?.stream,
        duplex: 'half',
      } as RequestInit),
      env,
      ctx,
    );
    const text = await res.text();
    await waitOnExecutionContext(ctx);
    return { status: res.status, text, calls: [...recorder.calls] };
  } finally {
    recorder.stop();
  }
}

const MiB = 1024 * 1024;

describe('finding 1: an anonymous body costs a few KiB at most', () => {
  for (const path of ['/console/v1/auth/signin', '/console/v1/auth/password-reset'])
    it(`${path}: 32 MiB of nested arrays is refused unread, or cut at ${BODY_CAPS.anonymous.maxBytes} bytes when it has no length; nothing parsed, no D1`, async () => {
      const address = { 'cf-connecting-ip': '198.18.1.1', 'content-type': 'application/json' };
      const declared = watched(32 * MiB, 0x5b);
      const a = await post(path, { ...address, 'content-length': String(32 * MiB) }, declared);
      expect(a.status, a.text).toBe(413);
      expect(JSON.parse(a.text).detail).toBe(`Request body too large: the limit is ${BODY_CAPS.anonymous.maxBytes} bytes`);
      expect(declared.watch.pulled).toBe(0);
      expect(a.calls).toEqual([]);
      const chunked = watched(32 * MiB, 0x5b);
      const b = await post(path, address, chunked);
      expect(b.status, b.text).toBe(413);
      expect(chunked.watch.pulled).toBeLessThanOrEqual(BODY_CAPS.anonymous.maxBytes + CHUNK);
      expect(b.calls).toEqual([]);
      // Nested within the cap: refused by the scan before anything parses it.
      const deep = new TextEncoder().encode('['.repeat(BODY_CAPS.anonymous.maxDepth + 1));
      const c = await post(path, address, { stream: new Blob([deep]).stream(), watch: { pulled: 0, ended: false } });
      expect(c.status, c.text).toBe(422);
      expect(JSON.parse(c.text).detail[0].msg).toMatch(/nested deeper than 4 levels/);
      expect(c.calls).toEqual([]);
    });
});

describe('finding 3: the fleet checks its token before the body', () => {
  const madeUp = bearer(`at_made_up_${crypto.randomUUID()}`);
  const nested = () => watched(4 * MiB, 0x5b);
  for (const path of [
    '/internal/v1/lease/heartbeat',
    '/internal/v1/jobs/claim',
    '/internal/v1/agents/presence',
    '/internal/v1/agents/leave',
  ])
    it(`${path}: a made-up token with 4 MiB of nested JSON is refused 401 unread, with one read and no write`, async () => {
      const body = nested();
      const r = await post(path, { ...madeUp, 'cf-connecting-ip': '198.18.1.2', 'content-type': 'application/json' }, body);
      expect(r.status, r.text).toBe(401);
      expect(body.watch.pulled).toBe(0);
      // One read of the token, no claim transaction (its batch is ~15 statements on the primary).
      expect(r.calls.map((c) => [c.sql.length, c.rowsWritten])).toEqual([[1, 0]]);
      expect(r.calls[0].sql[0]).toMatch(/^select .* from "(agent_tokens|leases)"/);
    });

  it('a claim with a made-up token and a well-formed body runs no claim transaction: one read, no write', async () => {
    const body = JSON.stringify({ agent_id: 'a', name: 'n', machine_type: 'm', gpus: 1, engines: ['dev'], configs: [] });
    const r = await post(
      '/internal/v1/jobs/claim',
      { ...madeUp, 'cf-connecting-ip': '198.18.1.7', 'content-type': 'application/json' },
      {
        stream: new Blob([body]).stream(),
        watch: { pulled: 0, ended: false },
      },
    );
    expect(r.status, r.text).toBe(401);
    // Was the claim's batch of 16 statements on the primary (writing nothing, but on the primary).
    expect(r.calls.map((c) => [c.sql.length, c.rowsWritten])).toEqual([[1, 0]]);
  });

  it('/internal has a budget per address for refused tokens: past it, 429, and a made-up claim is turned away before any D1', async () => {
    const address = { 'cf-connecting-ip': '198.18.1.3', 'content-type': 'application/json' };
    let refused = 0;
    let last = { status: 0, text: '', calls: [] as D1Call[] };
    // Forged queue tokens: refused by their signature alone, so the loop is quick.
    while (refused < 1000) {
      last = await post('/internal/v1/queue/pull', { ...bearer(forgedJwt), ...address }, null);
      if (last.status !== 401) break;
      refused++;
    }
    expect(last.status, last.text).toBe(429);
    expect(refused).toBeGreaterThan(0);
    const claim = await post('/internal/v1/jobs/claim', { ...bearer('at_made_up_after'), ...address }, nested());
    expect(claim.status).toBe(429);
    expect(JSON.parse(claim.text).detail).toMatch(/^Too many refused credentials from this client address/);
    expect(claim.calls).toEqual([]);
    // Another address is not affected, and a live token from it is served.
    const other = await post(
      '/internal/v1/agents/leave',
      { ...bearer(w.agent.token), 'cf-connecting-ip': '198.18.1.4' },
      {
        stream: new Blob([JSON.stringify({ agent_id: crypto.randomUUID() })]).stream(),
        watch: { pulled: 0, ended: false },
      },
    );
    expect(other.status, other.text).toBe(200);
  });
});

describe('budgets', () => {
  /** Sends until the first non-`ok` answer (at most `max`); that answer and how many passed. */
  async function untilRefused(send: () => Promise<{ status: number; text: string }>, ok: number, max: number) {
    for (let passed = 0; passed < max; passed++) {
      const r = await send();
      if (r.status !== ok) return { ...r, passed };
    }
    throw new Error(`still ${ok} after ${max} requests`);
  }

  it('a route with no credential has a budget per client address', async () => {
    // The local limiter's windows turn on the minute: a run that spans one is made again, from a new address.
    let run = 0;
    const r = await inOneRateWindow(() => {
      const address = `198.18.3.${run++}`;
      return untilRefused(() => post('/console/v1/auth/signout', { 'cf-connecting-ip': address }, null), 200, 400);
    });
    expect(r.status, r.text).toBe(429);
    expect(r.passed).toBeGreaterThan(0);
    expect(JSON.parse(r.text).detail).toMatch(/^Rate limit exceeded: this client address has used its limit of requests for signing in/);
    expect((await post('/console/v1/auth/signout', { 'cf-connecting-ip': '198.18.1.6' }, null)).status).toBe(200);
  });

  it('an agent token has its own budget, whatever address it comes from', async () => {
    // A run that spans the turn of the limiter's window is made again, with a new agent.
    const r = await inOneRateWindow(async () => {
      const agent = await seedAgent();
      let n = 0;
      return untilRefused(
        async () => {
          const res = await app.request(
            `/internal/v1/configs/${w.configId}`,
            { headers: { ...bearer(agent.token), 'cf-connecting-ip': `198.18.2.${n++ % 200}` } },
            env,
          );
          return { status: res.status, text: await res.text() };
        },
        200,
        400,
      );
    });
    expect(r.status, r.text).toBe(429);
    expect(JSON.parse(r.text).detail).toMatch(/^Rate limit exceeded: this agent token has used its request limit/);
    // Another agent goes on.
    expect((await app.request(`/internal/v1/configs/${w.configId}`, { headers: bearer(w.agent.token) }, env)).status).toBe(200);
  });
});
