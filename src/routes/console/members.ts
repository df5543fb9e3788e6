// /console/v1/orgs/{org_id}/members and /invites: who belongs to an organization, with
// which role, and invitations to join. Those who may members.manage (owners, admins)
// only; only owners make, change or remove owners (src/auth/permissions.ts), and an
// organization always keeps one owner. An invitation's link is emailed to the invitee
// and never answered to the inviter (src/lib/mail.ts); it lives only while its inviter
// may grant its role: removing or demoting them revokes it in the same batch, and
// accepting it re-checks the inviter's role in its own statement (src/routes/console/auth.ts).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, asc, count, desc, eq, gt, isNull, notInArray } from 'drizzle-orm';
import type { Context } from 'hono';
import { apiKeys, consoleLinks, LAST_OWNER_REFUSAL, memberships, users, type Role } from '../../db/schema.ts';
import { auditEntry } from '../../lib/audit.ts';
import { CreatedInvite, Invite, Member } from '../../lib/console-records.ts';
import { CONSOLE_SECURITY, consoleErrors, Email, OrgParams, RoleSchema } from '../../lib/console-schemas.ts';
import { revokeUserSessions } from '../../lib/console-sessions.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { ApiError, notFound, refusedAs, validationHook } from '../../lib/errors.ts';
import { newLinkId } from '../../lib/ids.ts';
import { INVITE_TTL_DAYS, inviteMessage, MailError, mailSender, send } from '../../lib/mail.ts';
import { revoke } from '../../lib/revoke.ts';
import { MessageResponse } from '../../lib/schemas.ts';
import { grantAction, grantableRoles, may } from '../../auth/permissions.ts';
import { actorOf, type ConsoleEnv } from '../../middleware/console-auth.ts';
import { permit } from '../../middleware/permit.ts';

export const membersApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });


const MemberParams = OrgParams.extend({ user_id: z.string().min(1).max(64).openapi({ param: { name: 'user_id', in: 'path' } }) });
const InviteParams = OrgParams.extend({ invite_id: z.string().min(1).max(64).openapi({ param: { name: 'invite_id', in: 'path' } }) });

membersApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs/{org_id}/members',
    middleware: [permit('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'List members (owners and admins)',
    request: { params: OrgParams },
    responses: { 200: { description: 'Members', content: { 'application/json': { schema: z.object({ items: z.array(Member) }) } } }, ...consoleErrors(403, 404) },
  }),
  async (c) => {
    const items = await c.var.db
      .select({ user_id: users.id, email: users.email, name: users.name, role: memberships.role, joined_at: memberships.created_at })
      .from(memberships)
      .innerJoin(users, eq(users.id, memberships.user_id))
      .where(eq(memberships.org_id, c.var.membership.orgId))
      .orderBy(asc(memberships.created_at), asc(users.email));
    return c.json({ items }, 200);
  },
);

/** An organization's pending invitations. */
const liveInvites = (orgId: string) =>
  and(
    eq(consoleLinks.org_id, orgId),
    eq(consoleLinks.kind, 'invite'),
    isNull(consoleLinks.used_at),
    isNull(consoleLinks.revoked_at),
    gt(consoleLinks.expires_at, new Date().toISOString()),
  );

async function findMember(c: Context<ConsoleEnv>, userId: string) {
  const row = await c.var.db
    .select({ role: memberships.role, email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.user_id))
    .where(and(eq(memberships.org_id, c.var.membership.orgId), eq(memberships.user_id, userId)))
    .get();
  if (!row) throw notFound('Member');
  return row;
}

/** Only owners touch owners (granting, changing or removing the role). */
function checkOwnerRule(c: Context<ConsoleEnv>, ...roles: Role[]) {
  if (roles.some((r) => !may(c.var.membership.role, grantAction(r)))) throw new ApiError(403, 'Only owners can make, change or remove owners');
}

async function ownerCount(c: Context<ConsoleEnv>): Promise<number> {
  const [{ n }] = (await c.var.db
    .select({ n: count() })
    .from(memberships)
    .where(and(eq(memberships.org_id, c.var.membership.orgId), eq(memberships.role, 'owner')))) as [{ n: number }];
  return n;
}

