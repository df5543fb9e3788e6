// Hooks the pages share.
import { useEffect, useRef, useState } from 'hono/jsx/dom';
import type { Page } from '../ui/api-types.ts';
import { attempt } from './chrome.ts';
import { withParams } from './dom.ts';

/** The query of a list's first page, with these parameters. */
export const firstPage = (params: Record<string, string> = {}) => new URLSearchParams({ ...params, page: '1' });

/** A ref that always holds the latest value, for callbacks that outlive a render (timers, loops). */
export function useLatest<T>(value: T) {
  const ref = useRef(value);
  ref.current = value;
  return ref;
}

/**
 * A paged list: `go(page)` loads a page with the current filters, `refilter(filters)`
 * the first page with new ones. Both throw; `onPage` (for the pager) says what failed.
 */
export function usePaged<T>(initial: Page<T>, fetchPage: (query: URLSearchParams) => Promise<Page<T>>) {
  const [list, setList] = useState(initial);
  const filters = useRef(new URLSearchParams());
  const go = async (page: number) => setList(await fetchPage(withParams(filters.current, { page })));
  const refilter = (query: URLSearchParams) => {
    filters.current = query;
    return go(1);
  };
  return { list, go, refilter, onPage: (page: number) => void attempt(() => go(page)) };
}

/** `fn`, called once input has paused for `ms` (typing in a search field). */
export function useDebounced<A extends unknown[]>(fn: (...args: A) => void, ms = 250) {
  const latest = useLatest(fn);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  return (...args: A) => {
    clearTimeout(timer.current);
    timer.current = setTimeout(() => latest.current(...args), ms);
  };
}

/** Calls `fn` every `ms` while the page is visible (the latest `fn` of each render). */
export function useInterval(fn: () => void, ms: number) {
  const latest = useLatest(fn);
  useEffect(() => {
    const timer = setInterval(() => !document.hidden && latest.current(), ms);
    return () => clearInterval(timer);
  }, [ms]);
}
