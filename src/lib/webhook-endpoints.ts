// Webhook endpoints and their deliveries as callers see and change them: the records
// built from D1 rows (their schemas: webhook-schemas.ts) and the D1 statements of each
// operation, shared by /v1/webhooks (src/routes/webhooks.ts, which runs them in the API
// key's first batch) and the console's /console/v1/orgs/{org_id}/webhooks
// (src/routes/console/webhooks.ts). Every statement is scoped to the caller's
// organization (`org`: its id, or SQL naming the API key's): another organization's
// endpoint is not found, like one that does not exist. Changes are recorded in the audit log by a statement of the same batch that
// reads the endpoint row it changed, so a change that found nothing records nothing.
import type { z } from '@hono/zod-openapi';
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { BatchItem } from 'drizzle-orm/batch';
import { ulid } from 'ulid';
import type { Db } from '../db/client.ts';
import { auditLog, nowIso, WEBHOOK_EVENTS, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../db/schema.ts';
import type { Env } from '../env.ts';
import type { AuditAction } from './audit.ts';
import { ApiError, notFound, ValidationError } from './errors.ts';
import { cappedCount, inPage, pageAnswer, pageQuery } from './pages.ts';
import { PREVIOUS_SECRET_GRACE_MS } from './webhook-secrets.ts';
import { urlPolicy, webhookUrlProblem } from './webhook-url.ts';
import type { UpdateWebhookBody, WebhookDeliveryRecord, WebhookEndpointRecord, WebhookEventName } from './webhook-schemas.ts';

/** The body of a webhook: `{type, timestamp, data}`, data being the record as GET returns it (src/jobs/webhooks.ts delivers it). */
export const renderPayload = (type: string, timestamp: string, data: unknown) => JSON.stringify({ type, timestamp, data });

type Org = string | SQL<string>;
type EndpointRow = typeof webhookEndpoints.$inferSelect;
type DeliveryRow = typeof webhookDeliveries.$inferSelect;
type AttemptRow = typeof webhookAttempts.$inferSelect;

/** Most endpoints one organization may have. */
export const MAX_WEBHOOK_ENDPOINTS = 20;
/** The event webhook.test sends (not subscribable: sent only when asked for). */
export const TEST_EVENT = 'webhook.test';

/** The `webhook.test` payload's data. */
export const TEST_EVENT_MESSAGE = 'A test event, sent because it was asked for (POST /v1/webhooks/{id}/test). Its signature verifies with the endpoint’s secret like every other event’s.';

export function endpointRecord(e: EndpointRow, now = Date.now()): z.infer<typeof WebhookEndpointRecord> {
  return {
    id: e.id,
    url: e.url,
    description: e.description,
    events: e.events,
    created_at: e.created_at,
    created_by: e.created_by,
    updated_at: e.updated_at,
    disabled: e.disabled,
    disabled_at: e.disabled_at,
    disabled_reason: e.disabled_reason,
    previous_secret_valid_until: e.previous_secret && (e.previous_secret_expires_at ?? 0) > now ? new Date(e.previous_secret_expires_at!).toISOString() : null,
  };
}

export function deliveryRecord(d: DeliveryRow, attempts: AttemptRow[]): z.infer<typeof WebhookDeliveryRecord> {
  return {
    id: d.id,
    endpoint_id: d.endpoint_id,
    type: d.event_type,
    subject_id: d.subject_id,
    status: d.status,
    created_at: d.created_at,
    next_attempt_at: d.status === 'pending' ? new Date(d.next_attempt_at).toISOString() : null,
    error: d.last_error,
    payload: d.payload === null ? null : JSON.parse(d.payload),
    attempts: attempts
      .filter((a) => a.delivery_id === d.id)
      .sort((a, b) => a.attempt - b.attempt)
      .map((a) => ({ attempt: a.attempt, attempted_at: a.attempted_at, status_code: a.status_code, error: a.error, latency_ms: a.latency_ms, response_excerpt: a.response_excerpt })),
  };
}

/** 422 at body.url unless this deployment may send to `url` (src/lib/webhook-url.ts). */
export function checkWebhookUrl(env: Env, url: string): void {
  const problem = webhookUrlProblem(url, urlPolicy(env));
  if (problem) throw new ValidationError([{ loc: ['body', 'url'], msg: `Value error, ${problem}`, type: 'value_error' }]);
}

/** Subscribed events as stored: null for all, else the distinct names in the canonical order. */
const storedEvents = (events: readonly string[] | null | undefined) => (events ? WEBHOOK_EVENTS.filter((e) => events.includes(e)) : null);

export const DELIVERY_ID = /^msg_[0-9a-f]{32}$/;

// ---------------------------------------------------------------------------
// Statements. `Actor` is who the audit log names: a console user, or an API key.

export interface Actor {
  userId: string | null;
  name: string | SQL<string>;
}

const own = (org: Org, id: string) => and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.org_id, org));

