// /console/v1/orgs/{org_id}/members and /invites: who belongs to an organization, with
// which role, and invitations to join. Those who may members.manage (owners, admins)
// only; only owners make, change or remove owners (src/auth/permissions.ts), and an
// organization always keeps one owner (../members.ts). An invitation's link is emailed
// to the invitee and never answered to the inviter (../mail.ts); it lives only while its
// inviter may grant its role (../invites.ts).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { grantAction, may, PERMISSIONS, rankOf } from '../../../auth/permissions.ts';
import type { Role } from '../../../db/schema.ts';
import { randomToken, sha256Hex } from '../../../lib/crypto.ts';
import { ApiError, notFound, validationHook } from '../../../lib/errors.ts';
import { newLinkId } from '../../../lib/ids.ts';
import { CONSOLE_SECURITY, consoleErrors, MessageResponse, OrgParams } from '../../../lib/schemas.ts';
import { asMember, type ConsoleEnv } from '../../../middleware/console-auth.ts';
import { BODY_CAPS } from '../../../lib/limits.ts';
import { door, json } from '../../../middleware/door.ts';
import { actorOf } from '../audit.ts';
import { createInvite, dropInvite, isMember, listInvites, revokeInvite } from '../invites.ts';
import { INVITE_TTL_DAYS, inviteMessage, MailError, mailSender, publicOrigin, send } from '../mail.ts';
import { changeRole, findMember, listMembers, ownerCount, removeMember } from '../members.ts';
import { CreatedInvite, Invite, InviteBody, InviteParams, Member, MemberParams, RoleChange } from '../schemas.ts';

export const membersApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

membersApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgMembers',
    description: "Each member's user id, email, name, role and when they joined. Owners and admins only.",
    path: '/orgs/{org_id}/members',
    middleware: [door.console('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'List members (owners and admins)',
    request: { params: OrgParams },
    responses: {
      200: { description: 'Members', content: { 'application/json': { schema: z.object({ items: z.array(Member) }) } } },
      ...consoleErrors(403, 404),
    },
  }),
  async (c) => c.json({ items: await listMembers(c.get('db'), c.get('membership').orgId) }, 200),
);

/** The member `userId` of the caller's organization (404 when not one). */
async function memberOf(c: Context<ConsoleEnv>, userId: string) {
  const row = await findMember(c.get('db'), c.get('membership').orgId, userId);
  if (!row) throw notFound('Member');
  return { userId, ...row };
}

/** Only owners touch owners (granting, changing or removing the role). */
function checkOwnerRule(c: Context<ConsoleEnv>, ...roles: Role[]) {
  if (roles.some((r) => !may(c.get('membership').role, grantAction(r))))
    throw new ApiError(403, 'Only owners can make, change or remove owners');
}

/** The least role that may touch all of `roles` (the owner rule): what the actor must still hold when the change is written. */
const leastToTouch = (...roles: Role[]): Role =>
  roles.map((r) => PERMISSIONS[grantAction(r)].least).reduce((a, b) => (rankOf(b) > rankOf(a) ? b : a));

membersApi.openapi(
  createRoute({
    method: 'patch',
    operationId: 'updateOrgMember',
    description:
      "Admins change admins, members and viewers; only owners make, change or remove owners, and an organization always keeps one owner. The member's API keys follow their new role at once.",
    path: '/orgs/{org_id}/members/{user_id}',
    middleware: [door.console('members.manage', { body: json(BODY_CAPS.small) })],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Change a member’s role',
    request: { params: MemberParams, body: { required: true, content: { 'application/json': { schema: RoleChange } } } },
    responses: {
      200: { description: 'Changed', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(403, 404, 409, 422),
    },
  }),
  async (c) => {
    const { user_id } = c.req.valid('param');
    const { role } = c.req.valid('json');
    const member = await memberOf(c, user_id);
    checkOwnerRule(c, member.role, role);
    const lastOwner = 'An organization needs an owner: make someone else owner first';
    if (member.role === 'owner' && role !== 'owner' && (await ownerCount(c.get('db'), c.get('membership').orgId)) <= 1)
      throw new ApiError(409, lastOwner);
    await asMember(
      c,
      (org) => changeRole(c.get('db'), c.get('membership').orgId, actorOf(c, org), member, role, lastOwner),
      leastToTouch(member.role, role),
    );
    return c.json({ message: `${member.email} is now ${role}` }, 200);
  },
);

membersApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'removeOrgMember',
    path: '/orgs/{org_id}/members/{user_id}',
    middleware: [door.console('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Remove a member',
    description:
      'Ends their console sessions at once and revokes the API keys they made and the invitations they sent in this organization.',
    request: { params: MemberParams },
    responses: {
      200: { description: 'Removed', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(403, 404, 409),
    },
  }),
  async (c) => {
    const { user_id } = c.req.valid('param');
    const member = await memberOf(c, user_id);
    checkOwnerRule(c, member.role);
    const lastOwner = 'An organization needs an owner: the last owner cannot be removed';
    if (member.role === 'owner' && (await ownerCount(c.get('db'), c.get('membership').orgId)) <= 1) throw new ApiError(409, lastOwner);
    await asMember(
      c,
      (org) => removeMember(c.get('db'), c.get('membership').orgId, actorOf(c, org), member, lastOwner),
      leastToTouch(member.role),
    );
    return c.json({ message: `${member.email} removed` }, 200);
  },
);

// ---------------------------------------------------------------------------
// Invites

membersApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgInvites',
    description:
      'Invitations sent and not yet accepted, revoked or expired: whom, with which role, by whom and until when. Owners and admins only.',
    path: '/orgs/{org_id}/invites',
    middleware: [door.console('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'List pending invitations (owners and admins)',
    request: { params: OrgParams },
    responses: {
      200: { description: 'Pending invitations', content: { 'application/json': { schema: z.object({ items: z.array(Invite) }) } } },
      ...consoleErrors(403, 404),
    },
  }),
  async (c) => c.json({ items: await listInvites(c.get('db'), c.get('membership').orgId) }, 200),
);

membersApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'createOrgInvite',
    path: '/orgs/{org_id}/invites',
    middleware: [door.console('members.manage', { body: json(BODY_CAPS.small) })],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Invite someone by email (owners and admins): the link is emailed to them',
    description: `The link goes to the invited address only (never in this answer) and points at the deployment’s PUBLIC_ORIGIN; it works once, for ${INVITE_TTL_DAYS} days; a new invitation for the same email replaces the pending one. 503 when no mail sender or PUBLIC_ORIGIN is configured (operators add people with \`npm run admin -- create-user\`), 502 when the mail could not be sent (nothing is left pending).`,
    request: { params: OrgParams, body: { required: true, content: { 'application/json': { schema: InviteBody } } } },
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
    if (!sender)
      throw new ApiError(
        503,
        'Invitations are emailed and no mail sender is configured (MAIL_SENDER): an operator adds people with `npm run admin -- create-user`',
      );
    // Where the link points: the deployment's public origin, never this request's Host (503 without one).
    const consoleUrl = publicOrigin(c.env);
    const db = c.get('db');
    const orgId = c.get('membership').orgId;
    if (await isMember(db, orgId, email)) throw new ApiError(409, `${email} is already a member`);
    const token = randomToken('inv', 32);
    const id = newLinkId();
    const expires = new Date(Date.now() + INVITE_TTL_DAYS * 86400_000).toISOString();
    const tokenHash = await sha256Hex(token);
    const createdAt = await asMember(
      c,
      (org) => createInvite(db, orgId, actorOf(c, org), { id, tokenHash, email, role, createdBy: c.get('user').id, expiresAt: expires }),
      leastToTouch(role),
    );
    try {
      await send(
        c.env,
        inviteMessage({
          consoleUrl,
          token,
          to: email,
          orgName: c.get('membership').orgName,
          role,
          invitedBy: c.get('user').email,
        }),
      );
    } catch (err) {
      if (!(err instanceof MailError)) throw err;
      // Not delivered: the link dies with the request (no one holds it), and the inviter is told.
      await dropInvite(db, id);
      throw new ApiError(502, `The invitation could not be emailed (${err.message}); nothing is pending: try again`);
    }
    return c.json({ id, email, role, created_by: c.get('user').email, created_at: createdAt, expires_at: expires, sent_to: email }, 201);
  },
);

membersApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'revokeOrgInvite',
    description: "The invitation's link stops working at once. Owners and admins only.",
    path: '/orgs/{org_id}/invites/{invite_id}',
    middleware: [door.console('members.manage')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'Revoke a pending invitation',
    request: { params: InviteParams },
    responses: {
      200: { description: 'Revoked', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(403, 404),
    },
  }),
  async (c) => {
    const { invite_id } = c.req.valid('param');
    const revoked = await asMember(c, async (org) => {
      const found = await revokeInvite(c.get('db'), c.get('membership').orgId, actorOf(c, org), invite_id);
      if (!found) throw notFound('Invitation');
      return found;
    });
    return c.json({ message: `Invitation for ${revoked.email} revoked` }, 200);
  },
);
