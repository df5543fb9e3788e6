// The one table of permissions (src/auth/permissions.ts) on both doors: every route
// declares its action; an API key does no more than its scope and its creator's
// current role allow; an invitation dies with its inviter's right to grant its role.
// The findings as found: a member's key managed webhooks, a demoted admin's key kept
// its rights, a removed admin accepted their own pending invitation.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createApiKey } from '../../src/admin/statements.ts';
import { ACTIONS, actionsOf, KEY_SCOPE_NAMES, ROLE_ORDER } from '../../src/auth/permissions.ts';
import { declarationOf, routeKey, servedRoutes } from './routes.ts';
import { as, isoNow, mailedToken, postJson, seedUser, send, signIn, uniqueEmail, type Session } from './console-helpers.ts';
import { recordD1Calls } from './d1-calls.ts';
import { api, json, runAdmin, seedTenant, type Tenant } from './helpers.ts';

const HOOK = 'http://127.0.0.1:9/hook';

async function team() {
  const t = await seedTenant();
  const [owner, admin, member, viewer] = await Promise.all(
    (['owner', 'admin', 'member', 'viewer'] as const).map((role) => seedUser(t.orgId, role).then(signIn)),
  );
  return { t, org: `/console/v1/orgs/${t.orgId}`, owner: owner, admin: admin, member: member, viewer: viewer };
}

/** An API key `who` makes in the console, as a tenant the /v1 helpers call with. */
async function keyOf(t: Tenant, who: Session, scope?: string): Promise<Tenant> {
  const created = await send(who, 'POST', `/console/v1/orgs/${t.orgId}/api-keys`, scope ? { scope } : {}, 201);
  return { ...t, key: created.key };
}

const call = (k: Tenant, method: string, path: string, body?: unknown) =>
  api(k, path, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
  });

/** Statuses of the webhook management calls made with `k` on endpoint `id`. */
async function webhookStatuses(k: Tenant, id: string) {
  return {
    create: (await call(k, 'POST', '/v1/webhooks', { url: HOOK })).status,
    update: (await call(k, 'PATCH', `/v1/webhooks/${id}`, { url: `${HOOK}/elsewhere` })).status,
    rotate: (await call(k, 'POST', `/v1/webhooks/${id}/rotate-secret`)).status,
    remove: (await call(k, 'DELETE', `/v1/webhooks/${id}`)).status,
  };
}
const REFUSED = { create: 403, update: 403, rotate: 403, remove: 403 };

async function endpointOf(t: Tenant): Promise<string> {
  return (await json<{ id: string }>(await call(t, 'POST', '/v1/webhooks', { url: HOOK }), 201)).id;
}

/** Invites, and reads the token from the invitee's mail (the inviter never sees the link). */
async function invite(by: Session, org: string, body: { email: string; role: string }) {
  const since = isoNow();
  const answer = await send(by, 'POST', `${org}/invites`, body, 201);
  return { ...answer, token: await mailedToken(body.email, since) };
}

