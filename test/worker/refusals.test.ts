// Refusals that say what went wrong (issue 31 finding 6): a body of a type the route
// does not read is 415 naming the type it reads; a known path asked with a method it
// does not serve is 405 with Allow; a revoked API key is told apart from an unknown
// one, to the holder of its secret only; a key refused a route hears what its scope
// allows and what the route needs; budget figures under a cent keep their digits.
import { describe, expect, it } from 'vitest';
import { createApiKey, revokeApiKey } from '../../src/admin/statements.ts';
import { budgetRefusal, usd } from '../../src/jobs/budgets.ts';
import { consoleFetch, CSRF, seedUser, signIn } from './console-helpers.ts';
import { api, json, programForm, guest, runAdmin, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import { declarationAt, servedRoutes } from './routes.ts';

const send = (t: Tenant | null, method: string, path: string, body?: BodyInit, type?: string) =>
  api(t, path, { method, body, headers: type ? { 'content-type': type } : {} });

describe('a body of a type the route does not read: 415, before the key is looked at', () => {
  it('a form route sent JSON names multipart/form-data', async () => {
    const t = await seedTenant();
    const res = await send(t, 'POST', `/v1/programs?config_id=${await seedConfig()}`, '{"elf": "x"}', 'application/json');
    expect(await json(res, 415)).toEqual({
      detail: 'Unsupported Content-Type "application/json": send this body as multipart/form-data (with curl: -F name=@file)',
    });
    expect(res.headers.get('Accept-Post')).toBe('multipart/form-data');
    // With no Content-Type a form cannot be read either; a form still registers.
    const bytes = new TextEncoder().encode('x'); // a string would be sent as text/plain
    expect((await json(await send(t, 'POST', `/v1/verify/stark?program_id=${crypto.randomUUID()}`, bytes), 415)).detail).toMatch(
      /^Unsupported Content-Type \(none\): send this body as multipart\/form-data/,
    );
    const form = programForm(guest('hello.elf'), new Uint8Array([1, 2, 3]));
    expect((await api(t, `/v1/programs?config_id=${await seedConfig()}`, { method: 'POST', body: form })).status).toBe(201);
  });

  it('curl -d (a form-encoded body) on a JSON route, and a console route sent text/plain (Accept-Patch)', async () => {
    const t = await seedTenant();
    expect((await json(await send(t, 'POST', '/v1/webhooks', 'url=https://x', 'application/x-www-form-urlencoded'), 415)).detail).toBe(
      `Unsupported Content-Type "application/x-www-form-urlencoded": send this body as application/json (with curl: -H 'Content-Type: application/json')`,
    );
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const res = await consoleFetch(`/console/v1/orgs/${t.orgId}/webhooks/${crypto.randomUUID()}`, {
      method: 'PATCH',
      token: owner.token,
      body: '{"url": "https://x"}',
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.headers.get('Accept-Patch')).toBe('application/json');
  });

  it('a bad key is 401 first; no body at all is the route’s to name as missing', async () => {
    expect(await json(await send({ orgId: '', owner: '', key: 'sk_made_up' }, 'POST', '/v1/projects', '"p"', 'text/plain'), 401)).toEqual({
      detail: 'Invalid API key: no key has this secret (check that it was copied whole)',
    });
    const t = await seedTenant();
    expect((await json(await send(t, 'POST', '/v1/projects', '', 'text/plain'), 422)).detail[0]).toMatchObject({ type: 'missing' });
  });
});

describe('a known path with a method it does not serve: 405 with Allow', () => {
  /** `path` with each parameter filled (`:org_id` with the caller's organization). */
  const concrete = (path: string, orgId: string) =>
    path.replace(/:org_id\b/, orgId).replace(/:[A-Za-z_]+(\{[^}]*\})?/g, () => crypto.randomUUID());

  it('every served path, asked with each method it does not serve, lists the ones it does', async () => {
    const t = await seedTenant();
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const byPath = new Map<string, Set<string>>();
    for (const r of servedRoutes()) {
      if (r.path.includes('*')) continue;
      byPath.set(r.path, (byPath.get(r.path) ?? new Set()).add(r.method));
    }
    expect(byPath.size).toBeGreaterThan(60);
    const wrong: string[] = [];
    for (const [path, served] of byPath) {
      const method = ['PUT', 'PATCH', 'DELETE', 'POST'].find((m) => !served.has(m))!;
      const url = concrete(path, t.orgId);
      // Another route's pattern may serve it (PUT …/uploads/:id/complete is a part upload).
      if (declarationAt(method, url)) continue;
      const headers = { authorization: `Bearer ${owner.token}`, 'content-type': 'application/json', ...CSRF };
      const res = await api(t, url, { method, headers });
      const body = await res.text();
      const allow = res.headers.get('Allow')?.split(', ') ?? [];
      // The path's own methods (HEAD with GET), and any a pattern of another route serves at it (GET /v1/verify/:id at /v1/verify/stark).
      const expected = [...served].flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m]));
      if (res.status !== 405 || !expected.every((m) => allow.includes(m))) wrong.push(`${method} ${path}: ${res.status} ${body}`);
      else expect(JSON.parse(body).detail).toMatch(new RegExp(`^Method Not Allowed: .* takes ${allow.join(', ')}, not ${method}$`));
    }
    expect(wrong).toEqual([]);
  });

  it('the finding: PUT on a GET route; an unknown path stays 404, a page 404 stays HTML', async () => {
    const t = await seedTenant();
    const res = await send(t, 'PUT', '/v1/validate_api_key');
    expect(await json(res, 405)).toEqual({ detail: 'Method Not Allowed: /v1/validate_api_key takes GET, HEAD, not PUT' });
    expect(res.headers.get('Allow')).toBe('GET, HEAD');
    expect(await json(await send(t, 'GET', `/v1/proofs/${crypto.randomUUID()}/cancel`), 405)).toMatchObject({
      detail: expect.stringMatching(/takes POST, not GET$/),
    });
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    expect(await json(await consoleFetch('/console/v1/auth/signin', { token: owner.token, headers: CSRF }), 405)).toMatchObject({
      detail: expect.stringMatching(/takes POST, not GET$/),
    });
    expect(await json(await send(t, 'GET', '/v1/no-such-thing'), 404)).toEqual({ detail: 'Not Found' });
    expect(await json(await send(t, 'PUT', '/v1/proofs/a/b/c/d'), 404)).toEqual({ detail: 'Not Found' });
    const unknown = await consoleFetch('/console/v1/no-such-thing', { method: 'PUT', token: owner.token });
    expect(await json(unknown, 404)).toEqual({ detail: 'Not Found' });
    expect(await json(await send(null, 'POST', '/nowhere'), 404)).toEqual({ detail: 'Not Found' });
    const page = await send(null, 'GET', '/console/no-such-page');
    expect(page.status).toBe(404);
    expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  });
});