membersApi.openapi(
  createRoute({
    method: 'patch',
    path: '/orgs/{org_id}/members/{user_id}',
    middleware: [permit('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Change a member’s role',
    request: { params: MemberParams, body: { required: true, content: { 'application/json': { schema: z.object({ role: RoleSchema }) } } } },
    responses: { 200: { description: 'Changed', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403, 404, 409, 422) },
  }),
  async (c) => {
    const { user_id } = c.req.valid('param');
    const { role } = c.req.valid('json');
    const member = await findMember(c, user_id);
    checkOwnerRule(c, member.role, role);
    const lastOwner = 'An organization needs an owner: make someone else owner first';
    if (member.role === 'owner' && role !== 'owner' && (await ownerCount(c)) <= 1) throw new ApiError(409, lastOwner);
    const db = c.var.db;
    // The count above is a courtesy; the memberships trigger (migrations/0013) is what holds under concurrency.
    await db
      .batch([
        db.update(memberships).set({ role }).where(and(eq(memberships.org_id, c.var.membership.orgId), eq(memberships.user_id, user_id))),
        // The invitations they sent for roles they may no longer grant die with the change.
        revoke(db, consoleLinks, and(liveInvites(c.var.membership.orgId), eq(consoleLinks.created_by, user_id), notInArray(consoleLinks.role, grantableRoles(role)))),
        auditEntry(db, c.var.membership.orgId, actorOf(c), 'member.role_change', member.email, { from: member.role, to: role }),
      ])
      .catch(refusedAs(LAST_OWNER_REFUSAL, 409, lastOwner));
    return c.json({ message: `${member.email} is now ${role}` }, 200);
  },
);

membersApi.openapi(
  createRoute({
    method: 'delete',
    path: '/orgs/{org_id}/members/{user_id}',
    middleware: [permit('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Remove a member',
    description: 'Ends their console sessions at once and revokes the API keys they made and the invitations they sent in this organization.',
    request: { params: MemberParams },
    responses: { 200: { description: 'Removed', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403, 404, 409) },
  }),
  async (c) => {
    const { user_id } = c.req.valid('param');
    const member = await findMember(c, user_id);
    checkOwnerRule(c, member.role);
    const lastOwner = 'An organization needs an owner: the last owner cannot be removed';
    if (member.role === 'owner' && (await ownerCount(c)) <= 1) throw new ApiError(409, lastOwner);
    const db = c.var.db;
    const orgId = c.var.membership.orgId;
    const now = new Date().toISOString();
    // As above, the trigger holds; its refusal rolls back the whole batch (keys stay live).
    await db
      .batch([
        db.delete(memberships).where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, user_id))),
        revoke(db, apiKeys, and(eq(apiKeys.org_id, orgId), eq(apiKeys.user_id, user_id)), now),
        revoke(db, consoleLinks, and(liveInvites(orgId), eq(consoleLinks.created_by, user_id)), now),
        auditEntry(db, orgId, actorOf(c), 'member.remove', member.email, { role: member.role }),
      ])
      .catch(refusedAs(LAST_OWNER_REFUSAL, 409, lastOwner));
    await revokeUserSessions(db, user_id);
    return c.json({ message: `${member.email} removed` }, 200);
  },
);

// ---------------------------------------------------------------------------
// Invites

membersApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs/{org_id}/invites',
    middleware: [permit('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'List pending invitations (owners and admins)',
    request: { params: OrgParams },
    responses: { 200: { description: 'Pending invitations', content: { 'application/json': { schema: z.object({ items: z.array(Invite) }) } } }, ...consoleErrors(403, 404) },
  }),
  async (c) => {
    // created_by stores the inviter's user id; the list names them by email.
    const rows = await c.var.db
      .select({ link: consoleLinks, inviter: users.email })
      .from(consoleLinks)
      .leftJoin(users, eq(users.id, consoleLinks.created_by))
      .where(liveInvites(c.var.membership.orgId))
      .orderBy(desc(consoleLinks.created_at));
    return c.json(
      { items: rows.map(({ link: r, inviter }) => ({ id: r.id, email: r.email, role: r.role!, created_by: inviter ?? r.created_by ?? '', created_at: r.created_at, expires_at: r.expires_at })) },
      200,
    );
  },
);