/** The audit entry of a change to endpoint `id`, inserted only if the organization has it. */
function audit(db: Db, org: Org, actor: Actor, action: AuditAction, id: string, detail: Record<string, unknown>) {
  const e = webhookEndpoints;
  // Every column of audit_log, in order (an insert from a select names them all).
  return db
    .insert(auditLog)
    .select(
      sql`SELECT ${ulid()}, ${e.org_id}, ${actor.userId}, ${actor.name}, ${action}, ${e.id}, ${sql.param(detail, auditLog.detail)}, ${nowIso} FROM ${e} WHERE ${own(org, id)}`,
    );
}

export const endpointQuery = (db: Db, org: Org, id: string) => db.select().from(webhookEndpoints).where(own(org, id));

/** A page of the organization's endpoints, newest first, and how many it has (at most MAX_WEBHOOK_ENDPOINTS). */
export function endpointPageStatements(db: Db, org: Org, page: number, pageSize: number) {
  const where = eq(webhookEndpoints.org_id, org);
  const rows = db.select().from(webhookEndpoints).where(where).orderBy(desc(webhookEndpoints.created_at), desc(webhookEndpoints.id));
  const read = pageQuery(db, rows.$dynamic(), db.$count(webhookEndpoints, where), page, pageSize);
  return [read.rows, read.total] as const;
}

export const endpointPage = ([rows, total]: readonly [EndpointRow[], { total: number }[]], page: number, pageSize: number) => pageAnswer({ rows, total }, (r) => endpointRecord(r), page, pageSize);

export interface NewEndpoint {
  id: string;
  url: string;
  events?: readonly string[];
  description?: string;
  /** The secret, sealed for `id` (src/lib/webhook-secrets.ts). */
  sealedSecret: string;
}

/**
 * Creates an endpoint: the insert (refused as a whole, isRefusedInsert, when the
 * organization already has MAX_WEBHOOK_ENDPOINTS or, through a dead key, is none), its
 * audit entry, and the row as stored.
 */
export function createStatements(db: Db, org: Org, actor: Actor, createdBy: string | SQL<string>, e: NewEndpoint) {
  const room = sql`(SELECT count(*) FROM ${webhookEndpoints} WHERE ${webhookEndpoints.org_id} = ${org}) < ${MAX_WEBHOOK_ENDPOINTS}`;
  return [
    db.insert(webhookEndpoints).values({
      id: e.id,
      org_id: sql`CASE WHEN ${room} THEN ${org} END`,
      url: e.url,
      events: storedEvents(e.events),
      description: e.description ?? '',
      secret: e.sealedSecret,
      created_by: createdBy,
    }),
    audit(db, org, actor, 'webhook.create', e.id, { url: e.url, events: e.events ?? null }),
    endpointQuery(db, org, e.id),
  ] as const;
}

export const tooManyEndpoints = () =>
  new ApiError(409, `Your organization has ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints, the most it may have: delete one first (one endpoint can subscribe to every event)`);

