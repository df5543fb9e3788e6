// The routes the app serves, read from its route table (app.routes), and what each
// declared at its door (src/middleware/door.ts): what the suite's walks go over, so a
// route added later is walked without editing them.
import { app } from '../../src/app.ts';
import { declaredBy } from '../../src/middleware/door.ts';
import type { Declaration } from '../../src/middleware/door-kinds.ts';

export interface Route {
  method: string;
  /** Hono's pattern, e.g. /v1/proofs/:proof_id */
  path: string;
}

export const routeKey = (r: Route) => `${r.method} ${r.path}`;

const normal = (path: string) => path.replace(/\/$/, '') || '/';

/** Every method and path the app serves (middleware's ALL entries left out), once each. */
export function servedRoutes(): Route[] {
  const seen = new Map<string, Route>();
  for (const r of app.routes) if (r.method !== 'ALL') seen.set(`${r.method} ${normal(r.path)}`, { method: r.method, path: normal(r.path) });
  return [...seen.values()];
}

/** What a route declared at its door: the declaration among its own handlers; undefined when it declared none. */
export function declarationOf(route: Route): Declaration | undefined {
  return app.routes
    .filter((r) => r.method === route.method && normal(r.path) === route.path)
    .map((r) => declaredBy(r.handler))
    .find((d) => d !== undefined);
}

/** What the route serving `method` and `url` (a path, with or without its query) declared at its door. */
export function declarationAt(method: string, url: string): Declaration | undefined {
  const [matched] = app.router.match(method, url.split('?')[0]);
  return matched
    .map(([[handler]]) => declaredBy(handler))
    .filter((d) => d !== undefined)
    .at(-1);
}
