// Members, invitations and the audit log (owners and admins only: the navigation shows
// the page to no one else, and the client shows anyone else who opens it who may).
import type { AuditEntry, Invite, Member, Page, Role } from '../api-types.ts';
import { INVITE_TTL_DAYS } from '../../../lib/limits.ts';
import { formatDate, NONE } from '../format.ts';
import { type Column, DataTable, Pager } from '../table.tsx';

/** What the signed-in manager may do to one member. */
export interface MemberActions {
  /** The roles they may give this member; none: the row is read-only (an admin looking at an owner). */
  rolesFor: (member: Member) => readonly Role[];
  /** The role select changed (its event: the client reads the new role). */
  onRole: (member: Member, event: Event) => void;
  onRemove: (member: Member) => void;
}

const memberColumns = (actions?: MemberActions): Column<Member>[] => [
  { header: 'Email', cell: (m) => m.email },
  { header: 'Name', cell: (m) => m.name || NONE },
  {
    header: 'Role',
    cell: (m) => {
      const roles = actions?.rolesFor(m) ?? [];
      return (
        <select
          aria-label={`Role of ${m.email}`}
          disabled={!roles.length}
          value={m.role}
          onChange={(event: Event) => actions?.onRole(m, event)}
        >
          {(roles.length ? roles : [m.role]).map((r) => (
            <option value={r}>{r}</option>
          ))}
        </select>
      );
    },
  },
  { header: 'Joined', cell: (m) => formatDate(m.joined_at) },
  {
    header: '',
    cell: (m) => (
      <button
        type="button"
        class="danger"
        disabled={!actions?.rolesFor(m).length}
        aria-label={`Remove ${m.email}`}
        onClick={() => actions?.onRemove(m)}
      >
        Remove
      </button>
    ),
  },
];

const inviteColumns = (onRevoke?: (invite: Invite) => void): Column<Invite>[] => [
  { header: 'Email', cell: (i) => i.email },
  { header: 'Role', cell: (i) => i.role },
  { header: 'Invited by', cell: (i) => i.created_by },
  { header: 'Expires', cell: (i) => formatDate(i.expires_at) },
  {
    header: '',
    cell: (i) => (
      <button type="button" class="danger" aria-label={`Revoke the invitation of ${i.email}`} onClick={() => onRevoke?.(i)}>
        Revoke
      </button>
    ),
  },
];

const auditColumns: Column<AuditEntry>[] = [
  { header: 'When', cell: (a) => formatDate(a.created_at) },
  { header: 'Who', cell: (a) => a.actor },
  { header: 'What', cell: (a) => a.action },
  { header: 'Target', cell: (a) => <code>{a.target}</code> },
];

/** The roles an invitation may name, in the form's order (member first: the usual one). */
const INVITE_ROLES: readonly Role[] = ['member', 'viewer', 'admin', 'owner'];

export interface MembersViewProps {
  members?: Member[];
  invites?: Invite[];
  audit?: Page<AuditEntry>;
  /** The roles the signed-in manager may invite with (all of them until known). */
  invitable?: readonly Role[];
  memberActions?: MemberActions;
  onInvite?: (event: Event) => void;
  onRevokeInvite?: (invite: Invite) => void;
  onAuditPage?: (page: number) => void;
}

export const MembersView = (props: MembersViewProps) => (
  <section id="members-section">
    <DataTable id="members" caption="Members" columns={memberColumns(props.memberActions)} rows={props.members} />
    <h2>Invite</h2>
    <form id="invite-create" class="filters card" onSubmit={props.onInvite}>
      <label>
        Email
        <input type="email" name="email" required />
      </label>
      <label>
        Role
        <select name="role">
          {INVITE_ROLES.filter((r) => !props.invitable || props.invitable.includes(r)).map((r) => (
            <option value={r}>{r}</option>
          ))}
        </select>
      </label>
      <button type="submit">Send invitation</button>
    </form>
    <p>{`The invitation link is emailed to that address (it works once, for ${INVITE_TTL_DAYS} days); it is never shown here.`}</p>
    <h2>Pending invitations</h2>
    <DataTable
      id="invites"
      caption="Pending invitations"
      columns={inviteColumns(props.onRevokeInvite)}
      rows={props.invites}
      empty="No pending invitations."
    />
    <h2>Audit log</h2>
    <DataTable id="audit" caption="Audit log" columns={auditColumns} rows={props.audit?.items} empty="No changes yet." />
    <Pager id="audit-pager" pagination={props.audit?.pagination} onGo={props.onAuditPage} />
  </section>
);
