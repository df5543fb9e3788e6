// The Hono app: the public API under /v1 (one module per resource), the console's API
// under /console/v1 and its pages, the fleet's internal API under /internal/v1, each a
// sub-app with its own middleware; the OpenAPI document and reference.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { Scalar } from '@scalar/hono-api-reference';
import { Hono } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from './app-env.ts';
import { BOOKMARK_HEADER, isBookmark, RequestSessions } from './db/sessions.ts';
import { ApiError, onError, validationHook } from './lib/errors.ts';
import { API_KEY_HEADER, authenticate, DEFAULT_API_KEY_HEADERS, requireApiKey } from './middleware/auth.ts';
import { door, doorGuard } from './middleware/door.ts';
import { configsApi } from './features/configs/api.ts';
import { downloadsApi } from './features/configs/downloads.ts';
import { executionsApi } from './features/executions/api.ts';
import { programsApi } from './features/programs/api.ts';
import { projectsApi } from './features/projects/api.ts';
import { proofsApi } from './features/proofs/api.ts';
import { verifyApi } from './features/verifications/api.ts';
import { webhooksApi } from './features/webhooks/api.ts';
import { documentWebhookEvents } from './features/webhooks/docs.ts';
import { CONSOLE_SECURITY, errorResponses, MessageResponse } from './lib/schemas.ts';
import { referenceOf, withSharedResponses, type OpenApiDocument } from './lib/openapi.ts';
import { configsInternalApi } from './features/configs/publisher.ts';
import { jobsInternalApi } from './features/fleet/claim.ts';
import { leaseInternalApi } from './features/fleet/lease.ts';
import { agentsInternalApi } from './features/fleet/agents.ts';
import { queueInternalApi } from './features/fleet/queue.ts';
import { consolePages } from './console/pages.tsx';
import { requireConsoleUser, type ConsoleEnv } from './middleware/console-auth.ts';
import { accountApi } from './features/accounts/console/account.ts';
import { apiKeysApi } from './features/accounts/console/api-keys.ts';
import { auditApi } from './features/accounts/console/audit.ts';
import { consoleAuthApi } from './features/accounts/console/auth.ts';
import { consoleExecutionsApi } from './features/executions/console.ts';
import { fleetApi } from './features/fleet/console.ts';
import { membersApi } from './features/accounts/console/members.ts';
import { outboxApi } from './features/accounts/console/outbox.ts';
import { consoleProgramsApi } from './features/programs/console.ts';
import { consoleProjectsApi } from './features/projects/console.ts';
import { consoleProofsApi } from './features/proofs/console.ts';
import { usageApi } from './features/accounts/console/usage.ts';
import { consoleVerificationsApi } from './features/verifications/console.ts';
import { consoleWebhooksApi } from './features/webhooks/console.ts';
import { budgetsConsoleApi } from './features/budgets/console.ts';
import { limitsConsoleApi } from './features/limits/console.ts';
import { estimatesConsoleApi } from './features/estimates/console.ts';
import { retentionApi } from './features/retention/api.ts';
import { consoleRetentionApi } from './features/retention/console.ts';

/** The interface's published version label (interface.md section 9). */
export const API_VERSION = '2.0.0';

// Each API is a sub-app with its own middleware. Every request of one runs in one D1
// session (src/db/sessions.ts): a caller's from the bookmark it sent back, or else from
// the nearest replica, its answer saying how far the session got (for the caller to send
// back); the fleet's on the primary.

/** The bookmark a request sent, checked: null when none, 400 when it is not one. */
function sentBookmark(header: string | undefined): string | null {
  if (header === undefined || header.trim() === '') return null;
  const value = header.trim().toLowerCase();
  if (!isBookmark(value))
    throw new ApiError(
      400,
      `Malformed ${BOOKMARK_HEADER} header: send back exactly the value a response gave you (or no header for a fresh session)`,
    );
  return value;
}

