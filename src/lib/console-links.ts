// Console links (invitations, set-password and password-reset links) as rows: what the
// Worker's routes and the operator's statements (rendered for `wrangler d1 execute`) both
// write, so this module needs no Workers types.
import { sql, type SQL } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import { consoleLinks, nowIso, users } from '../db/schema.ts';

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
