// How the console writes values, the one place: dates in the reader's locale, money as
// money (micro-USD on the wire, shown as dollars by Intl.NumberFormat), counts with the
// locale's separators, GPUs as what a job really holds, and a dash for what is not there
// (yet), and people's text escaped. Only the client renders data (the server's page
// shells have none), so every figure is written in the reader's locale.
import type { Child } from 'hono/jsx';
import { gpusUsed, runsOnText } from 'prover-agent/protocol';
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

/** A cell's or a fact's text escaped (shownText); markup escapes its own. */
export const shownChild = (child: Child): Child => (typeof child === 'string' ? shownText(child) : child);

type Maybe<T> = T | null | undefined;
const absent = (v: unknown): v is null | undefined => v === null || v === undefined;

/** Costs, budgets and cost limits are integer micro-USD on the wire (README "Cost"). */
export const MICRO_USD_PER_USD = 1_000_000;
export const usdFromMicro = (micro: number) => micro / MICRO_USD_PER_USD;
/** Dollars typed in a form ('' for none) as micro-USD. */
export const microFromUsd = (usd: string): number | null => (usd.trim() ? Math.round(Number(usd) * MICRO_USD_PER_USD) : null);

const dollars = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD' });
/** Below a cent (dev and small proofs cost fractions of one): enough digits to show it. */
const cents = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', maximumFractionDigits: 6 });
const counts = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const decimals = new Intl.NumberFormat(undefined, { maximumFractionDigits: 3 });

export const formatDate = (iso: Maybe<string>) => (iso ? new Date(iso).toLocaleString() : NONE);

/** Micro-USD as money: $500.00, $0.0001 (a non-zero amount under a cent keeps its digits). */
export function formatUsd(micro: Maybe<number>): string {
  if (absent(micro)) return NONE;
  const usd = usdFromMicro(micro);
  return (usd !== 0 && Math.abs(usd) < 0.01 ? cents : dollars).format(usd);
}

/** A whole count with the locale's separators: 50,000,000. */
export const formatCount = (n: Maybe<number>) => (absent(n) ? NONE : counts.format(n));

/** A measured quantity (GPU-hours, seconds): separators, at most three decimals. */
export const formatAmount = (n: Maybe<number>) => (absent(n) ? NONE : decimals.format(n));

export const formatSeconds = (s: Maybe<number>) => (absent(s) ? NONE : `${decimals.format(s)} s`);

/** "1 job", "2 jobs": a count and its noun, singular or plural. */
export const counted = (n: number, one: string, many = `${one}s`) => `${formatCount(n)} ${n === 1 ? one : many}`;

/** A percentage of a limit, after its figure (none without a limit). */
export const percentOf = (used: number, limit: Maybe<number>) => (limit ? ` (${formatCount(Math.floor((used / limit) * 100))} %)` : '');

/** What a job holding `gpus` runs on, in the service's words: "1 GPU", or "the CPU" (a GPU-less engine's, the dev engine's). */
export const gpusText = runsOnText;

/** What a job of `engine` that asked for `requested` GPUs runs on (prover-agent/protocol gpusUsed): an openvm job asking for 8 holds 1. */
export const jobGpusText = (engine: string, requested: number) => runsOnText(gpusUsed(engine, requested));

/** The first characters of an id, enough to tell records apart on a page. */
export const shortId = (id: string) => id.slice(0, 8);
/** A webhook endpoint's events: `null` means every event, including ones added later. */
export const eventsText = (events: readonly string[] | null) => (events ? events.join(', ') : 'all events');
