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

/** One attempt's answer: a 2xx read by the caller's `read`, or another status with its body's text. */
type Answer<T> = { ok: true; value: T } | { ok: false; res: Response; body: string };

/**
 * One fetch() and the read of its answer, ended by the time limit or by `stop`, whatever
 * the HTTP client does with its signal. Node's fetch (undici) follows a request's signal
 * through weak references, and can lose it to a garbage collection (nodejs/node#55428,
 * nodejs/undici#4068): a request or a body the service never finished then waited
 * forever, and an agent asked to stop never did (stop 36's CI: no exit 45 s after
 * SIGTERM, nothing sent). The wait is raced against a timer and `stop`, listened to here
 * (on signals held strongly: the caller's, and the timer's own); the signal given to
 * fetch still asks the client to drop the connection. A response handed back unread
 * (`keepLimit`: a download streams it) stays under the time limit through that signal,
 * as before: its timer is left to run, unref'd.
 */
function fetchWithin<T>(
  url: string,
  init: RequestInit,
  timeoutMs: number,
  stop: AbortSignal | undefined,
  read: (res: Response) => Promise<T> | T,
  keepLimit: boolean,
): Promise<Answer<T>> {
  if (stop?.aborted) return Promise.reject(stop.reason);
  const limit = new AbortController();
  const timer = setTimeout(() => limit.abort(new DOMException(`no answer within ${timeoutMs} ms`, 'TimeoutError')), timeoutMs);
  timer.unref();
  const ends = stop ? [stop, limit.signal] : [limit.signal];
  return new Promise<Answer<T>>((resolve, reject) => {
    const settled = () => ends.forEach((s) => s.removeEventListener('abort', ended));
    const ended = (e: Event) => (settled(), reject((e.target as AbortSignal).reason));
    for (const s of ends) s.addEventListener('abort', ended, { once: true });
    fetch(url, { ...init, signal: ends.length > 1 ? AbortSignal.any(ends) : limit.signal })
      .then(async (res): Promise<Answer<T>> =>
        res.ok ? { ok: true, value: await read(res) } : { ok: false, res, body: await res.text().catch(() => '') },
      )
      .then(
        (answer) => {
          settled();
          if (!keepLimit || !answer.ok) clearTimeout(timer);
          resolve(answer);
        },
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
 * re-created (a file stream cannot be sent twice). Resolves with a 2xx response, its
 * body for the caller to read (a stream: a download); fetchJson reads it within the attempt.
 */
export function fetchWithRetry(
  url: string,
  makeInit: () => RequestInit,
  what: string,
  policy: RetryPolicy = DEFAULT_RETRY,
): Promise<Response> {
  return withRetries(url, makeInit, what, policy, (res) => res, true);
}

/** fetchWithRetry() of a JSON answer, read within each attempt's time limit (a body that stalls is retried like a request that did). */
export function fetchJson<T>(url: string, makeInit: () => RequestInit, what: string, policy: RetryPolicy = DEFAULT_RETRY): Promise<T> {
  return withRetries(url, makeInit, what, policy, (res) => res.json() as Promise<T>, false);
}

async function withRetries<T>(
  url: string,
  makeInit: () => RequestInit,
  what: string,
  policy: RetryPolicy,
  read: (res: Response) => Promise<T> | T,
  keepLimit: boolean,
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    policy.signal?.throwIfAborted();
    let reason: string;
    let retryAfterMs: number | undefined;
    try {
      const stop = policy.finishInFlight ? undefined : policy.signal;
      const answer = await fetchWithin(url, makeInit(), policy.timeoutMs, stop, read, keepLimit);
      if (answer.ok) return answer.value;
      const { res, body } = answer;
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
