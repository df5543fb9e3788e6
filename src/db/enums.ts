// The value lists of the schema's enumerated columns, importing nothing but the fleet
// protocol's constants (import-free themselves): src/db/schema.ts declares its columns
// with them, and the console's browser client (src/console/client) bundles them, so
// that both name the same states, roles and events.
import { PROVE_PHASES } from 'prover-agent/protocol';

/** Console roles, most first; their rights: src/auth/permissions.ts. viewer reads only. */
export const ROLES = ['owner', 'admin', 'member', 'viewer'] as const;
export type Role = (typeof ROLES)[number];

/** API key scopes; what each allows: src/auth/permissions.ts KEY_SCOPES. */
export const KEY_SCOPE_NAMES = ['full', 'prove', 'read'] as const;
export type KeyScope = (typeof KEY_SCOPE_NAMES)[number];

/** Queued, then the proving phases the agent reports (protocol PROVE_PHASES), then how it ends (src/jobs/kinds/proof.ts). */
export const PROOF_STATES = ['Queued', ...PROVE_PHASES, 'Failed', 'Succeeded', 'Canceling', 'Canceled'] as const;
export type ProofState = (typeof PROOF_STATES)[number];

/** The states a proof passes through while its job runs, in order. */
export const PROOF_RUNNING_STATES = PROVE_PHASES satisfies readonly ProofState[];
/** The states a proof ends in. */
export const PROOF_TERMINAL_STATES = ['Succeeded', 'Failed', 'Canceled'] as const satisfies ProofState[];

/** The events an endpoint can subscribe to, as `type` names them. */
export const WEBHOOK_EVENTS = [
  'program.ready',
  'program.failed',
  'proof.succeeded',
  'proof.failed',
  'proof.canceled',
  'execution.succeeded',
  'execution.failed',
  'verification.verified',
  'verification.failed',
  // No online agent could take the queued job for UNSERVABLE_EVENT_SECONDS (src/jobs/waiting.ts); once per job.
  'proof.unservable',
  'execution.unservable',
  'budget.threshold',
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/**
 * Why a queued proof or execution waits, as its record's `waiting_reason` says it
 * (src/jobs/waiting.ts, docs/callers.md "Why a job waits"):
 * - no_agent: no online agent runs its engine or serves its config;
 * - not_enough_gpus: agents serve its config, none has the GPUs it needs;
 * - org_quota / org_budget: its organization is at a quota or budget that holds it
 *   (reserved: quotas refuse submissions rather than hold jobs; budgets come with issue 23 item 2);
 * - jobs_ahead: servable, behind `jobs_ahead` others;
 * - starting: servable and next: an agent should take it within its poll interval.
 */
export const WAITING_REASONS = ['no_agent', 'not_enough_gpus', 'org_quota', 'org_budget', 'jobs_ahead', 'starting'] as const;
export type WaitingReason = (typeof WAITING_REASONS)[number];

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
