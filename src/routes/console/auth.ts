// /console/v1/auth: signing in and out, refreshing the access token, setting a
// password from a one-time link, asking for a password reset, and accepting an
// invitation. The only console routes a cookie authenticates (the refresh cookie), so
// the only ones that need CSRF checks.
//
// A person's credentials are set only by that person: by the holder of a link that was
// emailed to them (set-password, password reset, an invitation for a new account), or,
// to join an organization with an existing account, by being signed in as it. No link
// that grants an account is ever answered to whoever caused it (src/lib/mail.ts).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, count, eq, gt, inArray, isNull, ne, sql } from 'drizzle-orm';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../../app-env.ts';
import type { Db } from '../../db/client.ts';
import { grantersOf } from '../../auth/permissions.ts';
import { consoleLinks, consoleSessions, memberships, nowIso, organizations, users, type Role } from '../../db/schema.ts';
import { auditEntry } from '../../lib/audit.ts';
import { InviteAccepted, InviteSummary, PasswordSet, TokenResponse, type UserRecord } from '../../lib/console-records.ts';
import { consoleErrors, CSRF_HEADER, Email } from '../../lib/console-schemas.ts';
import {
  accessToken,
  accessTtlSeconds,
  openSession,
  REFRESH_COOKIE,
  REFRESH_COOKIE_PATH,
  REFRESH_TTL_SECONDS,
  revokeSession,
  rotateSession,
} from '../../lib/console-sessions.ts';
import { passwordLinkFor } from '../../lib/console-links.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { ApiError, refusedAs, validationHook } from '../../lib/errors.ts';
import { newLinkId, newUserId } from '../../lib/ids.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../lib/limits.ts';
import { passwordResetMessage, PASSWORD_RESET_TTL_MINUTES, send } from '../../lib/mail.ts';
import { hashPassword, verifyPassword } from '../../lib/password.ts';
import { revoke } from '../../lib/revoke.ts';
import { MessageResponse } from '../../lib/schemas.ts';
import { requireConsoleUser, type ConsoleEnv, type ConsoleUser } from '../../middleware/console-auth.ts';
import { MAX_FAILURES_PER_ACCOUNT, MAX_FAILURES_PER_CLIENT, passwordAccepted, reservePasswordAttempt } from '../../lib/signin-throttle.ts';

export const consoleAuthApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

// Cross-site requests are refused twice over: by Origin / Sec-Fetch-Site (hono/csrf,
// for form posts) and by the custom header no other site can send without a CORS
// preflight, which this Worker never grants. The cookie is SameSite=Strict as well.
consoleAuthApi.use('*', csrf());
const requireCsrfHeader = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.header(CSRF_HEADER) !== '1') throw new ApiError(403, `Missing ${CSRF_HEADER} header`);
  await next();
});
consoleAuthApi.use('*', requireCsrfHeader);

const Password = z.string().min(MIN_PASSWORD_LENGTH).max(MAX_PASSWORD_LENGTH);
const SigninBody = z.object({ email: Email, password: z.string().min(1).max(MAX_PASSWORD_LENGTH) }).openapi('SigninRequest');

function setRefreshCookie(c: Context, refresh: string) {
  setCookie(c, REFRESH_COOKIE, refresh, { path: REFRESH_COOKIE_PATH, httpOnly: true, secure: true, sameSite: 'Strict', maxAge: REFRESH_TTL_SECONDS });
}

async function tokenBody(c: Context<AppEnv>, user: z.infer<typeof UserRecord>, sessionId: string) {
  return { access_token: await accessToken(c.env, user.id, sessionId), token_type: 'Bearer' as const, expires_in: accessTtlSeconds(c.env), user };
}

