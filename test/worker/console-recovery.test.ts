// Recovery that cannot be turned against the owner (issue 29, "What to build" 2), each
// finding retried as it was found: links point at PUBLIC_ORIGIN whatever Host the request
// names; strangers cannot lock the owner out, and a reset clears what they did; a person
// sees their sessions and ends any or all; any replayed refresh token ends its session;
// a reset revokes the API keys the person made unless told not to. (The reset answer's
// timing, which tests must not assert: `npm run bench:account-timing`.)
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { app } from '../../src/app.ts';
import { publicOrigin, publicOriginProblem } from '../../src/features/accounts/mail.ts';
import { MAX_FAILURES_PER_ACCOUNT } from '../../src/features/accounts/signin-throttle.ts';
import { api, BASE, json, seedTenant } from './helpers.ts';
import {
  as,
  consoleFetch,
  CSRF,
  holdMailQueue,
  latestMail,
  mailedToken,
  PASSWORD,
  postJson,
  refreshCookie,
  seedUser,
  send,
  sessionOf,
  signIn,
  uniqueEmail,
} from './console-helpers.ts';

afterEach(() => vi.restoreAllMocks());

/** A request as it arrives at another host (what `Host: attacker.example` makes the URL), CSRF-valid there. */
const atHost = (host: string, path: string, body: unknown, token?: string) =>
  exports.default.fetch(
    new Request(`https://${host}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: {
        ...CSRF,
        origin: `https://${host}`,
        'content-type': 'application/json',
        'cf-connecting-ip': '192.0.2.61',
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
    }),
  );

/** The app with `PUBLIC_ORIGIN` unset: a deployment whose operator did not configure it. */
async function withoutOrigin(path: string, body: unknown, token?: string) {
  const ctx = createExecutionContext();
  const headers = new Headers({ ...CSRF, origin: BASE, 'content-type': 'application/json' });
  if (token) headers.set('authorization', `Bearer ${token}`);
  const res = await app.fetch(
    new Request(BASE + path, { method: 'POST', body: JSON.stringify(body), headers }),
    { ...env, PUBLIC_ORIGIN: undefined },
    ctx,
  );
  await waitOnExecutionContext(ctx);
  return res;
}

const askReset = (email: string, address = '192.0.2.62') =>
  postJson('/console/v1/auth/password-reset', { email }, { headers: { 'cf-connecting-ip': address } });

async function resetToken(email: string): Promise<string> {
  const queue = holdMailQueue();
  await json(await askReset(email), 202);
  await queue.deliver();
  vi.restoreAllMocks();
  return mailedToken(email);
}

describe('links point at PUBLIC_ORIGIN, never at the request’s Host', () => {
  it('a reset asked with Host: attacker.example mails a link to the console’s own origin (finding 1)', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'owner');
    const queue = holdMailQueue();
    await json(await atHost('attacker.example', '/console/v1/auth/password-reset', { email }), 202);
    await queue.deliver();
    const mail = await latestMail(email);
    expect(mail?.link).toMatch(new RegExp(`^${BASE}/console/reset-password#token=rst_[0-9a-f]{64}$`));
    expect(mail?.text).not.toContain('attacker.example');
  });

  it('so does an invitation sent through another Host', async () => {
    const t = await seedTenant();
    const owner = await signIn(await seedUser(t.orgId, 'owner'));
    const email = uniqueEmail('invitee');
    await json(await atHost('attacker.example', `/console/v1/orgs/${t.orgId}/invites`, { email, role: 'member' }, owner.token), 201);
    expect((await latestMail(email))?.link).toMatch(new RegExp(`^${BASE}/console/invite#token=inv_`));
  });

  it('a deployment without PUBLIC_ORIGIN sends no link and says what to set (503), leaving nothing pending', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'owner');
    const send = vi.spyOn(env.MAIL, 'send');
    const reset = await withoutOrigin('/console/v1/auth/password-reset', { email });
    expect(reset.status).toBe(503);
    expect((await reset.json<{ detail: string }>()).detail).toMatch(/PUBLIC_ORIGIN is not set.*wrangler\.toml/);
    expect(send).not.toHaveBeenCalled();
    const owner = await signIn(email);
    const invite = await withoutOrigin(
      `/console/v1/orgs/${t.orgId}/invites`,
      { email: uniqueEmail('nobody'), role: 'member' },
      owner.token,
    );
    expect(invite.status).toBe(503);
    expect((await as(owner, `/console/v1/orgs/${t.orgId}/invites`)).items).toEqual([]);
  });

  it('PUBLIC_ORIGIN must be an origin: https, or http on a loopback host; no path, query or credentials', () => {
    expect(publicOrigin({ PUBLIC_ORIGIN: 'https://console.example.com' })).toBe('https://console.example.com');
    expect(publicOrigin({ PUBLIC_ORIGIN: 'https://console.example.com/' })).toBe('https://console.example.com');
    expect(publicOrigin({ PUBLIC_ORIGIN: 'http://127.0.0.1:8787' })).toBe('http://127.0.0.1:8787');
    for (const bad of [
      undefined,
      '',
      'console.example.com',
      'http://console.example.com',
      'https://console.example.com/console',
      'https://a:b@console.example.com',
      'https://console.example.com?x=1',
    ])
      expect(publicOriginProblem({ PUBLIC_ORIGIN: bad })).toMatch(/PUBLIC_ORIGIN/);
  });
});

