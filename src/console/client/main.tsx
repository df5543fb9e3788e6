// Entry point of /console/static/console.js. The server sent the page's shell (its view
// without data, src/console/ui/views: grey bars where the data goes); this signs in with
// the refresh cookie, loads what the page shows and renders it again, with data, in its
// place, or, when it cannot, says why in words with a way to try again. Everything is
// rendered by Hono JSX from data: no HTML from data is ever parsed.
import type { Child } from 'hono/jsx';
import { render, useState } from 'hono/jsx/dom';
import { PageFrame } from '../ui/chrome.tsx';
import { CONSOLE_PAGES, isOpenPage, isPageName, links, type PageName } from '../ui/site.ts';
import { PAGE_VIEWS } from '../ui/views/index.ts';
import { ErrorState, Notice } from '../ui/widgets.tsx';
import { useChrome } from './chrome.ts';
import { ConfirmHost } from './confirm.tsx';
import { copyText } from './dom.ts';
import { describe } from './errors.ts';
import { refresh, signOut, toSignIn } from './http.ts';
import { OPEN_PAGES, SIGNED_IN_PAGES } from './pages/index.ts';
import { chooseOrg, loadSignedIn, type SignedIn } from './signed-in.ts';
import { toggleTheme } from './theme.ts';

function App({ name, signedIn, children }: { name: PageName; signedIn?: SignedIn; children?: Child }) {
  const { heading, status } = useChrome();
  const [menuOpen, setMenuOpen] = useState(false);
  const header = {
    open: isOpenPage(name),
    path: location.pathname,
    outbox: document.body.dataset.outbox === 'true',
    menuOpen,
    onMenuToggle: () => setMenuOpen((open) => !open),
    onThemeToggle: toggleTheme,
    ...(signedIn && {
      orgs: signedIn.user.organizations,
      orgId: signedIn.org.id,
      role: signedIn.org.role,
      operator: signedIn.user.is_operator,
      onOrgChange: (event: Event) => chooseOrg((event.currentTarget as HTMLSelectElement).value),
      onSignOut: async () => {
        await signOut();
        location.assign(links.signin);
      },
    }),
  };
  return (
    <>
      <PageFrame header={header} title={heading || CONSOLE_PAGES[name].title} status={status}>
        {children}
      </PageFrame>
      <ConfirmHost />
    </>
  );
}

const nextFrame = () => new Promise((resolve) => requestAnimationFrame(resolve));

async function boot(name: PageName) {
  const show = (content: Child, signedIn?: SignedIn) =>
    render(
      <App name={name} signedIn={signedIn}>
        {content}
      </App>,
      document.body,
    );
  const View = PAGE_VIEWS[name];
  let signedIn: SignedIn | undefined;
  try {
    if (isOpenPage(name)) {
      show(await OPEN_PAGES[name]());
    } else {
      if (!(await refresh())) return toSignIn();
      signedIn = await loadSignedIn();
      if (!signedIn) {
        return show(
          <Notice id="no-org" title="You are not a member of any organization yet.">
            <p>Ask an owner or admin of your team to invite you (the invitation comes by email), or the service’s operator to add you.</p>
          </Notice>,
        );
      }
      document.body.dataset.org = signedIn.org.id;
      show(await SIGNED_IN_PAGES[name](signedIn), signedIn);
    }
  } catch (err) {
    // The page could not load what it shows: why, in words, and (when it may help) Try again, which loads it afresh.
    const { text, retryable } = describe(err);
    const retry = async () => {
      document.body.dataset.ready = 'false';
      show(<View />, signedIn);
      await boot(name);
    };
    show(
      <ErrorState
        title="This page could not be loaded."
        text={text}
        onRetry={retryable ? () => void retry() : undefined}
        back={<a href={links.home}>Go to the overview</a>}
      />,
      signedIn,
    );
    document.body.dataset.ready = 'error';
    return;
  }
  // Ready (the e2e test waits on it) once the first render's effects have run: they run in
  // the next animation frame, queued before this one, and the usage chart is drawn in one.
  await nextFrame();
  document.body.dataset.ready = 'true';
}

// Every snippet's Copy button (src/console/ui/widgets.tsx Snippet) copies its code.
document.addEventListener('click', (event) => {
  const button = (event.target as Element | null)?.closest?.('button[data-copy]');
  const code = button?.closest('.snippet')?.querySelector('code');
  if (code) void copyText(code.textContent ?? '');
});

const page = document.body.dataset.page;
if (isPageName(page)) void boot(page);
