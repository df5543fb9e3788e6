// /console/v1/auth: signing in and out, refreshing the access token, setting a
// password from a one-time link, asking for a password reset, and accepting an
// invitation. The only console routes a cookie authenticates (the refresh cookie), so
// the only ones that need CSRF checks.
//
// A person's credentials are set only by that person: by the holder of a link that was
// emailed to them (set-password, password reset, an invitation for a new account), or,
// to join an organization with an existing account, by being signed in as it. No link
// that grants an account is ever answered to whoever caused it (../mail.ts).
import { createRoute, OpenAPIHono, type z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { deleteCookie, getCookie, setCookie } from 'hono/cookie';
import { csrf } from 'hono/csrf';
import { createMiddleware } from 'hono/factory';
import { HTTPException } from 'hono/http-exception';
import type { AppEnv } from '../../../app-env.ts';
import { ApiError, validationHook } from '../../../lib/errors.ts';
import { newUserId } from '../../../lib/ids.ts';
import { BODY_CAPS, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../../lib/limits.ts';
import { door, json } from '../../../middleware/door.ts';
import { consoleErrors, MessageResponse } from '../../../lib/schemas.ts';
import {
  accessToken,
  accessTtlSeconds,
  consoleSigningKey,
  consoleUserIfBearer,
  type MaybeSignedInEnv,
} from '../../../middleware/console-auth.ts';
import { acceptInvite, inviteSummary, type Joining } from '../invites.ts';
import { findLink } from '../links.ts';
import { PASSWORD_RESET_TTL_MINUTES, publicOrigin } from '../mail.ts';
import { askPasswordReset } from '../password-reset.ts';
import { hashPassword, verifyPassword } from '../password.ts';
import {
  AcceptInviteRequest,
  CSRF_HEADER,
  InviteAccepted,
  InviteSummary,
  InviteToken,
  PasswordResetRequest,
  PasswordSet,
  PasswordWithLink,
  SigninBody,
  TokenResponse,
  type UserRecord,
} from '../schemas.ts';
import { openSession, REFRESH_COOKIE, REFRESH_COOKIE_PATH, REFRESH_TTL_SECONDS, revokeSession, rotateSession } from '../sessions.ts';
import {
  MAX_FAILURES_PER_ACCOUNT,
  MAX_FAILURES_PER_ACCOUNT_AND_CLIENT,
  MAX_FAILURES_PER_CLIENT,
  reservePasswordAttempt,
} from '../signin-throttle.ts';
import { accountExists, RESET_LINKS_PER_EMAIL, RESET_WINDOW_MINUTES, setPasswordWithLink, userByEmail, userById } from '../users.ts';

export const consoleAuthApi = new OpenAPIHono<MaybeSignedInEnv>({ defaultHook: validationHook });

// Cross-site requests are refused twice over: by Origin / Sec-Fetch-Site (hono/csrf,
// for form posts) and by the custom header no other site can send without a CORS
// preflight, which this Worker never grants. The cookie is SameSite=Strict as well.
// hono/csrf refuses with a bare 403 ("Forbidden"): the refusal says why, in the API's shape.
const sameOrigin = csrf();
consoleAuthApi.use('*', async (c, next) => {
  await sameOrigin(c, async () => undefined).catch((err: unknown) => {
    if (!(err instanceof HTTPException)) throw err;
    throw new ApiError(
      403,
      'Cross-site request refused: send JSON (Content-Type: application/json) with the X-Console-CSRF header, as the console’s pages do',
    );
  });
  await next();
});
const requireCsrfHeader = createMiddleware<AppEnv>(async (c, next) => {
  if (c.req.header(CSRF_HEADER) !== '1') throw new ApiError(403, `Missing ${CSRF_HEADER} header`);
  await next();
});
consoleAuthApi.use('*', requireCsrfHeader);

function setRefreshCookie(c: Context, refresh: string) {
  setCookie(c, REFRESH_COOKIE, refresh, {
    path: REFRESH_COOKIE_PATH,
    httpOnly: true,
    secure: true,
    sameSite: 'Strict',
    maxAge: REFRESH_TTL_SECONDS,
  });
}

async function tokenBody(c: Context<AppEnv>, user: z.infer<typeof UserRecord>, sessionId: string) {
  return {
    access_token: await accessToken(c.env, user.id, sessionId),
    token_type: 'Bearer' as const,
    expires_in: accessTtlSeconds(c.env),
    user,
  };
}

const GENERIC_SIGNIN_ERROR = 'Invalid email or password';

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'signIn',
    security: [],
    path: '/signin',
    middleware: [door.anonymous({ body: json(BODY_CAPS.anonymous) })],
    tags: ['console auth'],
    summary: 'Sign in with email and password',
    description: `Failed attempts are throttled per account and client address (${MAX_FAILURES_PER_ACCOUNT_AND_CLIENT}), per client (${MAX_FAILURES_PER_CLIENT}) and per account from every address (${MAX_FAILURES_PER_ACCOUNT}) per 15 minutes; a password reset clears an account's. 409 when the password changed while signing in. Send ${CSRF_HEADER}: 1.`,
    request: { body: { required: true, content: { 'application/json': { schema: SigninBody } } } },
    responses: {
      200: { description: 'Signed in', content: { 'application/json': { schema: TokenResponse } } },
      ...consoleErrors(403, 409, 422, 429),
    },
  }),
  async (c) => {
    const { email, password } = c.req.valid('json');
    const db = c.get('db');
    const address = c.req.header('cf-connecting-ip');
    // The check is counted before it runs: a failure has nothing left to record.
    const attempt = await reservePasswordAttempt(db, email, address);
    const user = await userByEmail(db, email);
    // Unknown emails run the same hash (verifyPassword does) and get the same answer.
    if (!(await verifyPassword(password, user?.password_hash ?? null)) || !user?.password_hash)
      throw new ApiError(401, GENERIC_SIGNIN_ERROR);
    // Opened only while the password just checked is still the account's (a reset or a
    // change that landed meanwhile ended every session; this one must not outlive it).
    const session = await openSession(db, consoleSigningKey(c.env), { id: user.id, passwordHash: user.password_hash }, attempt, {
      userAgent: c.req.header('user-agent'),
      address,
    });
    if (!session) throw new ApiError(409, 'The password of this account changed while you were signing in: sign in with the new one');
    setRefreshCookie(c, session.refresh);
    return c.json(await tokenBody(c, { id: user.id, email: user.email, name: user.name, is_operator: user.is_operator }, session.id), 200);
  },
);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'refreshSession',
    security: [],
    path: '/refresh',
    middleware: [door.anonymous()],
    tags: ['console auth'],
    summary: 'Trade the refresh cookie for a new access token (the cookie rotates)',
    description: `Cookie-authenticated: send ${CSRF_HEADER}: 1. A refresh token used twice (any token of the session before the current one) ends its session.`,
    responses: {
      200: { description: 'A new access token', content: { 'application/json': { schema: TokenResponse } } },
      ...consoleErrors(403),
    },
  }),
  async (c) => {
    const refresh = getCookie(c, REFRESH_COOKIE);
    const result = refresh ? await rotateSession(c.get('db'), consoleSigningKey(c.env), refresh) : ({ kind: 'refused' } as const);
    if (result.kind === 'refused') {
      deleteCookie(c, REFRESH_COOKIE, { path: REFRESH_COOKIE_PATH, secure: true });
      throw new ApiError(401, 'Not signed in');
    }
    const user = await userById(c.get('db'), result.userId);
    if (!user) throw new ApiError(401, 'Not signed in');
    setRefreshCookie(c, result.refresh);
    return c.json(await tokenBody(c, user, result.sessionId), 200);
  },
);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'signOut',
    description:
      'Ends the session of the refresh cookie (its access tokens stop working) and clears the cookie. Answers 200 whether or not a session was open.',
    security: [],
    path: '/signout',
    middleware: [door.anonymous()],
    tags: ['console auth'],
    summary: 'Sign out: ends the session of the refresh cookie',
    responses: { 200: { description: 'Signed out', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403) },
  }),
  async (c) => {
    const refresh = getCookie(c, REFRESH_COOKIE);
    if (refresh) {
      const result = await rotateSession(c.get('db'), consoleSigningKey(c.env), refresh);
      if (result.kind === 'rotated') await revokeSession(c.get('db'), result.sessionId);
    }
    deleteCookie(c, REFRESH_COOKIE, { path: REFRESH_COOKIE_PATH, secure: true });
    return c.json({ message: 'Signed out' }, 200);
  },
);

