// Tests against the real Rate Limiting binding. Its local windows are the clock's
// minutes (miniflare's ratelimit-object.worker.js: a bucket's epoch is
// floor(now / period)), on the limiter's own clock, which no test can move: a count
// that a turn of the minute splits starts over halfway. So a test that counts up to a
// limit runs in one window (inOneRateWindow), and a test that needs a budget nearly
// spent spends it through the binding itself (spend), a call to the limiter rather than
// a request through the Worker: thousands fit in a window on a loaded host, where
// thousands of requests did not.
import { expect } from 'vitest';

const windowOf = (ms: number) => Math.floor(ms / 60_000);

/**
 * Runs `attempt` until one run of it falls within one window of the limiters (the
 * minute did not turn from its start to its end), and returns what that run returned.
 * A run the minute turned under is run again, whether or not it failed: each run must
 * use keys of its own (a fresh tenant, client address). A run that fails within one
 * window fails the test.
 */
export async function inOneRateWindow<T>(attempt: () => Promise<T>): Promise<T> {
  for (let runs = 0; runs < 5; runs++) {
    const window = windowOf(Date.now());
    let result: T;
    try {
      result = await attempt();
    } catch (err) {
      if (windowOf(Date.now()) === window) throw err;
      continue;
    }
    if (windowOf(Date.now()) === window) return result;
  }
  throw new Error('the minute turned during each of 5 runs: on this host one run takes about a minute');
}

/** Spends `n` of `binding`'s budget for `key` in this window, through the binding itself; each must be granted. */
export async function spend(binding: RateLimit, key: string, n: number): Promise<void> {
  for (let done = 0; done < n;) {
    const batch = Math.min(50, n - done);
    const granted = await Promise.all(Array.from({ length: batch }, () => binding.limit({ key })));
    expect(
      granted.every((g) => g.success),
      `${key}'s budget was not fresh`,
    ).toBe(true);
    done += batch;
  }
}
