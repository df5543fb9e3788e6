// Per-API-key rate limits with Cloudflare's Rate Limiting binding, one binding (and
// so one limit) per endpoint class. Limits live in wrangler.toml ([[ratelimits]],
// per environment); README "Rate limits".
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import type { Env } from '../env.ts';
import { ApiError } from '../lib/errors.ts';

/**
 * Every [[ratelimits]] entry uses `period = 60`. The binding answers only
 * success or not, never when its window ends, so Retry-After is the whole period:
 * by then the key is in a new window.
 */
export const RATE_LIMIT_PERIOD_SECONDS = 60;

export type EndpointClass = 'reads' | 'submissions' | 'uploads';

const CLASSES: Record<EndpointClass, { binding: keyof Env & `RATE_LIMIT_${string}`; what: string }> = {
  reads: { binding: 'RATE_LIMIT_READS', what: 'reads (GET requests)' },
  submissions: { binding: 'RATE_LIMIT_SUBMISSIONS', what: 'submissions and changes (proofs, executions, projects, cancels, program updates)' },
  uploads: { binding: 'RATE_LIMIT_UPLOADS', what: 'uploads (program registrations and proofs sent for verification)' },
};

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
 */
export const rateLimit = createMiddleware<AppEnv>(async (c, next) => {
  const cls = endpointClass(c.req.method, c.req.path.replace(/\/+$/, '') || '/');
  const { binding, what } = CLASSES[cls];
  const { success } = await (c.env[binding] as RateLimit).limit({ key: c.var.apiKeyHash });
  if (!success)
    throw new ApiError(
      429,
      `Rate limit exceeded: this API key has used its "${cls}" limit, ${what}, for the current ${RATE_LIMIT_PERIOD_SECONDS}-second window. Retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds.`,
      { 'Retry-After': String(RATE_LIMIT_PERIOD_SECONDS) },
    );
  await next();
});