describe('strangers cannot lock the owner out', () => {
  it(`failures from many addresses reach the account's ceiling (${MAX_FAILURES_PER_ACCOUNT}); a reset link still works, and clears it`, async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'owner');
    for (let i = 0; i < MAX_FAILURES_PER_ACCOUNT; i++)
      await json(
        await postJson(
          '/console/v1/auth/signin',
          { email, password: `guess ${i}` },
          { headers: { 'cf-connecting-ip': `198.18.${i >> 2}.${i}` } },
        ),
        401,
      );
    // The ceiling: the right password from yet another address waits for the window.
    await json(
      await postJson('/console/v1/auth/signin', { email, password: PASSWORD }, { headers: { 'cf-connecting-ip': '192.0.2.99' } }),
      429,
    );
    // The reset link is never throttled, and its use clears every count of the account.
    await json(await postJson('/console/v1/auth/reset-password', { token: await resetToken(email), password: 'back in control' }), 200);
    const counts = await env.DB.prepare('SELECT count(*) AS n FROM signin_throttle WHERE account = ?').bind(email).first<{ n: number }>();
    expect(counts!.n).toBe(0);
    await signIn(email, 'back in control', '192.0.2.99');
  });

  it('a stranger’s wrong passwords do not stop the owner changing theirs (/me/password)', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'owner');
    const owner = await signIn(email, PASSWORD, '192.0.2.70');
    for (let i = 0; i < 6; i++)
      await postJson(
        '/console/v1/auth/signin',
        { email, password: 'a stranger guessing' },
        { headers: { 'cf-connecting-ip': '203.0.113.66' } },
      );
    await json(
      await postJson(
        '/console/v1/me/password',
        { current_password: PASSWORD, new_password: 'changed by the owner' },
        { token: owner.token, headers: { 'cf-connecting-ip': '192.0.2.70' } },
      ),
      200,
    );
  });
});

const refreshWith = (cookie: string) => consoleFetch('/console/v1/auth/refresh', { method: 'POST', headers: CSRF, cookie });