const GENERIC_SIGNIN_ERROR = 'Invalid email or password';

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/signin',
    tags: ['console auth'],
    summary: 'Sign in with email and password',
    description: `Failed attempts are throttled per account (${MAX_FAILURES_PER_ACCOUNT}) and per client (${MAX_FAILURES_PER_CLIENT}) per 15 minutes. Send ${CSRF_HEADER}: 1.`,
    request: { body: { required: true, content: { 'application/json': { schema: SigninBody } } } },
    responses: { 200: { description: 'Signed in', content: { 'application/json': { schema: TokenResponse } } }, ...consoleErrors(403, 422, 429) },
  }),
  async (c) => {
    const { email, password } = c.req.valid('json');
    const db = c.var.db;
    // The check is counted before it runs: a failure has nothing left to record.
    const keys = await reservePasswordAttempt(db, email, c.req.header('cf-connecting-ip'));
    const user = await db.select().from(users).where(eq(users.email, email)).get();
    // Unknown emails run the same hash (verifyPassword does) and get the same answer.
    if (!(await verifyPassword(password, user?.password_hash ?? null)) || !user) throw new ApiError(401, GENERIC_SIGNIN_ERROR);
    await passwordAccepted(db, keys);
    const session = await openSession(db, user.id);
    setRefreshCookie(c, session.refresh);
    return c.json(await tokenBody(c, { id: user.id, email: user.email, name: user.name, is_operator: user.is_operator }, session.id), 200);
  },
);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/refresh',
    tags: ['console auth'],
    summary: 'Trade the refresh cookie for a new access token (the cookie rotates)',
    description: `Cookie-authenticated: send ${CSRF_HEADER}: 1. A refresh token used twice ends its session.`,
    responses: { 200: { description: 'A new access token', content: { 'application/json': { schema: TokenResponse } } }, ...consoleErrors(403) },
  }),
  async (c) => {
    const refresh = getCookie(c, REFRESH_COOKIE);
    const result = refresh ? await rotateSession(c.var.db, refresh) : ({ kind: 'refused' } as const);
    if (result.kind === 'refused') {
      deleteCookie(c, REFRESH_COOKIE, { path: REFRESH_COOKIE_PATH, secure: true });
      throw new ApiError(401, 'Not signed in');
    }
    const user = await c.var.db.select({ id: users.id, email: users.email, name: users.name, is_operator: users.is_operator }).from(users).where(eq(users.id, result.userId)).get();
    if (!user) throw new ApiError(401, 'Not signed in');
    setRefreshCookie(c, result.refresh);
    return c.json(await tokenBody(c, user, result.sessionId), 200);
  },
);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/signout',
    tags: ['console auth'],
    summary: 'Sign out: ends the session of the refresh cookie',
    responses: { 200: { description: 'Signed out', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403) },
  }),
  async (c) => {
    const refresh = getCookie(c, REFRESH_COOKIE);
    if (refresh) {
      const result = await rotateSession(c.var.db, refresh);
      if (result.kind === 'rotated') await revokeSession(c.var.db, result.sessionId);
    }
    deleteCookie(c, REFRESH_COOKIE, { path: REFRESH_COOKIE_PATH, secure: true });
    return c.json({ message: 'Signed out' }, 200);
  },
);

type LinkKind = (typeof consoleLinks.$inferSelect)['kind'];

const DEAD_LINK = 'This link is unknown, used or expired: ask for a new one';

/** The condition of a link that still works: unused, unrevoked, unexpired. */
const liveLink = (where: ReturnType<typeof eq>) =>
  and(where, isNull(consoleLinks.used_at), isNull(consoleLinks.revoked_at), gt(consoleLinks.expires_at, nowIso));

/** A live one-time link of a kind, by its token. */
async function findLink(c: Context<AppEnv>, token: string, kind: LinkKind) {
  const link = await c.var.db
    .select()
    .from(consoleLinks)
    .where(and(liveLink(eq(consoleLinks.token_hash, await sha256Hex(token))), eq(consoleLinks.kind, kind)))
    .get();
  if (!link) throw new ApiError(404, DEAD_LINK);
  return link;
}

