// Who is signed in, and in which of their organizations the pages work.
import type { Child } from 'hono/jsx';
import type { Me, Organization } from '../ui/api-types.ts';
import { may } from '../ui/states.ts';
import type { Guide } from '../ui/views/records.tsx';
import { accountApi, orgApi, type OrgApi } from './endpoints.ts';
import { session } from './http.ts';

export interface SignedIn {
  user: Me;
  org: Organization;
  api: OrgApi;
}

/** A page that needs a session: loads what it shows first, then returns itself to render. */
export type SignedInPage = (signedIn: SignedIn) => Promise<Child>;
/** A page anyone may open. */
export type OpenPage = () => Promise<Child>;

/** The organization this browser last chose. */
const ORG_KEY = 'console-org';

/** A link may name the organization to show (`?org=`, as the landing after joining one does): it becomes the chosen one. */
const ORG_PARAM = 'org';

/** The user and the organization to show (the link's, the one chosen last, or the first); none when they belong to none. */
export async function loadSignedIn(): Promise<SignedIn | undefined> {
  const user = await accountApi.me();
  session.user = user;
  const named = new URLSearchParams(location.search).get(ORG_PARAM);
  const saved = localStorage.getItem(ORG_KEY);
  const org = user.organizations.find((o) => o.id === named) ?? user.organizations.find((o) => o.id === saved) ?? user.organizations[0];
  if (org && org.id === named) localStorage.setItem(ORG_KEY, org.id);
  return org && { user, org, api: orgApi(org.id) };
}

/** Switches organization: saved, then the page loads again in it. */
export function chooseOrg(orgId: string): void {
  localStorage.setItem(ORG_KEY, orgId);
  location.reload();
}

/** What an empty list's next step needs (src/console/ui/views/records.tsx Guide): this service's address, the role's rights, a config in use. */
export const guideFor = ({ org }: SignedIn, configId?: string): Guide => ({
  base: location.origin,
  canSubmit: may(org.role, 'jobs.submit'),
  configId,
});