describe('every route declares its action', () => {
  it('finds an action of the table, or a role-free console door, declared at every /v1 and signed-in console route', () => {
    const routes = servedRoutes().filter((r) => /^\/(v1|console\/v1)\//.test(r.path) && !/^\/console\/v1\/(auth|outbox)\b/.test(r.path));
    expect(routes.length).toBeGreaterThan(60);
    const needs = (r: (typeof routes)[number]) => declarationOf(r)?.need;
    expect(routes.filter((r) => !needs(r)).map(routeKey)).toEqual([]);
    // An API key's route names an action of the table; only console routes may be the user's own or the operators'.
    for (const r of routes) {
      const need = needs(r)!;
      if (r.path.startsWith('/v1/') || r.path.startsWith('/console/v1/orgs/')) expect(ACTIONS, routeKey(r)).toContain(need);
      else expect(['account', 'operator'], routeKey(r)).toContain(need);
    }
  });

  it('declares roles nested: each may do what the ones below may, and viewer only reads', () => {
    for (let i = 1; i < ROLE_ORDER.length; i++)
      expect(actionsOf(ROLE_ORDER[i])).toEqual(expect.arrayContaining(actionsOf(ROLE_ORDER[i - 1])));
    expect(actionsOf('viewer')).toEqual(['records.read', 'keys.own']);
    expect(actionsOf('owner')).toEqual(ACTIONS);
  });
});

describe('API keys do no more than their creator may', () => {
  it("a member's key cannot touch the organization's webhooks (the finding), but reads and submits", async () => {
    const { t, org, member } = await team();
    const id = await endpointOf(t);
    await send(member, 'POST', `${org}/webhooks`, { url: HOOK }, 403);
    const k = await keyOf(t, member);
    expect(await webhookStatuses(k, id)).toEqual(REFUSED);
    const refusal = await json(await call(k, 'POST', '/v1/webhooks', { url: HOOK }), 403);
    expect(refusal.detail).toMatch(
      /^This API key may not create, change, rotate, test, redeliver and delete webhook endpoints: that needs an admin's rights or more, and a full-scope key has no more rights than its creator, who is now a member of the organization$/,
    );
    // With an Idempotency-Key too: the claim is refused with the write, nothing is stored.
    const idem = { 'content-type': 'application/json', 'Idempotency-Key': crypto.randomUUID() };
    for (let i = 0; i < 2; i++)
      await json(await api(k, '/v1/webhooks', { method: 'POST', body: JSON.stringify({ url: HOOK }), headers: idem }), 403);
    expect((await json(await call(t, 'GET', '/v1/webhooks'), 200)).items).toHaveLength(1);
    await json(await call(k, 'GET', '/v1/webhooks'), 200);
    await json(await call(k, 'GET', `/v1/webhooks/${id}`), 200);
    await json(await call(k, 'POST', '/v1/projects', 'by a member'), 201);
    // Nothing changed: the endpoint is as the owner's key made it.
    expect((await json(await call(t, 'GET', `/v1/webhooks/${id}`), 200)).url).toBe(HOOK);
  });

  it("an admin's key shrinks the moment the admin is demoted, and dies when they are removed", async () => {
    const { t, org, owner, admin } = await team();
    const k = await keyOf(t, admin);
    const id = await endpointOf(k);
    await send(owner, 'PATCH', `${org}/members/${admin.userId}`, { role: 'member' }, 200);
    expect(await webhookStatuses(k, id)).toEqual(REFUSED);
    await json(await call(k, 'POST', '/v1/projects', 'still a member'), 201);
    await send(owner, 'PATCH', `${org}/members/${admin.userId}`, { role: 'viewer' }, 200);
    await json(await call(k, 'POST', '/v1/projects', 'now a viewer'), 403);
    await json(await call(k, 'GET', '/v1/projects'), 200);
    await send(owner, 'PATCH', `${org}/members/${admin.userId}`, { role: 'admin' }, 200);
    expect((await call(k, 'DELETE', `/v1/webhooks/${id}`)).status).toBe(200);
  });

  it("checks the key's rights in the read's one round trip; a replica's refusal is confirmed on the primary", async () => {
    const { t, member } = await team();
    const k = await keyOf(t, member, 'read');
    await json(await call(k, 'GET', '/v1/projects'), 200); // last_used_at written: not counted below
    const calls = recordD1Calls();
    await json(await call(k, 'GET', '/v1/projects'), 200);
    expect(calls.calls).toHaveLength(1);
    calls.clear();
    await json(await call(k, 'POST', `/v1/proofs/${crypto.randomUUID()}/cancel`), 403);
    expect(calls.calls.map((c) => [c.via, c.rowsWritten])).toEqual([
      ['first-unconstrained', 0],
      ['first-primary', 0],
    ]);
  });

  it('a key whose creator is no longer a member is dead, revoked or not', async () => {
    const { t, member } = await team();
    const k = await keyOf(t, member);
    await json(await call(k, 'GET', '/v1/validate_api_key'), 200);
    // The membership gone by any path (not the console's removal, which also revokes).
    await env.DB.prepare('DELETE FROM memberships WHERE org_id = ? AND user_id = ?').bind(t.orgId, member.userId).run();
    expect(await json(await call(k, 'GET', '/v1/validate_api_key'), 401)).toEqual({
      detail: 'This API key no longer works: its creator is no longer a member of the organization. Create a new one in the console',
    });
    await json(await call(k, 'POST', '/v1/projects', 'ghost'), 401);
  });

  it('each scope against representative routes', async () => {
    const { t, owner } = await team();
    const id = await endpointOf(t);
    const expected = {
      read: { read: 200, project: 403, cancel: 403, webhook: 403 },
      prove: { read: 200, project: 201, cancel: 404, webhook: 403 },
      full: { read: 200, project: 201, cancel: 404, webhook: 200 },
    };
    for (const scope of KEY_SCOPE_NAMES) {
      for (const k of [
        await keyOf(t, owner, scope),
        { ...t, key: await runAdmin(createApiKey(t.orgId, `operator ${scope}`, undefined, scope)) },
      ]) {
        const statuses = {
          read: (await call(k, 'GET', '/v1/projects')).status,
          project: (await call(k, 'POST', '/v1/projects', `by ${scope}`)).status,
          cancel: (await call(k, 'POST', `/v1/proofs/${crypto.randomUUID()}/cancel`)).status,
          webhook: (await call(k, 'PATCH', `/v1/webhooks/${id}`, { description: scope })).status,
        };
        expect(statuses, scope).toEqual(expected[scope]);
      }
    }
    const listed = (await as(owner, `/console/v1/orgs/${t.orgId}/api-keys`)).items.map((k: { scope: string }) => k.scope);
    expect(listed.sort()).toEqual([...KEY_SCOPE_NAMES, ...KEY_SCOPE_NAMES, 'full'].sort());
    await send(owner, 'POST', `/console/v1/orgs/${t.orgId}/api-keys`, { scope: 'admin' }, 422);
  });
});

describe('viewer', () => {
  it('reads the console and /v1, changes nothing, and makes read keys only', async () => {
    const { t, org, viewer } = await team();
    const id = await endpointOf(t);
    for (const path of ['proofs', 'programs', 'projects', 'executions', 'verifications', 'usage', 'webhooks'])
      await as(viewer, `${org}/${path}`);
    await as(viewer, `${org}/webhooks/${id}/deliveries`);
    for (const path of ['members', 'invites', 'audit']) await as(viewer, `${org}/${path}`, 403);
    await send(viewer, 'POST', `${org}/proofs/${crypto.randomUUID()}/cancel`, undefined, 403);
    await send(viewer, 'PATCH', `${org}/webhooks/${id}`, { description: 'no' }, 403);
    await send(viewer, 'POST', `${org}/invites`, { email: uniqueEmail(), role: 'viewer' }, 403);
    await send(viewer, 'POST', `${org}/api-keys`, { scope: 'prove' }, 403);
    expect(await send(viewer, 'POST', `${org}/api-keys`, {}, 403)).toEqual({ detail: 'A viewer may create only read keys' });
    const k = await keyOf(t, viewer, 'read');
    await json(await call(k, 'GET', '/v1/projects'), 200);
    await json(await call(k, 'GET', `/v1/webhooks/${id}`), 200);
    await json(await call(k, 'POST', '/v1/projects', 'viewer'), 403);
    expect(await webhookStatuses(k, id)).toEqual(REFUSED);
  });

  it('is invited like any role, by those who may grant it', async () => {
    const { t, org, admin, member } = await team();
    await send(member, 'POST', `${org}/invites`, { email: uniqueEmail(), role: 'viewer' }, 403);
    const email = uniqueEmail('viewer');
    const { token } = await invite(admin, org, { email, role: 'viewer' });
    await json(await postJson('/console/v1/auth/accept-invite', { token: token, password: 'viewer password' }), 200);
    expect((await as(await signIn(email, 'viewer password'), '/console/v1/me')).organizations).toEqual([
      { id: t.orgId, name: `org of ${t.owner}`, role: 'viewer' },
    ]);
  });
});

describe('invitations die with their inviter’s right to grant them', () => {
  it('a removed admin cannot accept the invitation they sent to their other address (the finding)', async () => {
    const { org, owner, admin } = await team();
    const other = uniqueEmail('second');
    const { token } = await invite(admin, org, { email: other, role: 'admin' });
    expect((await as(owner, `${org}/invites`)).items.map((i: { created_by: string }) => i.created_by)).toEqual([admin.email]);
    await send(owner, 'DELETE', `${org}/members/${admin.userId}`, undefined, 200);
    expect((await as(owner, `${org}/invites`)).items).toEqual([]);
    await json(await postJson('/console/v1/auth/accept-invite', { token: token, password: 'walks back in' }), 404);
    expect((await as(owner, `${org}/members`)).items.map((m: { email: string }) => m.email)).not.toContain(other);
  });

  it('demotion revokes the invitations they may no longer grant', async () => {
    const { org, owner, admin } = await team();
    const asAdmin = await invite(admin, org, { email: uniqueEmail(), role: 'admin' });
    const asMember = await invite(admin, org, { email: uniqueEmail(), role: 'member' });
    const byOwner = await invite(owner, org, { email: uniqueEmail(), role: 'member' });
    await send(owner, 'PATCH', `${org}/members/${admin.userId}`, { role: 'member' }, 200);
    expect((await as(owner, `${org}/invites`)).items.map((i: { id: string }) => i.id)).toEqual([byOwner.id]);
    for (const i of [asAdmin, asMember])
      await json(await postJson('/console/v1/auth/accept-invite', { token: i.token, password: 'too late now' }), 404);
    await json(await postJson('/console/v1/auth/accept-invite', { token: byOwner.token, password: 'still welcome' }), 200);
  });

  it('accepting re-checks the inviter in its own statement: a demotion that revoked nothing still refuses', async () => {
    const { t, org, admin } = await team();
    const email = uniqueEmail('raced');
    const { token } = await invite(admin, org, { email, role: 'member' });
    // As if the demotion landed between the link's check and the acceptance's batch.
    await env.DB.prepare(`UPDATE memberships SET role = 'member' WHERE org_id = ? AND user_id = ?`).bind(t.orgId, admin.userId).run();
    expect(await json(await postJson('/console/v1/auth/accept-invite', { token: token, password: 'raced password' }), 403)).toEqual({
      detail: 'Whoever invited you may no longer grant this role: ask for a new invitation',
    });
    const row = await env.DB.prepare('SELECT 1 FROM users u JOIN memberships m ON m.user_id = u.id WHERE u.email = ?').bind(email).first();
    expect(row).toBeNull();
  });
});
