/** @jsxImportSource hono/jsx */
// The console's pages, server-rendered with Hono JSX: each is a page shell (layout,
// headings, forms, empty tables) that /console/static/console.js fills from the
// /console/v1 API with the signed-in user's bearer token. Every script, style and the
// chart library come from this Worker (static assets, src/tools/build-assets.ts): no CDN.
import { Hono } from 'hono';
import type { Child } from 'hono/jsx';
import { secureHeaders } from 'hono/secure-headers';
import { raw } from 'hono/html';
import type { AppEnv } from '../app-env.ts';
import { PROOF_STATES, WEBHOOK_EVENTS } from '../db/schema.ts';

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

consolePages.use('*', secureHeaders({ contentSecurityPolicy: CONSOLE_CSP, referrerPolicy: 'no-referrer', crossOriginEmbedderPolicy: false }));
consolePages.use('*', async (c, next) => {
  await next();
  c.header('Cache-Control', 'no-store');
});

interface PageProps {
  page: string;
  title: string;
  /** Pages anyone may open (sign-in, links); the rest need a session. */
  open?: boolean;
  chart?: boolean;
  children?: Child;
}

function Layout({ page, title, open, chart, children }: PageProps) {
  return (
    <>
      {raw('<!DOCTYPE html>')}
      <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta name="color-scheme" content="light dark" />
        <title>{`${title} · Proving console`}</title>
        <link rel="stylesheet" href="/console/static/console.css" />
        {chart && <link rel="stylesheet" href="/console/vendor/uplot.css" />}
        <script src="/console/static/theme.js"></script>
        {chart && <script src="/console/vendor/uplot.js" defer></script>}
        <script src="/console/static/console.js" defer></script>
      </head>
      <body data-page={page} data-open={open ? 'true' : undefined}>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <header class="top">
          <a class="brand" href="/console">
            Proving console
          </a>
          {!open && (
            <nav aria-label="Main">
              <a href="/console/projects">Projects</a>
              <a href="/console/proofs">Proofs</a>
              <a href="/console/keys">API keys</a>
              <a href="/console/webhooks">Webhooks</a>
              <a href="/console/members">Members</a>
              <a href="/console/usage">Usage</a>
              <a href="/console/fleet" id="nav-fleet" hidden>
                Fleet
              </a>
            </nav>
          )}
          <div class="tools">
            {!open && (
              <label class="org">
                <span class="sr-only">Organization</span>
                <select id="org-select"></select>
              </label>
            )}
            <button type="button" id="theme-toggle" class="ghost" aria-label="Switch between light and dark">
              Theme
            </button>
            {!open && (
              <button type="button" id="signout" class="ghost">
                Sign out
              </button>
            )}
          </div>
        </header>
        <main id="main" tabindex={-1}>
          <h1>{title}</h1>
          <p id="status" role="status" aria-live="polite" class="status"></p>
          {children}
        </main>
      </body>
      </html>
    </>
  );
}

const Pager = ({ id }: { id: string }) => (
  <nav class="pager" aria-label="Pages" id={id}>
    <button type="button" data-dir="-1">
      Previous
    </button>
    <span aria-live="polite"></span>
    <button type="button" data-dir="1">
      Next
    </button>
  </nav>
);

const Table = ({ id, caption, columns }: { id: string; caption: string; columns: string[] }) => (
  <div class="table-wrap">
    <table id={id}>
      <caption class="sr-only">{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th scope="col">{c}</th>
          ))}
        </tr>
      </thead>
      <tbody></tbody>
    </table>
  </div>
);

/** From/to date fields of a filter form (the API's `from` and `to`). */
const DateRange = () => (
  <>
    <label>
      From
      <input type="date" name="from" />
    </label>
    <label>
      To
      <input type="date" name="to" />
    </label>
  </>
);

consolePages.get('/', (c) => c.redirect('/console/projects'));

