// Small pieces several pages share.
import type { Child } from 'hono/jsx';
import { NONE } from './format.ts';
import { shownChild } from './table.tsx';
import { WEBHOOK_EVENTS } from './states.ts';

/** A state, status or result as a coloured pill (console.css colours it by name); it reads `label`, or the state. */
export const StateBadge = ({ state, label = state, id }: { state: string; label?: string; id?: string }) => (
  <span id={id} class={`state ${state}`}>
    {label}
  </span>
);

export type Fact = readonly [label: string, value: Child];

/** A record's facts as a definition list; empty until loaded. */
export const Facts = ({ id, facts }: { id: string; facts?: readonly Fact[] }) => (
  <dl id={id} class="facts">
    {facts?.map(([label, value]) => (
      <>
        <dt>{label}</dt>
        <dd>{shownChild(value ?? NONE)}</dd>
      </>
    ))}
  </dl>
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
