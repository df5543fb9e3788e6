// The publisher credential: what publishes a config's keys (src/features/configs/publisher.ts).
// An operator makes it for a purpose (`npm run admin -- create-publisher-token`):
// stored hashed, scoped to the configs it names (or all), dead at its expiry or its
// revocation. It is deliberately not an agent token: agent tokens live on every GPU
// host, and one stolen host must not decide what every caller verifies proofs against.
// Kept apart from the agent-token middleware of ./auth.ts, which it does not change.
import { and, eq, gt, isNull } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import { publisherTokens } from '../../db/schema.ts';
import { bearer } from '../../lib/bearer.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';
import { normalizeConfigId } from '../../lib/schemas.ts';
import { requireAgentToken, type InternalEnv } from '../fleet/auth.ts';

/** Publisher tokens start so (src/admin/statements.ts createPublisherToken). */
export const PUBLISHER_TOKEN_PREFIX = 'pt_';

export interface Publisher {
  id: string;
  name: string;
}

export interface PublisherEnv extends InternalEnv {
  Variables: InternalEnv['Variables'] & { publisher: Publisher };
}

/** A live publisher token's row, or null (unknown, revoked or expired). */
async function livePublisher(c: { var: InternalEnv['Variables'] }, token: string, now = Date.now()) {
  const row = await c.var.db
    .select({ id: publisherTokens.id, name: publisherTokens.name, config_ids: publisherTokens.config_ids })
    .from(publisherTokens)
    .where(
      and(eq(publisherTokens.token_hash, await sha256Hex(token)), isNull(publisherTokens.revoked_at), gt(publisherTokens.expires_at, now)),
    )
    .get();
  return row ?? null;
}

/** 403 unless the token's scope covers the route's config. */
function inScope(scope: string[] | null, configParam: string | undefined): boolean {
  if (scope === null) return true;
  if (!configParam || !/^cfg_/i.test(configParam)) return false;
  return scope.includes(normalizeConfigId(configParam));
}

/** Routes under /:config_id that publish its keys: a live publisher token whose scope covers the config. */
export const requirePublisherToken = createMiddleware<PublisherEnv>(async (c, next) => {
  const row = await livePublisher(c, bearer(c.req.header('authorization')));
  if (!row)
    throw new ApiError(
      401,
      'Publishing keys needs a live publisher token (npm run admin -- create-publisher-token); agent tokens cannot publish',
    );
  if (!inScope(row.config_ids, c.req.param('config_id')))
    throw new ApiError(403, `Publisher token ${row.name} is not scoped to this config`);
  c.set('publisher', { id: row.id, name: row.name });
  await next();
});

/**
 * Reading a config's fleet record (GET /internal/v1/configs/{id}): an agent token, or
 * a publisher token scoped to the config (setup-config --publish on a host that has
 * only the publishing credential at hand).
 */
export const requireAgentOrPublisherToken = createMiddleware<InternalEnv>(async (c, next) => {
  const token = bearer(c.req.header('authorization'));
  if (token.startsWith(PUBLISHER_TOKEN_PREFIX)) {
    const row = await livePublisher(c, token);
    if (row) {
      if (!inScope(row.config_ids, c.req.param('config_id')))
        throw new ApiError(403, `Publisher token ${row.name} is not scoped to this config`);
      return next();
    }
  }
  return requireAgentToken(c, next);
});