consolePages.get('/signin', (c) =>
  c.html(
    <Layout page="signin" title="Sign in" open>
      <form id="signin-form" class="card narrow">
        <label>
          Email
          <input type="email" name="email" autocomplete="username" required />
        </label>
        <label>
          Password
          <input type="password" name="password" autocomplete="current-password" required />
        </label>
        <button type="submit">Sign in</button>
      </form>
    </Layout>,
  ),
);

consolePages.get('/set-password', (c) =>
  c.html(
    <Layout page="set-password" title="Set your password" open>
      <form id="password-form" class="card narrow">
        <label>
          New password (at least 10 characters)
          <input type="password" name="password" autocomplete="new-password" minlength={10} required />
        </label>
        <button type="submit">Set password</button>
      </form>
    </Layout>,
  ),
);

consolePages.get('/invite', (c) =>
  c.html(
    <Layout page="invite" title="Join an organization" open>
      <p id="invite-summary"></p>
      <form id="invite-form" class="card narrow" hidden>
        <label id="invite-name">
          Your name
          <input type="text" name="name" autocomplete="name" />
        </label>
        <label>
          <span id="invite-password-label">Password</span>
          <input type="password" name="password" autocomplete="new-password" required />
        </label>
        <button type="submit">Join</button>
      </form>
    </Layout>,
  ),
);

consolePages.get('/projects', (c) =>
  c.html(
    <Layout page="projects" title="Projects">
      <form id="filters" class="filters" role="search">
        <label>
          Search
          <input type="search" name="search" placeholder="Project name" />
        </label>
        <label>
          Sort by
          <select name="sort_by">
            <option value="last_active_at">Last active</option>
            <option value="created_at">Created</option>
            <option value="name">Name</option>
          </select>
        </label>
        <label>
          Order
          <select name="sort_order">
            <option value="desc">Descending</option>
            <option value="asc">Ascending</option>
          </select>
        </label>
      </form>
      <Table id="projects" caption="Projects" columns={['Name', 'Programs', 'Proofs run', 'Last active', 'Created by']} />
      <Pager id="projects-pager" />
    </Layout>,
  ),
);

consolePages.get('/projects/:id', (c) =>
  c.html(
    <Layout page="project" title="Project">
      <dl id="project-facts" class="facts"></dl>
      <h2>Programs</h2>
      <Table id="programs" caption="Programs of the project" columns={['Name', 'Status', 'Proofs run', 'Created', 'Created by']} />
      <Pager id="programs-pager" />
    </Layout>,
  ),
);

consolePages.get('/programs/:id', (c) =>
  c.html(
    <Layout page="program" title="Program">
      <dl id="program-facts" class="facts"></dl>
      <h2>Proofs</h2>
      <Table id="proofs" caption="Proofs of the program" columns={['Proof', 'State', 'Type', 'Created', 'Cost (USD)']} />
      <Pager id="proofs-pager" />
      <h2>Executions</h2>
      <Table id="executions" caption="Executions of the program" columns={['Execution', 'Status', 'Mode', 'Created', 'Instructions']} />
    </Layout>,
  ),
);

consolePages.get('/proofs', (c) =>
  c.html(
    <Layout page="proofs" title="Proofs">
      <form id="filters" class="filters" role="search">
        <label>
          Search
          <input type="search" name="search" placeholder="Proof id, program or creator" />
        </label>
        <label>
          State
          <select name="state">
            <option value="">Any</option>
            {PROOF_STATES.map((s) => (
              <option value={s}>{s}</option>
            ))}
          </select>
        </label>
        <DateRange />
      </form>
      <Table id="proofs" caption="Proofs" columns={['Proof', 'Program', 'State', 'Created', 'Cost (USD)']} />
      <Pager id="proofs-pager" />
    </Layout>,
  ),
);

