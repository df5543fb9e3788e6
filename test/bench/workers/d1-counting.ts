// A bench-only Worker entry: the service's own Worker (src/index.ts), unchanged, with
// every D1 call it makes counted (round trips, statements, and the event streams' polls
// among them), and GET /__bench/d1 to read (and `?reset=1` to zero) the counts. Benches
// run it with `wrangler dev test/bench/workers/d1-counting.ts`; it is never deployed.
import worker from '../../../src/index.ts';
import type { Env } from '../../../src/env.ts';

/** `streamPolls`: event streams' polls, each one statement alone (their first read is a batch with the API key's lookup). */
const counts = { roundTrips: 0, statements: 0, streamPolls: 0 };
const sqlOf = new WeakMap<object, string>();
const counted = new WeakSet<object>();

/** An event stream's poll: the record with its job's log position (src/features/runs/events.ts). */
const isStreamPoll = (sql: string) => sql.includes('log_job_id');

function countStatement(stmt: D1PreparedStatement, sql: string): D1PreparedStatement {
  sqlOf.set(stmt, sql);
  if (counted.has(stmt)) return stmt;
  counted.add(stmt);
  const bind = stmt.bind.bind(stmt);
  stmt.bind = (...values: unknown[]) => countStatement(bind(...values), sql);
  for (const method of ['first', 'all', 'run', 'raw'] as const) {
    const original = (stmt[method] as (...a: unknown[]) => Promise<unknown>).bind(stmt);
    (stmt as unknown as Record<string, unknown>)[method] = (...args: unknown[]) => {
      counts.roundTrips++;
      counts.statements++;
      if (isStreamPoll(sql)) counts.streamPolls++;
      return original(...args);
    };
  }
  return stmt;
}

function countDb<T extends D1Database | D1DatabaseSession>(db: T): T {
  if (counted.has(db)) return db;
  counted.add(db);
  const prepare = db.prepare.bind(db);
  const batch = db.batch.bind(db);
  db.prepare = (sql: string) => countStatement(prepare(sql), sql);
  db.batch = ((statements: D1PreparedStatement[]) => {
    counts.roundTrips++;
    counts.statements += statements.length;
    return batch(statements);
  }) as T['batch'];
  if ('withSession' in db) {
    const withSession = db.withSession.bind(db);
    db.withSession = (constraint?: string) => countDb(withSession(constraint as never));
  }
  return db;
}

export default {
  fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname === '/__bench/d1') {
      const now = { ...counts };
      if (url.searchParams.has('reset')) Object.assign(counts, { roundTrips: 0, statements: 0, streamPolls: 0 });
      return Response.json(now);
    }
    countDb(env.DB);
    return worker.fetch(request, env, ctx);
  },
  queue(batch, env) {
    countDb(env.DB);
    return worker.queue(batch, env);
  },
  scheduled(controller, env, ctx) {
    countDb(env.DB);
    return worker.scheduled(controller, env, ctx);
  },
} satisfies ExportedHandler<Env, Parameters<typeof worker.queue>[0] extends MessageBatch<infer B> ? B : never>;
