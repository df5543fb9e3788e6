/** @jsxImportSource hono/jsx */
// The console's pages, server-rendered with Hono JSX: each is a page shell, its view
// (src/console/ui/views) without data, that the console's client
// (/console/static/console.js, built from src/console/client) renders again with data
// from the /console/v1 API, with the signed-in user's bearer token. Every script, style
// and the chart library come from this Worker (static assets, src/tools/build-assets.ts):
// no CDN.
import { Hono, type Context } from 'hono';
import type { Child } from 'hono/jsx';
import { secureHeaders } from 'hono/secure-headers';
import { raw } from 'hono/html';
import type { AppEnv } from '../app-env.ts';
import { door } from '../middleware/door.ts';
import { PageFrame } from './ui/chrome.tsx';
import { CONSOLE_PAGES, links, type PageName, type PageSpec, TITLE_SUFFIX } from './ui/site.ts';
import { PAGE_VIEWS } from './ui/views/index.ts';
import { outboxConfigured } from '../features/accounts/mail.ts';

export const consolePages = new Hono<AppEnv>();

/** Console pages run only the Worker's own scripts and styles, and talk only to it. */
export const CONSOLE_CSP = {
  defaultSrc: ["'self'"],
  scriptSrc: ["'self'"],
  styleSrc: ["'self'"],
  imgSrc: ["'self'", 'data:'],
  fontSrc: ["'self'"],
  connectSrc: ["'self'"],
  objectSrc: ["'none'"],
  baseUri: ["'none'"],
  formAction: ["'self'"],
  frameAncestors: ["'none'"],
};

consolePages.use(
  '*',
  secureHeaders({ contentSecurityPolicy: CONSOLE_CSP, referrerPolicy: 'no-referrer', crossOriginEmbedderPolicy: false }),
);
consolePages.use('*', async (c, next) => {
  await next();
  c.header('Cache-Control', 'no-store');
});

interface DocumentProps {
  name: PageName;
  spec: PageSpec;
  /** The request path, to mark the page's navigation link. */
  path: string;
  /** Mail goes to the local outbox: the client shows its page in the navigation. */
  outbox: boolean;
  children?: Child;
}

/** The HTML around a page: its head (styles and scripts, all this Worker's own) and its body. */
function Document({ name, spec, path, outbox, children }: DocumentProps) {
  return (
    <>
      {raw('<!DOCTYPE html>')}
      <html lang="en">
        <head>
          <meta charset="utf-8" />
          <meta name="viewport" content="width=device-width, initial-scale=1" />
          <meta name="color-scheme" content="light dark" />
          <title>{spec.title + TITLE_SUFFIX}</title>
          <link rel="stylesheet" href="/console/static/console.css" />
          {spec.chart && <link rel="stylesheet" href="/console/vendor/uplot.css" />}
          {/* Before the body: the saved light/dark choice applies before the first paint. */}
          <script src="/console/static/theme.js"></script>
          {spec.chart && <script src="/console/vendor/uplot.js" defer></script>}
          <script src="/console/static/console.js" defer></script>
        </head>
        <body data-page={name} data-open={spec.open ? 'true' : undefined} data-outbox={outbox ? 'true' : undefined}>
          <PageFrame header={{ open: spec.open, path, outbox }} title={spec.title}>
            {children}
          </PageFrame>
        </body>
      </html>
    </>
  );
}

consolePages.get('/', door.open(), (c) => c.redirect(links.home));

/** The console's JSON API (mounted beside these pages): its unknown paths keep the API's JSON 404. */
const API_PREFIX = '/console/v1/';

/** A page's document; the not-found page's with status 404. */
function page(c: Context<AppEnv>, name: PageName) {
  const spec: PageSpec = CONSOLE_PAGES[name];
  const View = PAGE_VIEWS[name];
  return c.html(
    <Document name={name} spec={spec} path={c.req.path} outbox={outboxConfigured(c.env)}>
      <View />
    </Document>,
    spec.notFound ? 404 : 200,
  );
}

for (const [name, spec] of Object.entries(CONSOLE_PAGES) as [PageName, PageSpec][]) {
  consolePages.get(spec.path, door.open(), (c) => {
    if (spec.notFound && c.req.path.startsWith(API_PREFIX)) return c.notFound();
    // The outbox is a page only under the outbox sender; elsewhere it is no page at all.
    if (spec.outbox && !outboxConfigured(c.env)) return page(c, 'not-found');
    return page(c, name);
  });
}
