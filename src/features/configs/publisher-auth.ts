// The publisher credential: what publishes a config's keys (src/features/configs/publisher.ts).
// An operator makes it for a purpose (`npm run admin -- create-publisher-token`):
// stored hashed, scoped to the configs it names (or all), dead at its expiry or its
// revocation. It is deliberately not an agent token: agent tokens live on every GPU
// host, and one stolen host must not decide what every caller verifies proofs against.
// Kept apart from the agent-token checks of ../fleet/auth.ts, which it does not change.
import { and, eq, gt, isNull } from 'drizzle-orm';
import type { VariablesOf } from '../../app-env.ts';
import { publisherTokens } from '../../db/schema.ts';
import { bearer } from '../../lib/bearer.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';
import { normalizeConfigId } from '../../lib/schemas.ts';
import { door, NO_BODY } from '../../middleware/door.ts';
import type { Body } from '../../middleware/door-kinds.ts';
import { agentTokenCheck, type InternalEnv } from '../fleet/auth.ts';

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
async function livePublisher(c: VariablesOf<InternalEnv['Variables']>, token: string, now = Date.now()) {
  const row = await c
    .get('db')
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

const notScoped = (row: { name: string }) => new ApiError(403, `Publisher token ${row.name} is not scoped to this config`);

/** The doors of the configs' fleet routes: publishing takes a publisher token, reading a config an agent's too. */
export const publisherDoor = {
  /** Routes under /:config_id that publish its keys: a live publisher token whose scope covers the config (c.get('publisher')). */
  publish: (body: Body) =>
    door.token<PublisherEnv>({ credential: 'publisher', body, rate: 'publisher' }, async (c) => {
      const token = bearer(c.req.header('authorization'));
      return {
        key: await sha256Hex(token),
        check: async () => {
          const row = await livePublisher(c, token);
          if (!row)
            throw new ApiError(
              401,
              'Publishing keys needs a live publisher token (npm run admin -- create-publisher-token); agent tokens cannot publish',
            );
          if (!inScope(row.config_ids, c.req.param('config_id'))) throw notScoped(row);
          c.set('publisher', { id: row.id, name: row.name });
        },
      };
    }),

  /**
   * Reading a config's fleet record (GET /internal/v1/configs/{id}): an agent token, or
   * a publisher token scoped to the config (setup-config --publish on a host that has
   * only the publishing credential at hand). Counted in the agents' budget.
   */
  readConfig: () =>
    door.token<InternalEnv>({ credential: 'agentOrPublisher', body: NO_BODY, rate: 'agent' }, async (c) => {
      const token = bearer(c.req.header('authorization'));
      const asAgent = await agentTokenCheck(c);
      return {
        key: asAgent.key,
        check: async () => {
          if (token.startsWith(PUBLISHER_TOKEN_PREFIX)) {
            const row = await livePublisher(c, token);
            if (row) {
              if (!inScope(row.config_ids, c.req.param('config_id'))) throw notScoped(row);
              return;
            }
          }
          await asAgent.check();
        },
      };
    }),
};
