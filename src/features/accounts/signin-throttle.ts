// Sign-in throttling in D1: password checks counted per account (the email) and per
// client (its address), each in a fixed window. A check is reserved before the password
// is hashed, by one statement that counts it only while both keys are under their limits
// (so no number of simultaneous requests gets more checks evaluated than the limits allow);
// without a reservation the answer is 429 and no password is hashed. A check that succeeds
// gives its reservations back (the account's count is cleared, the client's decremented),
// so only failures and checks still running hold places. D1 rather than a Rate Limiting
// binding: the count must be exact per account across every location.
import { and, eq, gt, gte, or, sql } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { signinThrottle } from '../../db/schema.ts';
import { ApiError } from '../../lib/errors.ts';

export const SIGNIN_WINDOW_MS = 15 * 60 * 1000;
export const MAX_FAILURES_PER_ACCOUNT = 5;
export const MAX_FAILURES_PER_CLIENT = 20;

export const accountKey = (email: string) => `account:${email}`;
export const clientKey = (client: string) => `client:${client}`;

/** The keys a password check by `email` from `client` counts against. */
export interface AttemptKeys {
  account: string;
  client: string;
}

/**
 * Reserves one password check by `email` from `client` against both its keys, or throws
 * 429 with Retry-After. One INSERT ... SELECT ... ON CONFLICT: its SELECT reads both rows
 * before it writes either (SQLite materializes a SELECT that reads the table it inserts
 * into), so both places are taken or neither; a key whose window ended starts a new one.
 * Every route that checks a password goes through this before hashing anything.
 */
export async function reservePasswordAttempt(db: Db, email: string, client: string | undefined, now = Date.now()): Promise<AttemptKeys> {
  const keys: AttemptKeys = { account: accountKey(email), client: clientKey(client ?? 'local') };
  const expired = now - SIGNIN_WINDOW_MS;
  const live = gt(signinThrottle.window_started_at, expired);
  const full = db
    .select({ one: sql`1` })
    .from(signinThrottle)
    .where(
      and(
        live,
        or(
          and(eq(signinThrottle.key, keys.account), gte(signinThrottle.failures, MAX_FAILURES_PER_ACCOUNT)),
          and(eq(signinThrottle.key, keys.client), gte(signinThrottle.failures, MAX_FAILURES_PER_CLIENT)),
        ),
      ),
    );
  const { reserved, counts } = await batchByName(db, {
    reserved: db
      .insert(signinThrottle)
      .select(sql`SELECT column1, 1, ${now} FROM (VALUES (${keys.account}), (${keys.client})) WHERE NOT EXISTS ${full}`)
      .onConflictDoUpdate({
        target: signinThrottle.key,
        set: {
          failures: sql`CASE WHEN ${signinThrottle.window_started_at} <= ${expired} THEN 1 ELSE ${signinThrottle.failures} + 1 END`,
          window_started_at: sql`CASE WHEN ${signinThrottle.window_started_at} <= ${expired} THEN ${now} ELSE ${signinThrottle.window_started_at} END`,
        },
      })
      .returning({ key: signinThrottle.key }),
    // Read in the same round trip, for Retry-After when nothing was reserved.
    counts: db
      .select()
      .from(signinThrottle)
      .where(and(live, or(eq(signinThrottle.key, keys.account), eq(signinThrottle.key, keys.client)))),
  });
  // Both places taken (the statement takes both or neither).
  if (reserved.length === 2) return keys;
  const ends = counts
    .filter((r) => r.failures >= (r.key === keys.account ? MAX_FAILURES_PER_ACCOUNT : MAX_FAILURES_PER_CLIENT))
    .map((r) => r.window_started_at + SIGNIN_WINDOW_MS);
  const wait = Math.max(1, Math.ceil((Math.max(now, ...ends) - now) / 1000));
  throw new ApiError(429, 'Too many failed sign-ins: try again later', { 'Retry-After': String(wait) });
}

/**
 * A check that succeeded gives its places back: the account's count is cleared, the
 * client's decremented (in the same window), so people signing in from one address do
 * not use up its allowance. Only a successful check does this, so failures stay bounded.
 */
export async function passwordAccepted(db: Db, keys: AttemptKeys, now = Date.now()): Promise<void> {
  await batchByName(db, {
    account: db.delete(signinThrottle).where(eq(signinThrottle.key, keys.account)),
    client: db
      .update(signinThrottle)
      .set({ failures: sql`max(${signinThrottle.failures} - 1, 0)` })
      .where(and(eq(signinThrottle.key, keys.client), gt(signinThrottle.window_started_at, now - SIGNIN_WINDOW_MS))),
  });
}
