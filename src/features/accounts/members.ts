// Members of an organization and their roles. An organization always keeps one owner:
// the count here is a courtesy, the memberships trigger (migrations/0013) is what holds
// under concurrency, and its refusal rolls back the whole batch. A member's change takes
// with it, in the same batch, what they may no longer hold: the invitations they sent for
// roles they may no longer grant; on removal, their API keys and invitations here, then
// their console sessions.
import { and, asc, count, eq, notInArray } from 'drizzle-orm';
import { grantableRoles } from '../../auth/permissions.ts';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { apiKeys, consoleLinks, LAST_OWNER_REFUSAL, memberships, users, type Role } from '../../db/schema.ts';
import { refusedAs } from '../../lib/errors.ts';
import { revoke } from '../../lib/revoke.ts';
import { auditEntry, type Actor } from './audit.ts';
import { liveInvites } from './invites.ts';
import { revokeUserSessions } from './sessions.ts';

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

/** A member's new role (409 `lastOwner` when it would leave no owner). */
export async function changeRole(
  db: Db,
  orgId: string,
  actor: Actor,
  member: { userId: string; email: string; role: Role },
  role: Role,
  lastOwner: string,
): Promise<void> {
  await batchByName(db, {
    role: db
      .update(memberships)
      .set({ role })
      .where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, member.userId))),
    // The invitations they sent for roles they may no longer grant die with the change.
    invites: revoke(
      db,
      consoleLinks,
      and(liveInvites(orgId), eq(consoleLinks.created_by, member.userId), notInArray(consoleLinks.role, grantableRoles(role))),
    ),
    audit: auditEntry(db, orgId, actor, 'member.role_change', member.email, { from: member.role, to: role }),
  }).catch(refusedAs(LAST_OWNER_REFUSAL, 409, lastOwner));
}

/**
 * Removes a member (409 `lastOwner` when it would leave no owner): with them go the API
 * keys they made and the invitations they sent here, in the same batch (a refusal leaves
 * the keys live), then every console session of theirs.
 */
export async function removeMember(
  db: Db,
  orgId: string,
  actor: Actor,
  member: { userId: string; email: string; role: Role },
  lastOwner: string,
): Promise<void> {
  const now = new Date().toISOString();
  await batchByName(db, {
    membership: db.delete(memberships).where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, member.userId))),
    keys: revoke(db, apiKeys, and(eq(apiKeys.org_id, orgId), eq(apiKeys.user_id, member.userId)), now),
    invites: revoke(db, consoleLinks, and(liveInvites(orgId), eq(consoleLinks.created_by, member.userId)), now),
    audit: auditEntry(db, orgId, actor, 'member.remove', member.email, { role: member.role }),
  }).catch(refusedAs(LAST_OWNER_REFUSAL, 409, lastOwner));
  await revokeUserSessions(db, member.userId);
}
