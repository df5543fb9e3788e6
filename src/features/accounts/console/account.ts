// /console/v1/me and /console/v1/orgs: the signed-in user, their password, their
// sessions, and the organizations they belong to.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { ApiError, notFound, validationHook } from '../../../lib/errors.ts';
import { CONSOLE_SECURITY, consoleErrors, MessageResponse } from '../../../lib/schemas.ts';
import type { ConsoleEnv } from '../../../middleware/console-auth.ts';
import { BODY_CAPS } from '../../../lib/limits.ts';
import { door, json } from '../../../middleware/door.ts';
import { verifyPassword } from '../password.ts';
import { ChangePasswordBody, ConsoleSession, MeResponse, OrgMembership, SessionParams } from '../schemas.ts';
import { endAllSessions, endSession, liveSessionsOf } from '../sessions.ts';
import { reservePasswordAttempt } from '../signin-throttle.ts';
import { changePassword, orgsOf, passwordHashOf } from '../users.ts';

export const accountApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

accountApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getMe',
    description:
      'The signed-in user (id, email, name, whether they operate the service) and each organization they belong to, with their role in it.',
    path: '/me',
    middleware: [door.console('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'The signed-in user and their organizations',
    responses: {
      200: { description: 'The user', content: { 'application/json': { schema: MeResponse } } },
      ...consoleErrors(),
    },
  }),
  async (c) => c.json({ ...c.get('user'), organizations: await orgsOf(c.get('db'), c.get('user').id) }, 200),
);

accountApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listMyOrganizations',
    description: "Each organization the signed-in user is a member of, with their role: what the console's organization switcher lists.",
    path: '/orgs',
    middleware: [door.console('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'The organizations the user belongs to, with their role',
    responses: {
      200: { description: 'Organizations', content: { 'application/json': { schema: z.object({ items: z.array(OrgMembership) }) } } },
      ...consoleErrors(),
    },
  }),
  async (c) => c.json({ items: await orgsOf(c.get('db'), c.get('user').id) }, 200),
);

accountApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'changePassword',
    description:
      'Takes the current password and the new one. Every session of the user ends, this one too: sign in again with the new password.',
    path: '/me/password',
    middleware: [door.console('account', { body: json(BODY_CAPS.small) })],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'Change the password; ends every session of the user, this one included',
    request: { body: { required: true, content: { 'application/json': { schema: ChangePasswordBody } } } },
    responses: {
      200: { description: 'Changed', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(403, 409, 422, 429),
    },
  }),
  async (c) => {
    const { current_password, new_password } = c.req.valid('json');
    const db = c.get('db');
    const userId = c.get('user').id;
    const hash = await passwordHashOf(db, userId);
    const attempt = await reservePasswordAttempt(db, c.get('user').email, c.req.header('cf-connecting-ip'));
    if (!hash || !(await verifyPassword(current_password, hash))) throw new ApiError(403, 'The current password is wrong');
    // Changed only while the password just checked is still the account's and this session lives.
    if (!(await changePassword(db, { userId, sessionId: c.get('sessionId'), from: hash, to: new_password, attempt })))
      throw new ApiError(409, 'The password changed (or this session ended) while this request ran: nothing was changed; sign in again');
    return c.json({ message: 'Password changed: sign in again' }, 200);
  },
);

// ---------------------------------------------------------------------------
// The signed-in person's sessions: each browser signed in as them, and the end of any or all.

accountApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listMySessions',
    description:
      'Each session signed in as you: when it signed in, last refreshed and expires, and the browser and address it signed in from, so one you do not know can be ended.',
    path: '/me/sessions',
    middleware: [door.console('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'Your live sessions (each browser signed in as you), oldest first; `current` is this one',
    responses: {
      200: { description: 'Sessions', content: { 'application/json': { schema: z.object({ items: z.array(ConsoleSession) }) } } },
      ...consoleErrors(),
    },
  }),
  async (c) => {
    const rows = await liveSessionsOf(c.get('db'), c.get('user').id);
    return c.json({ items: rows.map((r) => ({ ...r, current: r.id === c.get('sessionId') })) }, 200);
  },
);

accountApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'endMySession',
    description: 'The session’s access tokens and its refresh token stop working at once; ending your own session signs you out.',
    path: '/me/sessions/{session_id}',
    middleware: [door.console('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'End one of your sessions (this one too: that signs you out); its access and refresh tokens stop at once',
    request: { params: SessionParams },
    responses: {
      200: { description: 'Ended', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    if (!(await endSession(c.get('db'), c.get('user').id, c.req.valid('param').session_id))) throw notFound('Session');
    return c.json({ message: 'Session ended' }, 200);
  },
);

accountApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'endAllMySessions',
    description: 'Every session of yours ends, this one included: each browser signed in as you must sign in again.',
    path: '/me/sessions',
    middleware: [door.console('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'Sign out everywhere: end every one of your sessions, this one included',
    responses: {
      200: { description: 'Ended', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(),
    },
  }),
  async (c) => {
    const ended = await endAllSessions(c.get('db'), c.get('user').id);
    return c.json({ message: `Signed out everywhere (${ended} session${ended === 1 ? '' : 's'} ended)` }, 200);
  },
);
