// What went wrong, in words a person can act on, and whether trying again may help:
// the browser's "Failed to fetch" and a bare "Internal Server Error" say neither.
import { ApiError } from './http.ts';

export interface Described {
  text: string;
  /** Trying the same again may work (the network, the server, a rate limit); a refusal stays one. */
  retryable: boolean;
}

/** The generic answers the server gives when it has nothing more to say (src/lib/errors.ts onError, Hono's defaults). */
const BARE = new Set(['Internal Server Error', 'Not Found', 'Bad Gateway', 'Service Unavailable']);

export function describe(err: unknown): Described {
  if (err instanceof ApiError) {
    const said = err.detail && !BARE.has(err.detail) ? err.detail : undefined;
    if (err.status === 429) return { text: `${said ?? 'Too many requests'}. Wait a moment, then try again.`, retryable: true };
    if (err.status >= 500)
      return {
        text: said
          ? `${said} (HTTP ${err.status}).`
          : `The service failed to answer (HTTP ${err.status}). Try again; if it keeps failing, tell the service’s operator.`,
        retryable: true,
      };
    // A record's bare 404 ("Proof not found", src/lib/errors.ts notFound) says what it may mean.
    if (err.status === 404 && (!said || said.endsWith(' not found')))
      return { text: `${said ?? 'Not found'}: it may have been deleted, or belong to another organization.`, retryable: false };
    return { text: said ?? `The service refused this (HTTP ${err.status}).`, retryable: false };
  }
  // fetch() rejects with a TypeError ("Failed to fetch") when no answer came at all.
  if (err instanceof TypeError)
    return {
      text: 'The service could not be reached: the network or the server is down. Check the connection, then try again.',
      retryable: true,
    };
  return { text: err instanceof Error ? err.message : String(err), retryable: false };
}
