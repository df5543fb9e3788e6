// How the console writes values: dates in the reader's locale, micro-USD as dollars,
// counts with separators, a dash for what is not there (yet), and people's text escaped.
import { codePointName, UNSAFE_NAME_CHARACTER } from '../../lib/limits.ts';

export const NONE = '—';

const UNSAFE_NAME_CHARACTERS = new RegExp(UNSAFE_NAME_CHARACTER.source, 'gu');

/**
 * Text people typed (a name, an email, who made a record) as the console shows it: a
 * control or bidirectional formatting character, refused in names now but perhaps stored
 * before, as its code (⟨U+202E⟩), so the text reads as what it holds and cannot turn the
 * text around it. Tables and facts show every string this way (table.tsx, widgets.tsx).
 */
export const shownText = (text: string) => text.replace(UNSAFE_NAME_CHARACTERS, (ch) => `⟨${codePointName(ch)}⟩`);

type Maybe<T> = T | null | undefined;

export const formatDate = (iso: Maybe<string>) => (iso ? new Date(iso).toLocaleString() : NONE);
/** Costs are micro-USD on the wire; dev and small proofs cost fractions of a cent. */
export const formatUsd = (micro: Maybe<number>) => (micro === null || micro === undefined ? NONE : (micro / 1e6).toFixed(4));
export const formatCount = (n: Maybe<number>) => (n === null || n === undefined ? NONE : n.toLocaleString());
/** The first characters of an id, enough to tell records apart on a page. */
export const shortId = (id: string) => id.slice(0, 8);
/** A webhook endpoint's events: `null` means every event, including ones added later. */
export const eventsText = (events: readonly string[] | null) => (events ? events.join(', ') : 'all events');
