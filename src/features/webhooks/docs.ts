// What a receiver of webhooks is told: the delivery contract every webhook route
// describes (WEBHOOKS_DESCRIPTION), and the events themselves, in the OpenAPI
// document's `webhooks` (what /docs shows as "Webhooks"): what a receiver gets for each.
import { z, type OpenAPIHono } from '@hono/zod-openapi';
import type { AppEnv } from '../../app-env.ts';
import { WEBHOOK_EVENTS } from '../../db/schema.ts';
import { ProgramRecord } from '../programs/schemas.ts';
import { ExecutionRecord } from '../executions/schemas.ts';
import { ProofRecord } from '../proofs/schemas.ts';
import { VerificationRecord } from '../verifications/schemas.ts';
import { BudgetThresholdData } from '../budgets/schemas.ts';
import { MAX_WEBHOOK_ENDPOINTS, TEST_EVENT } from './data.ts';
import { RETRY_DELAYS_SECONDS } from './delivery.ts';

/** The OpenAPI tag of /v1/webhooks and of the events. */
export const TAGS = ['webhooks'];

export const WEBHOOKS_DESCRIPTION = `Events are POSTed as JSON \`{"type", "timestamp", "data"}\` (data: the record as GET returns it) with the Standard Webhooks headers \`webhook-id\` (the same on every retry: deduplicate on it), \`webhook-timestamp\` (unix seconds) and \`webhook-signature\` (\`v1,\` + base64 HMAC-SHA256 of \`id.timestamp.body\` under the base64-decoded secret). A 2xx answer within 10 s delivers; anything else is retried after ${RETRY_DELAYS_SECONDS.map((s) => (s < 60 ? `${s} s` : s < 3600 ? `${s / 60} min` : `${s / 3600} h`)).join(', ')}, then the delivery fails. Only https URLs of public hosts. At most ${MAX_WEBHOOK_ENDPOINTS} endpoints per organization.`;

const EVENT_RECORDS = {
  program: ProgramRecord,
  proof: ProofRecord,
  execution: ExecutionRecord,
  verification: VerificationRecord,
  budget: BudgetThresholdData,
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
  'budget.threshold':
    'The organization’s spend (or GPU time) this calendar month (UTC) reached 50, 80 or 100 % of its monthly budget; sent once per threshold, month and limit. At 100 % new proofs and executions are refused (docs/teams.md "Budgets").',
  'proof.unservable':
    'A queued proof that no online prover agent could take for UNSERVABLE_EVENT_SECONDS (10 minutes by default); once per proof. Its waiting_reason says why; it stays queued (until its deadline, if it has one).',
  'execution.unservable':
    'A queued execution that no online prover agent could take for UNSERVABLE_EVENT_SECONDS (10 minutes by default); once per execution. Its waiting_reason says why; it stays queued (until its deadline, if it has one).',
};

const WebhookHeaders = z.object({
  'webhook-id': z.string().openapi({
    description: 'The delivery id: the same on every attempt and redelivery. Deduplicate on it.',
    example: 'msg_2f1c9b7e0d4a4e6f8a1b2c3d4e5f6a7b',
  }),
  'webhook-timestamp': z.string().openapi({
    description: 'When this attempt was signed, in unix seconds. Reject old ones (the Standard Webhooks libraries allow 5 minutes).',
    example: '1795500000',
  }),
  'webhook-signature': z.string().openapi({
    description:
      '`v1,` + base64 HMAC-SHA256 of `{webhook-id}.{webhook-timestamp}.{body}` keyed by the base64-decoded part of the secret after `whsec_`; space-separated when two secrets sign (after a rotation).',
    example: 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=',
  }),
});

/** Registers every event (and webhook.test) under the document's `webhooks`. */
export function documentWebhookEvents(registry: OpenAPIHono<AppEnv>['openAPIRegistry']) {
  const event = (type: string, data: z.ZodTypeAny, name: string) =>
    z
      .object({
        type: z.literal(type),
        timestamp: z.string().openapi({ format: 'date-time', description: 'When the event happened' }),
        data,
      })
      .openapi(name);
  const receive = (type: string, summary: string, body: z.ZodTypeAny) =>
    registry.registerWebhook({
      method: 'post',
      // `proof.succeeded` → `proofSucceededEvent`: what a receiver's generated handler is named.
      operationId: `${type.replace(/\.(\w)/g, (_m, ch: string) => ch.toUpperCase())}Event`,
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
