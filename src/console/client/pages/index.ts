// Each page of the client by name (the names of src/console/ui/site.ts).
import type { OpenPageName, SignedInPageName } from '../../ui/site.ts';
import type { OpenPage, SignedInPage } from '../signed-in.ts';
import { forgotPassword, invite, notFound, outbox, resetPassword, setPassword, signin } from './auth.tsx';
import { fleet } from './fleet.tsx';
import { keys } from './keys.tsx';
import { members } from './members.tsx';
import { overview } from './overview.tsx';
import { execution, program, project, projects, proof, proofs } from './records.tsx';
import { sessions } from './sessions.tsx';
import { usage } from './usage.tsx';
import { webhook, webhooks } from './webhooks.tsx';

export const OPEN_PAGES: Record<OpenPageName, OpenPage> = {
  signin,
  'set-password': setPassword,
  invite,
  'forgot-password': forgotPassword,
  'reset-password': resetPassword,
  outbox,
  'not-found': notFound,
};

export const SIGNED_IN_PAGES: Record<SignedInPageName, SignedInPage> = {
  overview,
  projects,
  project,
  program,
  proofs,
  proof,
  execution,
  keys,
  webhooks,
  webhook,
  members,
  usage,
  fleet,
  sessions,
};
