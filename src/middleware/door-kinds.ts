// What a route may declare at its door (src/middleware/door.ts): the kinds of credential,
// of body and of rate budget, each said once here. A route's declaration names one of
// each; the door enforces them before its handler runs. The caps a body kind takes are
// the table src/lib/limits.ts BODY_CAPS; the budgets are [[ratelimits]] bindings
// (wrangler.toml, src/middleware/rate-limit.ts).
import type { Action } from '../auth/permissions.ts';
import type { Env } from '../env.ts';

/**
 * Who may call a route, and how they prove it: each kind is checked before one byte of
 * the body is read, and no kind writes to D1 for a credential it does not know.
 */
export const CREDENTIALS = {
  none: 'No credential: anyone (the console’s sign-in and password links, its pages, the documents, health)',
  apiKey:
    'An API key (Service-API-Key), allowed the route’s action: checked in the route’s first D1 batch, and before the body’s first read',
  console:
    'A console access token (Authorization: Bearer) of a live session, and under /orgs/{org_id} a membership whose role allows the route’s action',
  agent: 'An agent token (Authorization: Bearer at_…), live: one read of agent_tokens, or a token this isolate saw live in the last minute',
  job: 'A job token (Authorization: Bearer jt_…) whose lease’s agent token is live: the lease and its job read before the body',
  queue: 'A queue token (Authorization: Bearer, HS256 JWT from the presence report): its signature and expiry, no D1',
  publisher: 'A publisher token (Authorization: Bearer pt_…), live and scoped to the route’s config',
  agentOrPublisher: 'An agent token, or a publisher token scoped to the route’s config',
  signedLink: 'A signed, time-limited link (?expires=…&signature=…): the signature is the credential, checked before anything is read',
} as const;
export type Credential = keyof typeof CREDENTIALS;

/** A role-free door of the console: any signed-in user about themselves, or the service's operators. */
export type ConsoleDoor = 'account' | 'operator';

/** A byte cap: a number, or one the deployment sets (MAX_UPLOAD_BYTES). */
export type ByteCap = number | ((env: Env) => number);

/** What a route reads of the request's body. */
export type Body =
  /** Nothing: the body is dropped unread. */
  | { kind: 'none' }
  /** JSON: at most `maxBytes`, nested at most `maxDepth` deep (checked by a linear scan before anything parses it). */
  | { kind: 'json'; maxBytes: number; maxDepth: number }
  /** multipart/form-data of at most `maxBytes`, each named part at most its cap (`parts`), or else (`orJson`) a JSON body. */
  | { kind: 'multipart'; maxBytes: ByteCap; parts: Record<string, number>; orJson?: { maxBytes: number; maxDepth: number } }
  /** Raw bytes streamed on (to R2): a Content-Length is required, at most `maxBytes`. */
  | { kind: 'stream'; maxBytes: number };

/**
 * Rate budgets, each a [[ratelimits]] binding counted per whom it names. Past one, 429
 * with Retry-After before the route does anything more.
 */
export const RATE_BUDGETS = {
  reads: 'per API key and per its organization: GET requests',
  submissions: 'per API key and per its organization: proofs, executions, projects, cancels, program updates, webhook changes, deletions',
  uploads: 'per API key and per its organization: program registrations and proofs sent for verification',
  console: 'per console session and per organization',
  'console-sends':
    'per console session and per organization, and per organization for what sends requests out (webhook tests, redeliveries)',
  agent: 'per agent token: claims, presence, leaves, config reads',
  queue: 'per queue token: pulls and acks of job notices',
  job: 'per job token: heartbeats, status checks, logs, artifacts, results, endings',
  publisher: 'per publisher token: key uploads',
  anonymous: 'per client address (CF-Connecting-IP): signing in, refreshing, password links, invitations',
  open: 'per client address: pages, documents, health, signed downloads',
} as const;
export type RateBudget = keyof typeof RATE_BUDGETS;

/** A route's declaration: its credential (and for API keys and console sessions, what it needs), its body, its rate budget. */
export interface Declaration {
  credential: Credential;
  /** apiKey: the action of the permissions table; console: an action, or a role-free door. */
  need?: Action | ConsoleDoor;
  body: Body;
  rate: RateBudget;
}
