// Authentication of /console/v1: a bearer access token (never an API key), whose
// session must still be live, and, under /orgs/{org_id}, a membership of that
// organization, whose role the route's permit() gate checks against its declared
// action (src/middleware/permit.ts, src/auth/permissions.ts).
import { and, eq, isNull, sql } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import type { Db } from '../db/client.ts';
import { consoleSessions, memberships, organizations, users, type Role } from '../db/schema.ts';
import type { Actor } from '../lib/audit.ts';
import { ApiError, decodePathSegment } from '../lib/errors.ts';
import { verifyAccessToken } from '../lib/console-sessions.ts';
import { bearer } from '../lib/bearer.ts';

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

const unauthorized = (msg: string) => new ApiError(401, msg, { 'WWW-Authenticate': 'Bearer' });

/**
 * The bearer access token, then, in one D1 statement (one round trip; a refusal a
 * replica gives is confirmed on the primary, as a session made a moment ago may not
 * have reached the replica): the user, whether the token's session is still live, and
 * under /orgs/{org_id} the user's membership of that organization.
 */
export const requireConsoleUser = createMiddleware<ConsoleEnv>(async (c, next) => {
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
      .leftJoin(consoleSessions, and(eq(consoleSessions.id, claims.sid), eq(consoleSessions.user_id, users.id), isNull(consoleSessions.revoked_at)))
      .leftJoin(memberships, and(eq(memberships.org_id, orgId ?? ''), eq(memberships.user_id, users.id)))
      .leftJoin(organizations, eq(organizations.id, memberships.org_id))
      .where(eq(users.id, claims.sub))
      .get();
  const standing = (row: Awaited<ReturnType<typeof look>>) => !!row?.session_id && (!orgId || !!row.role);
  // A change is authorized on the primary: a session ended a moment ago never writes.
  // A read may be served by a replica as far behind as it is (README "Replicas and bookmarks").
  const reads = c.req.method === 'GET' || c.req.method === 'HEAD';
  let row = await look(reads ? c.var.db : c.var.sessions.primary());
  if (!standing(row) && c.var.sessions.mayBeBehind) row = await look(c.var.sessions.primary());
  if (!row?.session_id) throw unauthorized('Session ended: sign in again');
  c.set('user', { id: row.id, email: row.email, name: row.name, is_operator: row.is_operator });
  c.set('sessionId', claims.sid);
  if (orgId) {
    if (!row.role) throw new ApiError(404, 'Organization not found');
    const id = orgId;
    c.set('membership', { orgId: id, orgName: row.org_name ?? '', role: row.role });
    // The public API's handlers and lookups read the organization from `caller`.
    c.set('caller', { orgId: id, owner: row.email, keyId: '', keyHash: '' });
  }
  await next();
});

/** The signed-in user as the audit log records them. */
export const actorOf = (c: Context<ConsoleEnv>): Actor => ({ userId: c.var.user.id, email: c.var.user.email });
