// Sign-in throttling in D1: password checks counted per account and client (the email
// from one address), per client (its address) and per account (the email, from anywhere),
// each in a fixed window. The first is the lockout: five wrong passwords from one address
// stop that address trying that account, and nobody else. The account's own count is a
// ceiling far above it, the bound on guessing spread over many addresses: reaching it
// stops password sign-in to the account everywhere until the window ends, but never a
// password-reset link (which checks no password), and a completed reset clears every count
// of the account (accountCountsCleared). So a stranger cannot lock the owner out: from
// their own addresses they hold only their own places, and the owner's way back is the
// reset their inbox receives.
//
// A check is reserved before the password is hashed, by one statement that counts it only
// while all three keys are under their limits (so no number of simultaneous requests gets
// more checks evaluated than the limits allow); without a reservation the answer is 429
// and no password is hashed. A check that succeeds gives its reservations back (the
// account-and-client count is cleared, the others decremented), so only failures and
// checks still running hold places. D1 rather than a Rate Limiting binding: the counts
// must be exact per account across every location.
import { and, eq, gt, gte, or, sql } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { signinThrottle } from '../../db/schema.ts';
import { ApiError } from '../../lib/errors.ts';

export const SIGNIN_WINDOW_MS = 15 * 60 * 1000;
/** Failed checks of one account from one client address: the lockout. */
export const MAX_FAILURES_PER_ACCOUNT_AND_CLIENT = 5;
/** Failed checks from one client address, whatever the accounts. */
export const MAX_FAILURES_PER_CLIENT = 20;
/** Failed checks of one account from every address together: the ceiling on spread-out guessing. */
export const MAX_FAILURES_PER_ACCOUNT = 50;

/** The keys a password check by `email` from `client` counts against. */
export interface AttemptKeys {
  email: string;
  pair: string;
  client: string;
  account: string;
}

export function attemptKeys(email: string, client: string | undefined): AttemptKeys {
  const address = client ?? 'local';
  // JSON: an email and an address never run into each other.
  return { email, pair: `pair:${JSON.stringify([email, address])}`, client: `client:${address}`, account: `account:${email}` };
}

const limitOf = (keys: AttemptKeys, key: string) =>
  key === keys.pair ? MAX_FAILURES_PER_ACCOUNT_AND_CLIENT : key === keys.client ? MAX_FAILURES_PER_CLIENT : MAX_FAILURES_PER_ACCOUNT;

/**
 * Reserves one password check by `email` from `client` against its three keys, or throws
 * 429 with Retry-After. One INSERT ... SELECT ... ON CONFLICT: its SELECT reads every row
 * before it writes any (SQLite materializes a SELECT that reads the table it inserts
 * into), so all places are taken or none; a key whose window ended starts a new one.
 * Every route that checks a password goes through this before hashing anything.
 */
export async function reservePasswordAttempt(db: Db, email: string, client: string | undefined, now = Date.now()): Promise<AttemptKeys> {
  const keys = attemptKeys(email, client);
  const expired = now - SIGNIN_WINDOW_MS;
  const live = gt(signinThrottle.window_started_at, expired);
  const full = db
    .select({ one: sql`1` })
    .from(signinThrottle)
    .where(
      and(
        live,
        or(
          ...[keys.pair, keys.client, keys.account].map((key) =>
            and(eq(signinThrottle.key, key), gte(signinThrottle.failures, limitOf(keys, key))),
          ),
        ),
      ),
    );
  const { reserved, counts } = await batchByName(db, {
    reserved: db
      .insert(signinThrottle)
      .select(
        sql`SELECT column1, 1, ${now}, column2 FROM (VALUES (${keys.pair}, ${email}), (${keys.client}, NULL), (${keys.account}, ${email})) WHERE NOT EXISTS ${full}`,
      )
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
      .where(and(live, or(eq(signinThrottle.key, keys.pair), eq(signinThrottle.key, keys.client), eq(signinThrottle.key, keys.account)))),
  });
  // Every place taken (the statement takes all or none).
  if (reserved.length === 3) return keys;
  const ends = counts.filter((r) => r.failures >= limitOf(keys, r.key)).map((r) => r.window_started_at + SIGNIN_WINDOW_MS);
  const wait = Math.max(1, Math.ceil((Math.max(now, ...ends) - now) / 1000));
  throw new ApiError(429, 'Too many failed sign-ins: try again later, or reset your password', { 'Retry-After': String(wait) });
}

/**
 * The statements by which a check that succeeded gives its places back, to batch with
 * what it opens (`when`: only if that happened): the account-and-client count is cleared
 * (that address knows the password), the client's and the account's decremented in the
 * same window, so people signing in from one address do not use up its allowance, and
 * the account's ceiling keeps counting only others' failures. Only a successful check
 * does this, so failures stay bounded.
 */
export function passwordAccepted(db: Db, keys: AttemptKeys, when = sql`1`, now = Date.now()) {
  const inWindow = gt(signinThrottle.window_started_at, now - SIGNIN_WINDOW_MS);
  return {
    pair: db.delete(signinThrottle).where(and(eq(signinThrottle.key, keys.pair), when)),
    others: db
      .update(signinThrottle)
      .set({ failures: sql`max(${signinThrottle.failures} - 1, 0)` })
      .where(and(or(eq(signinThrottle.key, keys.client), eq(signinThrottle.key, keys.account)), inWindow, when)),
  };
}

/** The statement that clears every count of an account (a completed password reset), to batch with it. */
export const accountCountsCleared = (db: Db, email: string, when = sql`1`) =>
  db.delete(signinThrottle).where(and(eq(signinThrottle.account, email), when));
