import type { Db } from './db/client.ts';
import type { Env } from './env.ts';

/** Who is calling: resolved from the API key by the auth middleware. */
export interface Caller {
  orgId: string;
  /** The key owner's label, recorded as `created_by`. */
  owner: string;
  keyId: string;
}

export interface AppEnv {
  Bindings: Env;
  Variables: {
    db: Db;
    caller: Caller;
  };
}
