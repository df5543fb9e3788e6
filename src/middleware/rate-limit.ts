// Rate limits with Cloudflare's Rate Limiting binding, one binding (and so one limit)
// per budget and per whom it counts (src/middleware/door-kinds.ts RATE_BUDGETS): each API
// key per endpoint class, and its organization whichever of its keys sends (so minting
// keys buys no budget); the console API per session and per organization, with a
// stricter one for what sends requests out (webhook tests and redeliveries); the fleet per
// agent, queue, job and publisher token; routes with no credential per client address;
// and every client address for the credentials it got refused. Each route's door
// (src/middleware/door.ts) names its budget. Limits live in wrangler.toml ([[ratelimits]],
// per environment); docs/callers.md "Rate limits".
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import type { Env } from '../env.ts';
import { ApiError } from '../lib/errors.ts';
import type { ConsoleEnv } from './console-auth.ts';
import type { RateBudget } from './door-kinds.ts';

/**
 * Every [[ratelimits]] entry uses `period = 60`. The binding answers only
 * success or not, never when its window ends, so Retry-After is the whole period:
 * by then the key is in a new window.
 */
export const RATE_LIMIT_PERIOD_SECONDS = 60;

/** The budgets of API keys: one per endpoint class, for the key and for its organization. */
export type EndpointClass = Extract<RateBudget, 'reads' | 'submissions' | 'uploads'>;

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

/** The endpoint class the route's door declared (src/middleware/door.ts). */
function classOf(c: Context<AppEnv>): EndpointClass {
  const rate = c.get('door')?.rate;
  if (rate !== 'reads' && rate !== 'submissions' && rate !== 'uploads')
    throw new Error(`${c.req.method} ${c.req.path} takes an API key but declares no endpoint class (${rate})`);
  return rate;
}

/**
 * Counts the request against its class's limit for the API key it sends (by the key's
 * hash, so it costs no D1 read and comes before the body is read); 429 with Retry-After
 * past it. A key that turns out to be unknown is refused 401 by the first read anyway.
 * When this isolate already knows the key's organization, the organization's budget is
 * counted here too; otherwise the first read counts it (limitOrganization).
 */
export async function limitApiKey(c: Context<AppEnv>): Promise<void> {
  const cls = classOf(c);
  const { binding, what } = CLASSES[cls];
  if (!(await take(c.env, binding, c.get('apiKeyHash'))))
    throw limited(`Rate limit exceeded: this API key has used its "${cls}" limit, ${what}`);
  const org = orgOfKeyHash.get(c.get('apiKeyHash'));
  if (org) await countOrg(c, org, true);
}

/**
 * Counts the request against its organization's budget once the first read has
 * resolved the key (src/middleware/auth.ts asCaller; no D1 read of its own), if the
 * rate-limit middleware could not yet. A read past the budget is refused (429); a
 * request that may have written in that first batch is counted but stands (a 429
 * must not hide a change that happened), and the key's next request is refused
 * before anything runs.
 */
