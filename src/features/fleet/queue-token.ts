// The queue token: what an agent pulls and acks job notices with (src/features/fleet/queue.ts).
// An HS256 JWT naming the agent token and the agent, signed with FLEET_TOKEN_SECRET and
// valid for QUEUE_TOKEN_TTL_MS. Each presence report (once a minute) renews it; a
// revoked agent token gets no new one. Its signature is checked without a database,
// and the agent token it names must still be live: one primary-key read of
// agent_tokens that the queue routes run alongside the pull (queueTokenRevoked), so a
// revocation stops a host's pulls and acks at its next request (its claims and job
// tokens stop at once too: src/jobs/state.ts claimJob, src/features/fleet/auth.ts).
import { and, eq, isNull } from 'drizzle-orm';
import { sign, verify } from 'hono/jwt';
import type { Db } from '../../db/client.ts';
import { agentTokens } from '../../db/schema.ts';
import type { Env } from '../../env.ts';
import { signingSecret } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';

/** Lifetime of a queue token: five presence intervals, so a late report or two costs nothing. */
export const QUEUE_TOKEN_TTL_MS = 5 * 60_000;

const secret = (env: Env) => signingSecret(env.FLEET_TOKEN_SECRET, 'FLEET_TOKEN_SECRET', 'docs/deploy.md');

export interface QueueTokenClaims {
  /** The agent token's id. */
  sub: string;
  /** The agent's id. */
  aid: string;
  exp: number;
}

export async function issueQueueToken(
  env: Env,
  who: { tokenId: string; agentId: string },
  now = Date.now(),
): Promise<{ token: string; expiresAt: number }> {
  const expiresAt = now + QUEUE_TOKEN_TTL_MS;
  const token = await sign({ sub: who.tokenId, aid: who.agentId, typ: 'queue', exp: Math.floor(expiresAt / 1000) }, secret(env), 'HS256');
  return { token, expiresAt };
}

/**
 * Whether the agent token a queue token names was revoked (or deleted). Started before
 * the route's own work and awaited with it; a failed read counts as revoked (the agent
 * retries its pull).
 */
export function queueTokenRevoked(db: Db, claims: QueueTokenClaims): Promise<boolean> {
  return db
    .select({ id: agentTokens.id })
    .from(agentTokens)
    .where(and(eq(agentTokens.id, claims.sub), isNull(agentTokens.revoked_at)))
    .get()
    .then(
      (row) => !row,
      () => true,
    );
}

/** The claims of a valid, unexpired queue token; 401 otherwise. */
export async function verifyQueueToken(env: Env, token: string): Promise<QueueTokenClaims> {
  const key = secret(env);
  let claims: Record<string, unknown>;
  try {
    claims = await verify(token, key, 'HS256');
  } catch {
    throw new ApiError(401, 'Invalid or expired queue token: report presence (POST /internal/v1/agents/presence) for a new one');
  }
  const { typ, sub, aid, exp } = claims;
  // Every queue token is issued with an expiry (issueQueueToken), which verify() checked.
  if (typ !== 'queue' || typeof sub !== 'string' || typeof aid !== 'string' || typeof exp !== 'number')
    throw new ApiError(401, 'Not a queue token');
  return { sub, aid, exp };
}
