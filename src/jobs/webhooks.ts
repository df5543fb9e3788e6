// Emitting webhooks (docs/callers.md "Webhooks"): the state machine's side. Events are recorded
// by triggers, as delivery rows, in the same transaction as the state change that
// causes them (migrations/0006_webhooks.sql): nothing is sent for a change that did not
// commit, and nothing committed is lost. From there:
//
// - The transition's own batch (src/jobs/state.ts) reads back the deliveries its
//   triggers just made (unsentDeliveries: no extra round trip) and its caller sends one
//   message per delivery to the Worker's own WEBHOOKS queue (enqueueDeliveries).
// - This Worker consumes that queue (src/features/webhooks/delivery.ts): one attempt
//   per message, retried with a delayed message until the delivery ends.
// - The cron sweep (sweepWebhooks) sends a fresh message for every pending delivery
//   whose attempt is overdue (a send that failed, a message lost with a restarted
//   Worker), so a crash between commit and send delays a webhook, never loses it.
//   Receivers get at-least-once delivery and deduplicate on `webhook-id`.
//
// Every message names the attempt it is for (the delivery's `attempts` when it was
// sent); a message whose attempt was already made (a duplicate, or one the sweep
// replaced) finds the count moved on and does nothing.
import { and, asc, eq, inArray, lt, or, sql, type SQL } from 'drizzle-orm';
import { batchByName } from '../db/batch.ts';
import type { Db } from '../db/client.ts';
import { webhookAttempts, webhookDeliveries } from '../db/schema.ts';
import type { Env, WebhookMessage } from '../env.ts';

export type SubjectKind = (typeof webhookDeliveries.$inferSelect)['subject_kind'];
type DeliveryRow = typeof webhookDeliveries.$inferSelect;

/** Defaults of the vars (docs/operators.md "Configuration"). */
export const WEBHOOK_DEFAULTS = { WEBHOOK_REQUEUE_AFTER_SECONDS: 60, WEBHOOK_RETENTION_DAYS: 30, WEBHOOK_DELIVERED_KEEP_DAYS: 3 };

export const isWebhookMessage = (body: unknown): body is WebhookMessage =>
  !!body &&
  typeof body === 'object' &&
  (body as { type?: unknown }).type === 'webhook' &&
  typeof (body as { delivery_id?: unknown }).delivery_id === 'string';

/** What a message is made from: the delivery, its attempt count, and what to render (null: its payload is stored). */
export interface DeliveryRef {
  id: string;
  attempts: number;
  render: SubjectKind | null;
}

/** The reference of a delivery row. */
export const refOf = (d: Pick<DeliveryRow, 'id' | 'attempts' | 'subject_kind' | 'payload'>): DeliveryRef => ({
  id: d.id,
  attempts: d.attempts,
  render: d.payload === null ? d.subject_kind : null,
});

/** DeliveryRef.render in SQL, for statements that read delivery rows. */
const renderSql = sql<SubjectKind | null>`CASE WHEN ${webhookDeliveries.payload} IS NULL THEN ${webhookDeliveries.subject_kind} END`;

const num = (v: string | undefined, fallback: number) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : fallback);
const isoNow = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------------------
// Emitting: what a state change's batch reads back, and the messages its caller sends.

/**
 * The deliveries the triggers made for `subjects` (ids, as SQL) and nothing has
 * attempted yet: for the end of a state change's batch, so its caller can send them
 * without another round trip. One seek of the tiny webhook_deliveries_unsent index.
 */
export function unsentDeliveries(db: Db, subjects: SQL | string | { getSQL(): SQL }, org?: string | SQL<string>) {
  // Literal conditions, as the partial index says them (a bound 0 would not match it).
  const unsent = sql.raw(`"webhook_deliveries"."attempts" = 0 AND "webhook_deliveries"."status" = 'pending'`);
  const ids =
    typeof subjects === 'string' ? eq(webhookDeliveries.subject_id, subjects) : inArray(webhookDeliveries.subject_id, subjects as SQL);
  return db
    .select({ id: webhookDeliveries.id, attempts: webhookDeliveries.attempts, render: renderSql })
    .from(webhookDeliveries)
    .where(and(ids, unsent, org === undefined ? undefined : eq(webhookDeliveries.org_id, org)));
}

const message = (d: DeliveryRef): WebhookMessage => ({
  type: 'webhook',
  delivery_id: d.id,
  attempt: d.attempts,
  ...(d.render ? { render: d.render } : {}),
});

/**
 * One queue message per delivery, due now (or after `delaySeconds`). A failed send is
 * logged, not raised: the delivery is committed, and the sweep sends it when it is overdue.
 */