/** The D1 session of a caller's request (the public API, the console's). */
const callerSession = createMiddleware<AppEnv>(async (c, next) => {
  const sessions = new RequestSessions(c.env.DB, 'first-unconstrained', sentBookmark(c.req.header(BOOKMARK_HEADER)));
  c.set('sessions', sessions);
  c.set('db', sessions.db);
  await next();
  const bookmark = sessions.bookmark();
  if (bookmark) c.res.headers.set(BOOKMARK_HEADER, bookmark);
});

/** An agent's request: on the primary, by the binding itself (no session, no bookmarks: src/db/sessions.ts). */
const fleetSession = createMiddleware<AppEnv>(async (c, next) => {
  const sessions = new RequestSessions(c.env.DB, 'primary');
  c.set('sessions', sessions);
  c.set('db', sessions.db);
  await next();
});

// The public API: API keys, rate-limited per key (each route's door), checked before any body is read.
const v1 = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
v1.use(callerSession, requireApiKey);
v1.openapi(
  createRoute({
    method: 'get',
    operationId: 'validateApiKey',
    description:
      'Answers 200 `{"message": "OK"}` while the key sent in Service-API-Key (or Axiom-API-Key) is live; 401 for a key no one has, a revoked one, or one whose creator left the organization. Any scope may call it.',
    path: '/validate_api_key',
    tags: ['auth'],
    summary: 'Check an API key',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    responses: {
      200: { description: 'The key is valid', content: { 'application/json': { schema: MessageResponse } } },
      ...errorResponses(),
    },
  }),
  async (c) => {
    await authenticate(c);
    return c.json({ message: 'OK' }, 200);
  },
);
v1.route('/programs', programsApi);
v1.route('/projects', projectsApi);
v1.route('/proofs', proofsApi);
v1.route('/configs', configsApi);
v1.route('/verify', verifyApi);
v1.route('/executions', executionsApi);
v1.route('/webhooks', webhooksApi);
// DELETE of proofs, executions and programs (their paths under /proofs, /executions, /programs).
v1.route('/', retentionApi);

// The console's API: bearer access tokens from /auth (which needs none), never API keys;
// rate-limited per session and organization by each route's door.
const signedIn = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });
signedIn.use(requireConsoleUser);
for (const api of [
  accountApi,
  membersApi,
  apiKeysApi,
  consoleProjectsApi,
  consoleProgramsApi,
  consoleProofsApi,
  consoleExecutionsApi,
  consoleVerificationsApi,
  consoleWebhooksApi,
  usageApi,
  budgetsConsoleApi,
  limitsConsoleApi,
  estimatesConsoleApi,
  auditApi,
  fleetApi,
  consoleRetentionApi,
])
  signedIn.route('/', api);
const consoleApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
consoleApi.use(callerSession);
// Signing in, invitations and password links: their credentials are in the body.
consoleApi.route('/auth', consoleAuthApi);
// The local mail outbox: open, and 404 unless MAIL_SENDER = "outbox" (never deployed).
consoleApi.route('/outbox', outboxApi);
consoleApi.route('/', signedIn);

// The fleet's side: agent tokens and job tokens, never API keys (src/features/fleet/auth.ts).
const fleet = new Hono<AppEnv>();
fleet.use(fleetSession);
fleet.route('/jobs', jobsInternalApi);
fleet.route('/lease', leaseInternalApi);
fleet.route('/configs', configsInternalApi);
fleet.route('/agents', agentsInternalApi);
fleet.route('/queue', queueInternalApi);

export const app = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });
// Before any route: each has declared its door (src/middleware/door.ts).
app.use(doorGuard);
app.route('/v1', v1);
app.route('/console/v1', consoleApi);
app.route('/internal/v1', fleet);
// Signed, time-limited key download links (no API key: the signature is the credential).
app.route('/downloads', downloadsApi);

app.openAPIRegistry.registerComponent('securitySchemes', 'ApiKey', {
  type: 'apiKey',
  in: 'header',
  name: API_KEY_HEADER,
  description: `The API key. The published client's own header, ${DEFAULT_API_KEY_HEADERS.slice(1).join(', ')}, is accepted too.`,
});
app.openAPIRegistry.registerComponent('securitySchemes', 'ConsoleBearer', {
  type: 'http',
  scheme: 'bearer',
  bearerFormat: 'JWT',
  description: 'A console access token from POST /console/v1/auth/signin or /refresh (never an API key)',
});
documentWebhookEvents(app.openAPIRegistry);

