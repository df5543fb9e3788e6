// What frames every console page: the skip link, the top bar (navigation, organization,
// theme, sign out), the heading and the status line. The server renders it around each
// page shell; the client renders it again with the signed-in user's organizations.
import type { Child } from 'hono/jsx';
import type { Organization, Role } from './api-types.ts';
import { shownText } from './format.ts';
import { NAV, type NavLink } from './site.ts';
import { may } from './states.ts';

/** The status line: what just happened, or what went wrong (and, when trying again may help, a way to). */
export interface Status {
  text: string;
  error: boolean;
  retry?: () => void;
}

export interface HeaderProps {
  /** A page anyone may open: no navigation, organization or sign-out. */
  open?: boolean;
  /** The path of the page, to mark its navigation link. */
  path: string;
  orgs?: readonly Organization[];
  orgId?: string;
  /** The signed-in person's role in the chosen organization: the navigation shows what it may use (none until known). */
  role?: Role;
  operator?: boolean;
  /** Mail goes to the local outbox (`npm start`): its page is in the navigation. */
  outbox?: boolean;
  /** On a narrow screen the navigation and tools fold into a menu: whether it is open. */
  menuOpen?: boolean;
  onMenuToggle?: () => void;
  onOrgChange?: (event: Event) => void;
  onThemeToggle?: () => void;
  onSignOut?: () => void;
}

/** Whether the navigation shows `link` to this person. */
const shows = (link: NavLink, { role, operator, outbox }: HeaderProps) =>
  (!link.action || (!!role && may(role, link.action))) && (!link.operators || !!operator) && (!link.outbox || !!outbox);

export function Header(props: HeaderProps) {
  const { open, path, orgs = [], orgId, menuOpen, onMenuToggle, onOrgChange, onThemeToggle, onSignOut } = props;
  return (
    <header class="top">
      <a class="brand" href="/console">
        Proving console
      </a>
      {!open && (
        <button
          type="button"
          class="ghost menu-toggle"
          aria-expanded={menuOpen ? 'true' : 'false'}
          aria-controls="top-menu"
          onClick={onMenuToggle}
        >
          Menu
        </button>
      )}
      <div id="top-menu" class={menuOpen ? 'menu open' : 'menu'}>
        {!open && (
          <nav aria-label="Main">
            {NAV.map((link) => (
              <a
                href={link.href}
                id={`nav-${link.href.split('/').pop()}`}
                aria-current={path.startsWith(link.href) ? 'page' : undefined}
                hidden={!shows(link, props)}
              >
                {link.label}
              </a>
            ))}
          </nav>
        )}
        <div class="tools">
          {!open && (
            <label class="org">
              <span class="sr-only">Organization</span>
              <select id="org-select" onChange={onOrgChange}>
                {orgs.map((o) => (
                  <option value={o.id} selected={o.id === orgId}>{`${shownText(o.name)} (${o.role})`}</option>
                ))}
              </select>
            </label>
          )}
          <button type="button" id="theme-toggle" class="ghost" aria-label="Switch between light and dark" onClick={onThemeToggle}>
            Theme
          </button>
          {!open && (
            <button type="button" id="signout" class="ghost" onClick={onSignOut}>
              Sign out
            </button>
          )}
        </div>
      </div>
    </header>
  );
}

export function StatusLine({ status }: { status?: Status }) {
  return (
    <div class={status?.error ? 'status-line error' : 'status-line'} hidden={!status?.text}>
      <p id="status" role="status" aria-live="polite">
        {status?.text}
      </p>
      {status?.retry && (
        <button type="button" id="status-retry" class="ghost" onClick={status.retry}>
          Try again
        </button>
      )}
    </div>
  );
}

export interface FrameProps {
  header: HeaderProps;
  title: string;
  status?: Status;
  children?: Child;
}

/** Everything inside <body>. */
export function PageFrame({ header, title, status, children }: FrameProps) {
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Header {...header} />
      <main id="main" tabindex={-1}>
        <h1>{title}</h1>
        <StatusLine status={status} />
        {children}
      </main>
    </>
  );
}
