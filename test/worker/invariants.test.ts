// Invariants held where the data is (SECURITY.md "Invariants held where the data is"),
// attacked with simultaneous requests through the real Worker: sign-in throttling counts a
// check before it runs; an organization always keeps an owner; one membership per person
// and organization, whichever invitations race.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createOrganization, createUser } from '../../src/admin/statements.ts';
import { LAST_OWNER_REFUSAL } from '../../src/db/schema.ts';
import {
  attemptKeys,
  MAX_FAILURES_PER_ACCOUNT,
  MAX_FAILURES_PER_ACCOUNT_AND_CLIENT,
  MAX_FAILURES_PER_CLIENT,
} from '../../src/features/accounts/signin-throttle.ts';
import { BASE, countRows, json, runAdmin, seedTenant } from './helpers.ts';
import {
  as,
  consoleFetch,
  isoNow,
  mailedToken,
  PASSWORD,
  postJson,
  seedUser,
  send,
  signIn,
  uniqueEmail,
  type Session,
} from './console-helpers.ts';

const statuses = (responses: Response[]) => responses.map((r) => r.status).sort();
const tally = (list: number[]) => list.reduce<Record<number, number>>((t, s) => ({ ...t, [s]: (t[s] ?? 0) + 1 }), {});

async function throttleRow(key: string) {
  return env.DB.prepare('SELECT failures FROM signin_throttle WHERE key = ?').bind(key).first<{ failures: number }>();
}

describe('sign-in throttling reserves each check before it runs', () => {
  it(`20 simultaneous wrong passwords for one account from one address: at most ${MAX_FAILURES_PER_ACCOUNT_AND_CLIENT} evaluated, the rest 429 with Retry-After`, async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const headers = { 'cf-connecting-ip': '203.0.113.100' };
    const responses = await Promise.all(
      Array.from({ length: 20 }, (_, i) => postJson('/console/v1/auth/signin', { email, password: `wrong ${i}` }, { headers })),
    );
    const count = tally(statuses(responses));
    expect(Object.keys(count).sort()).toEqual(['401', '429']);
    expect(count[401]).toBeLessThanOrEqual(MAX_FAILURES_PER_ACCOUNT_AND_CLIENT);
    for (const r of responses.filter((r) => r.status === 429)) expect(Number(r.headers.get('retry-after'))).toBeGreaterThan(0);
    // The right password is refused too from that address, until the window ends.
    await json(await postJson('/console/v1/auth/signin', { email, password: PASSWORD }, { headers }), 429);
    expect((await throttleRow(attemptKeys(email, '203.0.113.100').pair))!.failures).toBe(MAX_FAILURES_PER_ACCOUNT_AND_CLIENT);
  });

  it(`${MAX_FAILURES_PER_ACCOUNT + 20} simultaneous wrong passwords for one account from as many addresses: at most ${MAX_FAILURES_PER_ACCOUNT} evaluated (the account's ceiling)`, async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const responses = await Promise.all(
      Array.from({ length: MAX_FAILURES_PER_ACCOUNT + 20 }, (_, i) =>
        postJson('/console/v1/auth/signin', { email, password: `wrong ${i}` }, { headers: { 'cf-connecting-ip': `198.18.7.${i}` } }),
      ),
    );
    const count = tally(statuses(responses));
    expect(Object.keys(count).sort()).toEqual(['401', '429']);
    expect(count[401]).toBeLessThanOrEqual(MAX_FAILURES_PER_ACCOUNT);
    expect((await throttleRow(attemptKeys(email, undefined).account))!.failures).toBe(MAX_FAILURES_PER_ACCOUNT);
  });

  it(`40 simultaneous guesses from one client across accounts: at most ${MAX_FAILURES_PER_CLIENT} evaluated`, async () => {
    const headers = { 'cf-connecting-ip': '198.51.100.77' };
    const responses = await Promise.all(
      Array.from({ length: 40 }, () =>
        postJson('/console/v1/auth/signin', { email: uniqueEmail('spray'), password: 'guess' }, { headers }),
      ),
    );
    const count = tally(statuses(responses));
    expect(Object.keys(count).sort()).toEqual(['401', '429']);
    expect(count[401]).toBeLessThanOrEqual(MAX_FAILURES_PER_CLIENT);
    expect((await throttleRow(attemptKeys('', '198.51.100.77').client))!.failures).toBe(MAX_FAILURES_PER_CLIENT);
  });

  it('takes every place or none: a refused check costs the other keys nothing; a success gives its places back', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const ip = '192.0.2.177';
    const keys = attemptKeys(email, ip);
    for (let i = 0; i < MAX_FAILURES_PER_ACCOUNT_AND_CLIENT; i++)
      await json(await postJson('/console/v1/auth/signin', { email, password: 'bad' }, { headers: { 'cf-connecting-ip': ip } }), 401);
    const full = MAX_FAILURES_PER_ACCOUNT_AND_CLIENT;
    expect([(await throttleRow(keys.client))!.failures, (await throttleRow(keys.account))!.failures]).toEqual([full, full]);
    await json(await postJson('/console/v1/auth/signin', { email, password: 'bad' }, { headers: { 'cf-connecting-ip': ip } }), 429);
    expect([(await throttleRow(keys.client))!.failures, (await throttleRow(keys.account))!.failures]).toEqual([full, full]);
    // Another account from the same client: counted, then given back on success.
    const other = await seedUser(t.orgId, 'member');
    await json(
      await postJson('/console/v1/auth/signin', { email: other, password: PASSWORD }, { headers: { 'cf-connecting-ip': ip } }),
      200,
    );
    expect((await throttleRow(keys.client))!.failures).toBe(full);
    expect(await throttleRow(attemptKeys(other, ip).pair)).toBeNull();
    expect((await throttleRow(attemptKeys(other, ip).account))!.failures).toBe(0);
  });
});

