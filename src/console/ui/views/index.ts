// Each page's view by name. The server renders them without data (the page shells);
// the client renders them with data, and without when a page cannot be loaded.
import type { Child } from 'hono/jsx';
import type { PageName } from '../site.ts';
import { ForgotPasswordView, InviteView, OutboxView, ResetPasswordView, SetPasswordView, SigninView } from './auth.tsx';
import { FleetView } from './fleet.tsx';
import { KeysView } from './keys.tsx';
import { MembersView } from './members.tsx';
import { NotFoundView } from './not-found.tsx';
import { OverviewView } from './overview.tsx';
import { ExecutionView, ProgramView, ProjectView, ProjectsView, ProofView, ProofsView } from './records.tsx';
import { SessionsView } from './sessions.tsx';
import { UsageView } from './usage.tsx';
import { WebhookView, WebhooksView } from './webhooks.tsx';

/** Every view takes all-optional props, so each renders bare. */
export const PAGE_VIEWS: Record<PageName, (props: Record<string, never>) => Child> = {
  signin: SigninView,
  'set-password': SetPasswordView,
  invite: InviteView,
  'forgot-password': ForgotPasswordView,
  'reset-password': ResetPasswordView,
  outbox: OutboxView,
  overview: OverviewView,
  projects: ProjectsView,
  project: ProjectView,
  program: ProgramView,
  proofs: ProofsView,
  proof: ProofView,
  execution: ExecutionView,
  keys: KeysView,
  webhooks: WebhooksView,
  webhook: WebhookView,
  members: MembersView,
  usage: UsageView,
  fleet: FleetView,
  sessions: SessionsView,
  'not-found': NotFoundView,
};
