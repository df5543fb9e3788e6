// /v1/webhooks: endpoints that receive signed events (Standard Webhooks) when programs,
// proofs, executions and verifications finish, and their deliveries (docs/callers.md
// "Webhooks"). The operations are shared with the console (data.ts); here they run in
// the API key's first batch (asCaller): a read is one round trip, a change one batch on
// the primary that re-checks the key.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { Context } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { enqueueAfterResponse, refOf } from '../../jobs/webhooks.ts';
import { asCaller, authenticate, keyCreatedBy } from '../../middleware/auth.ts';
import { keyActor, keyColumn } from '../accounts/audit.ts';
import { idempotent, sealAnswer } from '../../middleware/idempotency/index.ts';
import { jsonBody } from '../../lib/body.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { BODY_CAPS, MAX_JSON_BODY_BYTES } from '../../lib/limits.ts';
import { sealSecret } from '../../lib/sealing.ts';
import { errorResponses, IdempotencyHeaders, MessageResponse, PaginationQuery, pageOf } from '../../lib/schemas.ts';
import { door, json } from '../../middleware/door.ts';
import {
  checkWebhookUrl,
  createEndpoint,
  deleteEndpoint,
  deliveryRecord,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  recordTestEvent,
  redeliver,
  rotateSecret,
  updateEndpoint,
  type InOrg,
} from './data.ts';
import { TAGS, WEBHOOKS_DESCRIPTION } from './docs.ts';
import {
  CreateWebhookBody,
  DeliveryParams,
  DeliveryQuery,
  EndpointParams,
  UpdateWebhookBody,
  WebhookDeliveryRecord,
  WebhookEndpointRecord,
  WebhookEndpointWithSecret,
} from './schemas.ts';
import { newWebhookSecret } from './secrets.ts';

export const webhooksApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** Runs an operation's statements in the API key's first batch (asCaller), answered by name. */
const inKeyBatch =
  (c: Context<AppEnv>): InOrg =>
  (build, fresh) =>
    asCaller(c, (org) => build(c.get('db'), org), fresh);

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

webhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'createWebhook',
    path: '/',
    tags: TAGS,
    summary: 'Register a webhook endpoint; its signing secret is in this answer only (and in its replays: Idempotency-Key)',
    description: WEBHOOKS_DESCRIPTION,
    middleware: [
      door.apiKey('webhooks.manage', { rate: 'submissions', body: json(BODY_CAPS.small) }),
      idempotent,
      jsonBody(MAX_JSON_BODY_BYTES),
    ],
    request: { headers: IdempotencyHeaders, body: { required: true, content: { 'application/json': { schema: CreateWebhookBody } } } },
    responses: {
      201: { description: 'Created', content: { 'application/json': { schema: WebhookEndpointWithSecret } } },
      ...errorResponses(409, 413, 422),
      503: {
        description: 'Webhooks are not configured on this deployment',
        content: { 'application/json': { schema: z.object({ detail: z.string() }) } },
      },
    },
  }),
  async (c) => {
    const body = c.req.valid('json');
    sealAnswer(c); // a replay shows the secret again: stored encrypted, never in the clear
    checkWebhookUrl(c.env, body.url);
    const id = crypto.randomUUID();
    const { secret, sealed } = await sealedNewSecret(c, id);
    const createdBy = keyColumn(c.get('apiKeyHash'), keyCreatedBy);
    const endpoint = await createEndpoint(inKeyBatch(c), keyActor(c), createdBy, {
      id,
      url: body.url,
      events: body.events,
      description: body.description,
      sealedSecret: sealed,
    });
    return c.json({ ...endpoint, secret }, 201);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listWebhooks',
    description:
      "A page of the organization's webhook endpoints: URL, events, state (enabled or disabled, and why) and description. Their signing secrets are never shown again after creation or rotation.",
    path: '/',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: TAGS,
    summary: 'List webhook endpoints, newest first (never their secrets)',
    request: { query: PaginationQuery },
    responses: {
      200: {
        description: 'A page of endpoints',
        content: { 'application/json': { schema: pageOf(WebhookEndpointRecord, 'WebhookEndpointPage') } },
      },
      ...errorResponses(422),
    },
  }),
  async (c) => {
    const { page, page_size } = c.req.valid('query');
    return c.json(await listEndpoints(inKeyBatch(c), page, page_size), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getWebhook',
    description:
      "The endpoint's URL, events, description and state; `disabled_reason` says why one was disabled (by a person, or after failing deliveries).",
    path: '/{webhook_id}',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: TAGS,
    summary: 'Get a webhook endpoint (never its secret); disabled_reason says why one was disabled',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'The endpoint', content: { 'application/json': { schema: WebhookEndpointRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    return c.json(await getEndpoint(inKeyBatch(c), c.req.valid('param').webhook_id), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'patch',
    operationId: 'updateWebhook',
    description:
      'A JSON body with any of `url`, `events` (null: every event), `description` and `disabled`; fields left out keep their values. `disabled: false` enables an endpoint again, its failure counts started over.',
    path: '/{webhook_id}',
    tags: TAGS,
    summary: 'Change a webhook endpoint’s URL, events or description; enable (or disable) it',
    middleware: [door.apiKey('webhooks.manage', { rate: 'submissions', body: json(BODY_CAPS.small) }), jsonBody(MAX_JSON_BODY_BYTES)],
    request: { params: EndpointParams, body: { required: true, content: { 'application/json': { schema: UpdateWebhookBody } } } },
    responses: {
      200: { description: 'The endpoint as it now is', content: { 'application/json': { schema: WebhookEndpointRecord } } },
      ...errorResponses(404, 413, 422),
    },
  }),
  async (c) => {
    const patch = c.req.valid('json');
    if (patch.url !== undefined) checkWebhookUrl(c.env, patch.url);
    return c.json(await updateEndpoint(inKeyBatch(c), keyActor(c), c.req.valid('param').webhook_id, patch), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'deleteWebhook',
    description: 'The endpoint stops receiving events at once, and its pending deliveries are not sent.',
    path: '/{webhook_id}',
    middleware: [door.apiKey('webhooks.manage', { rate: 'submissions' })],
    tags: TAGS,
    summary: 'Delete a webhook endpoint; its pending deliveries are not sent',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'Deleted', content: { 'application/json': { schema: MessageResponse } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    await deleteEndpoint(inKeyBatch(c), keyActor(c), c.req.valid('param').webhook_id);
    return c.json({ message: 'Webhook endpoint deleted' }, 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'rotateWebhookSecret',
    path: '/{webhook_id}/rotate-secret',
    middleware: [door.apiKey('webhooks.manage', { rate: 'submissions' })],
    tags: TAGS,
    summary: 'Replace the signing secret; the new one is in this answer only',
    description:
      'For 24 hours after a rotation every delivery carries two signatures, under the new secret and the previous one (Standard Webhooks receivers accept either), so a receiver can switch without losing events.',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'The endpoint with its new secret', content: { 'application/json': { schema: WebhookEndpointWithSecret } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const { secret, sealed } = await sealedNewSecret(c, id);
    return c.json({ ...(await rotateSecret(inKeyBatch(c), keyActor(c), id, sealed)), secret }, 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listWebhookDeliveries',
    description:
      "Each delivery's event, state (pending, delivered, failed) and attempts with their status codes. Delivered ones are kept 3 days, failed ones 30.",
    path: '/{webhook_id}/deliveries',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: TAGS,
    summary: 'The endpoint’s deliveries, newest first, each with its attempts (delivered ones kept 3 days, failed ones 30)',
    request: { params: EndpointParams, query: PaginationQuery.extend(DeliveryQuery.shape) },
    responses: {
      200: {
        description: 'A page of deliveries',
        content: { 'application/json': { schema: pageOf(WebhookDeliveryRecord, 'WebhookDeliveryPage') } },
      },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { page, page_size, status } = c.req.valid('query');
    return c.json(await listDeliveries(inKeyBatch(c), c.req.valid('param').webhook_id, status, page, page_size), 200);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'redeliverWebhookDelivery',
    description:
      'Sends the same webhook-id and body again, with a new round of retries: for a receiver that lost or refused it. A delivery still pending is 409.',
    path: '/{webhook_id}/deliveries/{delivery_id}/redeliver',
    middleware: [door.apiKey('webhooks.manage', { rate: 'submissions' })],
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
    const delivery = await redeliver(inKeyBatch(c), webhook_id, delivery_id);
    enqueueAfterResponse(c, [refOf(delivery)]);
    return c.json(delivery.record, 202);
  },
);

webhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'testWebhook',
    path: '/{webhook_id}/test',
    middleware: [door.apiKey('webhooks.manage', { rate: 'submissions' })],
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
    const delivery = await recordTestEvent(inKeyBatch(c), c.req.valid('param').webhook_id);
    enqueueAfterResponse(c, [refOf(delivery)]);
    return c.json(deliveryRecord(delivery, []), 202);
  },
);
