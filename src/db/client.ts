// The D1 database as drizzle sees it, plainly or through a D1 session (read replicas).
import { drizzle } from 'drizzle-orm/d1';
import * as schema from './schema.ts';

export type Db = ReturnType<typeof drizzle<typeof schema>>;

/** drizzle over the binding itself (no session): every query goes to the primary. */
export function openDb(d1: D1Database | D1DatabaseSession): Db {
  // A session has the binding's prepare() and batch(), all drizzle calls.
  return drizzle(d1 as D1Database, { schema });
}