// Setting a password with a link: the operator's set-password link, or a password reset.
for (const route of [
  {
    path: '/set-password',
    operationId: 'setPassword',
    kind: 'set_password',
    summary: 'Set a password with a one-time link (from `npm run admin -- create-user`)',
    description: 'Ends the user’s sessions. The token travels in the body, never in a URL the server sees (the link carries it after #).',
  },
  {
    path: '/reset-password',
    operationId: 'resetPassword',
    kind: 'password_reset',
    summary: 'Set a new password with a password-reset link',
    description:
      'Ends every session of the user, revokes their other password links, clears the sign-in throttle of the account and, unless `revoke_api_keys` is false, revokes every API key they made. The token travels in the body (the link carries it after #).',
  },
] as const)
  consoleAuthApi.openapi(
    createRoute({
      method: 'post',
      operationId: route.operationId,
      path: route.path,
      security: [],
      middleware: [door.anonymous({ body: json(BODY_CAPS.anonymous) })],
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
      const { token, password, revoke_api_keys } = c.req.valid('json');
      const set = await setPasswordWithLink(c.get('db'), route.kind, token, password, { revokeApiKeys: revoke_api_keys });
      return c.json({ email: set.email, api_keys_revoked: set.keysRevoked }, 200);
    },
  );

const RESET_ANSWER = 'If an account has this email, a link to reset its password is on its way.';

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'requestPasswordReset',
    security: [],
    path: '/password-reset',
    middleware: [door.anonymous({ body: json(BODY_CAPS.anonymous) })],
    tags: ['console auth'],
    summary: 'Ask for a password-reset link by email',
    description: `Always answers 202 the same way and after the same work, whether or not an account has the email (which is decided after the answer). An account gets a one-time link, valid ${PASSWORD_RESET_TTL_MINUTES} minutes, to PUBLIC_ORIGIN by email (at most ${RESET_LINKS_PER_EMAIL} per ${RESET_WINDOW_MINUTES} minutes); a new link revokes the older ones. Requests are limited per client address (429); 503 when the deployment has no PUBLIC_ORIGIN. Send ${CSRF_HEADER}: 1.`,
    request: { body: { required: true, content: { 'application/json': { schema: PasswordResetRequest } } } },
    responses: {
      202: { description: 'Asked', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(403, 422, 429, 503),
    },
  }),
  async (c) => {
    const { email } = c.req.valid('json');
    // Per client: a Rate Limiting binding (approximate is enough; per account, the link's own insert counts exactly).
    const { success } = await c.env.RATE_LIMIT_PASSWORD_RESET.limit({ key: `reset:${c.req.header('cf-connecting-ip') ?? ''}` });
    if (!success) throw new ApiError(429, 'Too many password-reset requests: try again in a minute', { 'Retry-After': '60' });
    // No link without the deployment's own origin (503, the same for every email).
    publicOrigin(c.env);
    // The same work for every email: whether it has an account is decided after the answer (../password-reset.ts).
    await askPasswordReset(c.env, email);
    return c.json({ message: RESET_ANSWER }, 202);
  },
);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'readInvite',
    security: [],
    path: '/invite',
    middleware: [door.anonymous({ body: json(BODY_CAPS.anonymous) })],
    tags: ['console auth'],
    summary: 'Read an invitation (who invited whom into what)',
    description: '`has_account`: an account has the invited email already; it joins by accepting while signed in as that account.',
    request: { body: { required: true, content: { 'application/json': { schema: InviteToken } } } },
    responses: {
      200: { description: 'The invitation', content: { 'application/json': { schema: InviteSummary } } },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    return c.json(await inviteSummary(c.get('db'), await findLink(c.get('db'), c.req.valid('json').token, 'invite')), 200);
  },
);

