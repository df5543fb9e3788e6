// Identity you can prove: the cross-organization takeover through invitations, retried
// as it was found, fails; links that grant an account reach only their person's email;
// password reset end to end (SECURITY.md "Console accounts, links and email").
import { env } from 'cloudflare:test';
import { describe, expect, it, vi } from 'vitest';
import { createUser } from '../../src/admin/statements.ts';
import { BASE, json, runAdmin, seedTenant } from './helpers.ts';
import {
  as,
  holdMailQueue,
  latestMail,
  mailedToken,
  outboxMail,
  PASSWORD,
  postJson,
  seedUser,
  send,
  signIn,
  uniqueEmail,
} from './console-helpers.ts';
import { inOneRateWindow } from './rate-helpers.ts';

const passwordHashOf = async (email: string) =>
  (await env.DB.prepare('SELECT password_hash FROM users WHERE email = ?').bind(email).first<{ password_hash: string | null }>())
    ?.password_hash;

/** Org A with its first owner made by the operator (no password yet), and org B whose owner attacks. */
async function twoOrgs() {
  const a = await seedTenant();
  const victim = uniqueEmail('victim');
  await runAdmin(createUser({ email: victim, orgId: a.orgId, role: 'owner', consoleUrl: BASE }));
  const b = await seedTenant();
  const attacker = await signIn(await seedUser(b.orgId, 'owner'));
  return { a, b, victim, attacker, orgB: `/console/v1/orgs/${b.orgId}` };
}

describe('the invitation takeover, retried as found', () => {
  it('the inviter never gets the link: not in the answer, not in the list', async () => {
    const { victim, attacker, orgB } = await twoOrgs();
    const invite = await send(attacker, 'POST', `${orgB}/invites`, { email: victim, role: 'member' }, 201);
    expect(invite.link).toBeUndefined();
    const mailed = (await latestMail(victim)).link!;
    const token = mailed.split('#token=')[1];
    expect(JSON.stringify(invite)).not.toContain(token);
    expect(JSON.stringify(await as(attacker, `${orgB}/invites`))).not.toContain(token);
    expect(JSON.stringify(await as(attacker, `${orgB}/audit`))).not.toContain(token);
  });

  it('an invitation cannot set the password of an account that has none yet (one made by create-user)', async () => {
    const { a, victim, attacker, orgB } = await twoOrgs();
    await send(attacker, 'POST', `${orgB}/invites`, { email: victim, role: 'member' }, 201);
    // Even holding the link (as if he had it), a password on an existing account is refused.
    const token = await mailedToken(victim);
    await json(await postJson('/console/v1/auth/accept-invite', { token, password: 'attacker chosen password' }), 401);
    expect(await passwordHashOf(victim)).toBeNull();
    await json(await postJson('/console/v1/auth/signin', { email: victim, password: 'attacker chosen password' }), 401);
    // Nor does accepting while signed in as someone else.
    await json(await postJson('/console/v1/auth/accept-invite', { token }, { token: attacker.token }), 403);
    expect(await as(attacker, `/console/v1/orgs/${a.orgId}/members`, 404)).toEqual({ detail: 'Organization not found' });
  });

  it('accepting as a different signed-in user is refused 403, for an account with a password too', async () => {
    const { attacker, orgB } = await twoOrgs();
    const elsewhere = await seedTenant();
    const target = await seedUser(elsewhere.orgId, 'owner');
    await send(attacker, 'POST', `${orgB}/invites`, { email: target, role: 'owner' }, 201);
    const token = await mailedToken(target);
    expect(await json(await postJson('/console/v1/auth/accept-invite', { token }, { token: attacker.token }), 403)).toEqual({
      detail: `This invitation is for ${target}: sign in as that account to accept it`,
    });
    // The link still works for its person.
    await json(await postJson('/console/v1/auth/accept-invite', { token }, { token: (await signIn(target)).token }), 200);
  });

  it('create-user for an email that has an account never sets its password, nor makes a link for it', async () => {
    // The variant: an account for the email exists (made through an invitation by
    // whoever received it); the operator later adds that email to org A.
    const a = await seedTenant();
    const b = await seedTenant();
    const email = await seedUser(b.orgId, 'member');
    const before = await passwordHashOf(email);
    const step = await createUser({ email, orgId: a.orgId, role: 'owner', consoleUrl: BASE }, undefined, { has_password: true });
    expect(step.mail).toBeUndefined();
    expect(step.output.join('\n')).toContain('its password is unchanged');
    await runAdmin(step);
    // The statements alone (what runs whatever the tool believed) make no link either.
    await runAdmin(createUser({ email, orgId: a.orgId, role: 'owner', consoleUrl: BASE }));
    expect(await passwordHashOf(email)).toBe(before);
    const links = await env.DB.prepare(`SELECT count(*) AS n FROM console_links WHERE email = ? AND kind = 'set_password'`)
      .bind(email)
      .first<{ n: number }>();
    expect(links!.n).toBe(0);
    // The membership was added: the account's own password opens it, no other.
    expect((await as(await signIn(email), '/console/v1/orgs')).items.map((o: { id: string }) => o.id).sort()).toEqual(
      [a.orgId, b.orgId].sort(),
    );
  });

  it('a new account is made only through the emailed link, and create-user later leaves its password alone', async () => {
    const b = await seedTenant();
    const inviter = await signIn(await seedUser(b.orgId, 'owner'));
    const email = uniqueEmail('fresh');
    await send(inviter, 'POST', `/console/v1/orgs/${b.orgId}/invites`, { email, role: 'member' }, 201);
    const token = await mailedToken(email);
    await json(await postJson('/console/v1/auth/accept-invite', { token, password: 'the real person', name: 'Fresh' }), 200);
    const hash = await passwordHashOf(email);
    const a = await seedTenant();
    await runAdmin(createUser({ email, orgId: a.orgId, role: 'owner', consoleUrl: BASE }));
    expect(await passwordHashOf(email)).toBe(hash);
    await signIn(email, 'the real person');
  });

  it('an account made meanwhile for the email is never taken over by a new-account accept', async () => {
    const b = await seedTenant();
    const inviter = await signIn(await seedUser(b.orgId, 'owner'));
    const email = uniqueEmail('race');
    await send(inviter, 'POST', `/console/v1/orgs/${b.orgId}/invites`, { email, role: 'member' }, 201);
    const token = await mailedToken(email);
    await seedUser((await seedTenant()).orgId, 'owner', { email });
    const before = await passwordHashOf(email);
    await json(await postJson('/console/v1/auth/accept-invite', { token, password: 'someone else entirely' }), 401);
    expect(await passwordHashOf(email)).toBe(before);
  });
});

