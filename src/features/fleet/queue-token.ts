// The queue token: what an agent pulls and acks job notices with (src/features/fleet/queue.ts).
// An HS256 JWT naming the agent token and the agent, signed with FLEET_TOKEN_SECRET and
// valid for QUEUE_TOKEN_TTL_MS. Each presence report (once a minute) renews it; a
// revoked agent token gets no new one.
//
// Revocation without a read per pull. The presence statement that issues a queue token
// finds its agent token live at that instant, and the token carries the instant
// (`live_at`). For REVOCATION_BOUND_MS after it, the token's pulls and acks need no
// database at all: an idle fleet costs the primary its presence writes and nothing more,
// however often it pulls. An older token (its agent's next presence is late: the service
// was unreachable, or a pull overtook the report) is looked up, one primary-key read of
// agent_tokens, and a live answer is taken for the same bound on this isolate. So a
// revoked agent token's queue tokens stop pulling and acking at most REVOCATION_BOUND_MS
// after the revocation; its claims, presence and job tokens stop at once
// (src/jobs/state.ts claimJob, src/features/fleet/auth.ts).
import { and, eq, isNull } from 'drizzle-orm';
import { sign, verify } from 'hono/jwt';
import type { Db } from '../../db/client.ts';
import { agentTokens } from '../../db/schema.ts';
import type { Env } from '../../env.ts';
import { signingSecret } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';
import { SeenLive } from '../../middleware/door.ts';

/** How often agents report their presence: the fleet view's resolution, and an idle agent's one D1 statement. */
export const PRESENCE_INTERVAL_MS = 60_000;

/** Lifetime of a queue token: five presence intervals, so a late report or two costs a read, not a refusal. */
export const QUEUE_TOKEN_TTL_MS = 5 * PRESENCE_INTERVAL_MS;

/**
 * How long after an agent token's revocation its queue tokens may still pull and ack: a
 * queue token is taken for live this long after its agent token was last found live
 * (by the presence that issued it, or by a read). One presence interval: an agent that
 * reports on time is never read.
 */
export const REVOCATION_BOUND_MS = PRESENCE_INTERVAL_MS;

const secret = (env: Env) => signingSecret(env.FLEET_TOKEN_SECRET, 'FLEET_TOKEN_SECRET', 'docs/deploy.md');

export interface QueueTokenClaims {
  /** The agent token's id. */
  sub: string;
  /** The agent's id. */
  aid: string;
  exp: number;
  /** When its agent token was found live, epoch ms (the presence that issued it); 0 for a token from before this claim. */
  live_at: number;
}

/** A queue token for an agent token that `who` says was found live at `now` (its presence statement). */
export async function issueQueueToken(
  env: Env,
  who: { tokenId: string; agentId: string },
  now = Date.now(),
): Promise<{ token: string; expiresAt: number }> {
  const expiresAt = now + QUEUE_TOKEN_TTL_MS;
  liveAgentTokenIds.add(who.tokenId, now);
  const token = await sign(
    { sub: who.tokenId, aid: who.agentId, typ: 'queue', exp: Math.floor(expiresAt / 1000), live_at: now },
    secret(env),
    'HS256',
  );
  return { token, expiresAt };
}

/** Agent token ids found live (by a presence or a read), taken for live REVOCATION_BOUND_MS from then on this isolate. */
const liveAgentTokenIds = new SeenLive(REVOCATION_BOUND_MS);

/**
 * Whether a queue token's agent token may be taken for live at `now`: yes with no read
 * within REVOCATION_BOUND_MS of the token's `live_at`, or of this isolate's last finding
 * it live; otherwise one primary-key read, whose live answer holds for the bound. A
 * failed read counts as revoked (the agent reports presence and tries again).
 */
export async function queueTokenLive(db: Db, claims: QueueTokenClaims, now = Date.now()): Promise<boolean> {
  if (now - claims.live_at < REVOCATION_BOUND_MS) return true;
  if (liveAgentTokenIds.has(claims.sub, now)) return true;
  const live = await db
    .select({ id: agentTokens.id })
    .from(agentTokens)
    .where(and(eq(agentTokens.id, claims.sub), isNull(agentTokens.revoked_at)))
    .get()
    .then(
      (row) => row !== undefined,
      () => false,
    );
  // Found live as of `now` (the read started then): the bound runs from there.
  if (live) liveAgentTokenIds.add(claims.sub, now);
  return live;
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
  const { typ, sub, aid, exp, live_at } = claims;
  // Every queue token is issued with an expiry (issueQueueToken), which verify() checked.
  if (typ !== 'queue' || typeof sub !== 'string' || typeof aid !== 'string' || typeof exp !== 'number')
    throw new ApiError(401, 'Not a queue token');
  return { sub, aid, exp, live_at: typeof live_at === 'number' ? live_at : 0 };
}
