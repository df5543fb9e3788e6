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
// a list of results in the same order.
import type { BatchItem } from 'drizzle-orm/batch';
import type { Db } from './client.ts';

export type Statement = BatchItem<'sqlite'>;

/** What a record of statements may hold under a name: one statement, a group, or nothing. */
export type Step = Statement | readonly Statement[] | undefined;

/** The result of one statement: what awaiting its builder gives (rows for a select or a returning). */
type ResultOf<S> = S extends readonly (infer T)[] ? Awaited<T>[] : S extends undefined ? undefined : Awaited<S>;

export type BatchResults<T extends Record<string, Step>> = { [K in keyof T]: ResultOf<T[K]> };

/**
 * Runs the record's statements in one batch, in the record's order (a batch runs in
 * order, so a later statement sees an earlier one's writes), and answers their results
 * by the same names.
 */
export async function batchByName<T extends Record<string, Step>>(db: Db, steps: T): Promise<BatchResults<T>> {
  const flat: Statement[] = [];
  const places: [name: string, from: number, count: number | null][] = [];
  for (const [name, step] of Object.entries(steps)) {
    if (step === undefined) places.push([name, flat.length, 0]);
    else if (Array.isArray(step)) {
      places.push([name, flat.length, step.length]);
      flat.push(...(step as readonly Statement[]));
    } else {
      places.push([name, flat.length, null]);
      flat.push(step as Statement);
    }
  }
  // D1 refuses an empty batch; a record with nothing to run answers without a round trip.
  const results: unknown[] = flat.length ? await db.batch(flat as [Statement, ...Statement[]]) : [];
  const named: Record<string, unknown> = {};
  for (const [name, from, count] of places) {
    if (count === null) named[name] = results[from];
    else if (count === 0 && steps[name] === undefined) named[name] = undefined;
    else named[name] = results.slice(from, from + count);
  }
  return named as BatchResults<T>;
}
