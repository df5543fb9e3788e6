// Invitations to join an organization: one-time links (console_links, kind 'invite')
// emailed to the invitee, never answered to the inviter (./mail.ts). An invitation lives
// only while its inviter may grant its role: removing or demoting them revokes it in the
// same batch (./members.ts), and accepting it re-checks the inviter's role in its own statement.
import { and, desc, eq, gt, inArray, isNull, sql, type SQL } from 'drizzle-orm';
import { grantersOf } from '../../auth/permissions.ts';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { consoleLinks, consoleSessions, memberships, organizations, users, type Role } from '../../db/schema.ts';
import { refusedAs } from '../../lib/errors.ts';
import { revoke } from '../../lib/revoke.ts';
import { actorWhile, auditEntry, auditRefused, type Actor } from './audit.ts';
import { DEAD_LINK, liveLink, type Link } from './links.ts';

/** An organization's pending invitations. */
export const liveInvites = (orgId: string): SQL | undefined =>
  and(
    eq(consoleLinks.org_id, orgId),
    eq(consoleLinks.kind, 'invite'),
    isNull(consoleLinks.used_at),
    isNull(consoleLinks.revoked_at),
    gt(consoleLinks.expires_at, new Date().toISOString()),
  );

/** An organization's pending invitations, newest first, their inviters named by email. */
export async function listInvites(db: Db, orgId: string) {
  // created_by stores the inviter's user id; the list names them by email.
  const rows = await db
    .select({ link: consoleLinks, inviter: users.email })
    .from(consoleLinks)
    .leftJoin(users, eq(users.id, consoleLinks.created_by))
    .where(liveInvites(orgId))
    .orderBy(desc(consoleLinks.created_at));
  return rows.map(({ link: r, inviter }) => ({
    id: r.id,
    email: r.email,
    role: r.role!,
    created_by: inviter ?? r.created_by ?? '',
    created_at: r.created_at,
    expires_at: r.expires_at,
  }));
}

/** Whether the account of `email` is a member of the organization already. */
export const isMember = async (db: Db, orgId: string, email: string) =>
  Boolean(
    await db
      .select({ id: users.id })
      .from(users)
      .innerJoin(memberships, and(eq(memberships.user_id, users.id), eq(memberships.org_id, orgId)))
      .where(eq(users.email, email))
      .get(),
  );

/**
 * A new invitation, in one batch with the end of the email's pending one and its audit
 * entry; answers when it was made.
 */
export async function createInvite(
  db: Db,
  orgId: string,
  actor: Actor,
  invite: { id: string; tokenHash: string; email: string; role: Role; createdBy: string; expiresAt: string },
): Promise<string> {
  const { made } = await batchByName(db, {
    // First: the guard (the inviter still stands, with a role that may grant this one).
    audit: auditEntry(db, orgId, actor, 'invite.create', invite.email, { role: invite.role, invite_id: invite.id }),
    replaced: revoke(db, consoleLinks, and(liveInvites(orgId), eq(consoleLinks.email, invite.email)), new Date().toISOString()),
    made: db
      .insert(consoleLinks)
      .values({
        id: invite.id,
        kind: 'invite',
        token_hash: invite.tokenHash,
        email: invite.email,
        org_id: orgId,
        role: invite.role,
        created_by: invite.createdBy,
        expires_at: invite.expiresAt,
      })
      .returning({ created_at: consoleLinks.created_at }),
  });
  return made[0].created_at;
}

/** Ends an invitation whose mail was not delivered (no one holds its link). */
export async function dropInvite(db: Db, id: string): Promise<void> {
  await revoke(db, consoleLinks, eq(consoleLinks.id, id), new Date().toISOString());
}

/**
 * Revokes a pending invitation and records it, in one batch conditional on it still
 * pending (and on its actor's standing); undefined when there is none.
 */
export async function revokeInvite(db: Db, orgId: string, actor: Actor, inviteId: string) {
  const pending = and(liveInvites(orgId), eq(consoleLinks.id, inviteId));
  const invite = await db.select({ email: consoleLinks.email, role: consoleLinks.role }).from(consoleLinks).where(pending).get();
  if (!invite) return undefined;
  const stillPending = sql`EXISTS (SELECT 1 FROM ${consoleLinks} WHERE ${pending})`;
  try {
    await batchByName(db, {
      audit: auditEntry(db, orgId, actorWhile(orgId, actor, stillPending), 'invite.revoke', invite.email, {
        invite_id: inviteId,
        role: invite.role,
      }),
      revoked: revoke(db, consoleLinks, pending, new Date().toISOString()),
    });
  } catch (err) {
    // Used, revoked or expired meanwhile: there is none to revoke (or its actor no longer stands: asMember says so).
    if (auditRefused(err)) return undefined;
    throw err;
  }
  return invite;
}

