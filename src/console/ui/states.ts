// Facts about states and roles the pages act on, from the schema's own lists
// (src/db/enums.ts, which has no imports and so is bundled into the client) and the
// one permissions table (src/auth/permissions.ts, importing only those lists).
import { PROOF_RUNNING_STATES, PROOF_TERMINAL_STATES, type ProofState } from '../../db/enums.ts';

export { PROOF_STATES, ROLES, WEBHOOK_DELIVERY_STATUSES, WEBHOOK_EVENTS, type ProofState, type Role } from '../../db/enums.ts';

/** A proof's way to success, as the proof page's timeline shows it. */
export const PROOF_STEPS: readonly ProofState[] = ['Queued', ...PROOF_RUNNING_STATES, 'Succeeded'];

export const isFinalProofState = (state: ProofState) => (PROOF_TERMINAL_STATES as readonly ProofState[]).includes(state);

/** Canceling is already asked for; a final proof has nothing to cancel. */
export const isCancelable = (state: ProofState) => !isFinalProofState(state) && state !== 'Canceling';

export { actionsOf, grantableRoles, KEY_SCOPES, may, PERMISSIONS, scopesFor, type Action, type KeyScope } from '../../auth/permissions.ts';
