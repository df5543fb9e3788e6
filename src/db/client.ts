// The D1 database as drizzle sees it, plainly or through a D1 session (read replicas).
import { drizzle, type DrizzleD1Database } from 'drizzle-orm/d1';

export type Db = DrizzleD1Database;

/** drizzle over the binding itself (no session): every query goes to the primary. */
export function openDb(d1: D1Database | D1DatabaseSession): Db {
  // A session has the binding's prepare() and batch(), all drizzle calls. No schema is
  // passed: nothing uses relational queries (db.query.*), and with one drizzle walks
  // every table to build their relations on each call, here once per request: about a
  // sixth of the Worker's CPU under bench:dispatch.
  return drizzle(d1 as D1Database);
}
