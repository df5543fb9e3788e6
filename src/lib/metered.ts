// What one invocation spends on the platform, counted where it is spent. Cloudflare
// allows a Worker invocation 1,000 operations on external services such as R2 and KV
// (https://developers.cloudflare.com/kv/platform/limits/, its footnote: "Within a single
// invocation, a Worker can make up to 1,000 operations to external services (for
// example, 500 Workers KV reads and 500 R2 reads)"), and on Workers Free 50 subrequests
// (https://developers.cloudflare.com/workers/platform/limits/). Past them calls fail.
//
// A CallBudget is a number of calls an invocation may make: every D1 statement or batch,
// every R2 operation, every queue send, every fetch() counts one (a bulk R2 delete of up
// to 1,000 keys is one operation, as a KV bulk request is). The metered bindings below
// wrap the real ones (nothing is faked: every call goes to the binding it wraps) and
// charge each call before making it; a call past the budget throws BudgetSpent instead
// of reaching the platform. Work is cut in units whose most calls are known (a log
// compaction's stage, a purge, a lease check), and a loop takes a unit only when the
// budget still fits it (`fits`), so BudgetSpent is a backstop, never the plan: every
// unit is safe to stop anywhere (each step is conditional on the state it starts from).
// src/jobs/invocations.ts states each handler's budget.
import { openDb, type Db } from '../db/client.ts';
import type { Env } from '../env.ts';

/** A call past its budget: thrown before the call is made. */
export class BudgetSpent extends Error {
  constructor(budget: CallBudget) {
    super(`${budget.name}: its budget of ${budget.limit} calls this invocation is spent`);
    this.name = 'BudgetSpent';
  }
}

export class CallBudget {
  readonly limit: number;
  readonly name: string;
  private readonly parent: CallBudget | null;
  /** Calls charged so far (this part's own, when it is a part). */
  used = 0;

  constructor(limit: number, name: string, parent: CallBudget | null = null) {
    this.limit = limit;
    this.name = name;
    this.parent = parent;
  }

  /** Calls still allowed: this budget's own, and no more than its parent's. */
  get left(): number {
    const own = this.limit - this.used;
    return this.parent ? Math.min(own, this.parent.left) : own;
  }

  /** Whether `calls` more fit. */
  fits(calls: number): boolean {
    return calls <= this.left;
  }

  /** Counts `calls` about to be made (here and in every parent); throws BudgetSpent, having counted nothing, when they do not fit. */
  charge(calls = 1): void {
    for (let b: CallBudget | null = this; b; b = b.parent) if (b.used + calls > b.limit) throw new BudgetSpent(b);
    for (let b: CallBudget | null = this; b; b = b.parent) b.used += calls;
  }

  /** A part of this budget, for one piece of work: at most `limit` calls, each charged here too. */
  part(limit: number, name: string): CallBudget {
    return new CallBudget(limit, name, this);
  }
}

type Statement = D1PreparedStatement;
const EXECUTIONS = ['first', 'all', 'run', 'raw'] as const;
/** A replaced method stays replaceable: another wrapper (a test's counter) may wrap it again. */
const REPLACEABLE = { configurable: true, writable: true };

/** The statement itself, its executions charged (bind() answers a statement charged the same way). */
function meterStatement(stmt: Statement, budget: CallBudget): Statement {
  // The binding's own object, so that batch() takes it as its own; only its methods are
  // replaced on it (own properties shadowing the prototype's).
  const bind = stmt.bind.bind(stmt);
  Object.defineProperty(stmt, 'bind', { value: (...values: unknown[]) => meterStatement(bind(...values), budget), ...REPLACEABLE });
  for (const m of EXECUTIONS) {
    const run = (stmt[m] as (...a: unknown[]) => Promise<unknown>).bind(stmt);
    Object.defineProperty(stmt, m, {
      value: (...a: unknown[]) => {
        budget.charge();
        return run(...a);
      },
      ...REPLACEABLE,
    });
  }
  return stmt;
}

/** A D1 session whose every statement and batch is charged to `budget`. */
function meteredSession(session: D1DatabaseSession, budget: CallBudget): D1DatabaseSession {
  return {
    prepare: (query: string) => meterStatement(session.prepare(query), budget),
    batch: <R>(statements: Statement[]) => {
      budget.charge();
      return session.batch<R>(statements);
    },
    getBookmark: () => session.getBookmark(),
  };
}