/** Marks a link used, conditional on it still being live: of two requests with it, one wins. */
const useLink = (c: Context<AppEnv>, id: string) =>
  c.var.db.update(consoleLinks).set({ used_at: nowIso }).where(liveLink(eq(consoleLinks.id, id))).returning({ id: consoleLinks.id });

const Token = z.string().min(1).max(200);
const PasswordWithLink = z.object({ token: Token, password: Password });

/**
 * Sets a password with a link of `kind` (set-password from the operator tool, or a
 * password reset), in one transaction: the password, the end of every session of the
 * user and of their other live password links, and the link's use all happen only
 * while the link is live, so a used, revoked or expired link changes nothing.
 */
async function setPasswordWithLink(c: Context<AppEnv>, kind: 'set_password' | 'password_reset', token: string, password: string) {
  const db = c.var.db;
  const link = await findLink(c, token, kind);
  const hash = await hashPassword(password);
  const owner = db.select({ id: consoleLinks.user_id }).from(consoleLinks).where(liveLink(eq(consoleLinks.id, link.id)));
  const results = await db.batch([
    db.update(users).set({ password_hash: hash }).where(inArray(users.id, owner)),
    revoke(db, consoleSessions, inArray(consoleSessions.user_id, owner)),
    revoke(
      db,
      consoleLinks,
      and(eq(consoleLinks.user_id, link.user_id!), inArray(consoleLinks.kind, ['set_password', 'password_reset']), isNull(consoleLinks.used_at), ne(consoleLinks.id, link.id), inArray(consoleLinks.user_id, owner)),
    ),
    useLink(c, link.id),
  ]);
  if (!results[3].length) throw new ApiError(404, DEAD_LINK);
  return link.email;
}

/** An invitation's role, as SQL, while its inviter (created_by, a user id) holds a role that may grant it; else NULL. */
const inviterGrants = (link: typeof consoleLinks.$inferSelect) =>
  sql<Role>`(SELECT ${link.role} WHERE EXISTS (SELECT 1 FROM ${memberships} WHERE ${memberships.org_id} = ${link.org_id} AND ${memberships.user_id} = ${link.created_by} AND ${inArray(memberships.role, grantersOf(link.role!))}))`;

// Setting a password with a link: the operator's set-password link, or a password reset.
for (const route of [
  {
    path: '/set-password',
    kind: 'set_password',
    summary: 'Set a password with a one-time link (from `npm run admin -- create-user`)',
    description: 'Ends the user’s sessions. The token travels in the body, never in a URL the server sees (the link carries it after #).',
  },
  {
    path: '/reset-password',
    kind: 'password_reset',
    summary: 'Set a new password with a password-reset link',
    description: 'Ends every session of the user and revokes their other password links. The token travels in the body (the link carries it after #).',
  },
] as const)
  consoleAuthApi.openapi(
    createRoute({
      method: 'post',
      path: route.path,
      tags: ['console auth'],
      summary: route.summary,
      description: route.description,
      request: { body: { required: true, content: { 'application/json': { schema: PasswordWithLink } } } },
      responses: {
        200: { description: 'Password set', content: { 'application/json': { schema: PasswordSet } } },
        ...consoleErrors(403, 404, 422),
      },
    }),
    async (c) => {
      const { token, password } = c.req.valid('json');
      return c.json({ email: await setPasswordWithLink(c, route.kind, token, password) }, 200);
    },
  );

