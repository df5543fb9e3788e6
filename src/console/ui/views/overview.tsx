// The organization's page, where the console starts and where someone who just joined
// lands: a welcome, what their role may do (the permissions table's own words), and
// the first hour's steps their role can take, each marked done from the organization's
// records, with the command to take it.
import type { Budget, Organization, ProgramRecord, Role } from '../api-types.ts';
import { counted, formatCount, formatUsd } from '../format.ts';
import { links } from '../site.ts';
import { actionsOf, type Action, may, PERMISSIONS } from '../states.ts';
import { Facts, type Fact } from '../widgets.tsx';
import { type Guide, ProveStep, RegisterStep } from './records.tsx';
import type { Child } from 'hono/jsx';

/** What the organization has so far, read for the steps (counts: the lists' totals). */
export interface OrgSnapshot {
  keys: number;
  projects: number;
  proofs: number;
  webhooks: number;
  /** Its latest program: the one the "prove it" step names. */
  program?: ProgramRecord;
  budget: Budget;
  /** Members and pending invitations: read only by those who manage members. */
  team?: { members: number; invites: number };
}

interface Step {
  /** What it takes: shown only to a role that may. */
  action: Action;
  title: string;
  done: boolean;
  body: Child;
}

function steps(snap: OrgSnapshot, guide: Guide): Step[] {
  const link = (href: string, text: string) => <a href={href}>{text}</a>;
  return [
    {
      action: 'keys.own',
      title: 'Create an API key',
      done: snap.keys > 0,
      body: <p>{link(links.keys, 'API keys')}: programs are registered and proved with one, from curl or cargo axiom.</p>,
    },
    {
      action: 'jobs.submit',
      title: 'Register a program',
      done: snap.projects > 0,
      body: <RegisterStep guide={guide} />,
    },
    {
      action: 'jobs.submit',
      title: 'Prove it',
      done: snap.proofs > 0,
      body: snap.program ? (
        <ProveStep guide={guide} programId={snap.program.id} programName={snap.program.name} />
      ) : (
        <p>Once a program is registered, the command to prove it shows here.</p>
      ),
    },
    {
      action: 'records.read',
      title: 'Follow a proof',
      done: snap.proofs > 0,
      body: <p>{link(links.proofs, 'Proofs')}: each proof’s page follows its state and logs live while it runs.</p>,
    },
    {
      action: 'webhooks.manage',
      title: 'Be told when proofs finish',
      done: snap.webhooks > 0,
      body: <p>{link(links.webhooks, 'Webhooks')}: an endpoint gets a signed POST as each proof succeeds or fails.</p>,
    },
    {
      action: 'members.manage',
      title: 'Invite your team',
      done: !!snap.team && (snap.team.members > 1 || snap.team.invites > 0),
      body: <p>{link(links.members, 'Members')}: an invitation is emailed; its role decides what they may do.</p>,
    },
    {
      action: 'budgets.manage',
      title: 'Set a monthly budget',
      done: snap.budget.monthly_cost !== null || snap.budget.monthly_gpu_hours !== null,
      body: <p>{link(links.usage, 'Usage')}: past it, new proofs are refused until the month ends or it is raised.</p>,
    },
  ];
}

const orgFacts = (org: Organization, snap: OrgSnapshot): Fact[] => [
  ['Your role', org.role],
  ['Projects', formatCount(snap.projects)],
  ['Proofs', formatCount(snap.proofs)],
  ['Spent this month', formatUsd(snap.budget.used_cost)],
];

/** "a member", "an owner". */
const aRole = (role: Role) => `${/^[aeiou]/.test(role) ? 'an' : 'a'} ${role}`;

/** Everything the role may do, in the permissions table's words. */
const RoleRights = ({ role }: { role: Role }) => (
  <details id="role-rights">
    <summary>{`What ${aRole(role)} may do`}</summary>
    <ul>
      {actionsOf(role).map((a) => (
        <li>{PERMISSIONS[a].covers}</li>
      ))}
    </ul>
  </details>
);

export interface OverviewViewProps {
  org?: Organization;
  snapshot?: OrgSnapshot;
  guide?: Guide;
  /** They just joined (the invitation's landing): a welcome first. */
  welcome?: boolean;
  /** The signed-in person's name (or email), for the welcome. */
  person?: string;
}

export const OverviewView = ({ org, snapshot, guide, welcome, person }: OverviewViewProps) => {
  const mine = org && snapshot && guide ? steps(snapshot, guide).filter((s) => may(org.role, s.action)) : undefined;
  const left = mine?.filter((s) => !s.done).length ?? 0;
  return (
    <>
      {welcome && org && (
        <div id="welcome" class="card welcome" role="note">
          <p class="empty-title">{`Welcome to ${org.name}${person ? `, ${person}` : ''}!`}</p>
          <p>{`You joined as ${aRole(org.role)}. Below: what ${aRole(org.role)} may do here, and the first steps.`}</p>
        </div>
      )}
      <Facts id="org-facts" facts={org && snapshot && orgFacts(org, snapshot)} />
      {org && <RoleRights role={org.role} />}
      <h2>{mine ? (left ? `First steps (${counted(left, 'step')} left)` : 'First steps: all done') : 'First steps'}</h2>
      {mine ? (
        <ol id="steps" class="steps">
          {mine.map((s) => (
            <li class={s.done ? 'done' : undefined}>
              <p class="step-title">
                {s.title}
                {s.done && <span class="state Succeeded">done</span>}
              </p>
              {!s.done && s.body}
            </li>
          ))}
        </ol>
      ) : (
        <Facts id="steps-loading" />
      )}
      {org && !may(org.role, 'jobs.submit') && (
        <p id="viewer-note">{`As ${aRole(org.role)} you read; to register programs and prove them, ask an owner or admin of ${org.name} for the member role.`}</p>
      )}
    </>
  );
};
