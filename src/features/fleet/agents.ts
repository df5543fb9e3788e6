// /internal/v1/agents: an agent's presence (what the fleet view and the sweep know of
// it) and its graceful leave. Presence is reported at start and then once a minute,
// the only D1 write an idle agent makes; it also renews the agent's queue token, the
// credential of its queue pulls (src/features/fleet/queue.ts), which are checked without D1.
import { zValidator } from '@hono/zod-validator';
import { and, eq, isNull, sql } from 'drizzle-orm';
import { Hono } from 'hono';
import type { LeaveRequest, PresenceResponse } from 'prover-agent/protocol';
import { agents, agentTokens } from '../../db/schema.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { jsonBody } from '../../lib/body.ts';
import { MAX_INTERNAL_JSON_BYTES } from '../../lib/limits.ts';
import { agentTokenInBatch, bearer, type InternalEnv } from './auth.ts';
import { issueQueueToken } from './queue-token.ts';
import { LeaveRequestSchema, PresenceRequestSchema } from './schemas.ts';

export const agentsInternalApi = new Hono<InternalEnv>();
agentsInternalApi.use(agentTokenInBatch);

/** How often agents report their presence: the fleet view's resolution, and an idle agent's D1 write budget. */
export const PRESENCE_INTERVAL_MS = 60_000;

const liveToken = (hash: string) => and(eq(agentTokens.token_hash, hash), isNull(agentTokens.revoked_at));

agentsInternalApi.post('/presence', jsonBody(MAX_INTERNAL_JSON_BYTES), zValidator('json', PresenceRequestSchema, validationHook), async (c) => {
  const hash = await sha256Hex(bearer(c.req.header('authorization')));
  const req = c.req.valid('json');
  const now = Date.now();
  const db = c.var.db;
  // One batch: the token's row, and the agent's row written from it (nothing for a dead token).
  const [token] = await db.batch([
    db.select({ id: agentTokens.id }).from(agentTokens).where(liveToken(hash)),
    // Every column of agents, in order; nothing is written for a dead token.
    db
      .insert(agents)
      .select(
        sql`SELECT ${req.agent_id}, ${agentTokens.id}, ${req.name}, ${req.machine_type}, ${req.gpus}, ${sql.param(req.engines, agents.engines)}, ${sql.param(req.configs, agents.configs)}, ${now}, NULL
          FROM ${agentTokens} WHERE ${liveToken(hash)}`,
      )
      .onConflictDoUpdate({
        target: agents.id,
        set: {
          token_id: sql`excluded.token_id`,
          name: sql`excluded.name`,
          machine_type: sql`excluded.machine_type`,
          gpus: sql`excluded.gpus`,
          engines: sql`excluded.engines`,
          configs: sql`excluded.configs`,
          last_seen_at: sql`excluded.last_seen_at`,
          left_at: null,
        },
      }),
  ]);
  if (!token[0]) throw new ApiError(401, 'Invalid or revoked agent token');
  const queue = await issueQueueToken(c.env, { tokenId: token[0].id, agentId: req.agent_id }, now);
  return c.json({ presence_interval_ms: PRESENCE_INTERVAL_MS, queue_token: queue.token, queue_token_expires_at: queue.expiresAt } satisfies PresenceResponse, 200);
});

agentsInternalApi.post('/leave', jsonBody(MAX_INTERNAL_JSON_BYTES), zValidator('json', LeaveRequestSchema, validationHook), async (c) => {
  const hash = await sha256Hex(bearer(c.req.header('authorization')));
  const { agent_id } = c.req.valid('json') satisfies LeaveRequest;
  const db = c.var.db;
  const [token] = await db.batch([
    db.select({ id: agentTokens.id }).from(agentTokens).where(liveToken(hash)),
    db
      .update(agents)
      .set({ left_at: Date.now() })
      .where(and(eq(agents.id, agent_id), sql`${agents.token_id} IN (SELECT ${agentTokens.id} FROM ${agentTokens} WHERE ${liveToken(hash)})`)),
  ]);
  if (!token[0]) throw new ApiError(401, 'Invalid or revoked agent token');
  return c.json({ left: true }, 200);
});
