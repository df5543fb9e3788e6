// Every decision in the statement that writes (issue 29, "What to build" 1): each console
// write that depends on a fact (the password just checked, the actor's membership and
// role, the target's current role) is conditional on it in its own batch, and answers
// 409 when the fact changed. Each race is landed deterministically: the first request's
// write is held just before it goes to D1 (holdD1Call), the second request runs to its
// end, then the first is let go. Before the fix each of these let the first write through.
import { env } from 'cloudflare:test';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { json, seedTenant } from './helpers.ts';
import { as, holdMailQueue, mailedToken, PASSWORD, postJson, seedUser, send, signIn, type Session } from './console-helpers.ts';
import { holdD1Call } from './d1-calls.ts';

afterEach(() => vi.restoreAllMocks());

const writes = (table: string) => (sql: string[]) =>
  sql.some((q) => new RegExp(`^\\s*(insert into|update|delete from) "${table}"`, 'i').test(q));
const liveSessions = async (email: string) =>
  (await env.DB.prepare(
    'SELECT count(*) AS n FROM console_sessions s JOIN users u ON u.id = s.user_id WHERE u.email = ? AND s.revoked_at IS NULL',
  )
    .bind(email)
    .first<{ n: number }>())!.n;
const signingIn = (email: string, password = PASSWORD) => postJson('/console/v1/auth/signin', { email, password });

describe('a sign-in in flight', () => {
  it('against a password reset: the session is not opened for the password the reset replaced (409)', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const queue = holdMailQueue();
    await json(await postJson('/console/v1/auth/password-reset', { email }, { headers: { 'cf-connecting-ip': '192.0.2.31' } }), 202);
    await queue.deliver();
    const token = await mailedToken(email);
    // The attacker's sign-in with the old password has checked it; its session insert waits.
    const hold = holdD1Call(writes('console_sessions'));
    const attacker = signingIn(email);
    await hold.reached();
    await json(await postJson('/console/v1/auth/reset-password', { token, password: 'the owner took it back' }), 200);
    hold.release();
    expect((await json(await attacker, 409)).detail).toMatch(/password of this account changed while you were signing in/);
    expect(await liveSessions(email)).toBe(0);
    await signIn(email, 'the owner took it back');
  });

  it('against a password change: the same (409), nothing opened', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const owner = await signIn(email);
    const hold = holdD1Call(writes('console_sessions'));
    const attacker = signingIn(email);
    await hold.reached();
    await json(
      await postJson('/console/v1/me/password', { current_password: PASSWORD, new_password: 'changed meanwhile' }, { token: owner.token }),
      200,
    );
    hold.release();
    await json(await attacker, 409);
    expect(await liveSessions(email)).toBe(0);
  });

  it('a password change racing another one: the second, whose current password is gone, changes nothing (409)', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const [first, second] = [await signIn(email), await signIn(email)];
    const hold = holdD1Call(writes('users'));
    const late = postJson('/console/v1/me/password', { current_password: PASSWORD, new_password: 'the late one' }, { token: second.token });
    await hold.reached();
    await json(
      await postJson('/console/v1/me/password', { current_password: PASSWORD, new_password: 'the first one' }, { token: first.token }),
      200,
    );
    hold.release();
    await json(await late, 409);
    await signIn(email, 'the first one');
  });
});

async function team() {
  const t = await seedTenant();
  const [owner, admin, member] = await Promise.all([
    seedUser(t.orgId, 'owner').then((e) => signIn(e)),
    seedUser(t.orgId, 'admin').then((e) => signIn(e)),
    seedUser(t.orgId, 'member').then((e) => signIn(e)),
  ]);
  return { t, org: `/console/v1/orgs/${t.orgId}`, owner, admin, member };
}

const roleOf = async (orgId: string, s: Session) =>
  (await env.DB.prepare('SELECT role FROM memberships WHERE org_id = ? AND user_id = ?').bind(orgId, s.userId).first<{ role: string }>())
    ?.role;

