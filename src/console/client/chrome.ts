// What every page shows above its content and changes from anywhere: the heading (and
// the document's title) and the status line. A small store the root component reads.
import { useSyncExternalStore } from 'hono/jsx/dom';
import type { Status } from '../ui/chrome.tsx';
import { shownText } from '../ui/format.ts';
import { TITLE_SUFFIX } from '../ui/site.ts';
import { describe } from './errors.ts';

interface Chrome {
  heading: string;
  status: Status;
}

/** No heading of its own: the page's title (src/console/ui/site.ts) shows. */
let current: Chrome = { heading: '', status: { text: '', error: false } };
const listeners = new Set<() => void>();

function set(change: Partial<Chrome>) {
  current = { ...current, ...change };
  for (const listener of listeners) listener();
}

const subscribe = (listener: () => void) => {
  listeners.add(listener);
  return () => listeners.delete(listener);
};

export const useChrome = (): Chrome => useSyncExternalStore(subscribe, () => current);

/** Says what happened in the status line. */
export const say = (text: string) => set({ status: { text, error: false } });

/** Says what went wrong in the status line, in words; with `retry`, a Try again button when trying again may help. */
export function fail(err: unknown, retry?: () => void): void {
  const { text, retryable } = describe(err);
  set({ status: { text, error: true, retry: retryable ? retry : undefined } });
}

/** The page's heading, once it knows which record it shows. */
export function setHeading(text: string) {
  // Headings name records: people's text, escaped (src/console/ui/format.ts shownText).
  const heading = shownText(text);
  if (heading === current.heading) return;
  document.title = heading + TITLE_SUFFIX;
  set({ heading });
}

/** Runs an action, saying `done` when it succeeds and what went wrong when it does not (with a way to try it again). */
export async function attempt(action: () => Promise<unknown>, done?: string): Promise<void> {
  try {
    await action();
    // An earlier failure (this action's, retried) is over.
    if (done) say(done);
    else if (current.status.error) say('');
  } catch (err) {
    fail(err, () => void attempt(action, done));
  }
}
