// /v1/webhooks: endpoints that receive signed events (Standard Webhooks) when programs,
// proofs, executions and verifications finish, and their deliveries (README
// "Webhooks"). The operations' statements are shared with the console
// (src/lib/webhook-endpoints.ts); here they run in the API key's first batch (asCaller):
// a read is one round trip, a change one batch on the primary that re-checks the key.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { sql, type SQL } from 'drizzle-orm';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { apiKeys, WEBHOOK_EVENTS } from '../db/schema.ts';
import { enqueueAfterResponse, refOf, RETRY_DELAYS_SECONDS } from '../jobs/webhooks.ts';
import { asCaller, authenticate } from '../middleware/auth.ts';
import { idempotent, sealAnswer } from '../middleware/idempotency.ts';
import { jsonBody } from '../lib/body.ts';
import { ApiError, isRefusedInsert, notFound, validationHook } from '../lib/errors.ts';
import { MAX_JSON_BODY_BYTES } from '../lib/limits.ts';
import { ExecutionRecord, ProofRecord, VerificationRecord } from '../lib/records.ts';
import { ProgramRecord } from '../features/programs/schemas.ts';
import { errorResponses, IdempotencyHeaders, MessageResponse, PaginationQuery, pageOf, Uuid } from '../lib/schemas.ts';
import {
  checkWebhookUrl,
  createStatements,
  DELIVERY_ID,
  deliveryPage,
  deliveryRecord,
  deliveryPageStatements,
  deleteStatements,
  endpointPage,
  endpointPageStatements,
  endpointQuery,
  endpointRecord,
  MAX_WEBHOOK_ENDPOINTS,
  redelivered,
  redeliverStatements,
  rotateStatements,
  TEST_EVENT,
  tested,
  testStatements,
  tooManyEndpoints,
  updateStatements,
  type Actor,
} from '../lib/webhook-endpoints.ts';
import { CreateWebhookBody, DeliveryQuery, UpdateWebhookBody, WebhookDeliveryRecord, WebhookEndpointRecord, WebhookEndpointWithSecret } from '../lib/webhook-schemas.ts';
import { newWebhookSecret, sealSecret } from '../lib/webhook-secrets.ts';
import { permit } from '../middleware/permit.ts';

export const webhooksApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

const TAGS = ['webhooks'];
export const EndpointParams = z.object({ webhook_id: Uuid('webhook_id') });
export const DeliveryParams = EndpointParams.extend({
  delivery_id: z
    .string()
    .regex(DELIVERY_ID, 'a delivery id is msg_ and 32 hex digits')
    .openapi({ param: { name: 'delivery_id', in: 'path' }, example: 'msg_2f1c9b7e0d4a4e6f8a1b2c3d4e5f6a7b' }),
});

/** The API key's column, as SQL, for statements batched with its lookup. */
const keyColumn = (hash: string, column: SQL) => sql<string>`(SELECT ${column} FROM ${apiKeys} WHERE ${apiKeys.key_hash} = ${hash} AND ${apiKeys.revoked_at} IS NULL)`;
/** Who the audit log names for a change made with the request's API key. */
const keyActor = (c: Context<AppEnv>): Actor => ({
  userId: null,
  name: keyColumn(c.var.apiKeyHash, sql`'API key ' || coalesce(${apiKeys.prefix} || '…', ${apiKeys.id}) || ' (' || ${apiKeys.owner} || ')'`),
});

/**
 * A sealed new secret for endpoint `id`. A deployment without WEBHOOK_ENCRYPTION_KEY
 * answers 503, but to a valid key only (401 comes first).
 */
async function sealedNewSecret(c: Context<AppEnv>, id: string) {
  const secret = newWebhookSecret();
  try {
    return { secret, sealed: await sealSecret(c.env.WEBHOOK_ENCRYPTION_KEY, id, secret) };
  } catch (err) {
    if (err instanceof ApiError) await authenticate(c);
    throw err;
  }
}

