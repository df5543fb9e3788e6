// The value lists of the schema's enumerated columns, with no imports: src/db/schema.ts
// declares its columns with them, and the console's browser client (src/console/client)
// bundles them, so that both name the same states, roles and events.

export const ROLES = ['owner', 'admin', 'member'] as const;
export type Role = (typeof ROLES)[number];

export const PROOF_STATES = [
  'Queued',
  'Executing',
  'Executed',
  'AppProving',
  'AppProvingDone',
  'PostProcessing',
  'Failed',
  'Succeeded',
  'Canceling',
  'Canceled',
] as const;
export type ProofState = (typeof PROOF_STATES)[number];

/** The states a proof passes through while its job runs, in order. */
export const PROOF_RUNNING_STATES = ['Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing'] as const satisfies ProofState[];
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
] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;