consolePages.get('/proofs/:id', (c) =>
  c.html(
    <Layout page="proof" title="Proof">
      <ol id="timeline" class="timeline" aria-label="Proof state"></ol>
      <dl id="proof-facts" class="facts"></dl>
      <div class="actions">
        <span id="downloads"></span>
        <button type="button" id="cancel" class="danger" hidden>
          Cancel proof
        </button>
      </div>
      <h2 id="logs-heading">Logs</h2>
      <label class="inline">
        <input type="checkbox" id="follow" checked /> Follow while running
      </label>
      <pre id="logs" class="logs" tabindex={0} aria-labelledby="logs-heading" aria-live="off"></pre>
    </Layout>,
  ),
);

consolePages.get('/keys', (c) =>
  c.html(
    <Layout page="keys" title="API keys">
      <form id="key-form" class="filters card">
        <label>
          Name (optional)
          <input type="text" name="name" maxlength={100} placeholder="e.g. CI" />
        </label>
        <button type="submit">Create API key</button>
      </form>
      <div id="new-key" class="card notice" hidden>
        <p>
          <strong>Copy this key now:</strong> it is not shown again.
        </p>
        <p class="secret">
          <code id="new-key-value"></code>{' '}
          <button type="button" id="copy-key" class="ghost">
            Copy
          </button>
        </p>
      </div>
      <Table id="keys" caption="API keys" columns={['Name', 'Prefix', 'Created', 'Last used', '']} />
    </Layout>,
  ),
);

/** Which events an endpoint gets: all (including ones added later), or the ones ticked. */
const EventChoice = ({ prefix }: { prefix: string }) => (
  <fieldset class="events">
    <legend>Events</legend>
    <label class="inline">
      <input type="radio" name="scope" value="all" checked /> All events, including ones added later
    </label>
    <label class="inline">
      <input type="radio" name="scope" value="some" /> Only these:
    </label>
    <div class="event-list" id={`${prefix}-events`}>
      {WEBHOOK_EVENTS.map((e) => (
        <label class="inline">
          <input type="checkbox" name="events" value={e} /> <code>{e}</code>
        </label>
      ))}
    </div>
  </fieldset>
);

consolePages.get('/webhooks', (c) =>
  c.html(
    <Layout page="webhooks" title="Webhooks">
      <p class="lead">
        Signed HTTP POSTs (Standard Webhooks) when programs, proofs, executions and verifications finish. Verify each with your endpoint’s secret;
        deduplicate on <code>webhook-id</code>.
      </p>
      <form id="webhook-form" class="card stack" hidden>
        <label>
          Endpoint URL
          <input type="url" name="url" required maxlength={2048} placeholder="https://example.com/hooks/proving" />
        </label>
        <label>
          Description (optional)
          <input type="text" name="description" maxlength={256} />
        </label>
        <EventChoice prefix="new" />
        <button type="submit">Add endpoint</button>
      </form>
      <div id="new-secret" class="card notice" hidden>
        <p>
          <strong>Copy this signing secret now:</strong> it is not shown again (rotating it makes a new one).
        </p>
        <p class="secret">
          <code id="new-secret-value"></code>{' '}
          <button type="button" id="copy-secret" class="ghost">
            Copy
          </button>
        </p>
      </div>
      <Table id="webhooks" caption="Webhook endpoints" columns={['URL', 'Events', 'Status', 'Created', 'Created by']} />
      <Pager id="webhooks-pager" />
    </Layout>,
  ),
);

