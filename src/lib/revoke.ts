// Revoking a credential (an API key, an agent or publisher token, a console session or link): it
// is never deleted, so the row stays to say whose it was and when it stopped working.
import { and, isNull, type SQL } from 'drizzle-orm';
import type { BaseSQLiteDatabase } from 'drizzle-orm/sqlite-core';
import { agentTokens, apiKeys, consoleLinks, consoleSessions, nowIso, publisherTokens } from '../db/schema.ts';

type Revocable = typeof apiKeys | typeof agentTokens | typeof publisherTokens | typeof consoleSessions | typeof consoleLinks;

/**
 * Revokes the rows of `table` that `where` matches, at `at` (the database's clock
 * unless given). A row revoked already keeps its time, and counts as no change.
 */
export function revoke<TRunResult, TSchema extends Record<string, unknown>>(
  db: BaseSQLiteDatabase<'async', TRunResult, TSchema>,
  table: Revocable,
  where: SQL | undefined,
  at: string | SQL = nowIso,
) {
  return db
    .update(table)
    .set({ revoked_at: at })
    .where(and(where, isNull(table.revoked_at)));
}
