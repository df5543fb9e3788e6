// /console/v1/orgs/{org_id}/members, /invites and /audit: roles enforced on each route.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { json, seedTenant } from './helpers.ts';
import { as, latestMail, mailedToken, PASSWORD, postJson, seedUser, send, signIn, uniqueEmail } from './console-helpers.ts';

async function team() {
  const t = await seedTenant();
  const [owner, admin, member] = await Promise.all([
    seedUser(t.orgId, 'owner').then(signIn),
    seedUser(t.orgId, 'admin').then(signIn),
    seedUser(t.orgId, 'member').then(signIn),
  ]);
  return { t, org: `/console/v1/orgs/${t.orgId}`, owner, admin, member };
}

describe('members', () => {
  it('owners and admins list members; members are refused', async () => {
    const { org, owner, admin, member } = await team();
    const list = await as(owner, `${org}/members`);
    expect(list.items.map((m: { email: string; role: string }) => [m.email, m.role]).sort()).toEqual(
      [
        [owner.email, 'owner'],
        [admin.email, 'admin'],
        [member.email, 'member'],
      ].sort(),
    );
    await as(admin, `${org}/members`);
    expect(await as(member, `${org}/members`, 403)).toEqual({
      detail: expect.stringMatching(/does not allow this: list members and invitations.* needs admin or higher/),
    });
    await as(member, `${org}/invites`, 403);
    await send(member, 'POST', `${org}/invites`, { email: uniqueEmail(), role: 'member' }, 403);
    await send(member, 'PATCH', `${org}/members/${admin.userId}`, { role: 'member' }, 403);
    await send(member, 'DELETE', `${org}/members/${admin.userId}`, undefined, 403);
    await as(member, `${org}/audit`, 403);
  });

  it('hides other organizations: 404 for anything under them', async () => {
    const { owner } = await team();
    const other = await seedTenant();
    expect(await as(owner, `/console/v1/orgs/${other.orgId}/members`, 404)).toEqual({ detail: 'Organization not found' });
    await as(owner, `/console/v1/orgs/${other.orgId}/proofs`, 404);
    await as(owner, `/console/v1/orgs/org_nope/api-keys`, 404);
  });

  it('changes roles; only owners touch owners; the last owner stays', async () => {
    const { org, owner, admin, member } = await team();
    await send(admin, 'PATCH', `${org}/members/${member.userId}`, { role: 'admin' }, 200);
    await send(admin, 'PATCH', `${org}/members/${member.userId}`, { role: 'owner' }, 403);
    await send(admin, 'PATCH', `${org}/members/${owner.userId}`, { role: 'member' }, 403);
    await send(owner, 'PATCH', `${org}/members/${owner.userId}`, { role: 'admin' }, 409);
    await send(owner, 'PATCH', `${org}/members/${member.userId}`, { role: 'owner' }, 200);
    await send(owner, 'PATCH', `${org}/members/${owner.userId}`, { role: 'admin' }, 200);
    await send(owner, 'PATCH', `${org}/members/${admin.userId}`, { role: 'boss' }, 422);
    await send(member, 'PATCH', `${org}/members/usr_nobody`, { role: 'member' }, 404);
    const entries = (await as(member, `${org}/audit`)).items;
    expect(entries.map((e: { action: string }) => e.action)).toEqual(['member.role_change', 'member.role_change', 'member.role_change']);
    expect(entries[0]).toMatchObject({ actor: owner.email, target: owner.email, detail: { from: 'owner', to: 'admin' } });
  });

  it('removing a member ends their sessions at once and revokes their keys', async () => {
    const { t, org, owner, admin, member } = await team();
    const { key } = await send(member, 'POST', `${org}/api-keys`, {}, 201);
    await send(admin, 'DELETE', `${org}/members/${owner.userId}`, undefined, 403);
    await send(owner, 'DELETE', `${org}/members/${owner.userId}`, undefined, 409);
    await send(admin, 'DELETE', `${org}/members/${member.userId}`, undefined, 200);
    await as(member, '/console/v1/me', 401);
    await json(await postJson('/console/v1/auth/signin', { email: member.email, password: PASSWORD }), 200);
    const again = await signIn(member.email);
    await as(again, `${org}/proofs`, 404);
    const { api } = await import('./helpers.ts');
    await json(await api({ ...t, key }, '/v1/validate_api_key'), 401);
    await send(admin, 'DELETE', `${org}/members/${member.userId}`, undefined, 404);
    const actions = (await as(owner, `${org}/audit`)).items.map((e: { action: string }) => e.action);
    expect(actions.slice(0, 2)).toEqual(['member.remove', 'api_key.create']);
  });
});

