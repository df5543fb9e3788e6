// Authentication of /console/v1: a bearer access token (never an API key), whose
// session must still be live, and, under /orgs/{org_id}, a membership of that
// organization, whose role the route's door checks against its declared action
// (src/middleware/door.ts, src/auth/permissions.ts).
//
// The access token is a short-lived JWT naming a console session; accounts sign it when
// they open or refresh a session (src/features/accounts/sessions.ts), every console
// route checks it here.
import { and, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import { sign, verify } from 'hono/jwt';
import type { AppEnv, VariablesOf } from '../app-env.ts';
import { PERMISSIONS, rankOf } from '../auth/permissions.ts';
import { batchByName } from '../db/batch.ts';
import type { Db } from '../db/client.ts';
import { consoleSessions, memberships, organizations, users, type Role } from '../db/schema.ts';
import type { Env } from '../env.ts';
import { signingSecret } from '../lib/crypto.ts';
import { ApiError, decodePathSegment } from '../lib/errors.ts';
import { bearer } from '../lib/bearer.ts';
import { rankSql } from './role-rank.ts';

const DEFAULT_ACCESS_TTL_SECONDS = 600;

export const accessTtlSeconds = (env: Env) =>
  Number(env.CONSOLE_ACCESS_TOKEN_TTL_SECONDS ?? DEFAULT_ACCESS_TTL_SECONDS) || DEFAULT_ACCESS_TTL_SECONDS;

/** The console's signing key: access tokens (JWT HS256) and refresh tokens' names of their session (src/features/accounts/sessions.ts). */
export const consoleSigningKey = (env: Env) =>
  signingSecret(env.CONSOLE_JWT_SECRET, 'CONSOLE_JWT_SECRET', 'docs/operators.md "Console secrets"');
const jwtSecret = consoleSigningKey;

export interface AccessClaims {
  sub: string;
  sid: string;
  exp: number;
  iat: number;
}

export async function accessToken(env: Env, userId: string, sessionId: string, now = Date.now()): Promise<string> {
  const iat = Math.floor(now / 1000);
  return sign({ sub: userId, sid: sessionId, iat, exp: iat + accessTtlSeconds(env) }, jwtSecret(env), 'HS256');
}

/** The user and session of a valid, unexpired access token, or null. */
export async function verifyAccessToken(env: Env, token: string): Promise<Pick<AccessClaims, 'sub' | 'sid'> | null> {
  try {
    const claims = await verify(token, jwtSecret(env), 'HS256');
    if (typeof claims.sub !== 'string' || typeof claims.sid !== 'string') return null;
    return { sub: claims.sub, sid: claims.sid };
  } catch (err) {
    if ((err as Error).message.startsWith('CONSOLE_JWT_SECRET')) throw err;
    return null;
  }
}

export interface ConsoleUser {
  id: string;
  email: string;
  name: string;
  is_operator: boolean;
}

export interface ConsoleEnv extends AppEnv {
  Variables: AppEnv['Variables'] & {
    user: ConsoleUser;
    sessionId: string;
    membership: { orgId: string; orgName: string; role: Role };
  };
}

/** A route open to anyone that reads the signed-in user when a bearer token came (accepting an invitation). */
export interface MaybeSignedInEnv extends AppEnv {
  Variables: AppEnv['Variables'] & Partial<Pick<ConsoleEnv['Variables'], 'user' | 'sessionId'>>;
}

const unauthorized = (msg: string) => new ApiError(401, msg, { 'WWW-Authenticate': 'Bearer' });

/**
 * The bearer access token, then, in one D1 statement (one round trip; a refusal a
 * replica gives is confirmed on the primary, as a session made a moment ago may not
 * have reached the replica): the user, whether the token's session is still live, and
 * under /orgs/{org_id} the user's membership of that organization.
 */
async function signedIn(
  c: VariablesOf<Pick<AppEnv['Variables'], 'db' | 'sessions'>> & {
    req: { header(name: string): string | undefined; path: string; method: string };
    env: Env;
  },
): Promise<{ user: ConsoleUser; sessionId: string; membership?: ConsoleEnv['Variables']['membership'] }> {
  let token: string;
  try {
    token = bearer(c.req.header('authorization'));
  } catch {
    throw unauthorized('Missing bearer access token: sign in to the console');
  }
  const claims = await verifyAccessToken(c.env, token);
  if (!claims) throw unauthorized('Invalid or expired access token');
  const orgSegment = /^\/console\/v1\/orgs\/([^/]+)/.exec(c.req.path)?.[1];
  const orgId = orgSegment === undefined ? undefined : decodePathSegment(orgSegment);
  const look = (db: Db) =>
    db
      .select({
        id: users.id,
        email: users.email,
        name: users.name,
        is_operator: users.is_operator,
        session_id: sql<string | null>`${consoleSessions.id}`.as('session_id'),
        role: memberships.role,
        org_name: sql<string | null>`${organizations.name}`.as('org_name'),
      })
      .from(users)
      .leftJoin(
        consoleSessions,
        and(eq(consoleSessions.id, claims.sid), eq(consoleSessions.user_id, users.id), isNull(consoleSessions.revoked_at)),
      )
      .leftJoin(memberships, and(eq(memberships.org_id, orgId ?? ''), eq(memberships.user_id, users.id)))
      .leftJoin(organizations, eq(organizations.id, memberships.org_id))
      .where(eq(users.id, claims.sub))
      .get();
  const standing = (row: Awaited<ReturnType<typeof look>>) => !!row?.session_id && (!orgId || !!row.role);
  // A change is authorized on the primary: a session ended a moment ago never writes.
  // A read may be served by a replica as far behind as it is (docs/callers.md "Replicas and bookmarks").
  const reads = c.req.method === 'GET' || c.req.method === 'HEAD';
  let row = await look(reads ? c.get('db') : c.get('sessions').primary());
  if (!standing(row) && c.get('sessions').mayBeBehind) row = await look(c.get('sessions').primary());
  if (!row?.session_id) throw unauthorized('Session ended: sign in again');
  const user = { id: row.id, email: row.email, name: row.name, is_operator: row.is_operator };
  if (!orgId) return { user, sessionId: claims.sid };
  if (!row.role) throw new ApiError(404, 'Organization not found');
  return { user, sessionId: claims.sid, membership: { orgId, orgName: row.org_name ?? '', role: row.role } };
}

/** The signed-in user of a /console/v1 route (401 without one), and their membership under /orgs/{org_id}. */
export const requireConsoleUser = createMiddleware<ConsoleEnv>(async (c, next) => {
  const { user, sessionId, membership } = await signedIn(c);
  c.set('user', user);
  c.set('sessionId', sessionId);
  if (membership) {
    c.set('membership', membership);
    // The public API's handlers and lookups read the organization from `caller`.
    c.set('caller', { orgId: membership.orgId, owner: user.email, keyId: '', keyHash: '' });
  }
  await next();
});

/** The signed-in user, checked as on every signed-in route, when the request sent a bearer token; else none. */
export const consoleUserIfBearer = createMiddleware<MaybeSignedInEnv>(async (c, next) => {
  if (c.req.header('authorization')) {
    const { user, sessionId } = await signedIn(c);
    c.set('user', user);
    c.set('sessionId', sessionId);
  }
  await next();
});

// ---------------------------------------------------------------------------
// Writes: the member as the statement that writes finds them

/** The least role the route's action needs (permit()), or `least` when the write needs more. */
function leastFor(c: Context<ConsoleEnv>, least?: Role): Role {
  if (least) return least;
  const action = c.get('action');
  if (!action) throw new Error(`${c.req.method} ${c.req.path} declares no action (permit())`);
  return PERMISSIONS[action].least;
}

/**
 * The member's organization id as SQL, for the statements of a console write: NULL unless,
 * when the statement runs, the signed-in person's session is still live and they still
 * hold a role of at least `least` there (by default what the route's action needs). The
 * console's orgOfKey (src/middleware/auth.ts): what was checked before the handler is
 * checked again inside the write, so a removal, a demotion, a password change or a
 * sign-out landing in between leaves the write nothing to write (an update matches no
 * row; an insert or an audit entry with a NULL organization fails its whole batch).
 */
export function orgOfMember(c: Context<ConsoleEnv>, least?: Role): SQL<string> {
  return sql<string>`(SELECT acting.org_id FROM ${memberships} AS acting WHERE acting.org_id = ${c.get('membership').orgId} AND acting.user_id = ${c.get('user').id} AND ${rankSql(sql`acting.role`)} >= ${rankOf(leastFor(c, least))} AND EXISTS (SELECT 1 FROM ${consoleSessions} AS acting_session WHERE acting_session.id = ${c.get('sessionId')} AND acting_session.revoked_at IS NULL))`;
}

/**
 * Why the member may no longer make this write, read on the primary: 409 when they left
 * the organization or their role no longer allows it, 401 for an ended session; null
 * when they still stand as checked.
 */
async function memberRefusal(c: Context<ConsoleEnv>, least?: Role): Promise<ApiError | null> {
  const db = c.get('sessions').primary();
  const { orgId, orgName } = c.get('membership');
  const { membership, session } = await batchByName(db, {
    membership: db
      .select({ role: memberships.role })
      .from(memberships)
      .where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, c.get('user').id))),
    session: db
      .select({ id: consoleSessions.id })
      .from(consoleSessions)
      .where(and(eq(consoleSessions.id, c.get('sessionId')), isNull(consoleSessions.revoked_at))),
  });
  const role = membership[0]?.role;
  if (!role) return new ApiError(409, `You are no longer a member of ${orgName}: nothing was changed`);
  const need = leastFor(c, least);
  if (rankOf(role) < rankOf(need))
    return new ApiError(409, `Your role in ${orgName} is now ${role}, and this needs ${need} or higher: nothing was changed`);
  if (!session[0])
    return unauthorized('Your session ended while this request ran (signed out, or the password changed): nothing was changed');
  return null;
}

/**
 * Runs a console write whose statements are scoped by orgOfMember(c, least) (handed to
 * `write`). When it fails or finds nothing (any error, a 404 included) and the member no
 * longer stands as checked, the answer says so instead (409; 401 for an ended session):
 * the write, scoped to their standing, changed nothing.
 */
export async function asMember<T>(c: Context<ConsoleEnv>, write: (org: SQL<string>) => Promise<T>, least?: Role): Promise<T> {
  try {
    return await write(orgOfMember(c, least));
  } catch (err) {
    throw (await memberRefusal(c, least)) ?? err;
  }
}