async function owners(orgId: string): Promise<number> {
  return countRows('memberships', "org_id = ? AND role = 'owner'", orgId);
}

async function twoOwners() {
  const t = await seedTenant();
  const [a, b] = await Promise.all([seedUser(t.orgId, 'owner').then(signIn), seedUser(t.orgId, 'owner').then(signIn)]);
  return { t, org: `/console/v1/orgs/${t.orgId}`, a, b };
}

const patchRole = (s: Session, org: string, userId: string, role: string) =>
  consoleFetch(`${org}/members/${userId}`, { method: 'PATCH', token: s.token, body: JSON.stringify({ role }) });
const remove = (s: Session, org: string, userId: string) => consoleFetch(`${org}/members/${userId}`, { method: 'DELETE', token: s.token });

describe('an organization always keeps an owner', () => {
  it('two owners demoting each other at once: exactly one succeeds, the other gets 409', async () => {
    for (let round = 0; round < 3; round++) {
      const { t, org, a, b } = await twoOwners();
      const responses = await Promise.all([patchRole(a, org, b.userId, 'member'), patchRole(b, org, a.userId, 'member')]);
      expect(statuses(responses)).toEqual([200, 409]);
      const refused = responses.find((r) => r.status === 409)!;
      // Refused by the trigger (no owner would be left) or, since the other's demotion landed
      // first, by the actor's own standing (they are no longer an owner): 409 either way.
      expect((await refused.json<{ detail: string }>()).detail).toMatch(/needs an owner|Your role in .* is now member/);
      expect(await owners(t.orgId)).toBe(1);
    }
  });

  it('two owners removing each other at once: exactly one succeeds; the refused removal revokes nothing', async () => {
    for (let round = 0; round < 3; round++) {
      const { t, org, a, b } = await twoOwners();
      const [ka, kb] = [await send(a, 'POST', `${org}/api-keys`, {}, 201), await send(b, 'POST', `${org}/api-keys`, {}, 201)];
      const responses = await Promise.all([remove(a, org, b.userId), remove(b, org, a.userId)]);
      expect(statuses(responses)).toEqual([200, 409]);
      expect(await owners(t.orgId)).toBe(1);
      // The survivor's key is live: the refused batch was rolled back whole.
      const live = await countRows('api_keys', 'id IN (?, ?) AND revoked_at IS NULL', ka.id, kb.id);
      expect(live).toBe(1);
    }
  });

  it('many owners demoting themselves and each other at once leave at least one owner', async () => {
    const t = await seedTenant();
    const team = await Promise.all(Array.from({ length: 4 }, () => seedUser(t.orgId, 'owner').then(signIn)));
    const org = `/console/v1/orgs/${t.orgId}`;
    const responses = await Promise.all(team.flatMap((s) => team.map((target) => patchRole(s, org, target.userId, 'admin'))));
    expect(statuses(responses).every((s) => [200, 403, 409].includes(s))).toBe(true);
    expect(await owners(t.orgId)).toBeGreaterThanOrEqual(1);
  });

  it('holds in the database: a direct statement and the operator command are refused with the trigger’s message', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'owner');
    await expect(env.DB.prepare("UPDATE memberships SET role = 'member' WHERE org_id = ?").bind(t.orgId).run()).rejects.toThrow(
      LAST_OWNER_REFUSAL,
    );
    await expect(env.DB.prepare('DELETE FROM memberships WHERE org_id = ?').bind(t.orgId).run()).rejects.toThrow(LAST_OWNER_REFUSAL);
    await expect(runAdmin(createUser({ email, orgId: t.orgId, role: 'member', consoleUrl: BASE }))).rejects.toThrow(LAST_OWNER_REFUSAL);
    expect(await owners(t.orgId)).toBe(1);
    // With a second owner, the operator's demotion goes through.
    await seedUser(t.orgId, 'owner');
    await runAdmin(createUser({ email, orgId: t.orgId, role: 'member', consoleUrl: BASE }));
    expect(await owners(t.orgId)).toBe(1);
  });

  it('lets the last owner go with the organization itself', async () => {
    const orgId = await runAdmin(createOrganization('going away'));
    await seedUser(orgId, 'owner');
    await env.DB.batch([
      env.DB.prepare('PRAGMA defer_foreign_keys = on'),
      env.DB.prepare('DELETE FROM organizations WHERE id = ?').bind(orgId),
      env.DB.prepare('DELETE FROM memberships WHERE org_id = ?').bind(orgId),
    ]);
    expect(await countRows('memberships', 'org_id = ?', orgId)).toBe(0);
  });
});

