// Sign-in throttling in D1: failed attempts counted per account (the email) and per
// client (its address), each in a fixed window. A key over its limit is refused with
// 429 before any password is hashed. D1 rather than a Rate Limiting binding: the count
// must be exact per account across every location, and failures only count.
import { eq, sql } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { signinThrottle } from '../db/schema.ts';
import { ApiError } from './errors.ts';

export const SIGNIN_WINDOW_MS = 15 * 60 * 1000;
export const MAX_FAILURES_PER_ACCOUNT = 5;
export const MAX_FAILURES_PER_CLIENT = 20;

export const accountKey = (email: string) => `account:${email}`;
export const clientKey = (client: string) => `client:${client}`;

/** Seconds until `key` may try again, or 0 when it may now. */
export async function throttledFor(db: Db, key: string, limit: number, now = Date.now()): Promise<number> {
  const row = await db.select().from(signinThrottle).where(eq(signinThrottle.key, key)).get();
  if (!row || row.window_started_at + SIGNIN_WINDOW_MS <= now || row.failures < limit) return 0;
  return Math.ceil((row.window_started_at + SIGNIN_WINDOW_MS - now) / 1000);
}

/** Counts one failure against each key, starting a new window where the old one ended. */
export async function recordFailure(db: Db, keys: string[], now = Date.now()): Promise<void> {
  const expired = now - SIGNIN_WINDOW_MS;
  await db.batch(
    keys.map((key) =>
      db
        .insert(signinThrottle)
        .values({ key, failures: 1, window_started_at: now })
        .onConflictDoUpdate({
          target: signinThrottle.key,
          set: {
            failures: sql`CASE WHEN ${signinThrottle.window_started_at} <= ${expired} THEN 1 ELSE ${signinThrottle.failures} + 1 END`,
            window_started_at: sql`CASE WHEN ${signinThrottle.window_started_at} <= ${expired} THEN ${now} ELSE ${signinThrottle.window_started_at} END`,
          },
        }),
    ) as [any, ...any[]],
  );
}

/** A successful sign-in clears the account's count (not the client's). */
export async function clearFailures(db: Db, key: string): Promise<void> {
  await db.delete(signinThrottle).where(eq(signinThrottle.key, key));
}

/**
 * The keys a password check by `email` from `client` counts against; throws 429 when
 * either is over its limit. Every route that checks a password goes through this.
 */
export async function passwordAttemptKeys(db: Db, email: string, client: string | undefined): Promise<string[]> {
  const keys = [accountKey(email), clientKey(client ?? 'local')];
  const wait = Math.max(await throttledFor(db, keys[0]!, MAX_FAILURES_PER_ACCOUNT), await throttledFor(db, keys[1]!, MAX_FAILURES_PER_CLIENT));
  if (wait > 0) throw new ApiError(429, 'Too many failed sign-ins: try again later', { 'Retry-After': String(wait) });
  return keys;
}