export type EndpointPatch = z.infer<typeof UpdateWebhookBody>;

/** Changes an endpoint (its audit entry names what changed), then reads it back. */
export function updateStatements(db: Db, org: Org, actor: Actor, id: string, patch: EndpointPatch, now = Date.now()): readonly [...BatchItem<'sqlite'>[], ReturnType<typeof endpointQuery>] {
  const e = webhookEndpoints;
  const at = new Date(now).toISOString();
  const set: Partial<Record<keyof EndpointRow, unknown>> = {};
  if (patch.url !== undefined) set.url = patch.url;
  if (patch.events !== undefined) set.events = storedEvents(patch.events);
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.disabled === false) Object.assign(set, { disabled: false, disabled_at: null, disabled_reason: null, failed_deliveries: 0, failing_since: null });
  if (patch.disabled === true)
    Object.assign(set, {
      disabled: true,
      // Already disabled: it keeps why and since when.
      disabled_at: sql`CASE WHEN ${e.disabled} THEN ${e.disabled_at} ELSE ${at} END`,
      disabled_reason: sql`CASE WHEN ${e.disabled} THEN ${e.disabled_reason} ELSE ${'Disabled by '} || ${actor.name} || ${` at ${at}`} END`,
    });
  if (Object.keys(set).length === 0) return [endpointQuery(db, org, id)] as const;
  return [
    db
      .update(e)
      .set({ ...set, updated_at: at } as never)
      .where(own(org, id)),
    audit(db, org, actor, 'webhook.update', id, patch),
    endpointQuery(db, org, id),
  ] as const;
}

/**
 * Deletes an endpoint: its audit entry, its pending deliveries ended (`failed`: the
 * endpoint was deleted; finished ones stay until the retention sweep), then the row.
 */
export function deleteStatements(db: Db, org: Org, actor: Actor, id: string) {
  const d = webhookDeliveries;
  return [
    audit(db, org, actor, 'webhook.delete', id, {}),
    db
      .update(d)
      .set({ status: 'failed', last_error: 'Not sent: the endpoint was deleted' })
      .where(and(eq(d.endpoint_id, id), eq(d.org_id, org), eq(d.status, 'pending'))),
    db.delete(webhookEndpoints).where(own(org, id)).returning({ id: webhookEndpoints.id }),
  ] as const;
}

/** Replaces the signing secret; the previous one signs too for PREVIOUS_SECRET_GRACE_MS. */
export function rotateStatements(db: Db, org: Org, actor: Actor, id: string, sealedSecret: string, now = Date.now()) {
  const e = webhookEndpoints;
  return [
    db
      .update(e)
      .set({ previous_secret: sql`${e.secret}`, previous_secret_expires_at: now + PREVIOUS_SECRET_GRACE_MS, secret: sealedSecret, updated_at: new Date(now).toISOString() })
      .where(own(org, id)),
    audit(db, org, actor, 'webhook.rotate_secret', id, {}),
    endpointQuery(db, org, id),
  ] as const;
}

/** The endpoint, a page of its deliveries (newest first) with their attempts, and how many match (capped). */
export function deliveryPageStatements(db: Db, org: Org, id: string, status: DeliveryRow['status'] | undefined, page: number, pageSize: number) {
  const d = webhookDeliveries;
  const where = and(eq(d.endpoint_id, id), eq(d.org_id, org), status ? eq(d.status, status) : undefined);
  const newestFirst = [desc(d.created_at), desc(d.id)];
  const { rows, total: counted } = pageQuery(db, db.select().from(d).where(where).orderBy(...newestFirst).$dynamic(), cappedCount(db.select({ one: sql`1` }).from(d).where(where)), page, pageSize);
  const pageIds = inPage(db.select({ id: d.id }).from(d).where(where).orderBy(...newestFirst).$dynamic(), page, pageSize);
  return [endpointQuery(db, org, id), rows, db.select().from(webhookAttempts).where(inArray(webhookAttempts.delivery_id, pageIds)), counted] as const;
}