/**
 * The references, one per audience (src/lib/openapi.ts): the callers' (the public API,
 * its signed download links and its webhooks) at /openapi.json and /docs, and the
 * console's (the API its pages call) at /openapi/console.json and /docs/console.
 */
export const REFERENCES = {
  callers: {
    document: '/openapi.json',
    page: '/docs',
    prefixes: ['/v1/', '/downloads/'],
    webhooks: true,
    info: {
      title: 'Proving service API',
      description:
        'Register zkVM guest programs, prove them on a GPU fleet, and verify STARK proofs. Every request sends an API key (Service-API-Key); errors are JSON, `{"detail": "…"}`, or for a 422 a list of `{loc, msg, type}`.',
    },
    security: [{ ApiKey: [] }],
  },
  console: {
    document: '/openapi/console.json',
    page: '/docs/console',
    prefixes: ['/console/v1/'],
    webhooks: false,
    info: {
      title: 'Proving service console API',
      description:
        'The API the console’s pages call: signing in, members, API keys, budgets and the organization’s records. Its access tokens come from POST /console/v1/auth/signin; it never takes API keys (the public API is the callers’ reference, /docs).',
    },
    security: CONSOLE_SECURITY,
  },
} as const;

/** The two references, made once per isolate (the routes do not change), the server's origin added per request. */
let references: Record<keyof typeof REFERENCES, OpenApiDocument> | undefined;
export function referenceDocument(name: keyof typeof REFERENCES, origin: string): OpenApiDocument {
  references ??= (() => {
    const whole = withSharedResponses(app.getOpenAPI31Document({ openapi: '3.1.0', info: { title: '', version: API_VERSION } }));
    const cut = (r: (typeof REFERENCES)[keyof typeof REFERENCES]) =>
      referenceOf({ ...whole, info: { ...r.info, version: API_VERSION }, security: [...r.security] }, [...r.prefixes], r);
    return { callers: cut(REFERENCES.callers), console: cut(REFERENCES.console) };
  })();
  return { ...references[name], servers: [{ url: origin }] };
}

for (const [name, ref] of Object.entries(REFERENCES) as [keyof typeof REFERENCES, (typeof REFERENCES)[keyof typeof REFERENCES]][]) {
  app.get(ref.document, door.open(), (c) => c.json(referenceDocument(name, new URL(c.req.url).origin)));
  // Scalar's bundle is served by this Worker (build/assets/docs/vendor), not its CDN, and
  // without its web fonts: the reference works offline.
  app.get(
    ref.page,
    door.open(),
    Scalar({ url: ref.document, pageTitle: ref.info.title, cdn: '/docs/vendor/scalar.js', withDefaultFonts: false }),
  );
}
// The console people sign in to (pages; their scripts and styles are static assets).
app.route('/console', consolePages);
app.get('/healthz', door.open(), (c) => c.json({ ok: true }));

/** The methods a request may name, in the order an Allow header lists them. */
const METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const;

/**
 * The methods `path` is served for (HEAD with GET): a route's own, never middleware's
 * (method ALL) nor a wildcard's (the console's not-found page serves no path in
 * particular). None for a path the app does not know.
 */
function allowedMethods(path: string): string[] {
  const serves = (method: string) =>
    app.router
      .match(method === 'HEAD' ? 'GET' : method, path)[0]
      .some(([[, route]]) => route.method !== 'ALL' && !route.path.endsWith('*'));
  return METHODS.filter(serves);
}

// A path the app serves, asked with a method it does not serve, is 405 with the ones it
// does (RFC 9110 15.5.6); any other path is 404.
app.notFound((c) => {
  const allow = allowedMethods(c.req.path);
  if (allow.length === 0) return c.json({ detail: 'Not Found' }, 404);
  return c.json({ detail: `Method Not Allowed: ${c.req.path} takes ${allow.join(', ')}, not ${c.req.method}` }, 405, {
    Allow: allow.join(', '),
  });
});
app.onError(onError);