membersApi.openapi(
  createRoute({
    method: 'post',
    path: '/orgs/{org_id}/invites',
    middleware: [permit('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Invite someone by email (owners and admins): the link is emailed to them',
    description: `The link goes to the invited address only (never in this answer); it works once, for ${INVITE_TTL_DAYS} days; a new invitation for the same email replaces the pending one. 503 when no mail sender is configured (operators add people with \`npm run admin -- create-user\`), 502 when the mail could not be sent (nothing is left pending).`,
    request: { params: OrgParams, body: { required: true, content: { 'application/json': { schema: z.object({ email: Email, role: RoleSchema.default('member') }) } } } },
    responses: {
      201: { description: 'Invited: the link was emailed to `sent_to`', content: { 'application/json': { schema: CreatedInvite } } },
      ...consoleErrors(403, 404, 409, 422, 502, 503),
    },
  }),
  async (c) => {
    const { email, role } = c.req.valid('json');
    checkOwnerRule(c, role);
    const sender = (() => {
      try {
        return mailSender(c.env);
      } catch (err) {
        throw new ApiError(503, `Invitations are emailed and the mail sender is misconfigured: ${(err as Error).message}`);
      }
    })();
    if (!sender) throw new ApiError(503, 'Invitations are emailed and no mail sender is configured (MAIL_SENDER): an operator adds people with `npm run admin -- create-user`');
    const db = c.var.db;
    const orgId = c.var.membership.orgId;
    const already = await db
      .select({ id: users.id })
      .from(users)
      .innerJoin(memberships, and(eq(memberships.user_id, users.id), eq(memberships.org_id, orgId)))
      .where(eq(users.email, email))
      .get();
    if (already) throw new ApiError(409, `${email} is already a member`);
    const token = randomToken('inv', 32);
    const id = newLinkId();
    const expires = new Date(Date.now() + INVITE_TTL_DAYS * 86400_000).toISOString();
    const now = new Date().toISOString();
    const [, [row]] = await db.batch([
      revoke(db, consoleLinks, and(liveInvites(orgId), eq(consoleLinks.email, email)), now),
      db
        .insert(consoleLinks)
        .values({ id, kind: 'invite', token_hash: await sha256Hex(token), email, org_id: orgId, role, created_by: c.var.user.id, expires_at: expires })
        .returning({ created_at: consoleLinks.created_at }),
      auditEntry(db, orgId, actorOf(c), 'invite.create', email, { role, invite_id: id }),
    ]);
    try {
      await send(c.env, inviteMessage({ consoleUrl: new URL(c.req.url).origin, token, to: email, orgName: c.var.membership.orgName, role, invitedBy: c.var.user.email }));
    } catch (err) {
      if (!(err instanceof MailError)) throw err;
      // Not delivered: the link dies with the request (no one holds it), and the inviter is told.
      await revoke(db, consoleLinks, eq(consoleLinks.id, id), new Date().toISOString());
      throw new ApiError(502, `The invitation could not be emailed (${err.message}); nothing is pending: try again`);
    }
    return c.json({ id, email, role, created_by: c.var.user.email, created_at: row!.created_at, expires_at: expires, sent_to: email }, 201);
  },
);

membersApi.openapi(
  createRoute({
    method: 'delete',
    path: '/orgs/{org_id}/invites/{invite_id}',
    middleware: [permit('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Revoke a pending invitation',
    request: { params: InviteParams },
    responses: { 200: { description: 'Revoked', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403, 404) },
  }),
  async (c) => {
    const { invite_id } = c.req.valid('param');
    const db = c.var.db;
    const orgId = c.var.membership.orgId;
    const [revoked] = await revoke(db, consoleLinks, and(liveInvites(orgId), eq(consoleLinks.id, invite_id)), new Date().toISOString()).returning({
      email: consoleLinks.email,
      role: consoleLinks.role,
    });
    if (!revoked) throw notFound('Invitation');
    await auditEntry(db, orgId, actorOf(c), 'invite.revoke', revoked.email, { invite_id, role: revoked.role });
    return c.json({ message: `Invitation for ${revoked.email} revoked` }, 200);
  },
);