describe('invites', () => {
  it('an admin invites; the link goes to the invitee by email only; the invitee creates an account and signs in', async () => {
    const { t, org, admin } = await team();
    const email = uniqueEmail('invitee');
    const invite = await send(admin, 'POST', `${org}/invites`, { email: email.toUpperCase(), role: 'member' }, 201);
    expect(invite).toMatchObject({ email, role: 'member', created_by: admin.email, sent_to: email });
    expect(JSON.stringify(invite)).not.toContain('token');
    const mail = await latestMail(email);
    expect(mail).toMatchObject({
      to: email,
      subject: `You are invited to org of ${t.owner}`,
      link: expect.stringMatching(/\/console\/invite#token=inv_[0-9a-f]{64}$/),
    });
    expect(mail.text).toContain(mail.link);
    const token = await mailedToken(email);
    expect((await as(admin, `${org}/invites`)).items.map((i: { email: string }) => i.email)).toEqual([email]);
    expect(await json(await postJson('/console/v1/auth/invite', { token }), 200)).toEqual({
      email,
      org_name: `org of ${t.owner}`,
      role: 'member',
      has_account: false,
    });
    await json(await postJson('/console/v1/auth/accept-invite', { token, password: 'short' }), 422);
    await json(await postJson('/console/v1/auth/accept-invite', { token }), 422);
    expect(await json(await postJson('/console/v1/auth/accept-invite', { token, password: 'invitee password', name: 'Ivy' }), 200)).toEqual(
      { email, org_id: t.orgId },
    );
    await json(await postJson('/console/v1/auth/accept-invite', { token, password: 'invitee password' }), 404);
    const s = await signIn(email, 'invitee password');
    expect((await as(s, '/console/v1/me')).organizations).toEqual([{ id: t.orgId, name: `org of ${t.owner}`, role: 'member' }]);
    expect((await as(admin, `${org}/invites`)).items).toEqual([]);
    const audit = (await as(admin, `${org}/audit`)).items.map((e: { action: string; actor: string }) => [e.action, e.actor]);
    expect(audit).toEqual([
      ['invite.accept', email],
      ['invite.create', admin.email],
    ]);
  });

  it('an existing account joins while signed in as itself, never with a password', async () => {
    const { t, org, owner } = await team();
    const elsewhere = await seedTenant();
    const email = await seedUser(elsewhere.orgId, 'owner');
    await send(owner, 'POST', `${org}/invites`, { email, role: 'admin' }, 201);
    const token = await mailedToken(email);
    expect((await json(await postJson('/console/v1/auth/invite', { token }), 200)).has_account).toBe(true);
    // Its own password does not do it either: an invitation is not a sign-in.
    expect(await json(await postJson('/console/v1/auth/accept-invite', { token, password: PASSWORD }), 401)).toEqual({
      detail: `An account exists for ${email}: sign in as it, then accept the invitation`,
    });
    const me = await signIn(email);
    await json(await postJson('/console/v1/auth/accept-invite', { token, password: PASSWORD }, { token: me.token }), 422);
    expect(await json(await postJson('/console/v1/auth/accept-invite', { token }, { token: me.token }), 200)).toEqual({
      email,
      org_id: t.orgId,
    });
    expect((await as(me, '/console/v1/orgs')).items).toHaveLength(2);
    await json(await postJson('/console/v1/auth/accept-invite', { token }, { token: me.token }), 404);
  });

  it('refuses inviting a member again, owners by admins, and bad emails; revokes and replaces invites', async () => {
    const { org, owner, admin, member } = await team();
    await send(admin, 'POST', `${org}/invites`, { email: member.email, role: 'member' }, 409);
    await send(admin, 'POST', `${org}/invites`, { email: uniqueEmail(), role: 'owner' }, 403);
    await send(admin, 'POST', `${org}/invites`, { email: 'nope', role: 'member' }, 422);
    const email = uniqueEmail('twice');
    await send(owner, 'POST', `${org}/invites`, { email, role: 'owner' }, 201);
    const first = await mailedToken(email);
    const second = await send(owner, 'POST', `${org}/invites`, { email, role: 'member' }, 201);
    const secondToken = await mailedToken(email);
    expect(secondToken).not.toBe(first);
    await json(await postJson('/console/v1/auth/invite', { token: first }), 404);
    await send(admin, 'DELETE', `${org}/invites/${second.id}`, undefined, 200);
    await send(admin, 'DELETE', `${org}/invites/${second.id}`, undefined, 404);
    await json(await postJson('/console/v1/auth/invite', { token: secondToken }), 404);
    const actions = (await as(owner, `${org}/audit`)).items.map((e: { action: string }) => e.action);
    expect(actions).toEqual(['invite.revoke', 'invite.create', 'invite.create']);
  });

  it('stores only the invitation token’s hash', async () => {
    const { org, owner } = await team();
    const email = uniqueEmail();
    const { id } = await send(owner, 'POST', `${org}/invites`, { email, role: 'member' }, 201);
    const token = await mailedToken(email);
    const row = await env.DB.prepare('SELECT token_hash FROM console_links WHERE id = ?').bind(id).first<{ token_hash: string }>();
    expect(row!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(row!.token_hash).not.toContain(token.slice(4));
  });
});
