// The organization's page: what it has so far (a few list totals, read at once), the
// steps of the first hour the person's role can take, and, after joining, a welcome.
import type { List, Page } from '../../ui/api-types.ts';
import { may } from '../../ui/states.ts';
import { OverviewView, type OrgSnapshot } from '../../ui/views/overview.tsx';
import { setHeading } from '../chrome.ts';
import { firstPage } from '../hooks.ts';
import { guideFor, type SignedInPage } from '../signed-in.ts';

/** A list's total, read with the smallest page. */
const ONE = firstPage({ page_size: '1' });
const total = (page: Page<unknown> | List<unknown>) => ('pagination' in page ? page.pagination.total : page.items.length);

export const overview: SignedInPage = async (signedIn) => {
  const { api, org, user } = signedIn;
  setHeading(org.name);
  const team = may(org.role, 'members.manage') ? Promise.all([api.members(), api.invites()]) : undefined;
  const [keys, projects, programs, proofs, webhooks, budget, people] = await Promise.all([
    api.apiKeys(),
    api.projects(ONE),
    api.programs(ONE),
    api.proofs(ONE),
    api.webhooks(ONE),
    api.budget(),
    team,
  ]);
  const snapshot: OrgSnapshot = {
    keys: total(keys),
    projects: total(projects),
    proofs: total(proofs),
    webhooks: total(webhooks),
    program: programs.items[0],
    budget,
    team: people && { members: people[0].items.length, invites: people[1].items.length },
  };
  const welcome = new URLSearchParams(location.search).has('welcome');
  return (
    <OverviewView
      org={org}
      snapshot={snapshot}
      guide={guideFor(signedIn, snapshot.program?.config_uuid)}
      welcome={welcome}
      person={user.name || user.email}
    />
  );
};