describe('roles decided on what they were', () => {
  it('an admin’s demotion racing an owner’s promotion of the same member: the new owner stays owner; the audit says what happened', async () => {
    const { t, org, owner, admin, member } = await team();
    const hold = holdD1Call(writes('memberships'));
    const demotion = send(admin, 'PATCH', `${org}/members/${member.userId}`, { role: 'viewer' }, 409);
    await hold.reached();
    await send(owner, 'PATCH', `${org}/members/${member.userId}`, { role: 'owner' }, 200);
    hold.release();
    expect((await demotion).detail).toMatch(/is no longer member \(their role changed meanwhile\): nothing was changed/);
    expect(await roleOf(t.orgId, member)).toBe('owner');
    const entries = (await as(owner, `${org}/audit`)).items.filter((e: { action: string }) => e.action === 'member.role_change');
    expect(entries).toEqual([
      expect.objectContaining({ actor: owner.email, target: member.email, detail: { from: 'member', to: 'owner' } }),
    ]);
  });

  it('an admin’s removal racing the same promotion: the new owner stays, with their keys and sessions', async () => {
    const { t, org, owner, admin, member } = await team();
    const hold = holdD1Call(writes('memberships'));
    const removal = send(admin, 'DELETE', `${org}/members/${member.userId}`, undefined, 409);
    await hold.reached();
    await send(owner, 'PATCH', `${org}/members/${member.userId}`, { role: 'owner' }, 200);
    hold.release();
    await removal;
    expect(await roleOf(t.orgId, member)).toBe('owner');
    await as(member, '/console/v1/me');
  });

  it('an admin demoted while changing a role changes nothing (409)', async () => {
    const { t, org, owner, admin, member } = await team();
    const hold = holdD1Call(writes('memberships'));
    const change = send(admin, 'PATCH', `${org}/members/${member.userId}`, { role: 'viewer' }, 409);
    await hold.reached();
    await send(owner, 'PATCH', `${org}/members/${admin.userId}`, { role: 'member' }, 200);
    hold.release();
    expect((await change).detail).toMatch(/Your role in .* is now member/);
    expect(await roleOf(t.orgId, member)).toBe('member');
  });
});

describe('removal against what the removed member was making', () => {
  it('an API key being created by a member who is removed meanwhile is never made (409)', async () => {
    const { org, owner, member } = await team();
    const hold = holdD1Call(writes('api_keys'));
    const creation = send(member, 'POST', `${org}/api-keys`, { name: 'made while leaving', scope: 'prove' }, 409);
    await hold.reached();
    await send(owner, 'DELETE', `${org}/members/${member.userId}`, undefined, 200);
    hold.release();
    expect((await creation).detail).toMatch(/no longer a member/);
    const keys = await env.DB.prepare('SELECT count(*) AS n FROM api_keys WHERE user_id = ?').bind(member.userId).first<{ n: number }>();
    expect(keys!.n).toBe(0);
    const audit = (await as(owner, `${org}/audit`)).items.map((e: { action: string }) => e.action);
    expect(audit).toEqual(['member.remove']);
  });

  it('a webhook endpoint being created by an admin who is removed meanwhile is never made (409)', async () => {
    const { t, org, owner, admin } = await team();
    const hold = holdD1Call(writes('webhook_endpoints'));
    const creation = send(admin, 'POST', `${org}/webhooks`, { url: 'https://hooks.example.com/leaving' }, 409);
    await hold.reached();
    await send(owner, 'DELETE', `${org}/members/${admin.userId}`, undefined, 200);
    hold.release();
    expect((await creation).detail).toMatch(/no longer a member/);
    const endpoints = await env.DB.prepare('SELECT count(*) AS n FROM webhook_endpoints WHERE org_id = ?')
      .bind(t.orgId)
      .first<{ n: number }>();
    expect(endpoints!.n).toBe(0);
  });

  it('an invitation being sent by an admin demoted meanwhile is never made (409)', async () => {
    const { t, org, owner, admin } = await team();
    const hold = holdD1Call(writes('console_links'));
    const invite = send(admin, 'POST', `${org}/invites`, { email: 'late-invite@example.com', role: 'member' }, 409);
    await hold.reached();
    await send(owner, 'PATCH', `${org}/members/${admin.userId}`, { role: 'member' }, 200);
    hold.release();
    await invite;
    const links = await env.DB.prepare(`SELECT count(*) AS n FROM console_links WHERE org_id = ? AND kind = 'invite'`)
      .bind(t.orgId)
      .first<{ n: number }>();
    expect(links!.n).toBe(0);
  });
});
