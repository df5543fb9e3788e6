// Console users: who signs in (by email), the organizations they belong to, and their
// password: changed (which ends everything the old one opened), set with a one-time
// link, or a reset link asked for.
import { and, asc, count, eq, gt, inArray, isNull, ne, sql, type SQL } from 'drizzle-orm';
import { ulid } from 'ulid';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { apiKeys, auditLog, consoleLinks, consoleSessions, memberships, nowIso, organizations, users } from '../../db/schema.ts';
import { ApiError } from '../../lib/errors.ts';
import { revoke } from '../../lib/revoke.ts';
import type { AuditAction } from './audit.ts';
import { DEAD_LINK, findLink, liveLink, passwordLinkFor } from './links.ts';
import { hashPassword } from './password.ts';
import { accountCountsCleared, passwordAccepted, type AttemptKeys } from './signin-throttle.ts';

/** A user as the console shows them (never their password's hash). */
const userFields = { id: users.id, email: users.email, name: users.name, is_operator: users.is_operator };

/** The account of an email, with its password's hash (signing in). */
export const userByEmail = (db: Db, email: string) => db.select().from(users).where(eq(users.email, email)).get();

/** A user by id, as the console shows them. */
export const userById = (db: Db, id: string) => db.select(userFields).from(users).where(eq(users.id, id)).get();

/** Whether an account has this email. */
export const accountExists = async (db: Db, email: string) =>
  Boolean(await db.select({ id: users.id }).from(users).where(eq(users.email, email)).get());

/** The organizations a user belongs to, with their role, by name. */
export const orgsOf = (db: Db, userId: string) =>
  db
    .select({ id: organizations.id, name: organizations.name, role: memberships.role })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.org_id))
    .where(eq(memberships.user_id, userId))
    .orderBy(asc(organizations.name), asc(organizations.id));

/** A user's password hash (null until they set one). */
export const passwordHashOf = async (db: Db, userId: string) =>
  (await db.select({ hash: users.password_hash }).from(users).where(eq(users.id, userId)).get())?.hash ?? null;

/**
 * Changes the password of the signed-in user whose current password, `from`, was just
 * checked: in one transaction, the new password, the end of every session, the end of
 * any live set-password or reset link (a link mailed before the change must not undo
 * it), and the check's throttle places given back, all only while `from` is still their
 * password and their session still lives (a reset or another change landing after the
 * check leaves everything as it is). Answers whether it changed.
 */
export async function changePassword(
  db: Db,
  change: { userId: string; sessionId: string; from: string; to: string; attempt: AttemptKeys },
): Promise<boolean> {
  const hash = await hashPassword(change.to);
  // True once this batch's update has run (the new hash has its own random salt).
  const changed = sql`EXISTS (SELECT 1 FROM ${users} WHERE ${users.id} = ${change.userId} AND ${users.password_hash} = ${hash})`;
  const sessionLive = sql`EXISTS (SELECT 1 FROM ${consoleSessions} WHERE ${consoleSessions.id} = ${change.sessionId} AND ${consoleSessions.revoked_at} IS NULL)`;
  const { password } = await batchByName(db, {
    password: db
      .update(users)
      .set({ password_hash: hash })
      .where(and(eq(users.id, change.userId), eq(users.password_hash, change.from), sessionLive))
      .returning({ id: users.id }),
    sessions: revoke(db, consoleSessions, and(eq(consoleSessions.user_id, change.userId), changed)),
    links: revoke(
      db,
      consoleLinks,
      and(
        eq(consoleLinks.user_id, change.userId),
        inArray(consoleLinks.kind, ['set_password', 'password_reset']),
        isNull(consoleLinks.used_at),
        changed,
      ),
    ),
    ...passwordAccepted(db, change.attempt, changed),
  });
  return password.length > 0;
}

/** Marks a link used, conditional on it still being live: of two requests with it, one wins. */
const useLink = (db: Db, id: string) =>
  db
    .update(consoleLinks)
    .set({ used_at: nowIso })
    .where(liveLink(eq(consoleLinks.id, id)))
    .returning({ id: consoleLinks.id });

/**
 * The audit entries and the revocation of every live API key `made` picks (its creator's), in every
 * organization (a password reset that asks for it): what a person who lost their account
 * for a while cannot tell from their own keys, they end together.
 */