describe('a person sees their sessions and ends any or all', () => {
  it('lists the live ones, this one marked; ends another at once; never someone else’s', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const laptop = await signIn(email, PASSWORD, '192.0.2.81');
    const phone = await signIn(email, PASSWORD, '192.0.2.82');
    const { items } = await as(laptop, '/console/v1/me/sessions');
    expect(items).toEqual([
      expect.objectContaining({ id: sessionOf(laptop), current: true, client_address: '192.0.2.81' }),
      expect.objectContaining({ id: sessionOf(phone), current: false, client_address: '192.0.2.82' }),
    ]);
    // Someone else's session: not found, and it lives on.
    const stranger = await signIn(await seedUser(t.orgId, 'owner'));
    await send(stranger, 'DELETE', `/console/v1/me/sessions/${sessionOf(phone)}`, undefined, 404);
    await as(phone, '/console/v1/me');
    await send(laptop, 'DELETE', `/console/v1/me/sessions/${sessionOf(phone)}`, undefined, 200);
    await as(phone, '/console/v1/me', 401);
    await json(await refreshWith(phone.cookie), 401);
    expect((await as(laptop, '/console/v1/me/sessions')).items.map((s: { id: string }) => s.id)).toEqual([sessionOf(laptop)]);
  });

  it('signs out everywhere: every session, this one included', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const [a, b] = [await signIn(email), await signIn(email)];
    expect((await send(a, 'DELETE', '/console/v1/me/sessions', undefined, 200)).message).toMatch(/2 sessions ended/);
    for (const s of [a, b]) {
      await as(s, '/console/v1/me', 401);
      await json(await refreshWith(s.cookie), 401);
    }
  });
});

describe('refresh tokens', () => {
  it('a token two rotations old, presented again, ends its session (finding 13)', async () => {
    const t = await seedTenant();
    const s = await signIn(await seedUser(t.orgId, 'member'));
    const first = await refreshWith(s.cookie);
    expect(first.status).toBe(200);
    const second = await refreshWith(refreshCookie(first));
    const latest = refreshCookie(second);
    const { access_token } = await json<{ access_token: string }>(second, 200);
    // The original cookie, two generations back: someone else has a copy.
    await json(await refreshWith(s.cookie), 401);
    await as({ token: access_token }, '/console/v1/me', 401);
    await json(await refreshWith(latest), 401);
  });

  it('a stranger who knows a session’s id cannot end it with a token of their own making', async () => {
    const t = await seedTenant();
    const s = await signIn(await seedUser(t.orgId, 'member'));
    const forged = `console_refresh=rt_${sessionOf(s)}.${'a'.repeat(64)}.${'b'.repeat(64)}`;
    await json(await refreshWith(forged), 401);
    await as(s, '/console/v1/me');
    await json(await refreshWith(s.cookie), 200);
  });
});

describe('a reset and the API keys the person made', () => {
  async function withKeys() {
    const [a, b] = [await seedTenant(), await seedTenant()];
    const email = await seedUser(a.orgId, 'member');
    await seedUser(b.orgId, 'member', { email });
    const s = await signIn(email);
    const keys = [
      await send(s, 'POST', `/console/v1/orgs/${a.orgId}/api-keys`, { name: 'made by whoever had the account' }, 201),
      await send(s, 'POST', `/console/v1/orgs/${b.orgId}/api-keys`, {}, 201),
    ];
    return { a, email, keys: keys.map((k) => ({ ...a, key: k.key as string })) };
  }

  it('revokes every key they made, in every organization, by default, audited (finding 13)', async () => {
    const { a, email, keys } = await withKeys();
    const set = await json(
      await postJson('/console/v1/auth/reset-password', { token: await resetToken(email), password: 'a fresh start' }),
      200,
    );
    expect(set).toEqual({ email, api_keys_revoked: 2 });
    for (const k of keys) await json(await api(k, '/v1/validate_api_key'), 401);
    const owner = await signIn(await seedUser(a.orgId, 'owner'));
    const audit = (await as(owner, `/console/v1/orgs/${a.orgId}/audit`)).items;
    expect(audit[0]).toMatchObject({
      action: 'api_key.revoke',
      actor: email,
      detail: { reason: 'password reset', name: 'made by whoever had the account' },
    });
  });

  it('keeps them when asked to', async () => {
    const { email, keys } = await withKeys();
    const body = { token: await resetToken(email), password: 'a fresh start', revoke_api_keys: false };
    expect(await json(await postJson('/console/v1/auth/reset-password', body), 200)).toEqual({ email, api_keys_revoked: 0 });
    for (const k of keys) await json(await api(k, '/v1/validate_api_key'), 200);
  });
});