/** A D1 database whose every statement and batch is charged to `budget`, its sessions' too. */
export function meteredD1(db: D1Database, budget: CallBudget): D1Database {
  return {
    prepare: (query: string) => meterStatement(db.prepare(query), budget),
    batch: <R>(statements: Statement[]) => {
      budget.charge();
      return db.batch<R>(statements);
    },
    exec: (query: string) => {
      budget.charge();
      return db.exec(query);
    },
    withSession: (constraint?: string) => meteredSession(db.withSession(constraint), budget),
    dump: () => {
      budget.charge();
      return db.dump();
    },
  };
}

/** An R2 multipart upload whose every call is charged. */
function meterUpload(upload: R2MultipartUpload, budget: CallBudget): R2MultipartUpload {
  return {
    key: upload.key,
    uploadId: upload.uploadId,
    uploadPart: (...a: Parameters<R2MultipartUpload['uploadPart']>) => (budget.charge(), upload.uploadPart(...a)),
    abort: () => (budget.charge(), upload.abort()),
    complete: (parts: R2UploadedPart[]) => (budget.charge(), upload.complete(parts)),
  };
}

/** An R2 bucket whose every operation is charged to `budget` (a bulk delete is one). */
export function meteredR2(bucket: R2Bucket, budget: CallBudget): R2Bucket {
  // Each call looks the method up on the bucket when it is made, so a test's spy on the
  // binding still sees it.
  return {
    head: (key: string) => (budget.charge(), bucket.head(key)),
    get: (key: string, options?: R2GetOptions) => (budget.charge(), bucket.get(key, options)),
    put: ((key: string, value: Parameters<R2Bucket['put']>[1], options?: R2PutOptions) => (
      budget.charge(),
      bucket.put(key, value, options)
    )) as R2Bucket['put'],
    delete: (keys: string | string[]) => (budget.charge(), bucket.delete(keys)),
    list: (options?: R2ListOptions) => (budget.charge(), bucket.list(options)),
    createMultipartUpload: async (key: string, options?: R2MultipartOptions) => {
      budget.charge();
      return meterUpload(await bucket.createMultipartUpload(key, options), budget);
    },
    resumeMultipartUpload: (key: string, uploadId: string) => meterUpload(bucket.resumeMultipartUpload(key, uploadId), budget),
  };
}

/** A queue producer whose every send (one message, or a batch of them) is charged to `budget`. */
export function meteredQueue<Body>(queue: Queue<Body>, budget: CallBudget): Queue<Body> {
  return {
    send: (body: Body, options?: QueueSendOptions) => (budget.charge(), queue.send(body, options)),
    sendBatch: (messages: Iterable<MessageSendRequest<Body>>, options?: QueueSendBatchOptions) => (
      budget.charge(),
      queue.sendBatch(messages, options)
    ),
  } as Queue<Body>;
}

/** The Worker's bindings that make calls, metered by one budget: what a piece of an invocation's work is handed. */
export interface Metered {
  budget: CallBudget;
  /** drizzle over the metered D1 binding (the primary, as the binding itself is). */
  db: Db;
  bucket: R2Bucket;
  /** The Worker's env with its D1, R2 and queue bindings metered (everything else as it is). */
  env: Env;
  /** The bindings unmetered, for meteredPart alone (a part meters the bindings once, charging its parent through itself). */
  readonly unmetered: Env;
}

/** `env`'s bindings, each call charged to `budget`. */
export function metered(env: Env, budget: CallBudget): Metered {
  const DB = meteredD1(env.DB, budget);
  const ARTIFACTS = meteredR2(env.ARTIFACTS, budget);
  const menv: Env = {
    ...env,
    DB,
    ARTIFACTS,
    JOBS: meteredQueue(env.JOBS, budget),
    LEASE_CHECKS: meteredQueue(env.LEASE_CHECKS, budget),
    WEBHOOKS: meteredQueue(env.WEBHOOKS, budget),
    MAIL: meteredQueue(env.MAIL, budget),
  };
  return { budget, db: openDb(DB), bucket: ARTIFACTS, env: menv, unmetered: env };
}

/** A part of `m`'s budget, with its bindings metered by it (and so by `m`'s too). */
export const meteredPart = (m: Metered, limit: number, name: string): Metered => metered(m.unmetered, m.budget.part(limit, name));
