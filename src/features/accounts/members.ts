// Members of an organization and their roles. An organization always keeps one owner:
// the count here is a courtesy, the memberships trigger (migrations/0013) is what holds
// under concurrency, and its refusal rolls back the whole batch. A change is decided on
// the member's role as it was read (only owners touch owners) and made only while it is
// still that role, in the same batch, and only while its actor still stands (the audit
// entry's guard, ./audit.ts): otherwise nothing changes and the answer is 409. A member's
// change takes with it, in the same batch, what they may no longer hold: the invitations
// they sent for roles they may no longer grant; on removal, their API keys and
// invitations here, and their console sessions.
import { and, asc, count, eq, notInArray, sql } from 'drizzle-orm';
import { grantableRoles } from '../../auth/permissions.ts';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { apiKeys, consoleLinks, LAST_OWNER_REFUSAL, memberships, users, type Role } from '../../db/schema.ts';
import { ApiError, refusedAs } from '../../lib/errors.ts';
import { revoke } from '../../lib/revoke.ts';
import { actorWhile, auditEntry, auditRefused, type Actor } from './audit.ts';
import { liveInvites } from './invites.ts';
import { userSessionsRevoked } from './sessions.ts';

/** An organization's members, oldest first. */
export const listMembers = (db: Db, orgId: string) =>
  db
    .select({ user_id: users.id, email: users.email, name: users.name, role: memberships.role, joined_at: memberships.created_at })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.user_id))
    .where(eq(memberships.org_id, orgId))
    .orderBy(asc(memberships.created_at), asc(users.email));

/** A member's role and email, or undefined when the user is not a member. */
export const findMember = (db: Db, orgId: string, userId: string) =>
  db
    .select({ role: memberships.role, email: users.email })
    .from(memberships)
    .innerJoin(users, eq(users.id, memberships.user_id))
    .where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, userId)))
    .get();

/** How many owners the organization has. */
export async function ownerCount(db: Db, orgId: string): Promise<number> {
  const [row] = await db
    .select({ n: count() })
    .from(memberships)
    .where(and(eq(memberships.org_id, orgId), eq(memberships.role, 'owner')));
  return row?.n ?? 0;
}

type Member = { userId: string; email: string; role: Role };

/** The actor while `member` still has the role the change was decided on (else the batch is refused: roleChanged). */
const whileRoleIs = (orgId: string, actor: Actor, member: Member): Actor =>
  actorWhile(
    orgId,
    actor,
    sql`EXISTS (SELECT 1 FROM ${memberships} AS target WHERE target.org_id = ${orgId} AND target.user_id = ${member.userId} AND target.role = ${member.role})`,
  );

/** For .catch on a change guarded by whileRoleIs: 409 when the member's role was no longer the one read. */
const roleChanged = (member: Member) => (err: unknown) => {
  if (auditRefused(err))
    throw new ApiError(409, `${member.email} is no longer ${member.role} (their role changed meanwhile): nothing was changed; look again`);
  throw err;
};

/** A member's new role (409 `lastOwner` when it would leave no owner; 409 when their role is no longer `member.role`). */
export async function changeRole(db: Db, orgId: string, actor: Actor, member: Member, role: Role, lastOwner: string): Promise<void> {
  await batchByName(db, {
    // First: the guard. The audit records the role the change is made from, as it is.
    audit: auditEntry(db, orgId, whileRoleIs(orgId, actor, member), 'member.role_change', member.email, { from: member.role, to: role }),
    role: db
      .update(memberships)
      .set({ role })
      .where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, member.userId), eq(memberships.role, member.role))),
    // The invitations they sent for roles they may no longer grant die with the change.
    invites: revoke(
      db,
      consoleLinks,
      and(liveInvites(orgId), eq(consoleLinks.created_by, member.userId), notInArray(consoleLinks.role, grantableRoles(role))),
    ),
  })
    .catch(refusedAs(LAST_OWNER_REFUSAL, 409, lastOwner))
    .catch(roleChanged(member));
}

/**
 * Removes a member (409 `lastOwner` when it would leave no owner; 409 when their role is
 * no longer `member.role`): with them go the API keys they made and the invitations they
 * sent here, and every console session of theirs, in the same batch (a refusal leaves
 * them all live).
 */
export async function removeMember(db: Db, orgId: string, actor: Actor, member: Member, lastOwner: string): Promise<void> {
  const now = new Date().toISOString();
  await batchByName(db, {
    audit: auditEntry(db, orgId, whileRoleIs(orgId, actor, member), 'member.remove', member.email, { role: member.role }),
    membership: db
      .delete(memberships)
      .where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, member.userId), eq(memberships.role, member.role))),
    keys: revoke(db, apiKeys, and(eq(apiKeys.org_id, orgId), eq(apiKeys.user_id, member.userId)), now),
    invites: revoke(db, consoleLinks, and(liveInvites(orgId), eq(consoleLinks.created_by, member.userId)), now),
    sessions: userSessionsRevoked(db, member.userId, now),
  })
    .catch(refusedAs(LAST_OWNER_REFUSAL, 409, lastOwner))
    .catch(roleChanged(member));
}
