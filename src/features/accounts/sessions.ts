// Console sessions: a short-lived JWT access token (bearer) naming a session, signed
// and checked by src/middleware/console-auth.ts, and a rotating refresh token in an
// HttpOnly cookie, stored only as its SHA-256. Every request checks the session in D1,
// so revoking it (sign-out, password change, member removal, a replayed refresh token)
// ends its access tokens at once, not at expiry: for changes at once (checked on the
// primary), for reads as soon as the replica that serves them has caught up.
import { and, eq, isNull, or } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { consoleSessions } from '../../db/schema.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { newSessionId } from '../../lib/ids.ts';
import { revoke } from '../../lib/revoke.ts';

export const REFRESH_COOKIE = 'console_refresh';
/** The refresh cookie is sent only to the auth routes that read it. */
export const REFRESH_COOKIE_PATH = '/console/v1/auth';
export const REFRESH_TTL_SECONDS = 14 * 24 * 3600;

const isoIn = (seconds: number, now = Date.now()) => new Date(now + seconds * 1000).toISOString();

/** A new session for a user: its id and the refresh token to set as the cookie. */
export async function openSession(db: Db, userId: string): Promise<{ id: string; refresh: string }> {
  const id = newSessionId();
  const refresh = randomToken('rt', 32);
  await db
    .insert(consoleSessions)
    .values({ id, user_id: userId, refresh_hash: await sha256Hex(refresh), expires_at: isoIn(REFRESH_TTL_SECONDS) });
  return { id, refresh };
}

export type RotateResult = { kind: 'rotated'; sessionId: string; userId: string; refresh: string } | { kind: 'refused' };

/**
 * Trades a refresh token for the next one. The current token rotates; a token that was
 * already rotated away (a replay: someone else holds the session) revokes the session.
 */
export async function rotateSession(db: Db, refresh: string): Promise<RotateResult> {
  const hash = await sha256Hex(refresh);
  const now = new Date().toISOString();
  const session = await db
    .select()
    .from(consoleSessions)
    .where(or(eq(consoleSessions.refresh_hash, hash), eq(consoleSessions.previous_refresh_hash, hash)))
    .get();
  if (!session || session.revoked_at || session.expires_at <= now) return { kind: 'refused' };
  if (session.refresh_hash !== hash) {
    await revokeSession(db, session.id);
    return { kind: 'refused' };
  }
  const next = randomToken('rt', 32);
  // Conditional on the hash still being current: of two concurrent rotations one wins.
  const moved = await db
    .update(consoleSessions)
    .set({ refresh_hash: await sha256Hex(next), previous_refresh_hash: hash, rotated_at: now })
    .where(and(eq(consoleSessions.id, session.id), eq(consoleSessions.refresh_hash, hash), isNull(consoleSessions.revoked_at)))
    .returning({ id: consoleSessions.id });
  if (!moved.length) return { kind: 'refused' };
  return { kind: 'rotated', sessionId: session.id, userId: session.user_id, refresh: next };
}

export async function revokeSession(db: Db, sessionId: string): Promise<void> {
  await revoke(db, consoleSessions, eq(consoleSessions.id, sessionId), new Date().toISOString());
}

/** Ends every session of a user (password change, removal from an organization). */
export async function revokeUserSessions(db: Db, userId: string) {
  return revoke(db, consoleSessions, eq(consoleSessions.user_id, userId), new Date().toISOString());
}
