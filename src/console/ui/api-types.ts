// The /console/v1 records as TypeScript types, inferred from the server's own zod
// schemas. Type-only imports: the browser bundle gets the types, never the schemas.
import type { z } from '@hono/zod-openapi';
import type * as consoleRecords from '../../lib/console-records.ts';
import type * as programs from '../../features/programs/schemas.ts';
import type * as projects from '../../features/projects/schemas.ts';
import type * as records from '../../lib/records.ts';
import type * as schemas from '../../lib/schemas.ts';
import type * as webhooks from '../../lib/webhook-schemas.ts';

export type Pagination = z.infer<typeof schemas.Pagination>;
/** A paged list (`pageOf` on the server). */
export interface Page<T> {
  items: T[];
  pagination: Pagination;
}
/** An unpaged list. */
export interface List<T> {
  items: T[];
}
export type Message = z.infer<typeof schemas.MessageResponse>;
/** A refusal: a reason, or the fields a 422 found wrong. */
export type ErrorBody = z.infer<typeof schemas.ErrorResponse> | z.infer<typeof schemas.ValidationErrorResponse>;

export type ConsoleUser = z.infer<typeof consoleRecords.UserRecord>;
export type Token = z.infer<typeof consoleRecords.TokenResponse>;
export type PasswordSet = z.infer<typeof consoleRecords.PasswordSet>;
export type InviteSummary = z.infer<typeof consoleRecords.InviteSummary>;
export type InviteAccepted = z.infer<typeof consoleRecords.InviteAccepted>;
export type Me = z.infer<typeof consoleRecords.MeResponse>;
export type Organization = z.infer<typeof consoleRecords.OrgMembership>;
export type Role = Organization['role'];

export type ProjectRecord = z.infer<typeof projects.ProjectRecord>;
export type ProgramRecord = z.infer<typeof programs.ProgramRecord>;
export type ProgramDetail = z.infer<typeof programs.ProgramDetail>;
export type ExecutionRecord = z.infer<typeof records.ExecutionRecord>;
export type ConsoleProof = z.infer<typeof consoleRecords.ConsoleProof>;
export type ProofDetail = z.infer<typeof consoleRecords.ProofDetail>;
export type CancelAnswer = z.infer<typeof consoleRecords.CancelAnswer>;

export type ApiKey = z.infer<typeof consoleRecords.ApiKeyRecord>;
export type CreatedApiKey = z.infer<typeof consoleRecords.CreatedApiKey>;
export type Member = z.infer<typeof consoleRecords.Member>;
export type Invite = z.infer<typeof consoleRecords.Invite>;
export type CreatedInvite = z.infer<typeof consoleRecords.CreatedInvite>;
export type AuditEntry = z.infer<typeof consoleRecords.AuditEntry>;
export type OutboxMessage = z.infer<typeof consoleRecords.OutboxMessage>;

export type Usage = z.infer<typeof consoleRecords.UsageResponse>;
export type UsageTotals = Usage['totals'];
export type Fleet = z.infer<typeof consoleRecords.FleetResponse>;

export type WebhookEndpoint = z.infer<typeof webhooks.WebhookEndpointRecord>;
export type WebhookEndpointWithSecret = z.infer<typeof webhooks.WebhookEndpointWithSecret>;
export type WebhookDelivery = z.infer<typeof webhooks.WebhookDeliveryRecord>;
export type WebhookAttempt = z.infer<typeof webhooks.WebhookAttemptRecord>;
export type CreateWebhook = z.input<typeof webhooks.CreateWebhookBody>;
export type UpdateWebhook = z.input<typeof webhooks.UpdateWebhookBody>;
