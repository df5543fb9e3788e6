// A local stand-in for Cloudflare Queues' HTTP pull consumer, for `wrangler dev` and
// the tests (neither has pull consumers). The local jobs queue delivers its notices to
// this Worker's queue() handler, which keeps them in D1 (acceptIntoEmulation); the
// queue gateway (src/features/fleet/queue.ts) then pulls and acks them here exactly as it
// does against api.cloudflare.com in production. Faithful where an agent can tell:
// lease ids, attempts, timestamp_ms, metadata["CF-Content-Type"], base64 bodies for
// `json` content, redelivery after the visibility timeout, delayed retries, and
// dead-lettering after max_retries deliveries. Used only when DEV_QUEUE_EMULATION is
// "true". Its table stands for Cloudflare's queue, not for the service's data: an empty
// pull costs it one read, and the product's own tables none.
import { and, asc, eq, inArray, isNull, lte, sql } from 'drizzle-orm';
import type { QueueAckRequest, QueueMessage } from 'prover-agent/protocol';
import { openDb } from '../../db/client.ts';
import { emulatedQueueMessages } from '../../db/schema.ts';
import type { Env, JobNotice } from '../../env.ts';
import type { Metered } from '../../lib/metered.ts';
import { utf8Bytes } from '../../lib/bytes.ts';

/**
 * The jobs queue as the gateway (src/features/fleet/queue.ts) uses it: Cloudflare's pull
 * consumer, or this emulation of it. Declared here, below the gateway, which picks one.
 */
export interface JobsQueue {
  pull(batchSize: number, visibilityTimeoutMs: number): Promise<QueueMessage[]>;
  ack(acks: QueueAckRequest['acks'], retries: QueueAckRequest['retries']): Promise<{ ackCount: number; retryCount: number }>;
}

const DEFAULT_MAX_RETRIES = 3;

export const emulationEnabled = (env: Env) => env.DEV_QUEUE_EMULATION === 'true';

/** The Worker's queue() handler when emulating: keep each notice for the pull API, one insert per 16 (of a batch of at most 100: 7 calls). */
export async function acceptIntoEmulation(batch: MessageBatch<JobNotice>, { db }: Metered): Promise<void> {
  const now = Date.now();
  const rows = batch.messages.map((m) => ({
    id: m.id.replace(/-/g, ''),
    body: btoa(String.fromCharCode(...utf8Bytes(JSON.stringify(m.body)))),
    content_type: 'json',
    timestamp_ms: m.timestamp.getTime(),
    visible_at: now,
  }));
  // D1 binds at most 100 parameters per statement: 6 per row.
  for (let i = 0; i < rows.length; i += 16)
    await db
      .insert(emulatedQueueMessages)
      .values(rows.slice(i, i + 16))
      .onConflictDoNothing();
  batch.ackAll();
}

/** The emulated pull consumer, over the Worker's own D1 binding (never a read replica: a queue has one truth). */
export function emulatedJobsQueue(env: Env): JobsQueue {
  const db = openDb(env.DB);
  const maxRetries = Number(env.EMULATED_QUEUE_MAX_RETRIES ?? DEFAULT_MAX_RETRIES);
  return {
    async pull(batchSize, visibilityMs) {
      const now = Date.now();
      const deliverable = and(isNull(emulatedQueueMessages.dead_lettered_at), lte(emulatedQueueMessages.visible_at, now));
      const candidates = await db
        .select({ id: emulatedQueueMessages.id, attempts: emulatedQueueMessages.attempts })
        .from(emulatedQueueMessages)
        .where(deliverable)
        .orderBy(asc(emulatedQueueMessages.timestamp_ms))
        .limit(batchSize);
      const messages: QueueMessage[] = [];
      for (const { id, attempts } of candidates) {
        // A message already delivered max_retries times is dead-lettered, not delivered again.
        if (attempts >= maxRetries) {
          await db
            .update(emulatedQueueMessages)
            .set({ dead_lettered_at: now, lease_id: null })
            .where(and(eq(emulatedQueueMessages.id, id), deliverable));
          continue;
        }
        const lease = `lease_${crypto.randomUUID().replace(/-/g, '')}`;
        // Conditional on still being deliverable: two pullers never lease the same message.
        const [row] = await db
          .update(emulatedQueueMessages)
          .set({ lease_id: lease, visible_at: now + visibilityMs, attempts: sql`${emulatedQueueMessages.attempts} + 1` })
          .where(and(eq(emulatedQueueMessages.id, id), deliverable))
          .returning();
        if (row)
          messages.push({
            body: row.body,
            id: row.id,
            timestamp_ms: row.timestamp_ms,
            attempts: row.attempts,
            metadata: { 'CF-sourceMessageSource': 'worker', 'CF-Content-Type': row.content_type },
            lease_id: lease,
          });
      }
      return messages;
    },

    async ack(acks, retries) {
      const now = Date.now();
      let ackCount = 0;
      // Like the real API, an ack after the visibility timeout is still accepted. In
      // slices: D1 binds at most 100 parameters per statement.
      for (let i = 0; i < acks.length; i += 50) {
        const deleted = await db
          .delete(emulatedQueueMessages)
          .where(
            inArray(
              emulatedQueueMessages.lease_id,
              acks.slice(i, i + 50).map((a) => a.lease_id),
            ),
          )
          .returning({ id: emulatedQueueMessages.id });
        ackCount += deleted.length;
      }
      let retryCount = 0;
      for (const r of retries) {
        const delay = Math.max(0, Number(r.delay_seconds ?? 0)) * 1000;
        const moved = await db
          .update(emulatedQueueMessages)
          .set({ lease_id: null, visible_at: now + delay })
          .where(eq(emulatedQueueMessages.lease_id, r.lease_id))
          .returning({ id: emulatedQueueMessages.id });
        retryCount += moved.length;
      }
      return { ackCount, retryCount };
    },
  };
}
