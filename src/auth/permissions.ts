// The one table of who may do what in an organization: the roles, the actions each may
// take, and the scopes an API key carries. Both doors enforce it: the console's API
// (src/middleware/console-auth.ts, a member's role) and the public API
// (src/middleware/auth.ts, an API key's scope bounded by its creator's current role,
// computed inside the key's lookup). Every route declares its action at its door
// (src/middleware/door.ts); test/worker/permissions.test.ts checks none is missing.
// This module imports only src/db/enums.ts (import-free), so the console's browser
// client bundles it too: pages hide what the role cannot do from the same table.
import { KEY_SCOPE_NAMES, ROLES, type KeyScope, type Role } from '../db/enums.ts';

export { KEY_SCOPE_NAMES, ROLES, type KeyScope, type Role };

/** Roles from the least to the most: each may do everything the ones before it may. */
export const ROLE_ORDER = ['viewer', 'member', 'admin', 'owner'] as const satisfies readonly Role[];

/** A role's rank: 1 (viewer) to 4 (owner). */
export const rankOf = (role: Role): number => ROLE_ORDER.indexOf(role) + 1;

/**
 * Every action, with the least role that may take it and what it covers. The roles
 * are nested (ROLE_ORDER), so "the least role" says the whole table.
 */
export const PERMISSIONS = {
  'records.read': {
    least: 'viewer',
    covers: 'Read programs, projects, proofs, executions, verifications, configs, usage and webhook endpoints',
  },
  'keys.own': { least: 'viewer', covers: 'Create, list and revoke one’s own API keys (a viewer: read keys only)' },
  'jobs.submit': { least: 'member', covers: 'Register programs, submit proofs and executions, verify proofs' },
  'jobs.cancel': { least: 'member', covers: 'Cancel proofs' },
  'projects.manage': { least: 'member', covers: 'Create projects; rename programs and move them between projects' },
  // Irreversible, and it takes away what every member reads (README "Deleting records and
  // retention"): admins, like the organization's other settings; a member's or a `prove`
  // key's rights (an automated prover's) never reach it.
  'records.delete': {
    least: 'admin',
    covers: 'Delete proofs, executions and programs (their files go, a tombstone stays) and set the organization’s retention',
  },
  'webhooks.manage': { least: 'admin', covers: 'Create, change, rotate, test, redeliver and delete webhook endpoints' },
  'members.manage': { least: 'admin', covers: 'List members and invitations; invite, change and remove admins, members and viewers' },
  'keys.manage': { least: 'admin', covers: 'List and revoke every API key of the organization' },
  'budgets.manage': { least: 'admin', covers: 'Set the organization’s monthly spending and GPU-hour budget' },
  'limits.manage': { least: 'admin', covers: 'Set the organization’s default job limits (cycles, cost, deadline)' },
  'audit.read': { least: 'admin', covers: 'Read the audit log' },
  'owners.manage': { least: 'owner', covers: 'Make, change and remove owners' },
} as const satisfies Record<string, { least: Role; covers: string }>;

export type Action = keyof typeof PERMISSIONS;
export const ACTIONS = Object.keys(PERMISSIONS) as Action[];

/** Whether `role` may take `action`. */
export const may = (role: Role, action: Action): boolean => rankOf(role) >= rankOf(PERMISSIONS[action].least);

/** The actions a role may take, in the table's order. */
export const actionsOf = (role: Role): Action[] => ACTIONS.filter((a) => may(role, a));

/** The action that grants, changes or removes `role`: only owners touch owners. */
export const grantAction = (role: Role): Action => (role === 'owner' ? 'owners.manage' : 'members.manage');

/** The roles `own` may give (invite with, change to), least first; none without members.manage. */
export const grantableRoles = (own: Role): Role[] => ROLE_ORDER.filter((r) => may(own, 'members.manage') && may(own, grantAction(r)));

/** The roles that may give `role`: an invitation stands only while its inviter holds one. */
export const grantersOf = (role: Role): Role[] => ROLE_ORDER.filter((r) => grantableRoles(r).includes(role));

// ---------------------------------------------------------------------------
// API key scopes

/**
 * What an API key may do, at most: `full` what its creator's role allows, `prove` a
 * member's (submit, read, verify, cancel, projects; no management), `read` a viewer's.
 * A key's rights are min(its scope, its creator's current role); an operator-made key
 * (no creator) has its scope's. `least`: the least creator role that may choose it.
 */
export const KEY_SCOPES = {
  full: { cap: 'owner', least: 'member', covers: 'What its creator’s role allows, as that role is now' },
  prove: { cap: 'member', least: 'member', covers: 'Submit, read, verify, cancel, create projects; no webhook or other management' },
  read: { cap: 'viewer', least: 'viewer', covers: 'Reads only' },
} as const satisfies Record<KeyScope, { cap: Role; least: Role; covers: string }>;
export const DEFAULT_KEY_SCOPE: KeyScope = 'full';

/** The scopes a creator of role `own` may give a key. */
export const scopesFor = (own: Role): KeyScope[] => KEY_SCOPE_NAMES.filter((s) => rankOf(own) >= rankOf(KEY_SCOPES[s].least));

/** The rights (as a role) of a key of `scope` made by someone now `creator` (undefined: made by an operator). */
export const keyRights = (scope: KeyScope, creator?: Role): Role => {
  const cap = KEY_SCOPES[scope].cap;
  return creator && rankOf(creator) < rankOf(cap) ? creator : cap;
};