function keysRevoked(db: Db, made: SQL | undefined, actor: { userId: string; email: string }, reason: string) {
  const theirs = and(made, isNull(apiKeys.revoked_at));
  return {
    keysAudit: db.insert(auditLog).select(
      db
        .select({
          // One ulid for the batch, the key's id after it: ids still sort by time.
          id: sql`${ulid()} || '.' || ${apiKeys.id}`.as('id'),
          org_id: apiKeys.org_id,
          actor_user_id: sql`${actor.userId}`.as('actor_user_id'),
          actor: sql`${actor.email}`.as('actor'),
          action: sql`${'api_key.revoke' satisfies AuditAction}`.as('action'),
          target: apiKeys.id,
          detail: sql`json_object('prefix', ${apiKeys.prefix}, 'name', ${apiKeys.name}, 'reason', ${reason})`.as('detail'),
          created_at: nowIso.as('created_at'),
        })
        .from(apiKeys)
        .where(theirs),
    ),
    keys: revoke(db, apiKeys, theirs).returning({ id: apiKeys.id }),
  };
}

/**
 * Sets a password with a link of `kind` (set-password from the operator tool, or a
 * password reset), in one transaction: the password, the end of every session of the
 * user and of their other live password links, the clearing of their account's sign-in
 * throttle counts (./signin-throttle.ts), on request the revocation of every API key
 * they made, and the link's use, all happen only while the link is live, so a used,
 * revoked or expired link changes nothing. Answers the account's email and how many
 * keys were revoked.
 */
export async function setPasswordWithLink(
  db: Db,
  kind: 'set_password' | 'password_reset',
  token: string,
  password: string,
  { revokeApiKeys = false }: { revokeApiKeys?: boolean } = {},
): Promise<{ email: string; keysRevoked: number }> {
  const link = await findLink(db, token, kind);
  const hash = await hashPassword(password);
  const owner = db
    .select({ id: consoleLinks.user_id })
    .from(consoleLinks)
    .where(liveLink(eq(consoleLinks.id, link.id)));
  const { used, keys } = await batchByName(db, {
    password: db.update(users).set({ password_hash: hash }).where(inArray(users.id, owner)),
    sessions: revoke(db, consoleSessions, inArray(consoleSessions.user_id, owner)),
    otherLinks: revoke(
      db,
      consoleLinks,
      and(
        eq(consoleLinks.user_id, link.user_id!),
        inArray(consoleLinks.kind, ['set_password', 'password_reset']),
        isNull(consoleLinks.used_at),
        ne(consoleLinks.id, link.id),
        inArray(consoleLinks.user_id, owner),
      ),
    ),
    throttle: accountCountsCleared(db, link.email, sql`EXISTS ${owner}`),
    ...(revokeApiKeys
      ? keysRevoked(db, inArray(apiKeys.user_id, owner), { userId: link.user_id!, email: link.email }, 'password reset')
      : {}),
    used: useLink(db, link.id),
  });
  if (!used.length) throw new ApiError(404, DEAD_LINK);
  return { email: link.email, keysRevoked: keys?.length ?? 0 };
}

/** Reset links one email may be sent per window, whoever asks (more are silently not made). */
export const RESET_LINKS_PER_EMAIL = 3;
export const RESET_WINDOW_MINUTES = 15;

/**
 * A password-reset link `id` for the account of `email`, if one has it and fewer than
 * RESET_LINKS_PER_EMAIL were made in the window; answers whether it was made. The same
 * two statements run for any email, known or not; the throttle is part of the insert (a
 * count and a write in one statement), so concurrent requests cannot pass it together.
 */
export async function makeResetLink(db: Db, email: string, link: { id: string; tokenHash: string; lifetime: string }): Promise<boolean> {
  const recent = db
    .select({ n: count() })
    .from(consoleLinks)
    .where(
      and(
        eq(consoleLinks.email, email),
        eq(consoleLinks.kind, 'password_reset'),
        gt(consoleLinks.created_at, sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ${`-${RESET_WINDOW_MINUTES} minutes`})`),
      ),
    );
  const { made } = await batchByName(db, {
    made: passwordLinkFor(
      db,
      { ...link, kind: 'password_reset' },
      and(eq(users.email, email), sql`(${recent}) < ${RESET_LINKS_PER_EMAIL}`),
    ).returning({ id: consoleLinks.id }),
    // A new link revokes the older unused ones (only when one was made).
    older: revoke(
      db,
      consoleLinks,
      and(
        eq(consoleLinks.email, email),
        eq(consoleLinks.kind, 'password_reset'),
        isNull(consoleLinks.used_at),
        ne(consoleLinks.id, link.id),
        sql`exists (select 1 from ${consoleLinks} as made where made.id = ${link.id})`,
      ),
    ),
  });
  return made.length > 0;
}
