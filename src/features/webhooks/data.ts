// Webhook endpoints and their deliveries as callers see and change them: the records
// built from D1 rows (their schemas: schemas.ts), the D1 statements of each operation
// (a record of named statements, for one batch), and the operations themselves, shared
// by /v1/webhooks (api.ts, which runs them in the API key's first batch) and the
// console's /console/v1/orgs/{org_id}/webhooks (console.ts): a route says how its batch
// runs (InOrg) and answers what the operation returns. Every statement is scoped to the
// caller's organization (`org`: its id, or SQL naming the API key's): another
// organization's endpoint is not found, like one that does not exist. Changes are
// recorded in the audit log by a statement of the same batch that reads the endpoint
// row it changed, so a change that found nothing records nothing.
import type { z } from '@hono/zod-openapi';
import { and, desc, eq, inArray, sql, type SQL } from 'drizzle-orm';
import type { SQLiteUpdateSetSource } from 'drizzle-orm/sqlite-core';
import { ulid } from 'ulid';
import type { BatchResults, Statement } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { auditLog, nowIso, WEBHOOK_EVENTS, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../../db/schema.ts';
import type { Env } from '../../env.ts';
import type { AuditAction } from '../accounts/audit.ts';
import { ApiError, isRefusedInsert, notFound, ValidationError } from '../../lib/errors.ts';
import { cappedCount, inPage, pageAnswer, pageQuery } from '../../lib/pages.ts';
import type { UpdateWebhookBody, WebhookDeliveryRecord, WebhookEndpointRecord } from './schemas.ts';
import { PREVIOUS_SECRET_GRACE_MS } from './secrets.ts';
import { urlPolicy, webhookUrlProblem } from './url-policy.ts';

/** The body of a webhook: `{type, timestamp, data}`, data being the record as GET returns it (delivery.ts sends it). */
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
export const TEST_EVENT_MESSAGE =
  'A test event, sent because it was asked for (POST /v1/webhooks/{id}/test). Its signature verifies with the endpoint’s secret like every other event’s.';

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
    previous_secret_valid_until:
      e.previous_secret && (e.previous_secret_expires_at ?? 0) > now ? new Date(e.previous_secret_expires_at!).toISOString() : null,
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
      .map((a) => ({
        attempt: a.attempt,
        attempted_at: a.attempted_at,
        status_code: a.status_code,
        error: a.error,
        latency_ms: a.latency_ms,
        response_excerpt: a.response_excerpt,
      })),
  };
}

/** 422 at body.url unless this deployment may send to `url` (url-policy.ts). */
export function checkWebhookUrl(env: Env, url: string): void {
  const problem = webhookUrlProblem(url, urlPolicy(env));
  if (problem) throw new ValidationError([{ loc: ['body', 'url'], msg: `Value error, ${problem}`, type: 'value_error' }]);
}

/** Subscribed events as stored: null for all, else the distinct names in the canonical order. */
const storedEvents = (events: readonly string[] | null | undefined) => (events ? WEBHOOK_EVENTS.filter((e) => events.includes(e)) : null);

// ---------------------------------------------------------------------------
// Statements, each operation's as a record of named statements for one batch. `Actor`
// is who the audit log names: a console user, or an API key.

