// Small pieces several pages share.
import type { Child } from 'hono/jsx';
import { NONE, shownChild } from './format.ts';
import { WEBHOOK_EVENTS } from './states.ts';

/** A state, status or result as a coloured pill (console.css colours it by name); it reads `label`, or the state. */
export const StateBadge = ({ state, label = state, id }: { state: string; label?: string; id?: string }) => (
  <span id={id} class={`state ${state}`}>
    {label}
  </span>
);

export type Fact = readonly [label: string, value: Child];

/**
 * A grey bar where a value will be, while it loads; `size` 1 to 4, short to long (classes,
 * not a style attribute: the pages' CSP allows no inline style).
 */
export const Skeleton = ({ size }: { size: number }) => <span class={`skeleton s${size}`} aria-hidden="true" />;

/** How many lines a list or a record shows while it loads. */
export const LOADING_LINES = 4;

/** A record's facts as a definition list; grey bars until loaded. */
export const Facts = ({ id, facts }: { id: string; facts?: readonly Fact[] }) =>
  facts ? (
    <dl id={id} class="facts">
      {facts.map(([label, value]) => (
        <>
          <dt>{label}</dt>
          <dd>{shownChild(value ?? NONE)}</dd>
        </>
      ))}
    </dl>
  ) : (
    <dl id={id} class="facts" aria-busy="true" aria-label="Loading">
      {Array.from({ length: LOADING_LINES }, (_, i) => (
        <>
          <dt>
            <Skeleton size={2} />
          </dt>
          <dd>
            <Skeleton size={(i % 3) + 2} />
          </dd>
        </>
      ))}
    </dl>
  );

/**
 * A command to copy and run, with a Copy button (the client copies the code of any
 * `[data-copy]` button's snippet: src/console/client/main.tsx).
 */
export const Snippet = ({ label, code }: { label: Child; code: string }) => (
  <figure class="snippet">
    <figcaption>{label}</figcaption>
    <pre>
      <code>{code}</code>
    </pre>
    <button type="button" class="ghost" data-copy="snippet">
      Copy
    </button>
  </figure>
);

/** What an empty list means and the next step: what to do, and the command to do it with. */
export const EmptyState = ({ id, title, children }: { id?: string; title: string; children?: Child }) => (
  <div id={id} class="empty-state">
    <p class="empty-title">{title}</p>
    {children}
  </div>
);

/** Something this page cannot show this person, and why, in words (not an error: nothing went wrong). */
export const Notice = ({ id, title, children }: { id?: string; title: string; children?: Child }) => (
  <div id={id} class="card notice" role="note">
    <p class="empty-title">{title}</p>
    {children}
  </div>
);

/** A page that could not load: what went wrong, in words, and (when it may help) a way to try again. */
export const ErrorState = ({ title, text, onRetry, back }: { title: string; text: string; onRetry?: () => void; back?: Child }) => (
  <div id="error-state" class="card error-state" role="alert">
    <p class="empty-title">{title}</p>
    <p>{text}</p>
    <p class="actions">
      {onRetry && (
        <button type="button" id="retry" onClick={onRetry}>
          Try again
        </button>
      )}
      {back}
    </p>
  </div>
);

/** From/to date fields of a filter form (the API's `from` and `to`). */
export const DateRange = ({ from, to }: { from?: string; to?: string }) => (
  <>
    <label>
      From
      <input type="date" name="from" value={from} />
    </label>
    <label>
      To
      <input type="date" name="to" value={to} />
    </label>
  </>
);

/**
 * A value shown once (an API key, a signing secret, an invitation link), with a copy
 * button; hidden until there is one.
 */
export const ShownOnce = ({ id, lead, value, onCopy }: { id: string; lead: Child; value?: string; onCopy?: () => void }) => (
  <div id={id} class="card notice" hidden={!value}>
    <p>{lead}</p>
    <p class="secret">
      <code id={`${id}-value`}>{value}</code>{' '}
      <button type="button" class="ghost" onClick={onCopy}>
        Copy
      </button>
    </p>
  </div>
);

/**
 * Which events an endpoint gets: all (including ones added later), or the ones ticked.
 * `events` sets the choice (null: all); without it the form starts at "all".
 */
export const EventChoice = ({ prefix, events }: { prefix: string; events?: readonly string[] | null }) => (
  <fieldset class="events">
    <legend>Events</legend>
    <label class="inline">
      <input type="radio" name="scope" value="all" checked={!events} /> All events, including ones added later
    </label>
    <label class="inline">
      <input type="radio" name="scope" value="some" checked={!!events} /> Only these:
    </label>
    <div class="event-list" id={`${prefix}-events`}>
      {WEBHOOK_EVENTS.map((e) => (
        <label class="inline">
          <input type="checkbox" name="events" value={e} checked={!!events?.includes(e)} /> <code>{e}</code>
        </label>
      ))}
    </div>
  </fieldset>
);
