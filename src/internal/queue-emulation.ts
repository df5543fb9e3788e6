// A local stand-in for the Cloudflare Queues HTTP pull API, for `wrangler dev` and
// the tests (wrangler dev has no pull consumers). The local queue delivers notices
// to this Worker's queue() handler, which keeps them in D1; agents then pull and ack
// them over HTTP exactly as they do against api.cloudflare.com:
//   POST /client/v4/accounts/{account}/queues/{queue}/messages/pull  {batch_size, visibility_timeout_ms}
//   POST /client/v4/accounts/{account}/queues/{queue}/messages/ack   {acks: [{lease_id}], retries: [{lease_id, delay_seconds}]}
// Faithful where an agent can tell: the response envelope, lease ids, attempts,
// timestamp_ms, metadata["CF-Content-Type"], base64 bodies for `json` content,
// redelivery after the visibility timeout, delayed retries, and dead-lettering after
// max_retries deliveries. Served only when DEV_QUEUE_EMULATION is "true".
import { and, asc, eq, gte, inArray, isNull, lte, sql } from 'drizzle-orm';
import { Hono } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { openDb } from '../db/client.ts';
import { emulatedQueueMessages } from '../db/schema.ts';
import type { Env, JobNotice } from '../env.ts';
import { ApiError } from '../lib/errors.ts';
import { MAX_INTERNAL_JSON_BYTES } from '../lib/limits.ts';
import { readTextCapped } from '../lib/multipart.ts';
import { agentTokenId } from './auth.ts';

export const queueEmulationApi = new Hono<AppEnv>();

const DEFAULT_BATCH_SIZE = 5;
const MAX_BATCH_SIZE = 100;
const DEFAULT_VISIBILITY_MS = 30_000;
const MAX_VISIBILITY_MS = 12 * 3600_000;
const DEFAULT_MAX_RETRIES = 3;

const envelope = (result: unknown) => ({ success: true, errors: [], messages: [], result });
const cfError = (status: 400 | 401 | 404, code: number, message: string) => ({ status, body: { success: false, errors: [{ code, message }], messages: [], result: null } });

export const emulationEnabled = (env: Env) => env.DEV_QUEUE_EMULATION === 'true';

/** The Worker's queue() handler when emulating: keep each notice for the pull API. */
export async function acceptIntoEmulation(batch: MessageBatch<JobNotice>, env: Env): Promise<void> {
  const db = openDb(env.DB);
  const now = Date.now();
  const rows = batch.messages.map((m) => ({
    id: m.id.replace(/-/g, ''),
    body: btoa(String.fromCharCode(...new TextEncoder().encode(JSON.stringify(m.body)))),
    content_type: 'json',
    timestamp_ms: m.timestamp.getTime(),
    visible_at: now,
  }));
  // D1 binds at most 100 parameters per statement: 6 per row.
  for (let i = 0; i < rows.length; i += 16) await db.insert(emulatedQueueMessages).values(rows.slice(i, i + 16)).onConflictDoNothing();
  batch.ackAll();
}

queueEmulationApi.use(async (c, next) => {
  if (!emulationEnabled(c.env)) return c.json({ detail: 'Not Found' }, 404);
  // The real API wants an API token; locally any agent token stands in for it.
  try {
    await agentTokenId(c, c.req.header('authorization'));
  } catch (err) {
    if (err instanceof ApiError) {
      const e = cfError(401, 10000, 'Authentication error');
      return c.json(e.body, e.status);
    }
    throw err;
  }
  await next();
});

/** The request's JSON object (`{}` for an empty body), or null when it is not JSON. */
async function jsonBody(req: Request): Promise<Record<string, unknown> | null> {
  const text = await readTextCapped(req, MAX_INTERNAL_JSON_BYTES);
  if (!text.trim()) return {};
  try {
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' ? (v as Record<string, unknown>) : {};
  } catch {
    return null;
  }
}

const invalidJson = cfError(400, 10026, 'Invalid JSON body');

queueEmulationApi.post('/accounts/:account/queues/:queue/messages/pull', async (c) => {
  const body = await jsonBody(c.req.raw);
  if (!body) return c.json(invalidJson.body, invalidJson.status);
  const batchSize = Number(body.batch_size ?? DEFAULT_BATCH_SIZE);
  const visibility = Number(body.visibility_timeout_ms ?? body.visibility_timeout ?? DEFAULT_VISIBILITY_MS);
  if (!Number.isInteger(batchSize) || batchSize < 1 || batchSize > MAX_BATCH_SIZE) {
    const e = cfError(400, 10103, `batch_size must be between 1 and ${MAX_BATCH_SIZE}`);
    return c.json(e.body, e.status);
  }
  if (!Number.isFinite(visibility) || visibility < 0 || visibility > MAX_VISIBILITY_MS) {
    const e = cfError(400, 10104, `visibility_timeout_ms must be between 0 and ${MAX_VISIBILITY_MS}`);
    return c.json(e.body, e.status);
  }
  const db = c.var.db;
  const now = Date.now();
  const maxRetries = Number(c.env.EMULATED_QUEUE_MAX_RETRIES ?? DEFAULT_MAX_RETRIES);
  const deliverable = and(isNull(emulatedQueueMessages.dead_lettered_at), lte(emulatedQueueMessages.visible_at, now));
  // A message already delivered max_retries times is dead-lettered, not delivered again.
  await db
    .update(emulatedQueueMessages)
    .set({ dead_lettered_at: now, lease_id: null })
    .where(and(deliverable, gte(emulatedQueueMessages.attempts, maxRetries)));
  const candidates = await db
    .select({ id: emulatedQueueMessages.id })
    .from(emulatedQueueMessages)
    .where(deliverable)
    .orderBy(asc(emulatedQueueMessages.timestamp_ms))
    .limit(batchSize);
  const messages = [];
  for (const { id } of candidates) {
    const lease = `lease_${crypto.randomUUID().replace(/-/g, '')}`;
    // Conditional on still being deliverable: two pullers never lease the same message.
    const [row] = await db
      .update(emulatedQueueMessages)
      .set({ lease_id: lease, visible_at: now + visibility, attempts: sql`${emulatedQueueMessages.attempts} + 1` })
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
  return c.json(envelope({ messages, message_backlog_count: 0 }), 200);
});

queueEmulationApi.post('/accounts/:account/queues/:queue/messages/ack', async (c) => {
  const body = await jsonBody(c.req.raw);
  if (!body) return c.json(invalidJson.body, invalidJson.status);
  const leaseIds = (list: unknown) =>
    (Array.isArray(list) ? list : []).filter((x): x is { lease_id: string; delay_seconds?: number } => !!x && typeof (x as { lease_id?: unknown }).lease_id === 'string');
  const acks = leaseIds(body.acks);
  const retries = leaseIds(body.retries);
  const db = c.var.db;
  const now = Date.now();
  let ackCount = 0;
  // Like the real API, an ack after the visibility timeout is still accepted. In
  // slices: D1 binds at most 100 parameters per statement.
  for (let i = 0; i < acks.length; i += 50) {
    const deleted = await db
      .delete(emulatedQueueMessages)
      .where(inArray(emulatedQueueMessages.lease_id, acks.slice(i, i + 50).map((a) => a.lease_id)))
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
  return c.json(envelope({ ackCount, retryCount, warnings: [] }), 200);
});
