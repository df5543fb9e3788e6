// /internal/v1/queue: the agents' way to the jobs queue. The Worker holds the queue's
// credentials (QUEUES_API_TOKEN, a secret) and pulls and acks job notices for the
// agent over Cloudflare Queues' HTTP pull API; a GPU host holds only its agent token,
// revocable per agent, and the short-lived queue token its presence report gets
// (src/features/fleet/queue-token.ts). Checking that token costs one primary-key read of its
// agent token, run alongside the pull (no round trip added), so a revocation stops the
// host's pulls at once. Locally the queue is emulated
// (DEV_QUEUE_EMULATION, src/features/fleet/queue-emulation.ts).
import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import type { QueueAckRequest, QueueAckResponse, QueueMessage, QueuePullRequest, QueuePullResponse } from 'prover-agent/protocol';
import type { Env } from '../../env.ts';
import { jsonBody } from '../../lib/body.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { BODY_CAPS, MAX_INTERNAL_JSON_BYTES } from '../../lib/limits.ts';
import { json } from '../../middleware/door.ts';
import { fleetDoor, type InternalEnv } from './auth.ts';
import { emulatedJobsQueue, emulationEnabled, type JobsQueue } from './queue-emulation.ts';
import { QueueAckSchema, QueuePullSchema } from './schemas.ts';

const CLOUDFLARE_API = 'https://api.cloudflare.com/client/v4';

/**
 * Cloudflare Queues' HTTP pull consumer API (POST .../queues/{queue_id}/messages/pull and
 * .../ack, with an API token that has Account › Queues › Edit: acks write).
 */
function cloudflareJobsQueue(env: Env): JobsQueue {
  const { QUEUES_API_TOKEN: token, QUEUES_ACCOUNT_ID: account, JOBS_QUEUE_ID: queue } = env;
  if (!token || !account || !queue)
    throw new ApiError(
      503,
      'This service cannot reach its jobs queue: set QUEUES_ACCOUNT_ID and JOBS_QUEUE_ID (vars) and QUEUES_API_TOKEN (secret); see README "Deploying to Cloudflare"',
    );
  const base = `${env.QUEUES_API_URL ?? CLOUDFLARE_API}/accounts/${encodeURIComponent(account)}/queues/${encodeURIComponent(queue)}/messages`;
  const call = async <T>(action: 'pull' | 'ack', body: unknown): Promise<T> => {
    const res = await fetch(`${base}/${action}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    const json = (await res.json().catch(() => null)) as { success?: boolean; errors?: { message: string }[]; result?: T } | null;
    if (!res.ok || !json?.success) {
      console.error(JSON.stringify({ level: 'error', msg: `queue ${action} failed`, status: res.status, errors: json?.errors }));
      throw new ApiError(
        502,
        `The jobs queue answered ${res.status} to ${action}: ${json?.errors?.map((e) => e.message).join('; ') || 'no details'}`,
      );
    }
    return json.result as T;
  };
  return {
    async pull(batchSize, visibilityMs) {
      return (
        (await call<{ messages?: QueueMessage[] }>('pull', { batch_size: batchSize, visibility_timeout_ms: visibilityMs })).messages ?? []
      );
    },
    async ack(acks, retries) {
      const r = await call<{ ackCount?: number; retryCount?: number }>('ack', { acks, retries });
      return { ackCount: r.ackCount ?? 0, retryCount: r.retryCount ?? 0 };
    },
  };
}

export const jobsQueue = (env: Env): JobsQueue => (emulationEnabled(env) ? emulatedJobsQueue(env) : cloudflareJobsQueue(env));

export const queueInternalApi = new Hono<InternalEnv>();

// The token's signature and lifetime are checked at each route's door, without a
// database; whether the agent token it names is still live is one primary-key read that
// each route runs alongside its own work (src/features/fleet/queue-token.ts
// queueTokenRevoked), so a revocation stops the pulls within a request and adds no round
// trip to them.

const revokedQueueToken = () => new ApiError(401, 'This queue token’s agent token was revoked');

queueInternalApi.post(
  '/pull',
  fleetDoor.queue(json(BODY_CAPS.agentReport)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', QueuePullSchema, validationHook),
  async (c) => {
    const req: QueuePullRequest = c.req.valid('json');
    const queue = jobsQueue(c.env);
    const [revoked, messages] = await Promise.all([c.var.queueTokenRevoked, queue.pull(req.batch_size, req.visibility_timeout_ms)]);
    if (revoked) {
      // Handed back at once for the live agents: nothing pulled for a revoked token stays hidden.
      if (messages.length)
        await queue.ack(
          [],
          messages.map((m) => ({ lease_id: m.lease_id, delay_seconds: 0 })),
        );
      throw revokedQueueToken();
    }
    return c.json({ messages } satisfies QueuePullResponse, 200);
  },
);

queueInternalApi.post(
  '/ack',
  fleetDoor.queue(json(BODY_CAPS.agentReport)),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', QueueAckSchema, validationHook),
  async (c) => {
    const req: QueueAckRequest = c.req.valid('json');
    // An ack changes the queue: the token is checked before it, not alongside.
    if (await c.var.queueTokenRevoked) throw revokedQueueToken();
    const r = await jobsQueue(c.env).ack(req.acks, req.retries);
    return c.json({ ack_count: r.ackCount, retry_count: r.retryCount } satisfies QueueAckResponse, 200);
  },
);