export const WEBHOOKS_DESCRIPTION = `Events are POSTed as JSON \`{"type", "timestamp", "data"}\` (data: the record as GET returns it) with the Standard Webhooks headers \`webhook-id\` (the same on every retry: deduplicate on it), \`webhook-timestamp\` (unix seconds) and \`webhook-signature\` (\`v1,\` + base64 HMAC-SHA256 of \`id.timestamp.body\` under the base64-decoded secret). A 2xx answer within 10 s delivers; anything else is retried after ${RETRY_DELAYS_SECONDS.map((s) => (s < 60 ? `${s} s` : s < 3600 ? `${s / 60} min` : `${s / 3600} h`)).join(', ')}, then the delivery fails. Only https URLs of public hosts. At most ${MAX_WEBHOOK_ENDPOINTS} endpoints per organization.`;

const endpointNotFound = () => notFound('Webhook endpoint');

webhooksApi.openapi(
  createRoute({
    method: 'post',
    path: '/',
    tags: TAGS,
    summary: 'Register a webhook endpoint; its signing secret is in this answer only (and in its replays: Idempotency-Key)',
    description: WEBHOOKS_DESCRIPTION,
    middleware: [permit('webhooks.manage'), idempotent, jsonBody(MAX_JSON_BODY_BYTES)],
    request: { headers: IdempotencyHeaders, body: { required: true, content: { 'application/json': { schema: CreateWebhookBody } } } },
    responses: {
      201: { description: 'Created', content: { 'application/json': { schema: WebhookEndpointWithSecret } } },
      ...errorResponses(409, 413, 422),
      503: { description: 'Webhooks are not configured on this deployment', content: { 'application/json': { schema: z.object({ detail: z.string() }) } } },
    },
  }),
  async (c) => {
    const body = c.req.valid('json');
    sealAnswer(c); // a replay shows the secret again: stored encrypted, never in the clear
    checkWebhookUrl(c.env, body.url);
    const id = crypto.randomUUID();
    const { secret, sealed } = await sealedNewSecret(c, id);
    const hash = c.var.apiKeyHash;
    try {
      const [, , rows] = await asCaller(c, (org) =>
        createStatements(c.var.db, org, keyActor(c), keyColumn(hash, sql`${apiKeys.owner}`), { id, url: body.url, events: body.events, description: body.description, sealedSecret: sealed }),
      );
      return c.json({ ...endpointRecord(rows[0]!), secret }, 201);
    } catch (err) {
      if (!isRefusedInsert(err, 'webhook_endpoints')) throw err;
      await asCaller(c, () => []); // 401 if the key is dead; else the organization is full
      throw tooManyEndpoints();
    }
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'get',
    path: '/',
    middleware: [permit('records.read')],
    tags: TAGS,
    summary: 'List webhook endpoints, newest first (never their secrets)',
    request: { query: PaginationQuery },
    responses: {
      200: { description: 'A page of endpoints', content: { 'application/json': { schema: pageOf(WebhookEndpointRecord, 'WebhookEndpointPage') } } },
      ...errorResponses(422),
    },
  }),
  async (c) => {
    const { page, page_size } = c.req.valid('query');
    return c.json(endpointPage(await asCaller(c, (org) => endpointPageStatements(c.var.db, org, page, page_size)), page, page_size), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'get',
    path: '/{webhook_id}',
    middleware: [permit('records.read')],
    tags: TAGS,
    summary: 'Get a webhook endpoint (never its secret); disabled_reason says why one was disabled',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'The endpoint', content: { 'application/json': { schema: WebhookEndpointRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const [rows] = await asCaller(c, (org) => [endpointQuery(c.var.db, org, id)], ([e]) => e.length > 0);
    if (!rows[0]) throw endpointNotFound();
    return c.json(endpointRecord(rows[0]), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'patch',
    path: '/{webhook_id}',
    tags: TAGS,
    summary: 'Change a webhook endpoint’s URL, events or description; enable (or disable) it',
    middleware: [permit('webhooks.manage'), jsonBody(MAX_JSON_BODY_BYTES)],
    request: { params: EndpointParams, body: { required: true, content: { 'application/json': { schema: UpdateWebhookBody } } } },
    responses: {
      200: { description: 'The endpoint as it now is', content: { 'application/json': { schema: WebhookEndpointRecord } } },
      ...errorResponses(404, 413, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const patch = c.req.valid('json');
    if (patch.url !== undefined) checkWebhookUrl(c.env, patch.url);
    const results = await asCaller(
      c,
      (org) => updateStatements(c.var.db, org, keyActor(c), id, patch),
      (r) => (r[r.length - 1] as unknown[]).length > 0,
    );
    const row = (results[results.length - 1] as Parameters<typeof endpointRecord>[0][])[0];
    if (!row) throw endpointNotFound();
    return c.json(endpointRecord(row), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'delete',
    path: '/{webhook_id}',
    middleware: [permit('webhooks.manage')],
    tags: TAGS,
    summary: 'Delete a webhook endpoint; its pending deliveries are not sent',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'Deleted', content: { 'application/json': { schema: MessageResponse } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const [, , deleted] = await asCaller(c, (org) => deleteStatements(c.var.db, org, keyActor(c), id));
    if (!deleted[0]) throw endpointNotFound();
    return c.json({ message: 'Webhook endpoint deleted' }, 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'post',
    path: '/{webhook_id}/rotate-secret',
    middleware: [permit('webhooks.manage')],
    tags: TAGS,
    summary: 'Replace the signing secret; the new one is in this answer only',
    description: 'For 24 hours after a rotation every delivery carries two signatures, under the new secret and the previous one (Standard Webhooks receivers accept either), so a receiver can switch without losing events.',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'The endpoint with its new secret', content: { 'application/json': { schema: WebhookEndpointWithSecret } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const { secret, sealed } = await sealedNewSecret(c, id);
    const [, , rows] = await asCaller(c, (org) => rotateStatements(c.var.db, org, keyActor(c), id, sealed));
    if (!rows[0]) throw endpointNotFound();
    return c.json({ ...endpointRecord(rows[0]), secret }, 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'get',
    path: '/{webhook_id}/deliveries',
    middleware: [permit('records.read')],
    tags: TAGS,
    summary: 'The endpoint’s deliveries, newest first, each with its attempts (kept 30 days)',
    request: { params: EndpointParams, query: PaginationQuery.extend(DeliveryQuery.shape) },
    responses: {
      200: { description: 'A page of deliveries', content: { 'application/json': { schema: pageOf(WebhookDeliveryRecord, 'WebhookDeliveryPage') } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const { page, page_size, status } = c.req.valid('query');
    const rows = await asCaller(c, (org) => deliveryPageStatements(c.var.db, org, id, status, page, page_size), ([e]) => e.length > 0);
    return c.json(deliveryPage(rows, page, page_size), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'post',
    path: '/{webhook_id}/deliveries/{delivery_id}/redeliver',
    middleware: [permit('webhooks.manage')],
    tags: TAGS,
    summary: 'Send a delivered or failed delivery again: the same webhook-id and body, a new round of retries',
    request: { params: DeliveryParams },
    responses: {
      202: { description: 'Queued: the delivery is pending again', content: { 'application/json': { schema: WebhookDeliveryRecord } } },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const { webhook_id, delivery_id } = c.req.valid('param');
    const delivery = redelivered(await asCaller(c, (org) => redeliverStatements(c.var.db, org, webhook_id, delivery_id)));
    enqueueAfterResponse(c, [refOf(delivery)]);
    return c.json(delivery.record, 202);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'post',
    path: '/{webhook_id}/test',
    middleware: [permit('webhooks.manage')],
    tags: TAGS,
    summary: 'Send a webhook.test event to the endpoint now',
    description:
      'The body is `{"type": "webhook.test", "timestamp": <now>, "data": {"endpoint_id": <the endpoint>, "message": <text>}}`, signed and retried like every event; follow it in GET …/deliveries. A disabled endpoint answers 409.',
    request: { params: EndpointParams },
    responses: {
      202: { description: 'Queued', content: { 'application/json': { schema: WebhookDeliveryRecord } } },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const delivery = tested(await asCaller(c, (org) => testStatements(c.var.db, org, id)));
    enqueueAfterResponse(c, [refOf(delivery)]);
    return c.json(deliveryRecord(delivery, []), 202);
  },
);

// ---------------------------------------------------------------------------
// The events themselves, in the OpenAPI document's `webhooks` (what /docs shows as
// "Webhooks"): what a receiver gets for each.

const EVENT_RECORDS = {
  program: ProgramRecord,
  proof: ProofRecord,
  execution: ExecutionRecord,
  verification: VerificationRecord,
} as const;

const EVENT_TEXT: Record<(typeof WEBHOOK_EVENTS)[number], string> = {
  'program.ready': 'A program’s commit job finished: it can be proven (status ready).',
  'program.failed': 'A program’s commit job failed (status failed, error_message says why).',
  'proof.succeeded': 'A proof job succeeded: its proof files can be downloaded.',
  'proof.failed': 'A proof job failed (error_message says why).',
  'proof.canceled': 'A proof job was canceled (at once while queued, or once its prover stopped).',
  'execution.succeeded': 'An execution finished with its public values and cycle counts.',
  'execution.failed': 'An execution failed, or was canceled (the record says Failed either way).',
  'verification.verified': 'A submitted proof verified.',
  'verification.failed': 'A submitted proof did not verify (error_message says why).',
};

const WebhookHeaders = z.object({
  'webhook-id': z.string().openapi({ description: 'The delivery id: the same on every attempt and redelivery. Deduplicate on it.', example: 'msg_2f1c9b7e0d4a4e6f8a1b2c3d4e5f6a7b' }),
  'webhook-timestamp': z.string().openapi({ description: 'When this attempt was signed, in unix seconds. Reject old ones (the Standard Webhooks libraries allow 5 minutes).', example: '1795500000' }),
  'webhook-signature': z.string().openapi({
    description: '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed by the base64-decoded part of the secret after `whsec_`; space-separated when two secrets sign (after a rotation).',
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  }),
});

/** Registers every event (and webhook.test) under the document's `webhooks`. */
export function documentWebhookEvents(registry: OpenAPIHono<AppEnv>['openAPIRegistry']) {
  const event = (type: string, data: z.ZodTypeAny, name: string) =>
    z.object({ type: z.literal(type), timestamp: z.string().openapi({ format: 'date-time', description: 'When the event happened' }), data }).openapi(name);
  const receive = (type: string, summary: string, body: z.ZodTypeAny) =>
    registry.registerWebhook({
      method: 'post',
      path: type,
      tags: TAGS,
      summary,
      description: `${summary} Sent to every enabled endpoint subscribed to \`${type}\`. ${WEBHOOKS_DESCRIPTION}`,
      request: { headers: WebhookHeaders, body: { content: { 'application/json': { schema: body } } } },
      responses: { 200: { description: 'Any 2xx answer within 10 s acknowledges the event; anything else is retried' } },
    });
  for (const type of WEBHOOK_EVENTS) {
    const kind = type.split('.')[0] as keyof typeof EVENT_RECORDS;
    const name = `${type.replace(/(^|\.)(\w)/g, (_m, _d, ch: string) => ch.toUpperCase())}Event`;
    receive(type, EVENT_TEXT[type], event(type, EVENT_RECORDS[kind], name));
  }
  receive(
    TEST_EVENT,
    'A test event, sent by POST /v1/webhooks/{webhook_id}/test (never by subscription).',
    event(TEST_EVENT, z.object({ endpoint_id: z.string(), message: z.string() }), 'WebhookTestEvent'),
  );
}
