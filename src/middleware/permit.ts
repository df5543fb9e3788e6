// Every route of /v1 and /console/v1 declares what it does with permit(), in its
// definition (createRoute's `middleware`, or first among a plain route's handlers):
// the action of the one permissions table (src/auth/permissions.ts), or one of the
// doors that need no role in an organization. test/worker/permissions.test.ts finds
// each route's gate in app.routes (declaredBy), so a route that declares nothing fails
// the suite; and an API key's lookup refuses a request whose route declared no action.
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { MiddlewareHandler } from 'hono/types';
import { may, PERMISSIONS, type Action } from '../auth/permissions.ts';
import { ApiError } from '../lib/errors.ts';
import type { ConsoleEnv } from './console-auth.ts';

/**
 * The doors that need no role in an organization: `public`, credentials in the body
 * (console sign-in, invitations, password links); `account`, any signed-in user about
 * themselves; `operator`, the service's operators (users.is_operator).
 */
export type Door = 'public' | 'account' | 'operator';

const DECLARED = new WeakMap<object, Action | Door>();

/** What a handler of app.routes declares, if it is a permit() gate. */
export const declaredBy = (handler: unknown): Action | Door | undefined =>
  typeof handler === 'function' ? DECLARED.get(handler) : undefined;

/**
 * The route's gate. A console request is checked here, before the handler: its
 * membership (src/middleware/console-auth.ts) must allow the action. An API key's
 * request records the action: the key's lookup, which runs in the request's first
 * D1 round trip, checks it (src/middleware/auth.ts), and no statement of the route
 * sees the organization unless the key may.
 */
export function permit(need: Action | Door): MiddlewareHandler {
  const gate = createMiddleware(async (c: Context<ConsoleEnv>, next) => {
    if (need === 'public' || need === 'account') {
      // Nothing to check beyond the door's own authentication.
    } else if (need === 'operator') {
      if (!c.var.user?.is_operator) throw new ApiError(403, 'Operators only');
    } else if (c.var.apiKeyHash) {
      c.set('action', need);
    } else {
      const membership = c.var.membership;
      if (!membership) throw new Error(`${c.req.method} ${c.req.path}: ${need} is an organization's action, outside one`);
      if (!may(membership.role, need))
        throw new ApiError(
          403,
          `Your role (${membership.role}) in ${membership.orgName} does not allow this: ${PERMISSIONS[need].covers.toLowerCase()} needs ${PERMISSIONS[need].least} or higher`,
        );
      c.set('action', need);
    }
    await next();
  });
  DECLARED.set(gate, need);
  return gate;
}