// Accepting with a bearer token: the signed-in user is checked as on every signed-in
// route (a live session), then must be the invited email's account.
consoleAuthApi.use('/accept-invite', consoleUserIfBearer);

consoleAuthApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'acceptInvite',
    security: [],
    path: '/accept-invite',
    middleware: [door.anonymous({ body: json(BODY_CAPS.anonymous) })],
    tags: ['console auth'],
    summary: 'Accept an invitation: join the organization, creating the account if needed',
    description:
      'An existing account accepts while signed in as it (`Authorization: Bearer <access token>` of the invited email’s account; no password). With no account for the email yet, the link’s holder (the link was emailed to that address) creates it with a password.',
    request: {
      body: {
        required: true,
        content: { 'application/json': { schema: AcceptInviteRequest } },
      },
    },
    responses: {
      200: { description: 'Joined', content: { 'application/json': { schema: InviteAccepted } } },
      ...consoleErrors(401, 403, 404, 409, 422),
    },
  }),
  async (c) => {
    const { token, password, name } = c.req.valid('json');
    const db = c.get('db');
    const signedIn = c.get('user');
    const link = await findLink(db, token, 'invite');
    let joining: Joining;
    if (signedIn) {
      // Never someone else's invitation, whoever holds its link.
      if (signedIn.email !== link.email)
        throw new ApiError(403, `This invitation is for ${link.email}: sign in as that account to accept it`);
      if (password !== undefined) throw new ApiError(422, 'An existing account keeps its password: accept without one');
      joining = { userId: signedIn.id, sessionId: c.get('sessionId') };
    } else {
      // An invitation never sets or changes an existing account's password.
      if (await accountExists(db, link.email))
        throw new ApiError(401, `An account exists for ${link.email}: sign in as it, then accept the invitation`, {
          'WWW-Authenticate': 'Bearer',
        });
      if (password === undefined)
        throw new ApiError(422, `Choose a password of ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`);
      joining = { userId: newUserId(), account: { name: name ?? '', passwordHash: await hashPassword(password) } };
    }
    await acceptInvite(db, link, joining);
    return c.json({ email: link.email, org_id: link.org_id! }, 200);
  },
);
