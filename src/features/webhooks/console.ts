// /console/v1/orgs/{org_id}/webhooks: the organization's webhook endpoints and their
// deliveries, as /v1/webhooks has them (the same operations, data.ts, run here as the
// member's batch). Members read; owners and admins change, test and redeliver. Changes
// go to the audit log.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import type { Context } from 'hono';
import { batchByName } from '../../db/batch.ts';
import { enqueueAfterResponse, refOf } from '../../jobs/webhooks.ts';
import { jsonBody } from '../../lib/body.ts';
import { BODY_CAPS, MAX_JSON_BODY_BYTES } from '../../lib/limits.ts';
import { sealSecret } from '../../lib/sealing.ts';
import { asMember, type ConsoleEnv } from '../../middleware/console-auth.ts';
import { door, json } from '../../middleware/door.ts';
import { validationHook } from '../../lib/errors.ts';
import { CONSOLE_SECURITY, consoleErrors, MessageResponse, OrgParams, pageOf, PaginationQuery, Uuid } from '../../lib/schemas.ts';
import { memberActor } from '../accounts/audit.ts';
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
import { WEBHOOKS_DESCRIPTION } from './docs.ts';
import {
  CreateWebhookBody,
  DeliveryParams,
  DeliveryQuery,
  UpdateWebhookBody,
  WebhookDeliveryRecord,
  WebhookEndpointRecord,
  WebhookEndpointWithSecret,
} from './schemas.ts';
import { newWebhookSecret } from './secrets.ts';

export const consoleWebhooksApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

const TAGS = ['console webhooks'];
const EndpointParams = OrgParams.extend({ webhook_id: Uuid('webhook_id') });
const ConsoleDeliveryParams = OrgParams.extend(DeliveryParams.shape);

/** The signed-in user, as the audit log and disabled_reason name them. */
const actor = memberActor;

/** Runs a read's statements as one batch in the member's organization (its session is checked already). */
const inMemberBatch =
  (c: Context<ConsoleEnv>): InOrg =>
  (build) =>
    batchByName(c.get('db'), build(c.get('db'), c.get('membership').orgId));

/**
 * Runs a change's statements as one batch in the organization as the member stands in it
 * when they run (asMember): a member removed or demoted meanwhile changes nothing (409).
 */
const inMemberWrite =
  (c: Context<ConsoleEnv>): InOrg =>
  (build) =>
    asMember(c, (org) => batchByName(c.get('db'), build(c.get('db'), org)));

/** A new signing secret for endpoint `id`, and its sealed form. */
const newSecret = async (c: Context<ConsoleEnv>, id: string) => {
  const secret = newWebhookSecret();
  return { secret, sealed: await sealSecret(c.env.WEBHOOK_ENCRYPTION_KEY, id, secret) };
};

consoleWebhooksApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgWebhooks',
    description: "A page of the organization's webhook endpoints; their signing secrets are never shown again after creation or rotation.",
    path: '/orgs/{org_id}/webhooks',
    middleware: [door.console('records.read')],
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'List webhook endpoints, newest first (never their secrets)',
    request: { params: OrgParams, query: PaginationQuery },
    responses: {
      200: {
        description: 'A page of endpoints',
        content: { 'application/json': { schema: pageOf(WebhookEndpointRecord, 'ConsoleWebhookEndpointPage') } },
      },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const { page, page_size } = c.req.valid('query');
    return c.json(await listEndpoints(inMemberBatch(c), page, page_size), 200);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'createOrgWebhook',
    path: '/orgs/{org_id}/webhooks',
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'Register a webhook endpoint (owners and admins); its signing secret is in this answer only',
    description: WEBHOOKS_DESCRIPTION,
    middleware: [door.console('webhooks.manage', { body: json(BODY_CAPS.small) }), jsonBody(MAX_JSON_BODY_BYTES)],
    request: { params: OrgParams, body: { required: true, content: { 'application/json': { schema: CreateWebhookBody } } } },
    responses: {
      201: { description: 'Created', content: { 'application/json': { schema: WebhookEndpointWithSecret } } },
      ...consoleErrors(403, 404, 409, 422),
    },
  }),
  async (c) => {
    const body = c.req.valid('json');
    checkWebhookUrl(c.env, body.url);
    const id = crypto.randomUUID();
    const { secret, sealed } = await newSecret(c, id);
    const endpoint = await createEndpoint(inMemberWrite(c), actor(c), c.get('user').email, {
      id,
      url: body.url,
      events: body.events,
      description: body.description,
      sealedSecret: sealed,
    });
    return c.json({ ...endpoint, secret }, 201);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgWebhook',
    description: "The endpoint's URL, events, description and state; `disabled_reason` says why one was disabled.",
    path: '/orgs/{org_id}/webhooks/{webhook_id}',
    middleware: [door.console('records.read')],
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'Get a webhook endpoint (never its secret)',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'The endpoint', content: { 'application/json': { schema: WebhookEndpointRecord } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    return c.json(await getEndpoint(inMemberBatch(c), c.req.valid('param').webhook_id), 200);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'patch',
    operationId: 'updateOrgWebhook',
    description:
      'Any of `url`, `events` (null: every event), `description` and `disabled`; fields left out keep their values. Owners and admins only.',
    path: '/orgs/{org_id}/webhooks/{webhook_id}',
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'Change a webhook endpoint; enable or disable it (owners and admins)',
    middleware: [door.console('webhooks.manage', { body: json(BODY_CAPS.small) }), jsonBody(MAX_JSON_BODY_BYTES)],
    request: { params: EndpointParams, body: { required: true, content: { 'application/json': { schema: UpdateWebhookBody } } } },
    responses: {
      200: { description: 'The endpoint as it now is', content: { 'application/json': { schema: WebhookEndpointRecord } } },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    const patch = c.req.valid('json');
    if (patch.url !== undefined) checkWebhookUrl(c.env, patch.url);
    return c.json(await updateEndpoint(inMemberWrite(c), actor(c), c.req.valid('param').webhook_id, patch), 200);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'deleteOrgWebhook',
    description: 'The endpoint stops receiving events at once, and its pending deliveries are not sent. Owners and admins only.',
    path: '/orgs/{org_id}/webhooks/{webhook_id}',
    middleware: [door.console('webhooks.manage')],
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'Delete a webhook endpoint (owners and admins)',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'Deleted', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    await deleteEndpoint(inMemberWrite(c), actor(c), c.req.valid('param').webhook_id);
    return c.json({ message: 'Webhook endpoint deleted' }, 200);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'rotateOrgWebhookSecret',
    description:
      'The new secret is in this answer only; for 24 hours deliveries are signed with both, so a receiver can switch without losing events.',
    path: '/orgs/{org_id}/webhooks/{webhook_id}/rotate-secret',
    middleware: [door.console('webhooks.manage')],
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'Replace the signing secret (owners and admins); the previous one signs too for 24 hours',
    request: { params: EndpointParams },
    responses: {
      200: { description: 'The endpoint with its new secret', content: { 'application/json': { schema: WebhookEndpointWithSecret } } },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').webhook_id;
    const { secret, sealed } = await newSecret(c, id);
    return c.json({ ...(await rotateSecret(inMemberWrite(c), actor(c), id, sealed)), secret }, 200);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgWebhookDeliveries',
    description: "Each delivery's event, state and attempts with their status codes, newest first.",
    path: '/orgs/{org_id}/webhooks/{webhook_id}/deliveries',
    middleware: [door.console('records.read')],
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'The endpoint’s deliveries, newest first, with their attempts',
    request: { params: EndpointParams, query: PaginationQuery.extend(DeliveryQuery.shape) },
    responses: {
      200: {
        description: 'A page of deliveries',
        content: { 'application/json': { schema: pageOf(WebhookDeliveryRecord, 'ConsoleWebhookDeliveryPage') } },
      },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const { page, page_size, status } = c.req.valid('query');
    return c.json(await listDeliveries(inMemberBatch(c), c.req.valid('param').webhook_id, status, page, page_size), 200);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'redeliverOrgWebhookDelivery',
    description: 'The same webhook-id and body again, with a new round of retries. A delivery still pending is 409.',
    path: '/orgs/{org_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/redeliver',
    middleware: [door.console('webhooks.manage', { rate: 'console-sends' })],
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'Send a delivered or failed delivery again (owners and admins)',
    request: { params: ConsoleDeliveryParams },
    responses: {
      202: { description: 'Pending again', content: { 'application/json': { schema: WebhookDeliveryRecord } } },
      ...consoleErrors(403, 404, 409, 422),
    },
  }),
  async (c) => {
    const { webhook_id, delivery_id } = c.req.valid('param');
    const delivery = await redeliver(inMemberWrite(c), webhook_id, delivery_id);
    enqueueAfterResponse(c, [refOf(delivery)]);
    return c.json(delivery.record, 202);
  },
);

consoleWebhooksApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'testOrgWebhook',
    description:
      'Queues a `webhook.test` event for the endpoint now and answers its delivery, whose attempts show how the receiver answered.',
    path: '/orgs/{org_id}/webhooks/{webhook_id}/test',
    middleware: [door.console('webhooks.manage', { rate: 'console-sends' })],
    tags: TAGS,
    security: CONSOLE_SECURITY,
    summary: 'Send a webhook.test event to the endpoint now (owners and admins)',
    request: { params: EndpointParams },
    responses: {
      202: { description: 'Queued', content: { 'application/json': { schema: WebhookDeliveryRecord } } },
      ...consoleErrors(403, 404, 409, 422),
    },
  }),
  async (c) => {
    const delivery = await recordTestEvent(inMemberWrite(c), c.req.valid('param').webhook_id);
    enqueueAfterResponse(c, [refOf(delivery)]);
    return c.json(deliveryRecord(delivery, []), 202);
  },
);
