// The records the accounts' /console/v1 routes answer (the signed-in user, their
// organizations, members, invitations, API keys, the audit log, usage, the local
// outbox) and the bodies and parameters they take: zod schemas for the OpenAPI
// document, one place for the route modules (./console) and for the console's browser
// client, which takes its types from here (src/console/ui/api-types.ts). Free of Worker
// APIs for that reason: schemas only, no statements.
import { z } from '@hono/zod-openapi';
import { DEFAULT_KEY_SCOPE } from '../../auth/permissions.ts';
import { KEY_SCOPE_NAMES, ROLES } from '../../db/enums.ts';
import { MAX_API_KEY_NAME_LENGTH, MAX_PASSWORD_LENGTH, MIN_PASSWORD_LENGTH } from '../../lib/limits.ts';
import { OrgParams, safeName } from '../../lib/schemas.ts';

/** The header the console's client sends on cookie-authenticated calls (/auth); a cross-site form cannot. */
export const CSRF_HEADER = 'X-Console-CSRF';

export const RoleSchema = z.enum(ROLES).openapi({
  description:
    'owner: everything, including owners; admin: members, invitations, webhooks and every key; member: projects, proofs and their own keys; viewer: reads only (README "Roles")',
});

export const Email = z
  .string()
  .trim()
  .toLowerCase()
  .max(254)
  .regex(/^[^\s@]+@[^\s@]+$/, 'Value error, not an email address');

// ---------------------------------------------------------------------------
// Signing in, invitations, the signed-in user

export const UserRecord = z
  .object({ id: z.string(), email: z.string(), name: z.string(), is_operator: z.boolean() })
  .openapi('ConsoleUser');

export const TokenResponse = z
  .object({ access_token: z.string(), token_type: z.literal('Bearer'), expires_in: z.number().int(), user: UserRecord })
  .openapi('ConsoleToken', { description: 'The access token; the refresh token is set as an HttpOnly cookie.' });

export const PasswordSet = z.object({
  email: z.string(),
  api_keys_revoked: z.number().int().openapi({ description: 'API keys of the account revoked with it (a reset that asked to)' }),
});

export const InviteSummary = z.object({ email: z.string(), org_name: z.string(), role: z.string(), has_account: z.boolean() });

export const InviteAccepted = z.object({ email: z.string(), org_id: z.string() });

export const OrgMembership = z.object({ id: z.string(), name: z.string(), role: RoleSchema }).openapi('ConsoleOrganization');

export const MeResponse = UserRecord.extend({ organizations: z.array(OrgMembership) });

const Password = z.string().min(MIN_PASSWORD_LENGTH).max(MAX_PASSWORD_LENGTH);

export const SigninBody = z.object({ email: Email, password: z.string().min(1).max(MAX_PASSWORD_LENGTH) }).openapi('SigninRequest');

/** A one-time link's token (it travels in a body, never in a URL the server sees). */
const Token = z.string().min(1).max(200);

/** A password set with a link; a reset also revokes, by default, every API key the person made. */
export const PasswordWithLink = z
  .object({
    token: Token,
    password: Password,
    revoke_api_keys: z.boolean().default(true).openapi({
      description:
        'Also revoke every API key the account made, in every organization (default true: keys made by whoever had the account cannot be told from one’s own, while an integration whose key was revoked fails loudly and gets a new one). An account setting its first password has none.',
    }),
  })
  .openapi('PasswordWithLink');

export const PasswordResetRequest = z.object({ email: Email }).openapi('PasswordResetRequest');

export const InviteToken = z.object({ token: Token });

export const AcceptInviteRequest = z
  .object({ token: Token, password: Password.optional(), name: safeName(z.string().trim().max(100)).optional() })
  .openapi('AcceptInviteRequest');