export async function limitOrganization(c: Context<AppEnv>, orgId: string): Promise<void> {
  if (!c.get('apiKeyHash')) return; // the console's callers are limited by consoleRateLimit
  if (orgOfKeyHash.size >= ORG_CACHE_MAX) orgOfKeyHash.clear();
  orgOfKeyHash.set(c.get('apiKeyHash'), orgId);
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

/**
 * The console API's limits, after its authentication: every request counts against the
 * signed-in session's budget and, under /orgs/{org_id}, the organization's; a request
 * whose route declares `console-sends` (it sends something out) also against the
 * organization's stricter sends budget.
 */
export async function limitConsole(c: Context<ConsoleEnv>, budget: RateBudget): Promise<void> {
  if (!(await take(c.env, 'RATE_LIMIT_CONSOLE', c.get('sessionId'))))
    throw limited('Rate limit exceeded: this console session has used its request limit');
  const org = c.get('membership')?.orgId;
  if (org) {
    if (!(await take(c.env, 'RATE_LIMIT_CONSOLE_ORG', org)))
      throw limited('Rate limit exceeded: this organization has used its console request limit');
    if (budget === 'console-sends' && !(await take(c.env, 'RATE_LIMIT_CONSOLE_SENDS', org)))
      throw limited('Rate limit exceeded: this organization has used its limit of webhook tests and redeliveries');
  }
}

/** The budgets counted per credential of the fleet, by its hash (or a queue token's claims): no D1 read. */
const PER_TOKEN: Partial<Record<RateBudget, { binding: Binding; whose: string }>> = {
  agent: { binding: 'RATE_LIMIT_AGENT', whose: 'this agent token' },
  queue: { binding: 'RATE_LIMIT_QUEUE', whose: 'this queue token' },
  job: { binding: 'RATE_LIMIT_JOB', whose: 'this job token' },
  publisher: { binding: 'RATE_LIMIT_PUBLISHER', whose: 'this publisher token' },
};

/** Budgets (`binding key`) this isolate has seen spent, until when: the binding's answers to counts made off the path. */
const seenSpent = new Map<string, number>();

/** What a request counted off its path needs of its context: the bindings, and a way to outlive the response. */
type OffPath = { env: Env; executionCtx: { waitUntil(promise: Promise<unknown>): void } };

/**
 * Counts a request against `binding` for `key` off the request's path: 429 before
 * anything else when this isolate has seen that budget spent (until its window ends),
 * else the request goes on and the count is made after it; the request that spent the
 * budget stands, as the binding counts approximately anyway. For the requests made most
 * often by whom the service trusts most: the fleet's (a status check a second per running
 * job, a queue pull a second per idle agent) and pages.
 */
function countOffPath(c: OffPath, binding: Binding, key: string, detail: string): void {
  const id = `${binding} ${key}`;
  const until = seenSpent.get(id);
  if (until !== undefined) {
    if (until > Date.now()) throw limited(detail);
    seenSpent.delete(id);
  }
  const counted = take(c.env, binding, key).then(
    (fits) => {
      if (fits) return;
      if (seenSpent.size >= ORG_CACHE_MAX) seenSpent.clear();
      seenSpent.set(id, Date.now() + RATE_LIMIT_PERIOD_SECONDS * 1000);
    },
    (err: unknown) => console.error(JSON.stringify({ level: 'warn', msg: 'rate limit not counted', binding, error: String(err) })),
  );
  try {
    c.executionCtx.waitUntil(counted);
  } catch {
    // No execution context (a test calling app.request directly): it runs on its own.
  }
}

/** Counts a fleet request against its token's budget (`key`: the token's hash or claims), off its path. */
export function limitToken(c: OffPath, budget: RateBudget, key: string): void {
  const per = PER_TOKEN[budget];
  if (!per) throw new Error(`the "${budget}" budget is not counted per token`);
  countOffPath(c, per.binding, key, `Rate limit exceeded: ${per.whose} has used its request limit`);
}

/** The budgets counted per client address, for routes that take no credential. */
const PER_ADDRESS: Partial<Record<RateBudget, { binding: Binding; what: string }>> = {
  anonymous: { binding: 'RATE_LIMIT_ANONYMOUS', what: 'signing in, refreshing, password links and invitations' },
  open: { binding: 'RATE_LIMIT_OPEN', what: 'pages, documents and downloads' },
};

/**
 * Counts a request that takes no credential against its client address's budget; 429
 * past it. The anonymous routes' count comes first (what follows may hash a password);
 * pages' and documents' is made off their path.
 */
export async function limitAddress(c: OffPath, budget: RateBudget, address: string): Promise<void> {
  const per = PER_ADDRESS[budget];
  if (!per) throw new Error(`the "${budget}" budget is not counted per address`);
  const detail = `Rate limit exceeded: this client address has used its limit of requests for ${per.what}`;
  if (budget === 'open') countOffPath(c, per.binding, address, detail);
  else if (!(await take(c.env, per.binding, address))) throw limited(detail);
}

/** Counts a refused credential against its client address's budget: false once the address is past it. */
export const countFailedCredential = (env: Env, address: string): Promise<boolean> => take(env, 'RATE_LIMIT_FAILED', address);

/** The 429 of an address past its budget of refused credentials. */
export const tooManyFailures = () => limited('Too many refused credentials from this client address');
