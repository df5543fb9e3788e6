// Members, invitations and the audit log (owners and admins).
import { useState } from 'hono/jsx/dom';
import type { AuditEntry, Invite, Member, Organization, Page, Role } from '../../ui/api-types.ts';
import { grantableRoles, may, ROLES } from '../../ui/states.ts';
import { MembersView, type MemberActions } from '../../ui/views/members.tsx';
import { Notice } from '../../ui/widgets.tsx';
import { attempt, say } from '../chrome.ts';
import { ask } from '../confirm.tsx';
import { field, formOf } from '../dom.ts';
import type { OrgApi } from '../endpoints.ts';
import { firstPage, usePaged } from '../hooks.ts';
import type { SignedInPage } from '../signed-in.ts';

/** The role a select names (its options are roles). */
const roleOf = (value: string): Role | undefined => ROLES.find((r) => r === value);

interface MembersPageProps {
  api: OrgApi;
  org: Organization;
  members: Member[];
  invites: Invite[];
  audit: Page<AuditEntry>;
}

function MembersPage({ api, org, ...initial }: MembersPageProps) {
  const [members, setMembers] = useState(initial.members);
  const [invites, setInvites] = useState(initial.invites);
  const audit = usePaged(initial.audit, api.audit);
  const reloadMembers = async () => setMembers((await api.members()).items);
  const reloadInvites = async () => setInvites((await api.invites()).items);
  const grantable = grantableRoles(org.role);

  const memberActions: MemberActions = {
    // Only those who may grant a member's role change it (only owners change owners).
    rolesFor: (m) => (grantable.includes(m.role) ? grantable : []),
    onRole: (m, event) => {
      const role = roleOf((event.currentTarget as HTMLSelectElement).value);
      if (!role) return;
      void attempt(async () => say((await api.setRole(m.user_id, role)).message)).then(() => attempt(reloadMembers));
    },
    onRemove: (m) =>
      void (async () => {
        const yes = await ask({
          title: `Remove ${m.email} from ${org.name}?`,
          body: (
            <p>
              {`Their console sessions end, and the API keys they made and the invitations they sent for ${org.name} are revoked. They can rejoin only by a new invitation.`}
            </p>
          ),
          action: 'Remove member',
        });
        if (!yes) return;
        await attempt(async () => {
          say((await api.removeMember(m.user_id)).message);
          await Promise.all([reloadMembers(), audit.go(1)]);
        });
      })(),
  };

  const invite = (event: Event) => {
    event.preventDefault();
    const form = formOf(event);
    const role = roleOf(field(form, 'role'));
    if (!role) return;
    void attempt(async () => {
      // The link goes to the invitee by email, never to this page.
      const created = await api.createInvite(field(form, 'email'), role);
      say(`Invitation sent to ${created.sent_to}.`);
      form.reset();
      await Promise.all([reloadInvites(), audit.go(1)]);
    });
  };
  const revokeInvite = async (i: Invite) => {
    const yes = await ask({
      title: `Revoke the invitation of ${i.email}?`,
      body: <p>{`Its link stops working; ${i.email} can join ${org.name} only by a new invitation.`}</p>,
      action: 'Revoke invitation',
    });
    if (!yes) return;
    await attempt(async () => {
      say((await api.revokeInvite(i.id)).message);
      await reloadInvites();
    });
  };

  return (
    <MembersView
      members={members}
      invites={invites}
      audit={audit.list}
      invitable={grantable}
      memberActions={memberActions}
      onInvite={invite}
      onRevokeInvite={(i) => void revokeInvite(i)}
      onAuditPage={audit.onPage}
    />
  );
}

export const members: SignedInPage = async ({ api, org }) => {
  // Not in this person's navigation; opened anyway (an old link), it says who manages members.
  if (!may(org.role, 'members.manage'))
    return (
      <Notice id="members-refused" title={`Owners and admins manage the members of ${org.name}.`}>
        <p>{`You are a ${org.role} here: ask an owner or admin to invite someone or to change a role.`}</p>
      </Notice>
    );
  const [list, invites, audit] = await Promise.all([api.members(), api.invites(), api.audit(firstPage())]);
  return <MembersPage api={api} org={org} members={list.items} invites={invites.items} audit={audit} />;
};
