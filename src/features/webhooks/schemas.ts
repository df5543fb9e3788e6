// Webhook endpoints, deliveries and attempts as callers read them, and the request
// bodies and path parameters that name and change them: zod schemas for validation and
// the OpenAPI document, shared by /v1/webhooks and the console's webhook routes (data.ts
// builds the records). Free of Worker APIs, so the console's browser client
// (src/console/client) can take its types from here.
import { z } from '@hono/zod-openapi';
import { WEBHOOK_DELIVERY_STATUSES, WEBHOOK_EVENTS } from '../../db/enums.ts';
import { MAX_WEBHOOK_DESCRIPTION, MAX_WEBHOOK_URL_LENGTH } from '../../lib/limits.ts';
import { safeName, Uuid } from '../../lib/schemas.ts';

const ts = z.string().openapi({ format: 'date-time', example: '2026-11-21T10:00:00.000Z' });

export const WebhookEventName = z.enum(WEBHOOK_EVENTS).openapi('WebhookEvent', { description: 'An event an endpoint can subscribe to' });

export const WebhookEndpointRecord = z
  .object({
    id: z.string(),
    url: z.string(),
    description: z.string(),
    events: z
      .array(WebhookEventName)
      .nullable()
      .openapi({ description: 'The events sent to this endpoint; null = every event, including ones added later' }),
    created_at: ts,
    created_by: z.string(),
    updated_at: ts.nullable(),
    disabled: z.boolean(),
    disabled_at: ts.nullable(),
    disabled_reason: z.string().nullable().openapi({
      description:
        'Why and when it was disabled (automatically after failing for a day or 20 failed deliveries in a row, or by whom); PATCH {"disabled": false} enables it again',
    }),
    previous_secret_valid_until: ts
      .nullable()
      .openapi({ description: 'After a rotation, deliveries carry a second signature with the previous secret until then' }),
  })
  .openapi('WebhookEndpoint');

export const WebhookEndpointWithSecret = WebhookEndpointRecord.extend({
  secret: z.string().openapi({
    description: 'The signing secret, `whsec_` + base64: shown only here (and on rotation). Keep it.',
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
  }),
}).openapi('WebhookEndpointWithSecret');

export const WebhookAttemptRecord = z
  .object({
    attempt: z.number().int().openapi({ description: '1, 2, ... over the delivery’s life' }),
    attempted_at: ts,
    status_code: z.number().int().nullable().openapi({ description: 'The HTTP status the receiver answered; null when none came' }),
    error: z.string().nullable().openapi({
      description:
        'Why the attempt failed (a non-2xx status, a redirect, a timeout, a connection error, a refused URL); null when it succeeded',
    }),
    latency_ms: z.number().int(),
    response_excerpt: z.string().openapi({ description: 'The first bytes of the response body (at most 512 bytes of UTF-8)' }),
  })
  .openapi('WebhookAttempt');

export const WebhookDeliveryRecord = z
  .object({
    id: z.string().openapi({
      description: 'The webhook-id header: the same on every attempt and redelivery; deduplicate on it',
      example: 'msg_2f1c9b7e0d4a4e6f8a1b2c3d4e5f6a7b',
    }),
    endpoint_id: z.string(),
    type: z.string().openapi({ description: 'The event type (webhook.test for test events)' }),
    subject_id: z
      .string()
      .openapi({ description: 'The program, proof, execution or verification the event is about (the endpoint, for webhook.test)' }),
    status: z.enum(WEBHOOK_DELIVERY_STATUSES).openapi({
      description: 'pending (being sent or retried), delivered (a 2xx), failed (every retry spent, or not sent: error says why)',
    }),
    created_at: ts.openapi({ description: 'When the event happened: the payload’s timestamp' }),
    next_attempt_at: ts.nullable().openapi({ description: 'When the next attempt is due, while pending' }),
    error: z
      .string()
      .nullable()
      .openapi({ description: 'Why it ended without an attempt (endpoint disabled or deleted); attempts say the rest' }),
    payload: z.unknown().openapi({ description: 'The JSON body sent, as sent on every attempt; null before the first attempt' }),
    attempts: z.array(WebhookAttemptRecord),
  })
  .openapi('WebhookDelivery');

export const CreateWebhookBody = z
  .object({
    url: z.string().max(MAX_WEBHOOK_URL_LENGTH).openapi({
      description: 'https URL of a public host (local development: also http://127.0.0.1 and localhost)',
      example: 'https://example.com/hooks/proving',
    }),
    events: z
      .array(WebhookEventName)
      .min(1)
      .optional()
      .openapi({ description: 'Events to send; omit for every event, including ones added later' }),
    description: safeName(z.string().max(MAX_WEBHOOK_DESCRIPTION)).optional(),
  })
  .openapi('CreateWebhook');

export const UpdateWebhookBody = z
  .object({
    url: z.string().max(MAX_WEBHOOK_URL_LENGTH).optional(),
    events: z.array(WebhookEventName).min(1).nullable().optional().openapi({ description: 'null: every event' }),
    description: safeName(z.string().max(MAX_WEBHOOK_DESCRIPTION)).optional(),
    disabled: z
      .boolean()
      .optional()
      .openapi({ description: 'false enables a disabled endpoint again (its failure counts start over); true disables it' }),
  })
  .openapi('UpdateWebhook');

export const DeliveryQuery = z.object({
  status: z.enum(WEBHOOK_DELIVERY_STATUSES).optional().openapi({ description: 'Only deliveries in this status' }),
});

/** A delivery's id, also its `webhook-id` header. */
export const DELIVERY_ID = /^msg_[0-9a-f]{32}$/;

export const EndpointParams = z.object({ webhook_id: Uuid('webhook_id') });
export const DeliveryParams = EndpointParams.extend({
  delivery_id: z
    .string()
    .regex(DELIVERY_ID, 'a delivery id is msg_ and 32 hex digits')
    .openapi({ param: { name: 'delivery_id', in: 'path' }, example: 'msg_2f1c9b7e0d4a4e6f8a1b2c3d4e5f6a7b' }),
});
