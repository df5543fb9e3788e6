// Rate limits with Cloudflare's Rate Limiting binding, one binding (and so one limit)
// per endpoint class and per whom it counts: each API key, and each organization
// whichever of its keys sends (so minting keys buys no budget); the console API per
// session and per organization, with a stricter one for what sends requests out
// (webhook tests and redeliveries). Limits live in wrangler.toml ([[ratelimits]], per
// environment); README "Rate limits".
import { createMiddleware } from 'hono/factory';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import type { Env } from '../env.ts';
import { ApiError } from '../lib/errors.ts';
import type { ConsoleEnv } from './console-auth.ts';

/**
 * Every [[ratelimits]] entry uses `period = 60`. The binding answers only
 * success or not, never when its window ends, so Retry-After is the whole period:
 * by then the key is in a new window.
 */
export const RATE_LIMIT_PERIOD_SECONDS = 60;

export type EndpointClass = 'reads' | 'submissions' | 'uploads';

type Binding = keyof Env & `RATE_LIMIT_${string}`;

const CLASSES: Record<EndpointClass, { binding: Binding; orgBinding: Binding; what: string }> = {
  reads: { binding: 'RATE_LIMIT_READS', orgBinding: 'RATE_LIMIT_ORG_READS', what: 'reads (GET requests)' },
  submissions: {
    binding: 'RATE_LIMIT_SUBMISSIONS',
    orgBinding: 'RATE_LIMIT_ORG_SUBMISSIONS',
    what: 'submissions and changes (proofs, executions, projects, cancels, program updates)',
  },
  uploads: {
    binding: 'RATE_LIMIT_UPLOADS',
    orgBinding: 'RATE_LIMIT_ORG_UPLOADS',
    what: 'uploads (program registrations and proofs sent for verification)',
  },
};

const limited = (detail: string) =>
  new ApiError(
    429,
    `${detail}, for the current ${RATE_LIMIT_PERIOD_SECONDS}-second window. Retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds.`,
    {
      'Retry-After': String(RATE_LIMIT_PERIOD_SECONDS),
    },
  );

const take = async (env: Env, binding: Binding, key: string) => (await env[binding].limit({ key })).success;

/**
 * The organization of each API key this isolate has seen authenticated (by key hash):
 * a key's organization never changes, so its next request is counted against the
 * organization's budget before anything else, like the key's. Bounded: cleared when full.
 */
const orgOfKeyHash = new Map<string, string>();
const ORG_CACHE_MAX = 10_000;

/**
 * Requests already counted against their organization's budget, by their Context: not
 * by `c.req.raw`, which keyBeforeBody replaces after the rate-limit middleware counted
 * it (a request with a body was counted twice, and made one more binding call).
 */
const orgCounted = new WeakSet<Context>();

/** Counts the request against its organization's budget for its class, once; 429 past it. */
async function countOrg(c: Context<AppEnv>, orgId: string, refuse: boolean) {
  if (orgCounted.has(c)) return;
  orgCounted.add(c);
  const cls = classOf(c);
  const { orgBinding, what } = CLASSES[cls];
  if (!(await take(c.env, orgBinding, orgId)) && refuse)
    throw limited(`Rate limit exceeded: this API key's organization has used its "${cls}" limit, ${what}, across all its keys`);
}

const classOf = (c: Context<AppEnv>) => endpointClass(c.req.method, c.req.path.replace(/\/+$/, '') || '/');

/** Which limit a request counts against. */
export function endpointClass(method: string, path: string): EndpointClass {
  if (method === 'GET' || method === 'HEAD') return 'reads';
  if (method === 'POST' && (path === '/v1/programs' || path === '/v1/verify' || path === '/v1/verify/stark')) return 'uploads';
  return 'submissions';
}

/**
 * Counts the request against its class's limit for the API key it sends (by the key's
 * hash, so it costs no D1 read and comes before the body is read); 429 with Retry-After
 * past it. A key that turns out to be unknown is refused 401 by the first read anyway.
 * When this isolate already knows the key's organization, the organization's budget is
 * counted here too; otherwise the first read counts it (limitOrganization).
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const cls = classOf(c);
  const { binding, what } = CLASSES[cls];
  if (!(await take(c.env, binding, c.var.apiKeyHash)))
    throw limited(`Rate limit exceeded: this API key has used its "${cls}" limit, ${what}`);
  const org = orgOfKeyHash.get(c.var.apiKeyHash);
  if (org) await countOrg(c, org, true);
  await next();
});

/**
 * Counts the request against its organization's budget once the first read has
 * resolved the key (src/middleware/auth.ts asCaller; no D1 read of its own), if the
 * rate-limit middleware could not yet. A read past the budget is refused (429); a
 * request that may have written in that first batch is counted but stands (a 429
 * must not hide a change that happened), and the key's next request is refused
 * before anything runs.
 */
export async function limitOrganization(c: Context<AppEnv>, orgId: string): Promise<void> {
  if (!c.var.apiKeyHash) return; // the console's callers are limited by consoleRateLimit
  if (orgOfKeyHash.size >= ORG_CACHE_MAX) orgOfKeyHash.clear();
  orgOfKeyHash.set(c.var.apiKeyHash, orgId);
  await countOrg(c, orgId, c.req.method === 'GET' || c.req.method === 'HEAD');
}

/**
 * One unit of an open event stream's reads (src/features/runs/events.ts): its polls count
 * against the `reads` budgets of its key and organization as requests do. False when
 * either is spent.
 */
export async function countStreamReads(env: Env, keyHash: string, orgId: string): Promise<boolean> {
  const [key, org] = await Promise.all([take(env, 'RATE_LIMIT_READS', keyHash), take(env, 'RATE_LIMIT_ORG_READS', orgId)]);
  return key && org;
}

/** Console requests that send something out of the service (a webhook test, a redelivery). */
export const isConsoleSend = (method: string, path: string) =>
  method === 'POST' && /\/webhooks\/[^/]+\/(test|deliveries\/[^/]+\/redeliver)\/?$/.test(path);

/**
 * The console API's limits, after its authentication: every request counts against the
 * signed-in session's budget and, under /orgs/{org_id}, the organization's; a request
 * that sends something out also against the organization's stricter sends budget.
 */
export const consoleRateLimit = createMiddleware<ConsoleEnv>(async (c, next) => {
  if (!(await take(c.env, 'RATE_LIMIT_CONSOLE', c.var.sessionId)))
    throw limited('Rate limit exceeded: this console session has used its request limit');
  const org = c.var.membership?.orgId;
  if (org) {
    if (!(await take(c.env, 'RATE_LIMIT_CONSOLE_ORG', org)))
      throw limited('Rate limit exceeded: this organization has used its console request limit');
    if (isConsoleSend(c.req.method, c.req.path) && !(await take(c.env, 'RATE_LIMIT_CONSOLE_SENDS', org)))
      throw limited('Rate limit exceeded: this organization has used its limit of webhook tests and redeliveries');
  }
  await next();
});
