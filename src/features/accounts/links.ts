// Console links (invitations, set-password and password-reset links) as rows: what the
// Worker's routes and the operator's statements (rendered for `wrangler d1 execute`) both
// write, and how a live one is found by its token. So this module needs no Workers types
// (its statements take any async SQLite database drizzle makes).
import { and, eq, gt, isNull, sql, type SQL } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import { consoleLinks, nowIso, users } from '../../db/schema.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';

/**
 * The row of a password link (set-password or password reset) for the account `where`
 * picks, as an INSERT … SELECT from users: no row when no account matches, so the
 * statement itself decides whether a link is made (the operator's create-user, the
 * console's password reset). Its token is stored only as `tokenHash`.
 */
export function passwordLinkFor<TRunResult, TSchema extends Record<string, unknown>>(
  db: BaseSQLiteDatabase<'async', TRunResult, TSchema>,
  link: { id: string; kind: 'set_password' | 'password_reset'; tokenHash: string; lifetime: string },
  where: SQL | undefined,
) {
  return db.insert(consoleLinks).select(
    db
      .select({
        id: sql`${link.id}`.as('id'),
        kind: sql`${link.kind}`.as('kind'),
        token_hash: sql`${link.tokenHash}`.as('token_hash'),
        email: users.email,
        user_id: users.id,
        org_id: sql`NULL`.as('org_id'),
        role: sql`NULL`.as('role'),
        created_by: sql`NULL`.as('created_by'),
        created_at: nowIso.as('created_at'),
        // `lifetime` is an SQLite date modifier such as '+72 hours'.
        expires_at: sql`strftime('%Y-%m-%dT%H:%M:%fZ', 'now', ${link.lifetime})`.as('expires_at'),
        used_at: sql`NULL`.as('used_at'),
        revoked_at: sql`NULL`.as('revoked_at'),
      })
      .from(users)
      .where(where),
  );
}

type LinkKind = (typeof consoleLinks.$inferSelect)['kind'];
export type Link = typeof consoleLinks.$inferSelect;

export const DEAD_LINK = 'This link is unknown, used or expired: ask for a new one';

/** The condition of a link that still works: unused, unrevoked, unexpired. */
export const liveLink = (where: SQL) =>
  and(where, isNull(consoleLinks.used_at), isNull(consoleLinks.revoked_at), gt(consoleLinks.expires_at, nowIso));

/** A live one-time link of a kind, by its token (404 when there is none). */
export async function findLink<TRunResult, TSchema extends Record<string, unknown>>(
  db: BaseSQLiteDatabase<'async', TRunResult, TSchema>,
  token: string,
  kind: LinkKind,
): Promise<Link> {
  const link = await db
    .select()
    .from(consoleLinks)
    .where(and(liveLink(eq(consoleLinks.token_hash, await sha256Hex(token))), eq(consoleLinks.kind, kind)))
    .get();
  if (!link) throw new ApiError(404, DEAD_LINK);
  return link;
}
