// /internal/v1/agents: an agent's presence (what the fleet view and the sweep know of
// it) and its graceful leave. Presence is reported at start and then once a minute,
// one statement, the only D1 statement an idle agent costs; it also renews the agent's
// queue token, the credential of its queue pulls (src/features/fleet/queue.ts), which
// are checked without D1 (src/features/fleet/queue-token.ts).
import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import type { LeaveRequest, PresenceResponse } from 'prover-agent/protocol';
import { fleetSettings } from '../../jobs/settings.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { jsonBody } from '../../lib/body.ts';
import { BODY_CAPS, MAX_INTERNAL_JSON_BYTES } from '../../lib/limits.ts';
import { json } from '../../middleware/door.ts';
import { bearerHash, fleetDoor, seenLiveAgentToken, type InternalEnv } from './auth.ts';
import { recordLeave, recordPresence, liveTokenMachineType } from './data.ts';
import { otherMachineType, requirePricedMachineType } from './declaration.ts';
import { issueQueueToken, PRESENCE_INTERVAL_MS } from './queue-token.ts';
import { LeaveRequestSchema, PresenceRequestSchema } from './schemas.ts';

export const agentsInternalApi = new Hono<InternalEnv>();

agentsInternalApi.post(
  '/presence',
  fleetDoor.agent(json(BODY_CAPS.agentReport)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', PresenceRequestSchema, validationHook),
  async (c) => {
    const hash = await bearerHash(c);
    const req = c.req.valid('json');
    await requirePricedMachineType(c, fleetSettings(c.env).machineRates, req.machine_type, hash);
    const now = Date.now();
    const token = await recordPresence(c.get('db'), hash, req, now);
    if (!token) {
      // Not recorded, and no queue token: a dead token, or a host that is not what its token says (./declaration.ts).
      const live = await liveTokenMachineType(c.get('db'), hash);
      if (!live) throw new ApiError(401, 'Invalid or revoked agent token');
      throw otherMachineType(live.machine_type, req.machine_type);
    }
    seenLiveAgentToken(hash);
    const queue = await issueQueueToken(c.env, { tokenId: token.id, agentId: req.agent_id }, now);
    return c.json(
      {
        presence_interval_ms: PRESENCE_INTERVAL_MS,
        queue_token: queue.token,
        queue_token_expires_at: queue.expiresAt,
      } satisfies PresenceResponse,
      200,
    );
  },
);

agentsInternalApi.post(
  '/leave',
  fleetDoor.agent(json(BODY_CAPS.agentReport)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', LeaveRequestSchema, validationHook),
  async (c) => {
    const hash = await bearerHash(c);
    const { agent_id } = c.req.valid('json') satisfies LeaveRequest;
    if (!(await recordLeave(c.get('db'), hash, agent_id, Date.now()))) throw new ApiError(401, 'Invalid or revoked agent token');
    return c.json({ left: true }, 200);
  },
);
