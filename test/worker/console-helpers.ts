// Console test helpers: users made with the operator command's statements, signing in
// through the real /console/v1/auth routes, and calls with the bearer access token.
import { createExecutionContext, createMessageBatch, env, getQueueResult } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { vi } from 'vitest';
import { createUser } from '../../src/admin/statements.ts';
import type { Role } from '../../src/auth/permissions.ts';
import type { MailRequest } from '../../src/env.ts';
import { hashPassword } from '../../src/features/accounts/password.ts';
import { expect } from 'vitest';
import { BASE, eventually, json, runAdmin } from './helpers.ts';

export const PASSWORD = 'correct horse battery';
export const CSRF = { 'X-Console-CSRF': '1' };

let users = 0;
export const uniqueEmail = (label = 'user') => `${label}${++users}.${Date.now()}@example.com`;

/**
 * A user with a password, member of `orgId` with `role`. Hashed with few iterations to
 * keep the suite fast (verifyPassword reads the count from the hash); the full count
 * is exercised by the set-password tests.
 */
export async function seedUser(orgId: string, role: Role, opts: { email?: string; operator?: boolean } = {}) {
  const email = opts.email ?? uniqueEmail(role);
  await runAdmin(
    createUser({ email, orgId, role, operator: opts.operator, consoleUrl: BASE, passwordHash: await hashPassword(PASSWORD, 1000) }),
  );
  return email;
}

export function consoleFetch(path: string, init: RequestInit & { token?: string; cookie?: string } = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  if (init.token) headers.set('authorization', `Bearer ${init.token}`);
  if (init.cookie) headers.set('cookie', init.cookie);
  // What a browser sends on a same-origin POST (hono/csrf checks it on body-less and form posts).
  if (init.method && init.method !== 'GET' && !headers.has('origin')) headers.set('origin', BASE);
  if (init.body && typeof init.body === 'string' && !headers.has('content-type')) headers.set('content-type', 'application/json');
  return exports.default.fetch(new Request(BASE + path, { ...init, headers }));
}

export const postJson = (path: string, body: unknown, init: RequestInit & { token?: string; cookie?: string } = {}) =>
  consoleFetch(path, {
    ...init,
    method: init.method ?? 'POST',
    body: JSON.stringify(body),
    headers: { ...CSRF, ...(init.headers as Record<string, string>) },
  });

/** The `name=value` of the refresh cookie a response sets. */
export function refreshCookie(res: Response): string {
  const set = res.headers.getSetCookie().find((c) => c.startsWith('console_refresh='));
  if (!set) throw new Error(`no refresh cookie in ${JSON.stringify(res.headers.getSetCookie())}`);
  return set.split(';')[0];
}

export interface Session {
  token: string;
  cookie: string;
  userId: string;
  email: string;
}

export async function signIn(email: string, password = PASSWORD, address?: string): Promise<Session> {
  const res = await postJson('/console/v1/auth/signin', { email, password }, address ? { headers: { 'cf-connecting-ip': address } } : {});
  const body = await json<{ access_token: string; user: { id: string } }>(res, 200);
  return { token: body.access_token, cookie: refreshCookie(res), userId: body.user.id, email };
}

/** The console session a signed-in person's access token names (its `sid` claim). */
export const sessionOf = (s: Pick<Session, 'token'>): string =>
  (JSON.parse(atob(s.token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/'))) as { sid: string }).sid;

/** A GET (or other method) as a signed-in user, expecting `status`. */
export async function as<T = any>(s: Pick<Session, 'token'>, path: string, status = 200, init: RequestInit = {}): Promise<T> {
  const res = await consoleFetch(path, { ...init, token: s.token });
  const text = await res.text();
  if (res.status !== status) throw new Error(`${init.method ?? 'GET'} ${path}: expected ${status}, got ${res.status} ${text}`);
  return (res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text) as T;
}

export const send = <T = any>(s: Pick<Session, 'token'>, method: string, path: string, body: unknown, status = 200) =>
  as<T>(s, path, status, {
    method,
    body: body === undefined ? undefined : JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });

export interface Mail {
  to: string;
  subject: string;
  text: string;
  link: string | null;
  created_at: string;
}

/**
 * The newest message the local outbox (MAIL_SENDER = "outbox") holds for `to`, made
 * after `since` (an ISO time) if given; null when there is none (yet).
 */
export const outboxMail = (to: string, since = ''): Promise<Mail | null> =>
  env.DB.prepare('SELECT * FROM mail_outbox WHERE "to" = ? AND created_at > ? ORDER BY created_at DESC, id DESC LIMIT 1')
    .bind(to.toLowerCase(), since)
    .first<Mail>();

/** outboxMail once it has landed: mail is sent after the answer (waitUntil, or the MAIL queue's consumer for password resets). */
export const latestMail = (to: string, since = ''): Promise<Mail> =>
  eventually(async () => {
    const mail = await outboxMail(to, since);
    expect(mail, `no mail to ${to}`).not.toBeNull();
    return mail!;
  });

/** The token of the newest link mailed to `to` (throws if none came). */
export async function mailedToken(to: string, since = ''): Promise<string> {
  const mail = await latestMail(to, since);
  if (!mail.link) throw new Error(`no mail with a link to ${to}`);
  return mail.link.split('#token=')[1];
}

/** Now as D1 stores times, to read only mail sent after it. */
export const isoNow = () => new Date().toISOString();

/**
 * Holds what is put on the MAIL queue (password resets asked for) instead of letting the
 * local queue carry it, so a test hands it to the Worker's own queue handler when it
 * chooses (`deliver`, answering the queue's result): the same consumer, at a time the
 * test knows. Undone by vi.restoreAllMocks().
 */
export function holdMailQueue() {
  const held: MailRequest[] = [];
  vi.spyOn(env.MAIL, 'send').mockImplementation(async (body) => {
    held.push(body);
    return { metadata: { metrics: { backlogCount: held.length, backlogBytes: 0 } } };
  });
  return {
    held,
    async deliver() {
      const worker = (await import('../../src/index.ts')).default;
      const batch = createMessageBatch(
        'zk-proving-mail-local',
        held.splice(0).map((body, i) => ({ id: `mail-${i}`, timestamp: new Date(), attempts: 1, body })),
      );
      const ctx = createExecutionContext();
      await worker.queue(batch, env);
      return getQueueResult(batch, ctx);
    },
  };
}