describe('password reset', () => {
  const ask = (email: string, ip = '198.51.100.90') =>
    postJson('/console/v1/auth/password-reset', { email }, { headers: { 'cf-connecting-ip': ip } });
  const reset = (token: string, password: string) => postJson('/console/v1/auth/reset-password', { token, password });

  it('answers the same for a known and an unknown email, and mails only the known one', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const unknown = uniqueEmail('nobody');
    const queue = holdMailQueue();
    const known = await ask(email);
    const other = await ask(unknown);
    expect(known.status).toBe(202);
    expect(other.status).toBe(202);
    expect(await known.json()).toEqual(await other.json());
    // The answer is the same message on the queue for both (the same work: bench:account-timing).
    expect(queue.held).toEqual([
      { type: 'password-reset', email },
      { type: 'password-reset', email: unknown },
    ]);
    expect((await queue.deliver()).explicitAcks).toEqual(['mail-0', 'mail-1']);
    vi.restoreAllMocks();
    expect(await latestMail(email)).toMatchObject({
      subject: 'Reset your proving console password',
      link: expect.stringMatching(/\/console\/reset-password#token=rst_[0-9a-f]{64}$/),
    });
    const rows = await env.DB.prepare(`SELECT count(*) AS n FROM console_links WHERE email = ?`).bind(unknown).first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it('the link sets a new password once, ends every session, and dies', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const a = await signIn(email);
    await json(await ask(email), 202);
    const token = await mailedToken(email);
    const row = await env.DB.prepare(
      `SELECT token_hash, expires_at, created_at FROM console_links WHERE email = ? AND kind = 'password_reset'`,
    )
      .bind(email)
      .first<{ token_hash: string; expires_at: string; created_at: string }>();
    expect(row!.token_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(Date.parse(row!.expires_at) - Date.parse(row!.created_at)).toBe(30 * 60_000);
    await json(await reset(token, 'short'), 422);
    expect(await json(await reset(token, 'my new password'), 200)).toEqual({ email, api_keys_revoked: 0 });
    await as(a, '/console/v1/me', 401);
    await json(await postJson('/console/v1/auth/refresh', {}, { cookie: a.cookie }), 401);
    await json(await reset(token, 'another password'), 404);
    await json(await postJson('/console/v1/auth/signin', { email, password: PASSWORD }), 401);
    await signIn(email, 'my new password');
    // A reset link is not a set-password link, nor the other way round.
    await json(await postJson('/console/v1/auth/set-password', { token, password: 'my new password' }), 404);
  });

  it('a new link revokes the older unused one; expired links do nothing', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const queue = holdMailQueue();
    await json(await ask(email), 202);
    await queue.deliver();
    const first = await mailedToken(email);
    await json(await ask(email), 202);
    await queue.deliver();
    vi.restoreAllMocks();
    const { results } = await env.DB.prepare(`SELECT link FROM mail_outbox WHERE "to" = ?`).bind(email).all<{ link: string }>();
    const tokens = results.map((r) => r.link.split('#token=')[1]);
    expect(tokens).toHaveLength(2);
    const second = tokens.find((t) => t !== first)!;
    await json(await reset(first, 'my new password'), 404);
    await env.DB.prepare(`UPDATE console_links SET expires_at = '2000-01-01T00:00:00.000Z' WHERE email = ? AND kind = 'password_reset'`)
      .bind(email)
      .run();
    await json(await reset(second, 'my new password'), 404);
    await signIn(email);
  });

  it('a reset link mailed before the password is changed dies with the change, with every session', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    await json(await ask(email, '192.0.2.150'), 202);
    const token = await mailedToken(email);
    const session = await signIn(email);
    const other = await signIn(email);
    await json(
      await postJson(
        '/console/v1/me/password',
        { current_password: PASSWORD, new_password: 'changed while signed in' },
        { token: session.token },
      ),
      200,
    );
    await as(other, '/console/v1/me', 401);
    await json(await reset(token, 'the old link wins'), 404);
    await signIn(email, 'changed while signed in');
  });

  it('makes a few links per email per window, silently; then limits the client', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const queue = holdMailQueue();
    for (let i = 0; i < 4; i++) await json(await ask(email, `192.0.2.${100 + i}`), 202);
    await queue.deliver();
    vi.restoreAllMocks();
    const n = await env.DB.prepare(`SELECT count(*) AS n FROM console_links WHERE email = ? AND kind = 'password_reset'`)
      .bind(email)
      .first<{ n: number }>();
    expect(n!.n).toBe(3);
    // Per client address (the binding allows 5 a minute in the tests), counted in one window.
    let client = 77;
    const limited = await inOneRateWindow(async () => {
      const ip = `203.0.113.${client++}`;
      for (let i = 0; i < 5; i++) await json(await ask(uniqueEmail('spray'), ip), 202);
      const limited = await ask(uniqueEmail('spray'), ip);
      expect(limited.status).toBe(429);
      return limited;
    });
    expect(limited.headers.get('retry-after')).toBe('60');
  });

  it('works for an account that has no password yet (the set-password link was lost)', async () => {
    const t = await seedTenant();
    const email = uniqueEmail('lost-link');
    await runAdmin(createUser({ email, orgId: t.orgId, role: 'owner', consoleUrl: BASE }));
    await json(await ask(email, '192.0.2.200'), 202);
    await json(await reset(await mailedToken(email), 'found my way in'), 200);
    await signIn(email, 'found my way in');
  });
});

