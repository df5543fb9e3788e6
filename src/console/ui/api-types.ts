// The /console/v1 records as TypeScript types, inferred from the server's own zod
// schemas. Type-only imports: the browser bundle gets the types, never the schemas.
import type { z } from '@hono/zod-openapi';
import type * as accounts from '../../features/accounts/schemas.ts';
import type * as fleet from '../../features/fleet/schemas.ts';
import type * as programs from '../../features/programs/schemas.ts';
import type * as proofs from '../../features/proofs/schemas.ts';
import type * as projects from '../../features/projects/schemas.ts';
import type * as executions from '../../features/executions/schemas.ts';
import type * as schemas from '../../lib/schemas.ts';
import type * as webhooks from '../../features/webhooks/schemas.ts';
import type * as budgets from '../../features/budgets/schemas.ts';
import type * as estimates from '../../features/estimates/schemas.ts';
import type * as limits from '../../features/limits/schemas.ts';

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

export type ConsoleUser = z.infer<typeof accounts.UserRecord>;
export type Token = z.infer<typeof accounts.TokenResponse>;
export type PasswordSet = z.infer<typeof accounts.PasswordSet>;
export type InviteSummary = z.infer<typeof accounts.InviteSummary>;
export type InviteAccepted = z.infer<typeof accounts.InviteAccepted>;
export type Me = z.infer<typeof accounts.MeResponse>;
export type Organization = z.infer<typeof accounts.OrgMembership>;
export type ConsoleSession = z.infer<typeof accounts.ConsoleSession>;
export type Role = Organization['role'];

export type ProjectRecord = z.infer<typeof projects.ProjectRecord>;
export type ProgramRecord = z.infer<typeof programs.ProgramRecord>;
export type ProgramDetail = z.infer<typeof programs.ProgramDetail>;
export type ExecutionRecord = z.infer<typeof executions.ExecutionRecord>;
export type ConsoleExecution = z.infer<typeof executions.ConsoleExecution>;
export type ConsoleProof = z.infer<typeof proofs.ConsoleProof>;
export type ProofDetail = z.infer<typeof proofs.ProofDetail>;
export type CancelAnswer = z.infer<typeof proofs.CancelAnswer>;

export type ApiKey = z.infer<typeof accounts.ApiKeyRecord>;
export type CreatedApiKey = z.infer<typeof accounts.CreatedApiKey>;
export type Member = z.infer<typeof accounts.Member>;
export type Invite = z.infer<typeof accounts.Invite>;
export type CreatedInvite = z.infer<typeof accounts.CreatedInvite>;
export type AuditEntry = z.infer<typeof accounts.AuditEntry>;
export type OutboxMessage = z.infer<typeof accounts.OutboxMessage>;

export type Usage = z.infer<typeof accounts.UsageResponse>;
export type UsageTotals = Usage['totals'];
export type Fleet = z.infer<typeof fleet.FleetResponse>;
export type Budget = z.infer<typeof budgets.BudgetRecord>;
export type BudgetBody = z.input<typeof budgets.BudgetBody>;
export type OrgLimits = z.infer<typeof limits.OrgLimitsRecord>;
export type OrgLimitsBody = z.input<typeof limits.OrgLimitsBody>;
export type ProvingEstimate = z.infer<typeof estimates.ProvingEstimate>;
export type ProgramEstimate = z.infer<typeof estimates.ProgramEstimate>;

export type WebhookEndpoint = z.infer<typeof webhooks.WebhookEndpointRecord>;
export type WebhookEndpointWithSecret = z.infer<typeof webhooks.WebhookEndpointWithSecret>;
export type WebhookDelivery = z.infer<typeof webhooks.WebhookDeliveryRecord>;
export type WebhookAttempt = z.infer<typeof webhooks.WebhookAttemptRecord>;
export type CreateWebhook = z.input<typeof webhooks.CreateWebhookBody>;
export type UpdateWebhook = z.input<typeof webhooks.UpdateWebhookBody>;
