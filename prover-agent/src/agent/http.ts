// HTTP with the agent's retry policy: network errors, 429 and 5xx are retried with
// exponential backoff and full jitter (honouring Retry-After); any other 4xx is
// final and surfaces as HttpError. Used by both the service client and the queue client.
import { setTimeout as sleep } from 'node:timers/promises';

export class HttpError extends Error {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string, what: string) {
    super(`${what}: HTTP ${status}${body ? `: ${body.slice(0, 500)}` : ''}`);
    this.status = status;
    this.body = body;
  }
}

export interface RetryPolicy {
  /** Attempts in all; Infinity to keep trying until `signal` aborts. */
  attempts: number;
  baseDelayMs: number;
  maxDelayMs: number;
  /** Per-attempt time limit. */
  timeoutMs: number;
  /** Stops the retries; also aborts a request in flight unless `finishInFlight`. */
  signal?: AbortSignal;
  /**
   * Let a request already sent finish after `signal` aborts (no retry follows): for
   * requests whose effect the service commits, such as a claim, whose answer must not
   * be lost with the job it leased.
   */
  finishInFlight?: boolean;
  /** Told about each retry (for logs and metrics). */
  onRetry?: (info: { attempt: number; delayMs: number; reason: string }) => void;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 8, baseDelayMs: 250, maxDelayMs: 15_000, timeoutMs: 60_000 };

const retryable = (status: number) => status === 429 || status >= 500;

/**
 * One fetch() that ends by its time limit, or by `stop`, whatever the HTTP client does
 * with its signal. Node's fetch (undici) follows a request's signal through weak
 * references, and can lose it to a garbage collection (nodejs/node#55428,
 * nodejs/undici#4068): a request the service never answered then waited forever, and an
 * agent asked to stop never did (stop 36's CI: no exit 45 s after SIGTERM, nothing sent).
 * The wait is raced against a timer and `stop`, listened to here (on signals held
 * strongly: the caller's, and the timer's own); the signal given to fetch still asks the
 * client to drop the connection. The time limit goes on covering the body's read, as
 * the signal's did (its timer is left to run, unref'd, once headers came).
 */
function fetchWithin(url: string, init: RequestInit, timeoutMs: number, stop?: AbortSignal): Promise<Response> {
  if (stop?.aborted) return Promise.reject(stop.reason);
  const limit = new AbortController();
  const timer = setTimeout(() => limit.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  timer.unref();
  const ends = stop ? [stop, limit.signal] : [limit.signal];
  return new Promise<Response>((resolve, reject) => {
    const settled = () => ends.forEach((s) => s.removeEventListener('abort', ended));
    const ended = (e: Event) => (settled(), reject((e.target as AbortSignal).reason));
    for (const s of ends) s.addEventListener('abort', ended, { once: true });
    fetch(url, { ...init, signal: ends.length > 1 ? AbortSignal.any(ends) : limit.signal }).then(
      (res) => (settled(), resolve(res)),
      (err: unknown) => (settled(), clearTimeout(timer), reject(err)),
    );
  });
}

/** Full-jitter backoff: uniform in [0, min(max, base * 2^attempt)]. */
export function backoffDelay(attempt: number, p: Pick<RetryPolicy, 'baseDelayMs' | 'maxDelayMs'>, random = Math.random): number {
  return Math.round(random() * Math.min(p.maxDelayMs, p.baseDelayMs * 2 ** attempt));
}

/**
 * fetch() with the retry policy. `makeInit` is called per attempt so a body can be
 * re-created (a file stream cannot be sent twice). Resolves with a 2xx response.
 */
export async function fetchWithRetry(
  url: string,
  makeInit: () => RequestInit,
  what: string,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    policy.signal?.throwIfAborted();
    let reason: string;
    let retryAfterMs: number | undefined;
    try {
      const res = await fetchWithin(url, makeInit(), policy.timeoutMs, policy.finishInFlight ? undefined : policy.signal);
      if (res.ok) return res;
      const body = await res.text().catch(() => '');
      if (!retryable(res.status)) throw new HttpError(res.status, body, what);
      reason = `HTTP ${res.status}`;
      const ra = Number(res.headers.get('retry-after'));
      if (Number.isFinite(ra) && ra > 0) retryAfterMs = ra * 1000;
    } catch (err) {
      if (err instanceof HttpError) throw err;
      if (policy.signal?.aborted) throw policy.signal.reason ?? err;
      reason =
        err instanceof Error
          ? `${err.name}: ${err.message}${err.cause ? ` (${String((err.cause as Error).message ?? err.cause)})` : ''}`
          : String(err);
    }
    if (attempt + 1 >= policy.attempts) throw new Error(`${what}: gave up after ${attempt + 1} attempts (${reason})`);
    const delayMs = Math.max(retryAfterMs ?? 0, backoffDelay(attempt, policy));
    policy.onRetry?.({ attempt: attempt + 1, delayMs, reason });
    try {
      await sleep(delayMs, undefined, { signal: policy.signal });
    } catch (err) {
      throw policy.signal?.reason ?? err; // say why we stopped, not just that we did
    }
  }
}
