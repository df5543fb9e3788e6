// /console/v1/auth: sign-in, refresh rotation, sign-out, set-password links, CSRF,
// throttling, and who may call /console/v1 at all.
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createUser } from '../../src/admin/statements.ts';
import { api, BASE, json, runAdmin, seedTenant } from './helpers.ts';
import { as, consoleFetch, CSRF, PASSWORD, postJson, refreshCookie, seedUser, signIn, uniqueEmail } from './console-helpers.ts';

describe('sign-in', () => {
  it('returns a bearer access token and sets the refresh token as an HttpOnly, Secure, SameSite=Strict cookie', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'owner');
    const res = await postJson('/console/v1/auth/signin', { email: email.toUpperCase(), password: PASSWORD });
    const body = await json(res, 200);
    expect(body).toMatchObject({ token_type: 'Bearer', expires_in: 600, user: { email, is_operator: false } });
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('console_refresh='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/Secure/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\/console\/v1\/auth/);
    const me = await as(body.access_token ? { token: body.access_token } : { token: '' }, '/console/v1/me');
    expect(me).toMatchObject({ email, organizations: [{ id: t.orgId, role: 'owner' }] });
    // Only hashes are stored.
    const row = await env.DB.prepare('SELECT refresh_hash FROM console_sessions WHERE user_id = ?')
      .bind(body.user.id)
      .first<{ refresh_hash: string }>();
    expect(row!.refresh_hash).not.toContain(cookie.split(';')[0].split('=')[1]);
  });

  it('answers a wrong password and an unknown email the same way', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const wrong = await json(await postJson('/console/v1/auth/signin', { email, password: 'not the password' }), 401);
    const unknown = await json(await postJson('/console/v1/auth/signin', { email: uniqueEmail('nobody'), password: 'whatever' }), 401);
    expect(wrong).toEqual({ detail: 'Invalid email or password' });
    expect(unknown).toEqual(wrong);
  });

  it('refuses a user who has not set a password yet', async () => {
    const t = await seedTenant();
    const email = uniqueEmail('new');
    await runAdmin(createUser({ email, orgId: t.orgId, role: 'owner', consoleUrl: BASE }));
    await json(await postJson('/console/v1/auth/signin', { email, password: 'anything at all' }), 401);
  });

  it('rejects malformed bodies with 422 in the API’s shape', async () => {
    const res = await postJson('/console/v1/auth/signin', { email: 'not-an-email', password: '' });
    const body = await json(res, 422);
    expect(body.detail.map((d: { loc: string[] }) => d.loc.join('.'))).toEqual(['body.email', 'body.password']);
    await json(await consoleFetch('/console/v1/auth/signin', { method: 'POST', body: '{nope', headers: CSRF }), 422);
  });

  it('throttles failed attempts per account and client, even when the right password follows; other addresses still sign in', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const headers = { 'cf-connecting-ip': '203.0.113.1' };
    for (let i = 0; i < 5; i++)
      await json(await postJson('/console/v1/auth/signin', { email, password: 'bad password' }, { headers }), 401);
    const res = await postJson('/console/v1/auth/signin', { email, password: PASSWORD }, { headers });
    await json(res, 429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    // Five wrong passwords from a stranger's address do not lock the account's owner out (issue 29 finding 3).
    await signIn(email, PASSWORD, '203.0.113.2');
  });

  it('throttles failed attempts per client across accounts', async () => {
    const headers = { 'cf-connecting-ip': '198.51.100.7' };
    for (let i = 0; i < 20; i++)
      await json(await postJson('/console/v1/auth/signin', { email: uniqueEmail('spray'), password: 'guess' }, { headers }), 401);
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    await json(await postJson('/console/v1/auth/signin', { email, password: PASSWORD }, { headers }), 429);
    await signIn(email); // from another client
  });
});

describe('CSRF', () => {
  it('refuses auth calls without the console header', async () => {
    const res = await consoleFetch('/console/v1/auth/refresh', { method: 'POST' });
    expect(await json(res, 403)).toEqual({ detail: 'Missing X-Console-CSRF header' });
  });

  it('refuses a cross-site form post', async () => {
    const res = await consoleFetch('/console/v1/auth/signout', {
      method: 'POST',
      body: 'a=b',
      headers: { ...CSRF, 'content-type': 'application/x-www-form-urlencoded', origin: 'https://evil.example' },
    });
    expect(res.status).toBe(403);
  });
});

describe('refresh and sign-out', () => {
  it('rotates the refresh token; replaying an old one ends the session and its access tokens', async () => {
    const t = await seedTenant();
    const s = await signIn(await seedUser(t.orgId, 'member'));
    const res = await consoleFetch('/console/v1/auth/refresh', { method: 'POST', headers: CSRF, cookie: s.cookie });
    const body = await json(res, 200);
    const next = refreshCookie(res);
    expect(next).not.toBe(s.cookie);
    await as({ token: body.access_token }, '/console/v1/me');
    // The first cookie again: a replay.
    await json(await consoleFetch('/console/v1/auth/refresh', { method: 'POST', headers: CSRF, cookie: s.cookie }), 401);
    await as({ token: body.access_token }, '/console/v1/me', 401);
    await json(await consoleFetch('/console/v1/auth/refresh', { method: 'POST', headers: CSRF, cookie: next }), 401);
  });

  it('refuses a refresh without a cookie or with an unknown one', async () => {
    await json(await consoleFetch('/console/v1/auth/refresh', { method: 'POST', headers: CSRF }), 401);
    await json(await consoleFetch('/console/v1/auth/refresh', { method: 'POST', headers: CSRF, cookie: 'console_refresh=rt_nope' }), 401);
  });

  it('sign-out ends the session at once', async () => {
    const t = await seedTenant();
    const s = await signIn(await seedUser(t.orgId, 'member'));
    const res = await consoleFetch('/console/v1/auth/signout', { method: 'POST', headers: CSRF, cookie: s.cookie });
    await json(res, 200);
    expect(res.headers.getSetCookie().join()).toMatch(/console_refresh=;/);
    await as(s, '/console/v1/me', 401);
    await json(await consoleFetch('/console/v1/auth/refresh', { method: 'POST', headers: CSRF, cookie: s.cookie }), 401);
  });
});