/** What an invitation's holder is shown: who is invited into what, and whether the email has an account. */
export async function inviteSummary(db: Db, link: Link) {
  const [org, user] = await Promise.all([
    db.select({ name: organizations.name }).from(organizations).where(eq(organizations.id, link.org_id!)).get(),
    db.select({ id: users.id }).from(users).where(eq(users.email, link.email)).get(),
  ]);
  return { email: link.email, org_name: org?.name ?? '', role: link.role!, has_account: Boolean(user) };
}

/** An invitation's role, as SQL, while its inviter (created_by, a user id) holds a role that may grant it; else NULL. */
const inviterGrants = (link: Link) =>
  sql<Role>`(SELECT ${link.role} WHERE EXISTS (SELECT 1 FROM ${memberships} WHERE ${memberships.org_id} = ${link.org_id} AND ${memberships.user_id} = ${link.created_by} AND ${inArray(memberships.role, grantersOf(link.role!))}))`;

/** Who accepts an invitation: a signed-in account (in its session), or a new one its holder makes. */
export interface Joining {
  userId: string;
  sessionId?: string;
  account?: { name: string; passwordHash: string };
}

/**
 * Accepts an invitation. One batch, one transaction: the link used, the account created
 * and the membership inserted, or none of it. The membership takes its organization from
 * the link only if this batch used it (else NULL, refusing the insert and the batch); the
 * unique index memberships_org_user refuses a second membership of the person, whichever
 * invitation made the first; users_email an account made meanwhile for the email (a
 * conflict, never taken over). (A link revoked in the very instant it is accepted counts
 * as accepted first.) The role is granted only while the inviter may still grant it
 * (src/auth/permissions.ts), in the same statement: a removal or demotion racing it
 * leaves the role NULL and refuses the batch.
 */
export async function acceptInvite(db: Db, link: Link, joining: Joining): Promise<void> {
  const usedAt = new Date().toISOString();
  const usedHere = db
    .select({ org_id: consoleLinks.org_id })
    .from(consoleLinks)
    .where(and(eq(consoleLinks.id, link.id), eq(consoleLinks.used_at, usedAt)));
  const { userId, sessionId, account } = joining;
  // A signed-in account joins only while its session lives (a password reset racing the
  // acceptance ends it): else the membership's user is NULL and the batch refused.
  const joiner = sessionId
    ? sql<string>`(SELECT ${consoleSessions.user_id} FROM ${consoleSessions} WHERE ${consoleSessions.id} = ${sessionId} AND ${consoleSessions.user_id} = ${userId} AND ${consoleSessions.revoked_at} IS NULL)`
    : userId;
  await batchByName(db, {
    used: db
      .update(consoleLinks)
      .set({ used_at: usedAt })
      .where(liveLink(eq(consoleLinks.id, link.id))),
    account: account && db.insert(users).values({ id: userId, email: link.email, name: account.name, password_hash: account.passwordHash }),
    membership: db.insert(memberships).values({ org_id: sql`${usedHere}`, user_id: joiner, role: inviterGrants(link) }),
    audit: auditEntry(db, link.org_id!, { userId, email: link.email }, 'invite.accept', link.email, {
      role: link.role,
      invite_id: link.id,
    }),
  })
    .catch(refusedAs('NOT NULL constraint failed: memberships.org_id', 404, DEAD_LINK))
    .catch(
      refusedAs('NOT NULL constraint failed: memberships.user_id', 401, 'Your session ended: sign in again, then accept the invitation'),
    )
    .catch(
      refusedAs(
        'NOT NULL constraint failed: memberships.role',
        403,
        'Whoever invited you may no longer grant this role: ask for a new invitation',
      ),
    )
    .catch(
      refusedAs('UNIQUE constraint failed: memberships.org_id, memberships.user_id', 409, 'You are already a member of this organization'),
    )
    .catch(
      refusedAs('UNIQUE constraint failed: users.email', 409, 'The account exists already: sign in as it, then open the invitation again'),
    );
}
