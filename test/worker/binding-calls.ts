// Counts the calls the Worker makes on its bindings (the real local D1, R2 and queues:
// every call goes through to the binding it wraps, nothing is changed or delayed), for
// tests of what one invocation spends (test/worker/invocation-budgets.test.ts). Written
// apart from the Worker's own metering (src/lib/metered.ts), so that it checks it.
import { env } from 'cloudflare:test';
import type { Env } from '../../src/env.ts';

export interface CallCounts {
  /** D1 round trips: a batch is one. */
  d1: number;
  /** D1 statements run: a batch's each count. */
  d1Statements: number;
  r2: number;
  /** R2 calls by operation (get, put, head, delete, list, ...). */
  r2ByOp: Record<string, number>;
  queues: number;
  total(): number;
  reset(): void;
}

const D1_EXECUTIONS = ['first', 'all', 'run', 'raw'] as const;

/** `env` with its D1, R2 and queue bindings wrapped to count every call, and the counts. */
export function countingEnv(base: Env = env): { env: Env; counts: CallCounts } {
  const counts: CallCounts = {
    d1: 0,
    d1Statements: 0,
    r2: 0,
    r2ByOp: {},
    queues: 0,
    total() {
      return this.d1 + this.r2 + this.queues;
    },
    reset() {
      this.d1 = this.d1Statements = this.r2 = this.queues = 0;
      this.r2ByOp = {};
    },
  };
  const statement = (s: D1PreparedStatement): D1PreparedStatement => {
    const bind = s.bind.bind(s);
    Object.defineProperty(s, 'bind', { value: (...v: unknown[]) => statement(bind(...v)), configurable: true, writable: true });
    for (const m of D1_EXECUTIONS) {
      const run = (s[m] as (...a: unknown[]) => Promise<unknown>).bind(s);
      Object.defineProperty(s, m, {
        value: (...a: unknown[]) => (counts.d1++, counts.d1Statements++, run(...a)),
        configurable: true,
        writable: true,
      });
    }
    return s;
  };
  const session = (db: D1Database | D1DatabaseSession) => ({
    prepare: (q: string) => statement(db.prepare(q)),
    batch: (s: D1PreparedStatement[]) => (counts.d1++, (counts.d1Statements += s.length), db.batch(s)),
  });
  const DB: D1Database = {
    ...session(base.DB),
    exec: (q: string) => (counts.d1++, base.DB.exec(q)),
    dump: () => (counts.d1++, base.DB.dump()),
    withSession: (c?: string) => {
      const s = base.DB.withSession(c);
      return { ...session(s), getBookmark: () => s.getBookmark() };
    },
  } as D1Database;
  const r2 = (op: string) => {
    counts.r2++;
    counts.r2ByOp[op] = (counts.r2ByOp[op] ?? 0) + 1;
  };
  const bucket = base.ARTIFACTS;
  const ARTIFACTS = {
    head: (k: string) => (r2('head'), bucket.head(k)),
    get: (k: string, o?: R2GetOptions) => (r2('get'), bucket.get(k, o)),
    put: (k: string, v: Parameters<R2Bucket['put']>[1], o?: R2PutOptions) => (r2('put'), bucket.put(k, v, o)),
    delete: (k: string | string[]) => (r2('delete'), bucket.delete(k)),
    list: (o?: R2ListOptions) => (r2('list'), bucket.list(o)),
    createMultipartUpload: (k: string, o?: R2MultipartOptions) => (r2('createMultipartUpload'), bucket.createMultipartUpload(k, o)),
    resumeMultipartUpload: (k: string, id: string) => bucket.resumeMultipartUpload(k, id),
  };
  const queue = <T>(q: Queue<T>): Queue<T> =>
    ({
      send: (b: T, o?: QueueSendOptions) => (counts.queues++, q.send(b, o)),
      sendBatch: (m: Iterable<MessageSendRequest<T>>, o?: QueueSendBatchOptions) => (counts.queues++, q.sendBatch(m, o)),
    }) as Queue<T>;
  return {
    env: {
      ...base,
      DB,
      ARTIFACTS,
      JOBS: queue(base.JOBS),
      LEASE_CHECKS: queue(base.LEASE_CHECKS),
      WEBHOOKS: queue(base.WEBHOOKS),
      MAIL: queue(base.MAIL),
    },
    counts,
  };
}