consolePages.get('/webhooks/:id', (c) =>
  c.html(
    <Layout page="webhook" title="Webhook endpoint">
      <dl id="webhook-facts" class="facts"></dl>
      <div class="actions" id="webhook-actions" hidden>
        <button type="button" id="send-test">
          Send test event
        </button>
        <button type="button" id="toggle-disabled" class="ghost">
          Disable
        </button>
        <button type="button" id="rotate-secret" class="ghost">
          Rotate secret
        </button>
        <button type="button" id="delete-webhook" class="danger">
          Delete endpoint
        </button>
      </div>
      <div id="new-secret" class="card notice" hidden>
        <p>
          <strong>Copy the new signing secret now:</strong> it is not shown again. For 24 hours deliveries are signed with the previous secret too.
        </p>
        <p class="secret">
          <code id="new-secret-value"></code>{' '}
          <button type="button" id="copy-secret" class="ghost">
            Copy
          </button>
        </p>
      </div>
      <details id="webhook-edit-box" hidden>
        <summary>Edit</summary>
        <form id="webhook-edit" class="card stack">
          <label>
            Endpoint URL
            <input type="url" name="url" required maxlength={2048} />
          </label>
          <label>
            Description
            <input type="text" name="description" maxlength={256} />
          </label>
          <EventChoice prefix="edit" />
          <button type="submit">Save</button>
        </form>
      </details>
      <h2>Deliveries</h2>
      <form id="filters" class="filters">
        <label>
          Status
          <select name="status">
            <option value="">Any</option>
            <option value="pending">pending</option>
            <option value="delivered">delivered</option>
            <option value="failed">failed</option>
          </select>
        </label>
        <button type="button" id="refresh" class="ghost">
          Refresh
        </button>
      </form>
      <Table id="deliveries" caption="Deliveries, newest first" columns={['Event', 'Status', 'Created', 'Attempts', '']} />
      <Pager id="deliveries-pager" />
    </Layout>,
  ),
);

consolePages.get('/members', (c) =>
  c.html(
    <Layout page="members" title="Members">
      <section id="members-section">
        <Table id="members" caption="Members" columns={['Email', 'Name', 'Role', 'Joined', '']} />
        <h2>Invite</h2>
        <form id="invite-create" class="filters card">
          <label>
            Email
            <input type="email" name="email" required />
          </label>
          <label>
            Role
            <select name="role">
              <option value="member">member</option>
              <option value="admin">admin</option>
              <option value="owner">owner</option>
            </select>
          </label>
          <button type="submit">Create invite link</button>
        </form>
        <div id="invite-link" class="card notice" hidden>
          <p>Send this link to the person you invite (it works once, for 7 days):</p>
          <p class="secret">
            <code id="invite-link-value"></code>{' '}
            <button type="button" id="copy-invite" class="ghost">
              Copy
            </button>
          </p>
        </div>
        <h2>Pending invitations</h2>
        <Table id="invites" caption="Pending invitations" columns={['Email', 'Role', 'Invited by', 'Expires', '']} />
        <h2>Audit log</h2>
        <Table id="audit" caption="Audit log" columns={['When', 'Who', 'What', 'Target']} />
        <Pager id="audit-pager" />
      </section>
    </Layout>,
  ),
);

consolePages.get('/usage', (c) =>
  c.html(
    <Layout page="usage" title="Usage" chart>
      <form id="filters" class="filters">
        <DateRange />
      </form>
      <dl id="usage-totals" class="facts"></dl>
      <figure class="chart">
        <div id="usage-chart" role="img" aria-label="Proofs and cost per day"></div>
        <figcaption>Proofs (bars) and cost in USD (line) per day, UTC</figcaption>
      </figure>
      <h2>Per day</h2>
      <Table id="usage-days" caption="Usage per day" columns={['Day', 'Proofs', 'Instructions', 'GPU-hours', 'Cost (USD)']} />
      <h2>Per project</h2>
      <Table id="usage-projects" caption="Usage per project" columns={['Project', 'Proofs', 'Instructions', 'GPU-hours', 'Cost (USD)']} />
    </Layout>,
  ),
);

consolePages.get('/fleet', (c) =>
  c.html(
    <Layout page="fleet" title="Fleet">
      <dl id="fleet-facts" class="facts"></dl>
      <h2>Agents seen in the last day</h2>
      <Table id="agents" caption="Agents" columns={['Name', 'Machine type', 'GPUs', 'Engines', 'Configs', 'Last seen']} />
      <h2>Queued jobs</h2>
      <Table id="queue" caption="Queued jobs by engine and config" columns={['Engine', 'Config', 'Jobs', 'Oldest queued', 'Age']} />
    </Layout>,
  ),
);
