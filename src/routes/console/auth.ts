// /console/v1/auth: signing in and out, refreshing the access token, setting a
// password from a one-time link, and accepting an invitation. The only console routes
// a cookie authenticates (the refresh cookie), so the only ones that need CSRF checks.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, eq, gt, inArray, isNull, sql } from 'drizzle-orm';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../../app-env.ts';
import { grantersOf } from '../../auth/permissions.ts';
import { consoleLinks, memberships, organizations, users, type Role } from '../../db/schema.ts';
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
  revokeUserSessions,
  rotateSession,
} from '../../lib/console-sessions.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { newUserId } from '../../lib/ids.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../lib/limits.ts';
import { hashPassword, verifyPassword } from '../../lib/password.ts';
import { MessageResponse } from '../../lib/schemas.ts';
import { clearFailures, MAX_FAILURES_PER_ACCOUNT, MAX_FAILURES_PER_CLIENT, passwordAttemptKeys, recordFailure } from '../../lib/signin-throttle.ts';

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
    const keys = await passwordAttemptKeys(db, email, c.req.header('cf-connecting-ip'));
    const user = await db.select().from(users).where(eq(users.email, email)).get();
    // Unknown emails run the same hash (verifyPassword does) and get the same answer.
    if (!(await verifyPassword(password, user?.password_hash ?? null)) || !user) {
      await recordFailure(db, keys);
      throw new ApiError(401, GENERIC_SIGNIN_ERROR);
    }
    await clearFailures(db, keys[0]!);
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

/** A live one-time link of a kind, by its token. */
async function findLink(c: Context<AppEnv>, token: string, kind: 'invite' | 'set_password') {
  const link = await c.var.db
    .select()
    .from(consoleLinks)
    .where(
      and(
        eq(consoleLinks.token_hash, await sha256Hex(token)),
        eq(consoleLinks.kind, kind),
        isNull(consoleLinks.used_at),
        isNull(consoleLinks.revoked_at),
        gt(consoleLinks.expires_at, new Date().toISOString()),
      ),
    )
    .get();
  if (!link) throw new ApiError(404, 'This link is unknown, used or expired: ask for a new one');
  return link;
}

/** Marks a link used; false when another request used it first. */
async function useLink(c: Context<AppEnv>, id: string) {
  const used = await c.var.db
    .update(consoleLinks)
    .set({ used_at: new Date().toISOString() })
    .where(and(eq(consoleLinks.id, id), isNull(consoleLinks.used_at)))
    .returning({ id: consoleLinks.id });
  if (!used.length) throw new ApiError(404, 'This link is unknown, used or expired: ask for a new one');
}

const Token = z.string().min(1).max(200);

/** An invitation's role, as SQL, while its inviter (created_by, a user id) holds a role that may grant it; else NULL. */
const inviterGrants = (link: typeof consoleLinks.$inferSelect) =>
  sql<Role>`(SELECT ${link.role} WHERE EXISTS (SELECT 1 FROM ${memberships} WHERE ${memberships.org_id} = ${link.org_id} AND ${memberships.user_id} = ${link.created_by} AND ${inArray(memberships.role, grantersOf(link.role!))}))`;
const isRefusedGrant = (err: unknown): boolean => {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (e.message.includes('NOT NULL constraint failed: memberships.role')) return true;
  return false;
};

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/set-password',
    tags: ['console auth'],
    summary: 'Set a password with a one-time link (from `npm run admin -- create-user`)',
    description: 'Ends the user’s other sessions. The token travels in the body, never in a URL the server sees (the link carries it after #).',
    request: { body: { required: true, content: { 'application/json': { schema: z.object({ token: Token, password: Password }) } } } },
    responses: {
      200: { description: 'Password set', content: { 'application/json': { schema: PasswordSet } } },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    const { token, password } = c.req.valid('json');
    const link = await findLink(c, token, 'set_password');
    const hash = await hashPassword(password);
    await useLink(c, link.id);
    await c.var.db.update(users).set({ password_hash: hash }).where(eq(users.id, link.user_id!));
    await revokeUserSessions(c.var.db, link.user_id!);
    return c.json({ email: link.email }, 200);
  },
);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/invite',
    tags: ['console auth'],
    summary: 'Read an invitation (who invited whom into what)',
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
      c.var.db.select({ hash: users.password_hash }).from(users).where(eq(users.email, link.email)).get(),
    ]);
    return c.json({ email: link.email, org_name: org?.name ?? '', role: link.role!, has_account: Boolean(user?.hash) }, 200);
  },
);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    path: '/accept-invite',
    tags: ['console auth'],
    summary: 'Accept an invitation: join the organization, creating the account if needed',
    description: 'A new account sets its password here; an existing account proves it with its current password.',
    request: {
      body: {
        required: true,
        content: { 'application/json': { schema: z.object({ token: Token, password: z.string().min(1).max(MAX_PASSWORD_LENGTH), name: z.string().trim().max(100).optional() }) } },
      },
    },
    responses: {
      200: { description: 'Joined', content: { 'application/json': { schema: InviteAccepted } } },
      ...consoleErrors(403, 404, 409, 422, 429),
    },
  }),
  async (c) => {
    const { token, password, name } = c.req.valid('json');
    const db = c.var.db;
    const link = await findLink(c, token, 'invite');
    const existing = await db.select().from(users).where(eq(users.email, link.email)).get();
    let userId: string;
    let newHash: string | undefined;
    if (existing?.password_hash) {
      // Proving an existing account's password is a sign-in attempt: throttled alike.
      const keys = await passwordAttemptKeys(db, existing.email, c.req.header('cf-connecting-ip'));
      if (!(await verifyPassword(password, existing.password_hash))) {
        await recordFailure(db, keys);
        throw new ApiError(401, GENERIC_SIGNIN_ERROR);
      }
      userId = existing.id;
    } else {
      const parsed = Password.safeParse(password);
      if (!parsed.success) throw new ApiError(422, `The password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`);
      newHash = await hashPassword(password);
      userId = existing?.id ?? newUserId();
    }
    const member = await db
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.org_id, link.org_id!), eq(memberships.user_id, userId)))
      .get();
    if (member) throw new ApiError(409, 'You are already a member of this organization');
    await useLink(c, link.id);
    const writes = [
      ...(existing
        ? newHash
          ? [db.update(users).set({ password_hash: newHash, ...(name ? { name } : {}) }).where(eq(users.id, userId))]
          : []
        : [db.insert(users).values({ id: userId, email: link.email, name: name ?? '', password_hash: newHash! })]),
      // The role only while the inviter may still grant it (src/auth/permissions.ts), in
      // this statement: a removal or demotion racing it fails the batch (NOT NULL).
      db.insert(memberships).values({ org_id: link.org_id!, user_id: userId, role: inviterGrants(link) }),
      auditEntry(db, link.org_id!, { userId, email: link.email }, 'invite.accept', link.email, { role: link.role, invite_id: link.id }),
    ];
    try {
      await db.batch(writes as [any, ...any[]]);
    } catch (err) {
      if (isRefusedGrant(err)) throw new ApiError(403, 'Whoever invited you may no longer grant this role: ask for a new invitation');
      throw err;
    }
    return c.json({ email: link.email, org_id: link.org_id! }, 200);
  },
);
