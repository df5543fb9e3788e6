// The records /console/v1 answers with, beside the public API's (records.ts) and the
// webhooks' (webhook-schemas.ts): zod schemas for the OpenAPI document, one place for
// the route modules (src/routes/console) and for the console's browser client, which
// takes its types from here (src/console/ui/api-types.ts). Free of Worker APIs for that
// reason: schemas only, no statements.
import { z } from '@hono/zod-openapi';
import { KEY_SCOPE_NAMES } from '../db/enums.ts';
import { RoleSchema } from './console-schemas.ts';
import { ProofRecord } from './records.ts';
import { MessageResponse } from './schemas.ts';

// ---------------------------------------------------------------------------
// Signing in, invitations, the signed-in user

export const UserRecord = z
  .object({ id: z.string(), email: z.string(), name: z.string(), is_operator: z.boolean() })
  .openapi('ConsoleUser');

export const TokenResponse = z
  .object({ access_token: z.string(), token_type: z.literal('Bearer'), expires_in: z.number().int(), user: UserRecord })
  .openapi('ConsoleToken', { description: 'The access token; the refresh token is set as an HttpOnly cookie.' });

export const PasswordSet = z.object({ email: z.string() });

export const InviteSummary = z.object({ email: z.string(), org_name: z.string(), role: z.string(), has_account: z.boolean() });

export const InviteAccepted = z.object({ email: z.string(), org_id: z.string() });

export const OrgMembership = z.object({ id: z.string(), name: z.string(), role: RoleSchema }).openapi('ConsoleOrganization');

export const MeResponse = UserRecord.extend({ organizations: z.array(OrgMembership) });

// ---------------------------------------------------------------------------
// Proofs (the public record with the names a page shows)

export const ConsoleProof = ProofRecord.extend({ program_name: z.string(), project_id: z.string(), project_name: z.string() }).openapi('ConsoleProof');

export const ProofDetail = ConsoleProof.extend({
  job: z
    .object({
      status: z.enum(['queued', 'leased', 'done']),
      attempt: z.number().int(),
      waiting_reason: z.string().nullable(),
      log_bytes: z.number().int(),
      cancel_requested: z.boolean(),
    })
    .nullable(),
  files: z.array(z.string()).openapi({ description: 'Proof kinds ready to download' }),
}).openapi('ConsoleProofDetail');

export const CancelAnswer = MessageResponse.extend({ state: z.string() });

// ---------------------------------------------------------------------------
// API keys, members, invitations, audit log

export const ApiKeyRecord = z
  .object({
    id: z.string(),
    name: z.string().openapi({ description: 'The owner label, shown as created_by on what the key makes' }),
    prefix: z.string().nullable(),
    owner_user_id: z.string().nullable(),
    scope: z.enum(KEY_SCOPE_NAMES).openapi({ description: 'What the key may do at most: full, prove or read; never more than its creator’s current role' }),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .openapi('ConsoleApiKey');

export const CreatedApiKey = ApiKeyRecord.extend({ key: z.string().openapi({ description: 'Shown once' }) });

export const Member = z
  .object({ user_id: z.string(), email: z.string(), name: z.string(), role: RoleSchema, joined_at: z.string() })
  .openapi('ConsoleMember');

export const Invite = z
  .object({ id: z.string(), email: z.string(), role: RoleSchema, created_by: z.string(), created_at: z.string(), expires_at: z.string() })
  .openapi('ConsoleInvite');

/** An invitation just made: its link went by email to `sent_to`, and is never in an answer. */
export const CreatedInvite = Invite.extend({ sent_to: z.string() });

export const AuditEntry = z
  .object({ id: z.string(), created_at: z.string(), actor: z.string(), action: z.string(), target: z.string(), detail: z.record(z.string(), z.unknown()) })
  .openapi('ConsoleAuditEntry');

// ---------------------------------------------------------------------------
// Usage and the fleet

const UsageTotals = z.object({
  proofs: z.number().int(),
  instructions: z.number().int(),
  gpu_hours: z.number(),
  cost: z.number().int().openapi({ description: 'micro-USD' }),
});

export const UsageResponse = z
  .object({
    from: z.string(),
    to: z.string(),
    totals: UsageTotals,
    days: z.array(UsageTotals.extend({ date: z.string() })),
    projects: z.array(UsageTotals.extend({ project_id: z.string(), project_name: z.string() })),
  })
  .openapi('ConsoleUsage');

export const FleetResponse = z
  .object({
    agents: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        machine_type: z.string(),
        gpus: z.number().int(),
        engines: z.array(z.string()),
        configs: z.array(z.string()),
        last_seen_at: z.string(),
        stale: z.boolean(),
      }),
    ),
    queued: z.array(z.object({ engine: z.string(), config_id: z.string(), jobs: z.number().int(), oldest_queued_at: z.string(), oldest_age_seconds: z.number().int() })),
    /** Live agent tokens and what each lets its agents claim (configs null: every config of its engines). */
    tokens: z.array(z.object({ id: z.string(), name: z.string(), engines: z.array(z.string()), configs: z.array(z.string()).nullable(), created_at: z.string() })),
    running: z.number().int(),
  })
  .openapi('ConsoleFleet');

// ---------------------------------------------------------------------------
// The local mail outbox (MAIL_SENDER = "outbox" only)

export const OutboxMessage = z.object({ id: z.string(), to: z.string(), subject: z.string(), text: z.string(), link: z.string().nullable(), created_at: z.string() });