export function deliveryPage([endpoint, rows, attempts, counted]: readonly [EndpointRow[], DeliveryRow[], AttemptRow[], { total: number }[]], page: number, pageSize: number) {
  if (!endpoint[0]) throw notFound('Webhook endpoint');
  return pageAnswer({ rows, total: counted }, (r) => deliveryRecord(r, attempts), page, pageSize);
}

/**
 * Sends a finished delivery again, as the same message (same webhook-id, same body): a
 * new round of attempts and retries, due now. The endpoint and the delivery as they
 * were are read first, to say why when nothing happened.
 */
export function redeliverStatements(db: Db, org: Org, id: string, deliveryId: string, now = Date.now()) {
  const d = webhookDeliveries;
  const enabled = sql`EXISTS (SELECT 1 FROM ${webhookEndpoints} WHERE ${own(org, id)} AND NOT ${webhookEndpoints.disabled})`;
  const mine = and(eq(d.id, deliveryId), eq(d.endpoint_id, id), eq(d.org_id, org));
  return [
    endpointQuery(db, org, id),
    db.select().from(d).where(mine),
    db
      .update(d)
      .set({ status: 'pending', round_start: sql`${d.attempts}`, next_attempt_at: now, last_error: null })
      .where(and(mine, sql`${d.status} <> 'pending'`, enabled))
      .returning(),
    db.select().from(webhookAttempts).where(eq(webhookAttempts.delivery_id, deliveryId)),
  ] as const;
}

/** What redeliverStatements() did: the delivery, now pending; or why not (404, 409). */
export function redelivered([endpoint, before, after, attempts]: readonly [EndpointRow[], DeliveryRow[], DeliveryRow[], AttemptRow[]]): DeliveryRow & { record: z.infer<typeof WebhookDeliveryRecord> } {
  if (!endpoint[0]) throw notFound('Webhook endpoint');
  if (!before[0]) throw notFound('Delivery');
  if (endpoint[0].disabled) throw new ApiError(409, `The endpoint is disabled (${endpoint[0].disabled_reason ?? 'no reason recorded'}): enable it with PATCH {"disabled": false} first`);
  if (!after[0]) throw new ApiError(409, `Delivery ${before[0].id} is still being sent (status pending); redeliver it once it is delivered or failed`);
  return { ...after[0], record: deliveryRecord(after[0], attempts) };
}

/** Records a webhook.test delivery for the endpoint, its payload rendered now (sent when the endpoint is enabled). */
export function testStatements(db: Db, org: Org, id: string, now = Date.now()) {
  const d = webhookDeliveries;
  const e = webhookEndpoints;
  const deliveryId = `msg_${crypto.randomUUID().replaceAll('-', '')}`;
  const at = new Date(now).toISOString();
  const payload = renderPayload(TEST_EVENT, at, { endpoint_id: id, message: TEST_EVENT_MESSAGE });
  return [
    endpointQuery(db, org, id),
    db
      .insert(d)
      .select(
        // Every column of webhook_deliveries, in order.
        sql`SELECT ${deliveryId}, ${e.org_id}, ${e.id}, ${TEST_EVENT}, 'test', ${e.id}, ${at}, ${payload}, 'pending', 0, 0, ${now}, NULL FROM ${e} WHERE ${own(org, id)} AND NOT ${e.disabled}`,
      )
      .returning(),
  ] as const;
}

/** What testStatements() did: the delivery to send; or why not (404, 409). */
export function tested([endpoint, inserted]: readonly [EndpointRow[], DeliveryRow[]]): DeliveryRow {
  if (!endpoint[0]) throw notFound('Webhook endpoint');
  if (!inserted[0]) throw new ApiError(409, `The endpoint is disabled (${endpoint[0].disabled_reason ?? 'no reason recorded'}): enable it with PATCH {"disabled": false} first`);
  return inserted[0];
}