/** Reset links one email may be sent per window, whoever asks (more are silently not made). */
export const RESET_LINKS_PER_EMAIL = 3;
const RESET_WINDOW_MINUTES = 15;
const RESET_ANSWER = 'If an account has this email, a link to reset its password is on its way.';

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/password-reset',
    tags: ['console auth'],
    summary: 'Ask for a password-reset link by email',
    description: `Always answers 202 the same way, whether or not an account has the email. An account gets a one-time link, valid ${PASSWORD_RESET_TTL_MINUTES} minutes, by email (at most ${RESET_LINKS_PER_EMAIL} per ${RESET_WINDOW_MINUTES} minutes); a new link revokes the older ones. Requests are limited per client address (429). Send ${CSRF_HEADER}: 1.`,
    request: { body: { required: true, content: { 'application/json': { schema: z.object({ email: Email }).openapi('PasswordResetRequest') } } } },
    responses: { 202: { description: 'Asked', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403, 422, 429) },
  }),
  async (c) => {
    const { email } = c.req.valid('json');
    // Per client: a Rate Limiting binding (approximate is enough; per account, D1 below counts exactly).
    const { success } = await c.env.RATE_LIMIT_PASSWORD_RESET.limit({ key: `reset:${c.req.header('cf-connecting-ip') ?? ''}` });
    if (!success) throw new ApiError(429, 'Too many password-reset requests: try again in a minute', { 'Retry-After': '60' });
    const db = c.var.db;
    const token = randomToken('rst', 32);
    const id = newLinkId();
    const recent = db
      .select({ n: count() })
      .from(consoleLinks)
      .where(and(eq(consoleLinks.email, email), eq(consoleLinks.kind, 'password_reset'), gt(consoleLinks.created_at, sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ${`-${RESET_WINDOW_MINUTES} minutes`})`)));
    // The same two statements run for any email, known or not; the throttle is part of
    // the insert (a count and a write in one statement), so concurrent requests cannot pass it together.
    const [made] = await db.batch([
      passwordLinkFor(
        db,
        { id, kind: 'password_reset', tokenHash: await sha256Hex(token), lifetime: `+${PASSWORD_RESET_TTL_MINUTES} minutes` },
        and(eq(users.email, email), sql`(${recent}) < ${RESET_LINKS_PER_EMAIL}`),
      )
        .returning({ id: consoleLinks.id }),
      // A new link revokes the older unused ones (only when one was made).
      revoke(
        db,
        consoleLinks,
        and(
          eq(consoleLinks.email, email),
          eq(consoleLinks.kind, 'password_reset'),
          isNull(consoleLinks.used_at),
          ne(consoleLinks.id, id),
          sql`exists (select 1 from ${consoleLinks} as made where made.id = ${id})`,
        ),
      ),
    ]);
    if (made.length) {
      // After the answer: how long a mail API takes must not tell whether the email has an account.
      const message = passwordResetMessage({ consoleUrl: new URL(c.req.url).origin, token, to: email });
      c.executionCtx.waitUntil(send(c.env, message).catch((err) => console.error(`password reset mail to ${email} failed: ${(err as Error).message}`)));
    }
    return c.json({ message: RESET_ANSWER }, 202);
  },
);


consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/invite',
    tags: ['console auth'],
    summary: 'Read an invitation (who invited whom into what)',
    description: '`has_account`: an account has the invited email already; it joins by accepting while signed in as that account.',
    request: { body: { required: true, content: { 'application/json': { schema: z.object({ token: Token }) } } } },
    responses: {
      200: { description: 'The invitation', content: { 'application/json': { schema: InviteSummary } } },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    const link = await findLink(c, c.req.valid('json').token, 'invite');
    const [org, user] = await Promise.all([
      c.var.db.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, link.org_id!)).get(),
      c.var.db.select({ id: users.id }).from(users).where(eq(users.email, link.email)).get(),
    ]);
    return c.json({ email: link.email, org_name: org?.name ?? '', role: link.role!, has_account: Boolean(user) }, 200);
  },
);

/** A new account, made by the holder of an invitation emailed to its address. */
const insertUser = (db: Db, id: string, email: string, name: string, passwordHash: string) => db.insert(users).values({ id, email, name, password_hash: passwordHash });

// Accepting with a bearer token: the signed-in user is checked as on every signed-in
// route (a live session), then must be the invited email's account.
consoleAuthApi.use('/accept-invite', createMiddleware<AppEnv>(async (c, next) => (c.req.header('authorization') ? requireConsoleUser(c as unknown as Context<ConsoleEnv>, next) : next())));

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/accept-invite',
    tags: ['console auth'],
    summary: 'Accept an invitation: join the organization, creating the account if needed',
    description:
      'An existing account accepts while signed in as it (`Authorization: Bearer <access token>` of the invited email’s account; no password). With no account for the email yet, the link’s holder (the link was emailed to that address) creates it with a password.',
    request: {
      body: {
        required: true,
        content: { 'application/json': { schema: z.object({ token: Token, password: Password.optional(), name: z.string().trim().max(100).optional() }).openapi('AcceptInviteRequest') } },
      },
    },
    responses: {
      200: { description: 'Joined', content: { 'application/json': { schema: InviteAccepted } } },
      ...consoleErrors(401, 403, 404, 409, 422),
    },
  }),
  async (c) => {
    const { token, password, name } = c.req.valid('json');
    const db = c.var.db;
    const signedIn = (c as unknown as Context<ConsoleEnv>).get('user') as ConsoleUser | undefined;
    const link = await findLink(c, token, 'invite');
    const existing = await db.select({ id: users.id }).from(users).where(eq(users.email, link.email)).get();
    let userId: string;
    let create: ReturnType<typeof insertUser>[] = [];
    if (signedIn) {
      // Never someone else's invitation, whoever holds its link.
      if (signedIn.email !== link.email) throw new ApiError(403, `This invitation is for ${link.email}: sign in as that account to accept it`);
      if (password !== undefined) throw new ApiError(422, 'An existing account keeps its password: accept without one');
      userId = signedIn.id;
    } else {
      // An invitation never sets or changes an existing account's password.
      if (existing) throw new ApiError(401, `An account exists for ${link.email}: sign in as it, then accept the invitation`, { 'WWW-Authenticate': 'Bearer' });
      if (password === undefined) throw new ApiError(422, `Choose a password of ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`);
      userId = newUserId();
      create = [insertUser(db, userId, link.email, name ?? '', await hashPassword(password))];
    }
    // One batch, one transaction: the link used, the account created and the membership
    // inserted, or none of it. The membership takes its organization from the link only if
    // this batch used it (else NULL, refusing the insert and the batch); the unique index
    // memberships_org_user refuses a second membership of the person, whichever invitation
    // made the first; users_email an account made meanwhile for the email (a conflict,
    // never taken over). (A link revoked in the very instant it is accepted counts as
    // accepted first.) The role is granted only while the inviter may still grant it
    // (src/auth/permissions.ts), in the same statement: a removal or demotion racing it
    // leaves the role NULL and refuses the batch.
    const usedAt = new Date().toISOString();
    const usedHere = db.select({ org_id: consoleLinks.org_id }).from(consoleLinks).where(and(eq(consoleLinks.id, link.id), eq(consoleLinks.used_at, usedAt)));
    await db
      .batch([
        db.update(consoleLinks).set({ used_at: usedAt }).where(liveLink(eq(consoleLinks.id, link.id))),
        ...create,
        db.insert(memberships).values({ org_id: sql`${usedHere}`, user_id: userId, role: inviterGrants(link) }),
        auditEntry(db, link.org_id!, { userId, email: link.email }, 'invite.accept', link.email, { role: link.role, invite_id: link.id }),
      ])
      .catch(refusedAs('NOT NULL constraint failed: memberships.org_id', 404, DEAD_LINK))
      .catch(refusedAs('NOT NULL constraint failed: memberships.role', 403, 'Whoever invited you may no longer grant this role: ask for a new invitation'))
      .catch(refusedAs('UNIQUE constraint failed: memberships.org_id, memberships.user_id', 409, 'You are already a member of this organization'))
      .catch(refusedAs('UNIQUE constraint failed: users.email', 409, 'The account exists already: sign in as it, then open the invitation again'));
    return c.json({ email: link.email, org_id: link.org_id! }, 200);
  },
);
