// Console sessions: a short-lived JWT access token (bearer) naming a session, signed
// and checked by src/middleware/console-auth.ts, and a rotating refresh token in an
// HttpOnly cookie, stored only as its SHA-256. Every request checks the session in D1,
// so revoking it (sign-out, ending it from the sessions list, password change, member
// removal, a replayed refresh token) ends its access tokens at once, not at expiry: for
// changes at once (checked on the primary), for reads as soon as the replica that serves
// them has caught up.
//
// A refresh token names its session and is signed with the console's key
// (`rt_<session>.<nonce>.<mac>`), so any token the service ever gave for a session is
// recognized as that session's without keeping the old ones: one presented that is not
// the current one was rotated away, so someone else holds a copy, and the session ends.
// A stranger cannot end a session by naming it (the mac). Tokens made before tokens
// named their session (`rt_<hex>`) are caught as the previous one, as before.
import { and, asc, eq, gt, isNull, or, sql, type SQL } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { consoleSessions, nowIso, users } from '../../db/schema.ts';
import { hmacSha256Hex, randomToken, sha256Hex } from '../../lib/crypto.ts';
import { newSessionId } from '../../lib/ids.ts';
import { revoke } from '../../lib/revoke.ts';
import { passwordAccepted, type AttemptKeys } from './signin-throttle.ts';
import { utf8Bytes } from '../../lib/bytes.ts';

export const REFRESH_COOKIE = 'console_refresh';
/** The refresh cookie is sent only to the auth routes that read it. */
export const REFRESH_COOKIE_PATH = '/console/v1/auth';
export const REFRESH_TTL_SECONDS = 14 * 24 * 3600;
/** What is kept of a session's User-Agent (what the sessions list shows). */
const USER_AGENT_KEPT = 200;

const isoIn = (seconds: number, now = Date.now()) => new Date(now + seconds * 1000).toISOString();

const macOf = (key: string, sessionId: string, nonce: string) => hmacSha256Hex(key, `console refresh token\n${sessionId}\n${nonce}`);

/** A new refresh token of session `sessionId`, signed with `key`. */
async function refreshToken(key: string, sessionId: string): Promise<string> {
  const nonce = randomToken('n', 32).slice(2);
  return `rt_${sessionId}.${nonce}.${await macOf(key, sessionId, nonce)}`;
}

/** The session a refresh token was made for, when the service made it (its mac holds); else null. */
async function sessionOfToken(key: string, token: string): Promise<string | null> {
  const m = /^rt_([a-z0-9_]{1,64})\.([0-9a-f]{64})\.([0-9a-f]{64})$/.exec(token);
  if (!m) return null;
  const [, sessionId, nonce, mac] = m;
  const expected = utf8Bytes(await macOf(key, sessionId, nonce));
  const given = utf8Bytes(mac);
  return crypto.subtle.timingSafeEqual(expected, given) ? sessionId : null;
}

/** Where a sign-in came from, as its person will see it in their sessions. */
export interface SigninClient {
  userAgent: string | undefined;
  address: string | undefined;
}

/**
 * A new session for a user whose password was just checked against `passwordHash`: made
 * only while that is still their password, in one statement (a reset or a change that
 * landed after the check leaves no session: null), and in the same batch the check's
 * throttle places given back, only if it was made. Answers its id and refresh token.
 */
export async function openSession(
  db: Db,
  key: string,
  user: { id: string; passwordHash: string },
  attempt: AttemptKeys,
  client: SigninClient,
): Promise<{ id: string; refresh: string } | null> {
  const id = newSessionId();
  const refresh = await refreshToken(key, id);
  const made = sql`EXISTS (SELECT 1 FROM ${consoleSessions} WHERE ${consoleSessions.id} = ${id})`;
  const { session } = await batchByName(db, {
    session: db
      .insert(consoleSessions)
      .select(
        db
          .select({
            id: sql`${id}`.as('id'),
            user_id: users.id,
            refresh_hash: sql`${await sha256Hex(refresh)}`.as('refresh_hash'),
            previous_refresh_hash: sql`NULL`.as('previous_refresh_hash'),
            created_at: nowIso.as('created_at'),
            rotated_at: sql`NULL`.as('rotated_at'),
            expires_at: sql`${isoIn(REFRESH_TTL_SECONDS)}`.as('expires_at'),
            revoked_at: sql`NULL`.as('revoked_at'),
            user_agent: sql`${client.userAgent ? Array.from(client.userAgent).slice(0, USER_AGENT_KEPT).join('') : null}`.as('user_agent'),
            client_address: sql`${client.address ?? null}`.as('client_address'),
          })
          .from(users)
          .where(and(eq(users.id, user.id), eq(users.password_hash, user.passwordHash))),
      )
      .returning({ id: consoleSessions.id }),
    ...passwordAccepted(db, attempt, made),
  });
  return session.length ? { id, refresh } : null;
}

export type RotateResult = { kind: 'rotated'; sessionId: string; userId: string; refresh: string } | { kind: 'refused' };

/**
 * Trades a refresh token for the next one. The current token rotates; any token the
 * session had before (a replay: someone else holds a copy) revokes the session.
 */
export async function rotateSession(db: Db, key: string, refresh: string): Promise<RotateResult> {
  const hash = await sha256Hex(refresh);
  const now = new Date().toISOString();
  const named = await sessionOfToken(key, refresh);
  const session = await db
    .select()
    .from(consoleSessions)
    .where(
      named
        ? eq(consoleSessions.id, named)
        : // A token from before tokens named their session: the current one, or the one rotated away last.
          or(eq(consoleSessions.refresh_hash, hash), eq(consoleSessions.previous_refresh_hash, hash)),
    )
    .get();
  if (!session || session.revoked_at || session.expires_at <= now) return { kind: 'refused' };
  if (session.refresh_hash !== hash) {
    await revokeSession(db, session.id);
    return { kind: 'refused' };
  }
  const next = await refreshToken(key, session.id);
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

/** The statement that ends every session of a user (removal from an organization, a password set), to batch with the change. */
export const userSessionsRevoked = (db: Db, userId: string | SQL, at: string | SQL = new Date().toISOString()) =>
  revoke(db, consoleSessions, eq(consoleSessions.user_id, userId), at);

/** A user's live sessions, oldest first, as they see them. */
export const liveSessionsOf = (db: Db, userId: string) =>
  db
    .select({
      id: consoleSessions.id,
      created_at: consoleSessions.created_at,
      last_refreshed_at: consoleSessions.rotated_at,
      expires_at: consoleSessions.expires_at,
      user_agent: consoleSessions.user_agent,
      client_address: consoleSessions.client_address,
    })
    .from(consoleSessions)
    .where(and(eq(consoleSessions.user_id, userId), isNull(consoleSessions.revoked_at), gt(consoleSessions.expires_at, nowIso)))
    .orderBy(asc(consoleSessions.created_at), asc(consoleSessions.id));

/** Ends one live session of the user; whether there was one. */
export async function endSession(db: Db, userId: string, sessionId: string): Promise<boolean> {
  const ended = await revoke(db, consoleSessions, and(eq(consoleSessions.id, sessionId), eq(consoleSessions.user_id, userId))).returning({
    id: consoleSessions.id,
  });
  return ended.length > 0;
}

/** Ends every session of the user (signing out everywhere); how many were live. */
export async function endAllSessions(db: Db, userId: string): Promise<number> {
  return (await userSessionsRevoked(db, userId).returning({ id: consoleSessions.id })).length;
}
