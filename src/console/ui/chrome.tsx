// What frames every console page: the skip link, the top bar (navigation, organization,
// theme, sign out), the heading and the status line. The server renders it around each
// page shell; the client renders it again with the signed-in user's organizations.
import type { Child } from 'hono/jsx';
import type { Organization } from './api-types.ts';
import { shownText } from './format.ts';
import { NAV } from './site.ts';

/** The status line: what just happened, or what went wrong. */
export interface Status {
  text: string;
  error: boolean;
}

export interface HeaderProps {
  /** A page anyone may open: no navigation, organization or sign-out. */
  open?: boolean;
  /** The path of the page, to mark its navigation link. */
  path: string;
  orgs?: readonly Organization[];
  orgId?: string;
  operator?: boolean;
  /** Mail goes to the local outbox (`npm start`): its page is in the navigation. */
  outbox?: boolean;
  onOrgChange?: (event: Event) => void;
  onThemeToggle?: () => void;
  onSignOut?: () => void;
}

export function Header({ open, path, orgs = [], orgId, operator, outbox, onOrgChange, onThemeToggle, onSignOut }: HeaderProps) {
  return (
    <header class="top">
      <a class="brand" href="/console">
        Proving console
      </a>
      {!open && (
        <nav aria-label="Main">
          {NAV.map((link) => (
            <a
              href={link.href}
              aria-current={path.startsWith(link.href) ? 'page' : undefined}
              id={'operators' in link ? 'nav-fleet' : 'outbox' in link ? 'nav-outbox' : undefined}
              hidden={('operators' in link && !operator) || ('outbox' in link && !outbox)}
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
    </header>
  );
}

export function StatusLine({ status }: { status?: Status }) {
  return (
    <p id="status" role="status" aria-live="polite" class={status?.error ? 'status error' : 'status'}>
      {status?.text}
    </p>
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
