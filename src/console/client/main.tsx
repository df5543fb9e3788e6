// Entry point of /console/static/console.js. The server sent the page's shell (its view
// without data, src/console/ui/views); this signs in with the refresh cookie, loads
// what the page shows and renders it again, with data, in its place. Everything is
// rendered by Hono JSX from data: no HTML from data is ever parsed.
import type { Child } from 'hono/jsx';
import { render } from 'hono/jsx/dom';
import { PageFrame } from '../ui/chrome.tsx';
import { CONSOLE_PAGES, isOpenPage, isPageName, links, type PageName } from '../ui/site.ts';
import { PAGE_VIEWS } from '../ui/views/index.ts';
import { fail, useChrome } from './chrome.ts';
import { refresh, signOut, toSignIn } from './http.ts';
import { OPEN_PAGES, SIGNED_IN_PAGES } from './pages/index.ts';
import { chooseOrg, loadSignedIn, type SignedIn } from './signed-in.ts';
import { toggleTheme } from './theme.ts';

function App({ name, signedIn, children }: { name: PageName; signedIn?: SignedIn; children?: Child }) {
  const { heading, status } = useChrome();
  const header = {
    open: isOpenPage(name),
    path: location.pathname,
    outbox: document.body.dataset.outbox === 'true',
    onThemeToggle: toggleTheme,
    ...(signedIn && {
      orgs: signedIn.user.organizations,
      orgId: signedIn.org.id,
      operator: signedIn.user.is_operator,
      onOrgChange: (event: Event) => chooseOrg((event.currentTarget as HTMLSelectElement).value),
      onSignOut: async () => {
        await signOut();
        location.assign(links.signin);
      },
    }),
  };
  return (
    <PageFrame header={header} title={heading || CONSOLE_PAGES[name].title} status={status}>
      {children}
    </PageFrame>
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
        fail('You are not a member of any organization yet.');
        return show(<View />);
      }
      document.body.dataset.org = signedIn.org.id;
      show(await SIGNED_IN_PAGES[name](signedIn), signedIn);
    }
  } catch (err) {
    // The page could not load what it shows: its shell, and why.
    fail(err);
    return show(<View />, signedIn);
  }
  // Ready (the e2e test waits on it) once the first render's effects have run: they run in
  // the next animation frame, queued before this one, and the usage chart is drawn in one.
  await nextFrame();
  document.body.dataset.ready = 'true';
}

const page = document.body.dataset.page;
if (isPageName(page)) void boot(page);
