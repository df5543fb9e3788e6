// One D1 batch (one transaction, one round trip) whose statements and results go by
// name. A caller hands a record of statements and reads a record of results:
//
//   const { key, program, usage } = await batchByName(db, { key: keyQuery, program: …, usage: … });
//
// Positions are this module's business alone, so adding a statement never shifts what
// another name reads. A statement that is `undefined` (a step the request does not need,
// such as the re-highlight of a program that did not move) is left out of the batch and
// its result is `undefined`: nobody pads a batch with `SELECT 1` to keep positions.
// Groups (a list of statements under one name, such as one update per job kind) answer
// a list of results in the same order. A part (a record of steps under one name, such as
// a route's statements behind the API key's lookup, src/middleware/auth.ts asCaller)
// answers a record of results by its own names, its statements in the batch where it stands.
import type { BatchItem } from 'drizzle-orm/batch';
import type { Db } from './client.ts';

export type Statement = BatchItem<'sqlite'>;

/** What a record of statements may hold under a name: one statement, a group, a part, or nothing. */
export type Step = Statement | readonly Statement[] | Steps | undefined;

/** A record of steps by name: what batchByName runs, and a part of one. */
export interface Steps {
  readonly [name: string]: Step;
}

/**
 * The result of one step: a statement's, as drizzle types it (rows for a select or a
 * returning); a group's, position by position (a tuple's stay a tuple); a part's, by name.
 */
export type ResultOf<S> = S extends undefined
  ? undefined
  : S extends readonly Statement[]
    ? GroupResults<S>
    : S extends Statement
      ? S['_']['result']
      : S extends Steps
        ? BatchResults<S>
        : never;

/** A group's results, position by position. */
export type GroupResults<S extends readonly Statement[]> = { -readonly [I in keyof S]: S[I]['_']['result'] };

export type BatchResults<T extends Steps> = { [K in keyof T]: ResultOf<T[K]> };

/**
 * Runs the record's statements in one batch, in the record's order (a batch runs in
 * order, so a later statement sees an earlier one's writes), and answers their results
 * by the same names.
 */
export async function batchByName<T extends Steps>(db: Db, steps: T): Promise<BatchResults<T>> {
  const flat: Statement[] = [];
  const read = place(steps, flat);
  // D1 refuses an empty batch; a record with nothing to run answers without a round trip.
  const results: unknown[] = flat.length ? await db.batch(flat as [Statement, ...Statement[]]) : [];
  return read(results) as BatchResults<T>;
}

/** A part is a plain record; a statement is a query builder (an instance of its class). */
const isPart = (step: Step): step is Steps => step !== undefined && Object.getPrototypeOf(step) === Object.prototype;

/** Appends a record's statements to `flat`, in its order; answers how to read their results back by name. */
function place(steps: Steps, flat: Statement[]): (results: unknown[]) => Record<string, unknown> {
  const readers = Object.entries(steps).map(([name, step]): [string, (results: unknown[]) => unknown] => {
    if (step === undefined) return [name, () => undefined];
    const from = flat.length;
    if (Array.isArray(step)) {
      flat.push(...(step as readonly Statement[]));
      return [name, (results) => results.slice(from, from + step.length)];
    }
    if (isPart(step)) return [name, place(step, flat)];
    flat.push(step as Statement);
    return [name, (results) => results[from]];
  });
  return (results) => Object.fromEntries(readers.map(([name, read]) => [name, read(results)]));
}
