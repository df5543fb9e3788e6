// Authentication and roles of /console/v1: a bearer access token (never an API key),
// whose session must still be live, and, under /orgs/{org_id}, a membership of that
// organization with a role at least the route's.
import { and, eq } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { memberships, organizations, users, type Role } from '../db/schema.ts';
import type { Actor } from '../lib/audit.ts';
import { ApiError } from '../lib/errors.ts';
import { liveSession, verifyAccessToken } from '../lib/console-sessions.ts';
import { bearer } from '../internal/auth.ts';

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

const RANK: Record<Role, number> = { member: 1, admin: 2, owner: 3 };
export const atLeast = (role: Role, needed: Role) => RANK[role] >= RANK[needed];

const unauthorized = (msg: string) => new ApiError(401, msg, { 'WWW-Authenticate': 'Bearer' });

export const requireConsoleUser = createMiddleware<ConsoleEnv>(async (c, next) => {
  let token: string;
  try {
    token = bearer(c.req.header('authorization'));
  } catch {
    throw unauthorized('Missing bearer access token: sign in to the console');
  }
  const claims = await verifyAccessToken(c.env, token);
  if (!claims) throw unauthorized('Invalid or expired access token');
  const [session, user] = await Promise.all([
    liveSession(c.var.db, claims.sid, claims.sub),
    c.var.db.select({ id: users.id, email: users.email, name: users.name, is_operator: users.is_operator }).from(users).where(eq(users.id, claims.sub)).get(),
  ]);
  if (!session || !user) throw unauthorized('Session ended: sign in again');
  c.set('user', user);
  c.set('sessionId', claims.sid);
  await next();
});

/** Under /orgs/{org_id}: the caller's membership. Organizations they are not in are 404. */
export const requireMembership = createMiddleware<ConsoleEnv>(async (c, next) => {
  const orgId = c.req.param('org_id') ?? '';
  const row = await c.var.db
    .select({ role: memberships.role, name: organizations.name })
    .from(memberships)
    .innerJoin(organizations, eq(organizations.id, memberships.org_id))
    .where(and(eq(memberships.org_id, orgId), eq(memberships.user_id, c.var.user.id)))
    .get();
  if (!row) throw new ApiError(404, 'Organization not found');
  c.set('membership', { orgId, orgName: row.name, role: row.role });
  // The public API's handlers and lookups read the organization from `caller`.
  c.set('caller', { orgId, owner: c.var.user.email, keyId: '' });
  await next();
});

/** Throws 403 unless the caller's role in the organization is at least `needed`. */
export function requireRole(c: Context<ConsoleEnv>, needed: Role): void {
  if (!atLeast(c.var.membership.role, needed)) throw new ApiError(403, `This needs the ${needed} role or higher in ${c.var.membership.orgName}`);
}

/** Throws 403 unless the user is a service operator. */
export function requireOperator(c: Context<ConsoleEnv>): void {
  if (!c.var.user.is_operator) throw new ApiError(403, 'Operators only');
}

/** The signed-in user as the audit log records them. */
export const actorOf = (c: Context<ConsoleEnv>): Actor => ({ userId: c.var.user.id, email: c.var.user.email });
