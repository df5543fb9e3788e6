// The console's pages: where each is served, its title, and the links between them.
// The server registers a route per page (src/console/pages.tsx); the client picks the
// page to fill by the name the server writes on <body data-page>.
import type { Action } from './states.ts';

export interface PageSpec {
  /** Hono route under /console. */
  path: string;
  title: string;
  /** Anyone may open it (sign-in, one-time links); the rest need a session. */
  open?: boolean;
  /** Loads the chart library. */
  chart?: boolean;
  /** Served only under the local outbox mail sender (MAIL_SENDER = "outbox"); 404 otherwise. */
  outbox?: boolean;
  /** The answer to every other console URL: served with status 404. */
  notFound?: boolean;
}

export const CONSOLE_PAGES = {
  signin: { path: '/signin', title: 'Sign in', open: true },
  'set-password': { path: '/set-password', title: 'Set your password', open: true },
  invite: { path: '/invite', title: 'Join an organization', open: true },
  'forgot-password': { path: '/forgot-password', title: 'Reset your password', open: true },
  'reset-password': { path: '/reset-password', title: 'Choose a new password', open: true },
  outbox: { path: '/outbox', title: 'Outbox (local mail)', open: true, outbox: true },
  overview: { path: '/overview', title: 'Overview' },
  projects: { path: '/projects', title: 'Projects' },
  project: { path: '/projects/:id', title: 'Project' },
  program: { path: '/programs/:id', title: 'Program' },
  proofs: { path: '/proofs', title: 'Proofs' },
  proof: { path: '/proofs/:id', title: 'Proof' },
  execution: { path: '/executions/:id', title: 'Execution' },
  keys: { path: '/keys', title: 'API keys' },
  webhooks: { path: '/webhooks', title: 'Webhooks' },
  webhook: { path: '/webhooks/:id', title: 'Webhook endpoint' },
  members: { path: '/members', title: 'Members' },
  usage: { path: '/usage', title: 'Usage', chart: true },
  fleet: { path: '/fleet', title: 'Fleet' },
  sessions: { path: '/sessions', title: 'Your sessions' },
  // Last: the routes above match first.
  'not-found': { path: '/*', title: 'Page not found', open: true, notFound: true },
} as const satisfies Record<string, PageSpec>;

export type PageName = keyof typeof CONSOLE_PAGES;
export type OpenPageName = { [K in PageName]: (typeof CONSOLE_PAGES)[K] extends { open: true } ? K : never }[PageName];
export type SignedInPageName = Exclude<PageName, OpenPageName>;

export const isPageName = (name: string | undefined): name is PageName => name !== undefined && Object.hasOwn(CONSOLE_PAGES, name);
export const isOpenPage = (name: PageName): name is OpenPageName => 'open' in CONSOLE_PAGES[name];

/** What follows a page's title in the browser's. */
export const TITLE_SUFFIX = ' · Proving console';

/** Who a navigation link is for: a role that may take `action`, service operators, or everyone (neither). */
export interface NavLink {
  href: string;
  label: string;
  /** Shown to a person whose role in the chosen organization may take this action (src/auth/permissions.ts). */
  action?: Action;
  /** Shown to service operators only. */
  operators?: boolean;
  /** Shown only under the local outbox mail sender. */
  outbox?: boolean;
}

/** The main navigation: a person sees only the pages their role can use. */
export const NAV: readonly NavLink[] = [
  { href: '/console/overview', label: 'Overview' },
  { href: '/console/projects', label: 'Projects' },
  { href: '/console/proofs', label: 'Proofs' },
  { href: '/console/keys', label: 'API keys' },
  { href: '/console/webhooks', label: 'Webhooks' },
  { href: '/console/members', label: 'Members', action: 'members.manage' },
  { href: '/console/usage', label: 'Usage' },
  { href: '/console/fleet', label: 'Fleet', operators: true },
  { href: '/console/sessions', label: 'Sessions' },
  { href: '/console/outbox', label: 'Outbox', outbox: true },
];

const at = (base: string) => (id: string) => `/console/${base}/${encodeURIComponent(id)}`;
export const links = {
  home: '/console/overview',
  /** Where someone who just joined `orgId` lands: its overview, that organization chosen, with a welcome. */
  welcome: (orgId: string) => `/console/overview?org=${encodeURIComponent(orgId)}&welcome=1`,
  projects: '/console/projects',
  proofs: '/console/proofs',
  keys: '/console/keys',
  members: '/console/members',
  usage: '/console/usage',
  signin: '/console/signin',
  forgotPassword: '/console/forgot-password',
  invite: '/console/invite',
  webhooks: '/console/webhooks',
  project: at('projects'),
  program: at('programs'),
  proof: at('proofs'),
  execution: at('executions'),
  webhook: at('webhooks'),
};