describe('one membership per person and organization', () => {
  async function invitations(count: number, email: string) {
    const t = await seedTenant();
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const org = `/console/v1/orgs/${t.orgId}`;
    const tokens: string[] = [];
    for (let i = 0; i < count; i++) {
      const since = isoNow();
      await send(owner, 'POST', `${org}/invites`, { email, role: 'member' }, 201);
      // A new invitation revokes the pending one; un-revoke to have several live at once
      // (as two admins inviting at the same moment can).
      await env.DB.prepare('UPDATE console_links SET revoked_at = NULL WHERE email = ? AND org_id = ?').bind(email, t.orgId).run();
      tokens.push(await mailedToken(email, since));
    }
    return { t, tokens };
  }

  it('two invitations for a new person accepted at once: one account, one membership, a 409, never a 500', async () => {
    const email = uniqueEmail('racer');
    const { t, tokens } = await invitations(2, email);
    const responses = await Promise.all(
      tokens.map((token) => postJson('/console/v1/auth/accept-invite', { token, password: 'invitee password' })),
    );
    expect(statuses(responses)).toEqual([200, 409]);
    expect(await countRows('users', 'email = ?', email)).toBe(1);
    expect(await countRows('memberships m JOIN users u ON u.id = m.user_id', 'u.email = ? AND m.org_id = ?', email, t.orgId)).toBe(1);
    // The refused acceptance wrote nothing: its link is still unused.
    expect(await countRows('console_links', 'email = ? AND org_id = ? AND used_at IS NULL', email, t.orgId)).toBe(1);
    expect(await countRows('audit_log', "org_id = ? AND action = 'invite.accept'", t.orgId)).toBe(1);
  });

  it('several invitations for an existing account accepted at once: one membership', async () => {
    const elsewhere = await seedTenant();
    const email = await seedUser(elsewhere.orgId, 'owner');
    const { t, tokens } = await invitations(4, email);
    // An existing account accepts signed in as itself, never with a password.
    const session = await signIn(email);
    const responses = await Promise.all(
      tokens.map((token) => postJson('/console/v1/auth/accept-invite', { token }, { token: session.token })),
    );
    const count = tally(statuses(responses));
    expect(count[200]).toBe(1);
    expect(count[409]).toBe(3);
    expect(await countRows('memberships m JOIN users u ON u.id = m.user_id', 'u.email = ? AND m.org_id = ?', email, t.orgId)).toBe(1);
    expect((await as(await signIn(email), '/console/v1/orgs')).items).toHaveLength(2);
  });

  it('one invitation accepted twice at once: one membership, the other 404', async () => {
    const email = uniqueEmail('twice');
    const { tokens } = await invitations(1, email);
    const responses = await Promise.all(
      [0, 1, 2].map(() => postJson('/console/v1/auth/accept-invite', { token: tokens[0], password: 'invitee password' })),
    );
    const count = tally(statuses(responses));
    expect(count[200]).toBe(1);
    expect((count[404] ?? 0) + (count[409] ?? 0)).toBe(2);
    expect(await countRows('users', 'email = ?', email)).toBe(1);
  });
});