/** One live session of the signed-in person, as the sessions list shows it. */
export const ConsoleSession = z
  .object({
    id: z.string(),
    created_at: z.string().openapi({ description: 'When it signed in' }),
    last_refreshed_at: z
      .string()
      .nullable()
      .openapi({ description: 'When it last traded its refresh token (about every 10 minutes while open)' }),
    expires_at: z.string(),
    user_agent: z.string().nullable().openapi({ description: 'The browser that signed in, as it named itself (null: not known)' }),
    client_address: z.string().nullable().openapi({ description: 'The address it signed in from (null: not known)' }),
    current: z.boolean().openapi({ description: 'The session of this request' }),
  })
  .openapi('ConsoleSession');

export const SessionParams = z.object({
  session_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'session_id', in: 'path' } }),
});

export const ChangePasswordBody = z.object({ current_password: z.string().min(1).max(MAX_PASSWORD_LENGTH), new_password: Password });

// ---------------------------------------------------------------------------
// API keys, members, invitations, audit log

export const ApiKeyRecord = z
  .object({
    id: z.string(),
    name: z.string().nullable().openapi({ description: 'What its creator called it (null: no name)' }),
    owner: z.string().openapi({
      description:
        'Who made it: its creator’s email (an operator-made key: the operator’s label). What the key makes records its owner with its name beside it as created_by',
    }),
    prefix: z.string().nullable(),
    owner_user_id: z.string().nullable(),
    scope: z
      .enum(KEY_SCOPE_NAMES)
      .openapi({ description: 'What the key may do at most: full, prove or read; never more than its creator’s current role' }),
    created_at: z.string(),
    last_used_at: z.string().nullable(),
    revoked_at: z.string().nullable(),
  })
  .openapi('ConsoleApiKey');

export const CreatedApiKey = ApiKeyRecord.extend({ key: z.string().openapi({ description: 'Shown once' }) });

export const ApiKeyListQuery = z.object({ include_revoked: z.enum(['true', 'false']).default('false') });

export const NewApiKeyBody = z.object({
  name: safeName(z.string().trim().min(1).max(MAX_API_KEY_NAME_LENGTH)).optional(),
  scope: z.enum(KEY_SCOPE_NAMES).default(DEFAULT_KEY_SCOPE),
});

export const ApiKeyParams = OrgParams.extend({
  key_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'key_id', in: 'path' } }),
});

export const Member = z
  .object({ user_id: z.string(), email: z.string(), name: z.string(), role: RoleSchema, joined_at: z.string() })
  .openapi('ConsoleMember');

export const MemberParams = OrgParams.extend({
  user_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'user_id', in: 'path' } }),
});

export const RoleChange = z.object({ role: RoleSchema });

export const Invite = z
  .object({ id: z.string(), email: z.string(), role: RoleSchema, created_by: z.string(), created_at: z.string(), expires_at: z.string() })
  .openapi('ConsoleInvite');

/** An invitation just made: its link went by email to `sent_to`, and is never in an answer. */
export const CreatedInvite = Invite.extend({ sent_to: z.string() });

export const InviteBody = z.object({ email: Email, role: RoleSchema.default('member') });

export const InviteParams = OrgParams.extend({
  invite_id: z
    .string()
    .min(1)
    .max(64)
    .openapi({ param: { name: 'invite_id', in: 'path' } }),
});

export const AuditEntry = z
  .object({
    id: z.string(),
    created_at: z.string(),
    actor: z.string(),
    action: z.string(),
    target: z.string(),
    detail: z.record(z.string(), z.unknown()),
  })
  .openapi('ConsoleAuditEntry');

// ---------------------------------------------------------------------------
// Usage

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

const Day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'Value error, expected a date YYYY-MM-DD');

export const UsageQuery = z.object({ from: Day.optional(), to: Day.optional() });

// ---------------------------------------------------------------------------
// The local mail outbox (MAIL_SENDER = "outbox" only)

export const OutboxMessage = z.object({
  id: z.string(),
  to: z.string(),
  subject: z.string(),
  text: z.string(),
  link: z.string().nullable(),
  created_at: z.string(),
});