export async function enqueueDeliveries(env: Env, deliveries: readonly DeliveryRef[], delaySeconds = 0): Promise<void> {
  for (let i = 0; i < deliveries.length; i += 100) {
    const chunk = deliveries.slice(i, i + 100);
    try {
      await env.WEBHOOKS.sendBatch(
        chunk.map((d) => ({ body: message(d), contentType: 'json', ...(delaySeconds > 0 ? { delaySeconds } : {}) })),
      );
    } catch (err) {
      console.error(
        JSON.stringify({
          level: 'warn',
          msg: 'webhook messages not sent; the sweep sends them when due',
          deliveries: chunk.map((d) => d.id),
          error: String(err),
        }),
      );
    }
  }
}

/** Sends the deliveries a request's batch emitted once the answer is on its way (the sweep covers a lost send). */
export function enqueueAfterResponse(
  c: { env: Env; executionCtx: { waitUntil(p: Promise<unknown>): void } },
  deliveries: readonly DeliveryRef[],
): void {
  if (deliveries.length === 0) return;
  const sending = enqueueDeliveries(c.env, deliveries);
  try {
    c.executionCtx.waitUntil(sending);
  } catch {
    // No execution context (a test calling app.request directly): it runs on its own.
  }
}

// ---------------------------------------------------------------------------
// The sweep's part

/** Deliveries looked at per sweep, at most. */
const SWEEP_DELIVERIES = 500;

/**
 * Sends a fresh message for every pending delivery whose attempt has been due for
 * WEBHOOK_REQUEUE_AFTER_SECONDS without being made (its message was lost, or never
 * sent), moving its due time to now so that the next sweep leaves it to this message;
 * and deletes ended deliveries (with their attempts): delivered ones past
 * WEBHOOK_DELIVERED_KEEP_DAYS (their receiver has them; most of what webhooks would keep
 * in D1), failed ones past WEBHOOK_RETENTION_DAYS (kept longer: the ones a caller looks
 * at and redelivers). Each through its own partial index, oldest first.
 */
export async function sweepWebhooks(db: Db, env: Env, now = Date.now()): Promise<{ webhooksRequeued: number; webhooksDeleted: number }> {
  const lostAfterMs = num(env.WEBHOOK_REQUEUE_AFTER_SECONDS, WEBHOOK_DEFAULTS.WEBHOOK_REQUEUE_AFTER_SECONDS) * 1000;
  const retentionMs = num(env.WEBHOOK_RETENTION_DAYS, WEBHOOK_DEFAULTS.WEBHOOK_RETENTION_DAYS) * 86400_000;
  const d = webhookDeliveries;
  const pending = sql.raw(`"webhook_deliveries"."status" = 'pending'`);
  const overdue = db
    .select({ id: d.id })
    .from(d)
    .where(and(pending, lt(d.next_attempt_at, now - lostAfterMs)))
    .orderBy(asc(d.next_attempt_at))
    .limit(SWEEP_DELIVERIES);
  const deliveredKeepMs = num(env.WEBHOOK_DELIVERED_KEEP_DAYS, WEBHOOK_DEFAULTS.WEBHOOK_DELIVERED_KEEP_DAYS) * 86400_000;
  // The status as SQL text, not a bound parameter: SQLite only uses a partial index whose WHERE it can match.
  const endedBefore = (status: 'delivered' | 'failed', keepMs: number) =>
    db
      .select({ id: d.id })
      .from(d)
      .where(and(sql.raw(`"webhook_deliveries"."status" = '${status}'`), lt(d.created_at, isoNow(now - keepMs))))
      .orderBy(asc(d.created_at))
      .limit(SWEEP_DELIVERIES / 2);
  const [delivered, failed] = [endedBefore('delivered', Math.min(deliveredKeepMs, retentionMs)), endedBefore('failed', retentionMs)];
  const { requeued, deliveredDeleted, failedDeleted } = await batchByName(db, {
    requeued: db
      .update(d)
      .set({ next_attempt_at: now })
      .where(and(inArray(d.id, overdue), pending))
      .returning({ id: d.id, attempts: d.attempts, render: renderSql }),
    attemptsDeleted: db
      .delete(webhookAttempts)
      .where(or(inArray(webhookAttempts.delivery_id, delivered), inArray(webhookAttempts.delivery_id, failed))),
    deliveredDeleted: db.delete(d).where(inArray(d.id, delivered)).returning({ id: d.id }),
    failedDeleted: db.delete(d).where(inArray(d.id, failed)).returning({ id: d.id }),
  });
  const deleted = [...deliveredDeleted, ...failedDeleted];
  await enqueueDeliveries(env, requeued);
  return { webhooksRequeued: requeued.length, webhooksDeleted: deleted.length };
}