describe('the local outbox', () => {
  it('lists the mail sent under MAIL_SENDER = "outbox", newest first, by address', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    await json(await postJson('/console/v1/auth/password-reset', { email }, { headers: { 'cf-connecting-ip': '192.0.2.201' } }), 202);
    await latestMail(email);
    const { exports } = await import('cloudflare:workers');
    const res = await exports.default.fetch(new Request(`${BASE}/console/v1/outbox?to=${encodeURIComponent(email)}`));
    const body = await json(res, 200);
    expect(body.items).toHaveLength(1);
    expect(body.items[0]).toMatchObject({ to: email, subject: 'Reset your proving console password' });
    const page = await exports.default.fetch(new Request(`${BASE}/console/outbox`));
    expect(page.status).toBe(200);
  });
});

describe('with no mail sender configured (a deployment without MAIL_SENDER)', () => {
  async function withoutMail(path: string, init: RequestInit & { token?: string } = {}) {
    const { createExecutionContext, waitOnExecutionContext } = await import('cloudflare:test');
    const { app } = await import('../../src/app.ts');
    const headers = new Headers(init.headers);
    if (init.token) headers.set('authorization', `Bearer ${init.token}`);
    if (init.body) headers.set('content-type', 'application/json');
    if (init.method === 'POST') headers.set('origin', BASE);
    const ctx = createExecutionContext();
    const res = await app.fetch(new Request(BASE + path, { ...init, headers }), { ...env, MAIL_SENDER: undefined }, ctx);
    await waitOnExecutionContext(ctx);
    return res;
  }

  it('has no outbox, and refuses to invite (503) without leaving an invitation pending', async () => {
    expect((await withoutMail('/console/v1/outbox')).status).toBe(404);
    expect((await withoutMail('/console/outbox')).status).toBe(404);
    const t = await seedTenant();
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const email = uniqueEmail('unsent');
    const res = await withoutMail(`/console/v1/orgs/${t.orgId}/invites`, {
      method: 'POST',
      token: owner.token,
      body: JSON.stringify({ email, role: 'member' }),
    });
    expect(res.status).toBe(503);
    expect((await as(owner, `/console/v1/orgs/${t.orgId}/invites`)).items).toEqual([]);
    expect(await outboxMail(email)).toBeNull();
  });
});
