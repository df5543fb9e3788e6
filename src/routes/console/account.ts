// /console/v1/me and /console/v1/orgs: the signed-in user, their password, and the
// organizations they belong to.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, asc, eq, inArray, isNull } from 'drizzle-orm';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { consoleLinks, consoleSessions, memberships, organizations, users } from '../../db/schema.ts';
import { MeResponse, OrgMembership } from '../../lib/console-records.ts';
import { CONSOLE_SECURITY, consoleErrors } from '../../lib/console-schemas.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../lib/limits.ts';
import { hashPassword, verifyPassword } from '../../lib/password.ts';
import { revoke } from '../../lib/revoke.ts';
import { MessageResponse } from '../../lib/schemas.ts';
import { passwordAccepted, reservePasswordAttempt } from '../../lib/signin-throttle.ts';
import { permit } from '../../middleware/permit.ts';

export const accountApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

async function orgsOf(c: { var: ConsoleEnv['Variables'] }) {
  return c.var.db
    .select({ id: organizations.id, name: organizations.name, role: memberships.role })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.org_id))
    .where(eq(memberships.user_id, c.var.user.id))
    .orderBy(asc(organizations.name), asc(organizations.id));
}

accountApi.openapi(
  createRoute({
    method: 'get',
    path: '/me',
    middleware: [permit('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'The signed-in user and their organizations',
    responses: {
      200: { description: 'The user', content: { 'application/json': { schema: MeResponse } } },
      ...consoleErrors(),
    },
  }),
  async (c) => c.json({ ...c.var.user, organizations: await orgsOf(c) }, 200),
);

accountApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs',
    middleware: [permit('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'The organizations the user belongs to, with their role',
    responses: { 200: { description: 'Organizations', content: { 'application/json': { schema: z.object({ items: z.array(OrgMembership) }) } } }, ...consoleErrors() },
  }),
  async (c) => c.json({ items: await orgsOf(c) }, 200),
);

accountApi.openapi(
  createRoute({
    method: 'post',
    path: '/me/password',
    middleware: [permit('account')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'Change the password; ends every session of the user, this one included',
    request: {
      body: {
        required: true,
        content: {
          'application/json': {
            schema: z.object({ current_password: z.string().min(1).max(MAX_PASSWORD_LENGTH), new_password: z.string().min(MIN_PASSWORD_LENGTH).max(MAX_PASSWORD_LENGTH) }),
          },
        },
      },
    },
    responses: { 200: { description: 'Changed', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403, 422, 429) },
  }),
  async (c) => {
    const { current_password, new_password } = c.req.valid('json');
    const db = c.var.db;
    const row = await db.select({ hash: users.password_hash }).from(users).where(eq(users.id, c.var.user.id)).get();
    const keys = await reservePasswordAttempt(db, c.var.user.email, c.req.header('cf-connecting-ip'));
    if (!(await verifyPassword(current_password, row?.hash ?? null))) throw new ApiError(403, 'The current password is wrong');
    await passwordAccepted(db, keys);
    // One transaction: the new password, the end of every session, and the end of any
    // live set-password or reset link (a link mailed before the change must not undo it).
    const userId = c.var.user.id;
    await db.batch([
      db.update(users).set({ password_hash: await hashPassword(new_password) }).where(eq(users.id, userId)),
      revoke(db, consoleSessions, eq(consoleSessions.user_id, userId)),
      revoke(db, consoleLinks, and(eq(consoleLinks.user_id, userId), inArray(consoleLinks.kind, ['set_password', 'password_reset']), isNull(consoleLinks.used_at))),
    ]);
    return c.json({ message: 'Password changed: sign in again' }, 200);
  },
);