export interface Actor {
  userId: string | SQL<string | null> | null;
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

const endpointQuery = (db: Db, org: Org, id: string) => db.select().from(webhookEndpoints).where(own(org, id));

/** A page of the organization's endpoints, newest first, and how many it has (at most MAX_WEBHOOK_ENDPOINTS). */
function endpointPageStatements(db: Db, org: Org, page: number, pageSize: number) {
  const where = eq(webhookEndpoints.org_id, org);
  const rows = db.select().from(webhookEndpoints).where(where).orderBy(desc(webhookEndpoints.created_at), desc(webhookEndpoints.id));
  return pageQuery(db, rows.$dynamic(), db.$count(webhookEndpoints, where), page, pageSize);
}

export interface NewEndpoint {
  id: string;
  url: string;
  events?: readonly string[];
  description?: string;
  /** The secret, sealed for `id` (src/lib/sealing.ts). */
  sealedSecret: string;
}

/**
 * Creates an endpoint: the insert (refused as a whole, isRefusedInsert, when the
 * organization already has MAX_WEBHOOK_ENDPOINTS or, through a dead key, is none), its
 * audit entry, and the row as stored.
 */
function createStatements(db: Db, org: Org, actor: Actor, createdBy: string | SQL<string>, e: NewEndpoint) {
  const room = sql`(SELECT count(*) FROM ${webhookEndpoints} WHERE ${webhookEndpoints.org_id} = ${org}) < ${MAX_WEBHOOK_ENDPOINTS}`;
  return {
    insert: db.insert(webhookEndpoints).values({
      id: e.id,
      org_id: sql`CASE WHEN ${room} THEN ${org} END`,
      url: e.url,
      events: storedEvents(e.events),
      description: e.description ?? '',
      secret: e.sealedSecret,
      created_by: createdBy,
    }),
    audit: audit(db, org, actor, 'webhook.create', e.id, { url: e.url, events: e.events ?? null }),
    endpoint: endpointQuery(db, org, e.id),
  };
}

const tooManyEndpoints = () =>
  new ApiError(
    409,
    `Your organization has ${MAX_WEBHOOK_ENDPOINTS} webhook endpoints, the most it may have: delete one first (one endpoint can subscribe to every event)`,
  );

export type EndpointPatch = z.infer<typeof UpdateWebhookBody>;

/** Changes an endpoint (its audit entry names what changed), then reads it back; only reads it when the patch changes nothing. */
function updateStatements(db: Db, org: Org, actor: Actor, id: string, patch: EndpointPatch, now = Date.now()) {
  const e = webhookEndpoints;
  const at = new Date(now).toISOString();
  const set: SQLiteUpdateSetSource<typeof webhookEndpoints> = {};
  if (patch.url !== undefined) set.url = patch.url;
  if (patch.events !== undefined) set.events = storedEvents(patch.events);
  if (patch.description !== undefined) set.description = patch.description;
  if (patch.disabled === false)
    Object.assign(set, { disabled: false, disabled_at: null, disabled_reason: null, failed_deliveries: 0, failing_since: null });
  if (patch.disabled === true)
    Object.assign(set, {
      disabled: true,
      // Already disabled: it keeps why and since when.
      disabled_at: sql`CASE WHEN ${e.disabled} THEN ${e.disabled_at} ELSE ${at} END`,
      disabled_reason: sql`CASE WHEN ${e.disabled} THEN ${e.disabled_reason} ELSE ${'Disabled by '} || ${actor.name} || ${` at ${at}`} END`,
    });
  const changes = Object.keys(set).length > 0;
  return {
    update: changes
      ? db
          .update(e)
          .set({ ...set, updated_at: at })
          .where(own(org, id))
      : undefined,
    audit: changes ? audit(db, org, actor, 'webhook.update', id, patch) : undefined,
    endpoint: endpointQuery(db, org, id),
  };
}

/**
 * Deletes an endpoint: its audit entry, its pending deliveries ended (`failed`: the
 * endpoint was deleted; finished ones stay until the retention sweep), then the row.
 */
function deleteStatements(db: Db, org: Org, actor: Actor, id: string) {
  const d = webhookDeliveries;
  return {
    audit: audit(db, org, actor, 'webhook.delete', id, {}),
    pendingEnded: db
      .update(d)
      .set({ status: 'failed', last_error: 'Not sent: the endpoint was deleted' })
      .where(and(eq(d.endpoint_id, id), eq(d.org_id, org), eq(d.status, 'pending'))),
    deleted: db.delete(webhookEndpoints).where(own(org, id)).returning({ id: webhookEndpoints.id }),
  };
}

/** Replaces the signing secret; the previous one signs too for PREVIOUS_SECRET_GRACE_MS. */
function rotateStatements(db: Db, org: Org, actor: Actor, id: string, sealedSecret: string, now = Date.now()) {
  const e = webhookEndpoints;
  return {
    rotate: db
      .update(e)
      .set({
        previous_secret: sql`${e.secret}`,
        previous_secret_expires_at: now + PREVIOUS_SECRET_GRACE_MS,
        secret: sealedSecret,
        updated_at: new Date(now).toISOString(),
      })
      .where(own(org, id)),
    audit: audit(db, org, actor, 'webhook.rotate_secret', id, {}),
    endpoint: endpointQuery(db, org, id),
  };
}

/** The endpoint, a page of its deliveries (newest first) with their attempts, and how many match (capped). */
function deliveryPageStatements(db: Db, org: Org, id: string, status: DeliveryRow['status'] | undefined, page: number, pageSize: number) {
  const d = webhookDeliveries;
  const where = and(eq(d.endpoint_id, id), eq(d.org_id, org), status ? eq(d.status, status) : undefined);
  const newestFirst = [desc(d.created_at), desc(d.id)];
  const { rows, total } = pageQuery(
    db,
    db
      .select()
      .from(d)
      .where(where)
      .orderBy(...newestFirst)
      .$dynamic(),
    cappedCount(
      db
        .select({ one: sql`1` })
        .from(d)
        .where(where),
    ),
    page,
    pageSize,
  );
  const pageIds = inPage(
    db
      .select({ id: d.id })
      .from(d)
      .where(where)
      .orderBy(...newestFirst)
      .$dynamic(),
    page,
    pageSize,
  );
  return {
    endpoint: endpointQuery(db, org, id),
    rows,
    attempts: db.select().from(webhookAttempts).where(inArray(webhookAttempts.delivery_id, pageIds)),
    total,
  };
}

/**
 * Sends a finished delivery again, as the same message (same webhook-id, same body): a
 * new round of attempts and retries, due now. The endpoint and the delivery as they
 * were are read first, to say why when nothing happened.
 */
function redeliverStatements(db: Db, org: Org, id: string, deliveryId: string, now = Date.now()) {
  const d = webhookDeliveries;
  const enabled = sql`EXISTS (SELECT 1 FROM ${webhookEndpoints} WHERE ${own(org, id)} AND NOT ${webhookEndpoints.disabled})`;
  const mine = and(eq(d.id, deliveryId), eq(d.endpoint_id, id), eq(d.org_id, org));
  return {
    endpoint: endpointQuery(db, org, id),
    before: db.select().from(d).where(mine),
    after: db
      .update(d)
      .set({ status: 'pending', round_start: sql`${d.attempts}`, next_attempt_at: now, last_error: null })
      .where(and(mine, sql`${d.status} <> 'pending'`, enabled))
      .returning(),
    attempts: db.select().from(webhookAttempts).where(eq(webhookAttempts.delivery_id, deliveryId)),
  };
}

/** Records a webhook.test delivery for the endpoint, its payload rendered now (sent when the endpoint is enabled). */
function testStatements(db: Db, org: Org, id: string, now = Date.now()) {
  const d = webhookDeliveries;
  const e = webhookEndpoints;
  const deliveryId = `msg_${crypto.randomUUID().replaceAll('-', '')}`;
  const at = new Date(now).toISOString();
  const payload = renderPayload(TEST_EVENT, at, { endpoint_id: id, message: TEST_EVENT_MESSAGE });
  return {
    endpoint: endpointQuery(db, org, id),
    inserted: db
      .insert(d)
      .select(
        // Every column of webhook_deliveries, in order.
        sql`SELECT ${deliveryId}, ${e.org_id}, ${e.id}, ${TEST_EVENT}, 'test', ${e.id}, ${at}, ${payload}, 'pending', 0, 0, ${now}, NULL FROM ${e} WHERE ${own(org, id)} AND NOT ${e.disabled}`,
      )
      .returning(),
  };
}

// ---------------------------------------------------------------------------
// Operations: each runs its statements as one batch in the caller's organization and
// answers the record (or says why not: 404, 409).

/**
 * How a route runs a record of statements for the caller's organization, as one batch
 * answering by name: /v1 in the API key's first batch (api.ts), the console as the
 * member's batch (console.ts). `fresh` says whether an answer read from a replica will
 * do (else it is read again on the primary); a runner that reads the primary ignores it.
 * A statement left undefined (a step the request does not need) is not run and reads
 * as undefined.
 */
export type InOrg = <T extends Record<string, Statement | undefined>>(
  build: (db: Db, org: Org) => T,
  fresh?: (results: BatchResults<T>) => boolean,
) => Promise<BatchResults<T>>;

const endpointNotFound = () => notFound('Webhook endpoint');
const disabledEndpoint = (e: EndpointRow) =>
  new ApiError(
    409,
    `The endpoint is disabled (${e.disabled_reason ?? 'no reason recorded'}): enable it with PATCH {"disabled": false} first`,
  );

export async function listEndpoints(inOrg: InOrg, page: number, pageSize: number) {
  const { rows, total } = await inOrg((db, org) => endpointPageStatements(db, org, page, pageSize));
  return pageAnswer({ rows, total }, (r) => endpointRecord(r), page, pageSize);
}

/** A new endpoint; 409 when the organization has MAX_WEBHOOK_ENDPOINTS already. */
export async function createEndpoint(inOrg: InOrg, actor: Actor, createdBy: string | SQL<string>, e: NewEndpoint) {
  try {
    const { endpoint } = await inOrg((db, org) => createStatements(db, org, actor, createdBy, e));
    return endpointRecord(endpoint[0]);
  } catch (err) {
    if (!isRefusedInsert(err, 'webhook_endpoints')) throw err;
    // An insert with no organization: through an API key, the key may have died (401
    // first; an empty batch checks it); else the organization is full.
    await inOrg(() => ({}));
    throw tooManyEndpoints();
  }
}

export async function getEndpoint(inOrg: InOrg, id: string) {
  const { endpoint } = await inOrg(
    (db, org) => ({ endpoint: endpointQuery(db, org, id) }),
    (read) => read.endpoint.length > 0,
  );
  if (!endpoint[0]) throw endpointNotFound();
  return endpointRecord(endpoint[0]);
}

export async function updateEndpoint(inOrg: InOrg, actor: Actor, id: string, patch: EndpointPatch) {
  const { endpoint } = await inOrg(
    (db, org) => updateStatements(db, org, actor, id, patch),
    (read) => read.endpoint.length > 0,
  );
  if (!endpoint[0]) throw endpointNotFound();
  return endpointRecord(endpoint[0]);
}

export async function deleteEndpoint(inOrg: InOrg, actor: Actor, id: string): Promise<void> {
  const { deleted } = await inOrg((db, org) => deleteStatements(db, org, actor, id));
  if (!deleted[0]) throw endpointNotFound();
}

/** The endpoint after its secret was replaced by `sealedSecret`. */
export async function rotateSecret(inOrg: InOrg, actor: Actor, id: string, sealedSecret: string) {
  const { endpoint } = await inOrg((db, org) => rotateStatements(db, org, actor, id, sealedSecret));
  if (!endpoint[0]) throw endpointNotFound();
  return endpointRecord(endpoint[0]);
}

export async function listDeliveries(inOrg: InOrg, id: string, status: DeliveryRow['status'] | undefined, page: number, pageSize: number) {
  const { endpoint, rows, attempts, total } = await inOrg(
    (db, org) => deliveryPageStatements(db, org, id, status, page, pageSize),
    (read) => read.endpoint.length > 0,
  );
  if (!endpoint[0]) throw endpointNotFound();
  return pageAnswer({ rows, total }, (r) => deliveryRecord(r, attempts), page, pageSize);
}

/** The delivery, pending again (to send: refOf), with its record; or why not (404, 409). */
export async function redeliver(
  inOrg: InOrg,
  id: string,
  deliveryId: string,
): Promise<DeliveryRow & { record: z.infer<typeof WebhookDeliveryRecord> }> {
  const { endpoint, before, after, attempts } = await inOrg((db, org) => redeliverStatements(db, org, id, deliveryId));
  if (!endpoint[0]) throw endpointNotFound();
  if (!before[0]) throw notFound('Delivery');
  if (endpoint[0].disabled) throw disabledEndpoint(endpoint[0]);
  if (!after[0])
    throw new ApiError(409, `Delivery ${before[0].id} is still being sent (status pending); redeliver it once it is delivered or failed`);
  return { ...after[0], record: deliveryRecord(after[0], attempts) };
}

/** The webhook.test delivery recorded for the endpoint (to send: refOf); or why not (404, 409). */
export async function recordTestEvent(inOrg: InOrg, id: string): Promise<DeliveryRow> {
  const { endpoint, inserted } = await inOrg((db, org) => testStatements(db, org, id));
  if (!endpoint[0]) throw endpointNotFound();
  if (!inserted[0]) throw disabledEndpoint(endpoint[0]);
  return inserted[0];
}