describe('a revoked API key is told apart from an unknown one', () => {
  it('says revoked, and when, only to whoever sends the revoked key itself', async () => {
    const t = await seedTenant();
    const key = await runAdmin(createApiKey(t.orgId, t.owner));
    await json(await send({ ...t, key }, 'GET', '/v1/validate_api_key'), 200);
    await runAdmin(revokeApiKey(key));
    const revoked = /^This API key was revoked at \d{4}-\d{2}-\d{2}T[\d:.]+Z: use another, or create one in the console$/;
    expect((await json(await send({ ...t, key }, 'GET', '/v1/validate_api_key'), 401)).detail).toMatch(revoked);
    // On a route that reads a body, and one whose first statement writes.
    expect((await json(await send({ ...t, key }, 'POST', '/v1/projects', '"p"', 'application/json'), 401)).detail).toMatch(revoked);
    const input = JSON.stringify({ input: [] });
    expect((await json(await send({ ...t, key }, 'POST', `/v1/proofs?program_id=${crypto.randomUUID()}`, input), 401)).detail).toMatch(
      revoked,
    );
    // A secret one character off is no key at all.
    const typo = key.slice(0, -1) + (key.endsWith('a') ? 'b' : 'a');
    expect(await json(await send({ ...t, key: typo }, 'GET', '/v1/validate_api_key'), 401)).toEqual({
      detail: 'Invalid API key: no key has this secret (check that it was copied whole)',
    });
  });
});

describe('a key refused a route hears what its scope allows and what the route needs', () => {
  it('a read key of an owner (the finding)', async () => {
    const t = await seedTenant();
    const key = await runAdmin(createApiKey(t.orgId, t.owner, undefined, 'read'));
    expect(await json(await send({ ...t, key }, 'POST', '/v1/projects', '"p"', 'application/json'), 403)).toEqual({
      detail:
        "This API key may not create projects; rename programs and move them between projects: that needs a member's rights or more, and its scope is read (reads only): a key of scope full or prove may",
    });
    const prove = await runAdmin(createApiKey(t.orgId, t.owner, undefined, 'prove'));
    expect(
      (await json(await send({ ...t, key: prove }, 'POST', '/v1/webhooks', '{"url": "https://x"}', 'application/json'), 403)).detail,
    ).toBe(
      "This API key may not create, change, rotate, test, redeliver and delete webhook endpoints: that needs an admin's rights or more, and its scope is prove (submit, read, verify, cancel, create projects; no webhook or other management): a key of scope full may",
    );
  });
});

describe('budget figures read right', () => {
  it('keeps the digits of an amount under a cent', () => {
    expect([usd(1), usd(4500), usd(10_000), usd(1_000_000), usd(12_345_678), usd(0)]).toEqual([
      '$0.000001',
      '$0.0045',
      '$0.01',
      '$1.00',
      '$12.35',
      '$0.00',
    ]);
    // The budget's state as budgetStateSql gives it (micro-USD; GPU time in ms).
    const state = (b: { cost?: number; gpu_hours?: number; used?: number; gpu_ms?: number }) =>
      JSON.stringify({ cost: null, gpu_hours: null, used: 0, gpu_ms: 0, reserved: 0, month: '2026-11', ...b });
    expect(budgetRefusal(state({ cost: 1000, used: 1200 }), 'proof')?.message).toBe(
      'Budget reached: your organization has used $0.0012 of its $0.001 monthly spending budget for 2026-11 (UTC); new proofs and executions are refused until the month ends or an owner or admin raises the budget. Jobs already queued or running finish.',
    );
    expect(budgetRefusal(state({ gpu_hours: 2, gpu_ms: 2.5 * 3_600_000 }), 'execute')?.message).toMatch(
      /^Budget reached: your organization has used 2\.5 of its 2 GPU-hour monthly budget for 2026-11/,
    );
  });
});