describe('bearer authentication of /console/v1', () => {
  it('refuses no token, a garbage token, a token signed with another key and an API key', async () => {
    const t = await seedTenant();
    expect(await json(await consoleFetch('/console/v1/me'), 401)).toEqual({
      detail: 'Missing bearer access token: sign in to the console',
    });
    await json(await consoleFetch('/console/v1/me', { token: 'garbage' }), 401);
    const { sign } = await import('hono/jwt');
    const forged = await sign(
      { sub: 'usr_x', sid: 'ses_x', exp: Math.floor(Date.now() / 1000) + 60 },
      'another-secret-another-secret-another',
      'HS256',
    );
    await json(await consoleFetch('/console/v1/me', { token: forged }), 401);
    await json(await consoleFetch('/console/v1/me', { token: t.key }), 401);
    await json(await consoleFetch('/console/v1/me', { headers: { 'Service-API-Key': t.key } }), 401);
  });

  it('refuses an expired access token', async () => {
    const t = await seedTenant();
    const s = await signIn(await seedUser(t.orgId, 'member'));
    const { accessToken } = await import('../../src/middleware/console-auth.ts');
    const sid = (await env.DB.prepare('SELECT id FROM console_sessions WHERE user_id = ?').bind(s.userId).first<{ id: string }>())!.id;
    const old = await accessToken(env, s.userId, sid, Date.now() - 3600_000);
    await json(await consoleFetch('/console/v1/me', { token: old }), 401);
  });

  it('does not open the public API to access tokens', async () => {
    const t = await seedTenant();
    const s = await signIn(await seedUser(t.orgId, 'owner'));
    await json(await api(null, '/v1/validate_api_key', { headers: { authorization: `Bearer ${s.token}` } }), 401);
  });
});

describe('set-password links (npm run admin -- create-user)', () => {
  it('sets the password once with the full hash, then the user signs in', async () => {
    const t = await seedTenant();
    const email = uniqueEmail('first-owner');
    const link = await runAdmin(createUser({ email, orgId: t.orgId, role: 'owner', consoleUrl: BASE }));
    expect(link).toMatch(new RegExp(`^${BASE}/console/set-password#token=pw_[0-9a-f]{64}$`));
    const token = link.split('#token=')[1];
    await json(await postJson('/console/v1/auth/set-password', { token, password: 'short' }), 422);
    expect(await json(await postJson('/console/v1/auth/set-password', { token, password: 'a long enough password' }), 200)).toEqual({
      email,
      api_keys_revoked: 0,
    });
    const stored = await env.DB.prepare('SELECT password_hash FROM users WHERE email = ?').bind(email).first<{ password_hash: string }>();
    expect(stored!.password_hash).toMatch(/^pbkdf2-sha256\$100000\$[0-9a-f]{32}\$[0-9a-f]{64}$/);
    await json(await postJson('/console/v1/auth/set-password', { token, password: 'another long password' }), 404);
    const s = await signIn(email, 'a long enough password');
    expect((await as(s, '/console/v1/orgs')).items).toEqual([{ id: t.orgId, name: `org of ${t.owner}`, role: 'owner' }]);
  });

  it('refuses unknown and expired links', async () => {
    await json(await postJson('/console/v1/auth/set-password', { token: 'pw_unknown', password: 'a long enough password' }), 404);
    const t = await seedTenant();
    const email = uniqueEmail('late');
    const link = await runAdmin(createUser({ email, orgId: t.orgId, role: 'owner', consoleUrl: BASE }));
    await env.DB.prepare(`UPDATE console_links SET expires_at = '2000-01-01T00:00:00.000Z' WHERE email = ?`).bind(email).run();
    await json(
      await postJson('/console/v1/auth/set-password', { token: link.split('#token=')[1], password: 'a long enough password' }),
      404,
    );
  });
});

describe('password change', () => {
  it('needs the current password and ends every session', async () => {
    const t = await seedTenant();
    const email = await seedUser(t.orgId, 'member');
    const a = await signIn(email);
    const b = await signIn(email);
    const change = (current: string) =>
      consoleFetch('/console/v1/me/password', {
        method: 'POST',
        token: a.token,
        body: JSON.stringify({ current_password: current, new_password: 'a brand new password' }),
      });
    await json(await change('wrong password'), 403);
    expect(await env.DB.prepare('SELECT failures FROM signin_throttle WHERE key = ?').bind(`account:${email}`).first()).toEqual({
      failures: 1,
    });
    await json(
      await consoleFetch('/console/v1/me/password', {
        method: 'POST',
        token: a.token,
        body: JSON.stringify({ current_password: PASSWORD, new_password: 'short' }),
      }),
      422,
    );
    await json(await change(PASSWORD), 200);
    await as(a, '/console/v1/me', 401);
    await as(b, '/console/v1/me', 401);
    await json(await postJson('/console/v1/auth/signin', { email, password: PASSWORD }), 401);
    await signIn(email, 'a brand new password');
  });
});
