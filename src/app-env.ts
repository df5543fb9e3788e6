import type { Action } from './auth/permissions.ts';
import type { Db } from './db/client.ts';
import type { RequestSessions } from './db/sessions.ts';
import type { Env } from './env.ts';
import type { Declaration } from './middleware/door-kinds.ts';
import type { IdempotentRequest } from './middleware/idempotency/store.ts';

/** Who is calling: resolved from the API key (src/middleware/auth.ts) or the console's membership. */
export interface Caller {
  orgId: string;
  /** The key owner's label, recorded as `created_by`. */
  owner: string;
  /** The API key's id ('' for console users). */
  keyId: string;
  /** SHA-256 (hex) of the API key, for statements that re-check it inside a write ('' for console users). */
  keyHash: string;
}

/**
 * What a function needs of a request's context to read its variables, whatever its app:
 * `c.get(name)`. Never `c.var`, which copies them all at each read (eslint.config.js).
 */
export interface VariablesOf<V> {
  get<K extends keyof V>(key: K): V[K];
}

export interface AppEnv {
  Bindings: Env;
  Variables: {
    /** The request's D1 session (src/db/sessions.ts). */
    db: Db;
    sessions: RequestSessions;
    caller: Caller;
    /** SHA-256 of the API key the request sent, before it is checked. */
    apiKeyHash: string;
    /**
     * Checks the request's credentials if nothing has yet: a validation error must not
     * answer a caller whose key is no good (401 comes first, as in the reference).
     */
    authGate: () => Promise<void>;
    /** Why the request's body was not handed to its reader (its key was refused first: keyBeforeBody, src/middleware/auth.ts). */
    bodyRefusal?: Error;
    /** Hands the reader the client's body itself, ungated, once the key was accepted (keyBeforeBody). */
    openBody?: () => void;
    /** What the route declared at its door (src/middleware/door.ts): its credential, body and rate budget. */
    door?: Declaration;
    /** The action the route declared (its door); an API key's lookup checks it. */
    action?: Action;
    /** The request's Idempotency-Key and its claim, on routes that take one (src/middleware/idempotency/). */
    idempotency?: IdempotentRequest;
  };
}
