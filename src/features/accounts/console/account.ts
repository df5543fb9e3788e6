// /console/v1/me and /console/v1/orgs: the signed-in user, their password, and the
// organizations they belong to.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { ApiError, validationHook } from '../../../lib/errors.ts';
import { CONSOLE_SECURITY, consoleErrors, MessageResponse } from '../../../lib/schemas.ts';
import type { ConsoleEnv } from '../../../middleware/console-auth.ts';
import { BODY_CAPS } from '../../../lib/limits.ts';
import { door, json } from '../../../middleware/door.ts';
import { verifyPassword } from '../password.ts';
import { ChangePasswordBody, MeResponse, OrgMembership } from '../schemas.ts';
import { passwordAccepted, reservePasswordAttempt } from '../signin-throttle.ts';
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
  async (c) => c.json({ ...c.var.user, organizations: await orgsOf(c.var.db, c.var.user.id) }, 200),
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
  async (c) => c.json({ items: await orgsOf(c.var.db, c.var.user.id) }, 200),
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
      ...consoleErrors(403, 422, 429),
    },
  }),
  async (c) => {
    const { current_password, new_password } = c.req.valid('json');
    const db = c.var.db;
    const hash = await passwordHashOf(db, c.var.user.id);
    const keys = await reservePasswordAttempt(db, c.var.user.email, c.req.header('cf-connecting-ip'));
    if (!(await verifyPassword(current_password, hash))) throw new ApiError(403, 'The current password is wrong');
    await passwordAccepted(db, keys);
    await changePassword(db, c.var.user.id, new_password);
    return c.json({ message: 'Password changed: sign in again' }, 200);
  },
);
