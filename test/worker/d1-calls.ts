// Observes the D1 calls the Worker makes (on the real local D1): each batch or
// statement execution is one round trip; where it went (the binding itself, or a
// session and how it started) and whether it wrote. For tests of how many round trips
// a request costs and what an idle agent writes; nothing is changed or delayed.
import { env } from 'cloudflare:test';
import { vi } from 'vitest';

export interface D1Call {
  /** 'binding' for env.DB itself (always the primary), else the session's start. */
  via: 'binding' | string;
  /** Which session (numbered as they were opened; 0 for the binding): a request's calls from others' running meanwhile. */
  session: number;
  sql: string[];
  /** Rows written, as D1 reports them. */
  rowsWritten: number;
  /** When it was sent (the Worker's clock: epoch ms). */
  at: number;
  /** It failed (a batch that failed a constraint wrote nothing, but was a round trip). */
  failed?: boolean;
}

type Stmt = D1PreparedStatement & { __sql?: string };

/** Records every D1 round trip until `stop()`. */
export function recordD1Calls() {
  const calls: D1Call[] = [];
  let sessions = 0;
  const written = (results: unknown): number =>
    (Array.isArray(results) ? results : [results]).reduce(
      (n: number, r) => n + Number((r as { meta?: { rows_written?: number } })?.meta?.rows_written ?? 0),
      0,
    );
  const wrapStatement = (stmt: Stmt, q: string, via: string, session: number): Stmt => {
    stmt.__sql = q;
    const bind = stmt.bind.bind(stmt);
    stmt.bind = (...args: unknown[]) => wrapStatement(bind(...args), q, via, session);
    for (const m of ['all', 'run', 'raw', 'first'] as const) {
      const original = (stmt[m] as (...a: unknown[]) => Promise<unknown>).bind(stmt);
      (stmt as unknown as Record<string, unknown>)[m] = async (...a: unknown[]) => {
        const at = Date.now();
        const r = await original(...a).catch((err: unknown) => {
          calls.push({ via, session, sql: [q], rowsWritten: 0, at, failed: true });
          throw err;
        });
        calls.push({ via, session, sql: [q], rowsWritten: m === 'raw' || m === 'first' ? 0 : written(r), at });
        return r;
      };
    }
    return stmt;
  };
  const wrapDb = <T extends D1Database | D1DatabaseSession>(db: T, via: string): T => {
    const session = ++sessions;
    const prepare = db.prepare.bind(db);
    const batch = db.batch.bind(db);
    db.prepare = (q: string) => wrapStatement(prepare(q), q, via, session);
    db.batch = (async (stmts: Stmt[]) => {
      const at = Date.now();
      const r = await batch(stmts).catch((err: unknown) => {
        calls.push({ via, session, sql: stmts.map((s) => s.__sql ?? '?'), rowsWritten: 0, at, failed: true });
        throw err;
      });
      calls.push({ via, session, sql: stmts.map((s) => s.__sql ?? '?'), rowsWritten: written(r), at });
      return r;
    }) as T['batch'];
    return db;
  };
  const realPrepare = env.DB.prepare.bind(env.DB);
  const realBatch = env.DB.batch.bind(env.DB);
  const realSession = env.DB.withSession.bind(env.DB);
  vi.spyOn(env.DB, 'prepare').mockImplementation((q: string) => wrapStatement(realPrepare(q), q, 'binding', 0));
  vi.spyOn(env.DB, 'batch').mockImplementation(async (stmts: Stmt[]) => {
    const at = Date.now();
    const r = await realBatch(stmts).catch((err: unknown) => {
      calls.push({ via: 'binding', session: 0, sql: stmts.map((s) => s.__sql ?? '?'), rowsWritten: 0, at, failed: true });
      throw err;
    });
    calls.push({ via: 'binding', session: 0, sql: stmts.map((s) => s.__sql ?? '?'), rowsWritten: written(r), at });
    return r;
  });
  vi.spyOn(env.DB, 'withSession').mockImplementation((c?: string) =>
    wrapDb(
      realSession(c),
      c === 'first-primary' ? 'first-primary' : c === 'first-unconstrained' || c === undefined ? 'first-unconstrained' : 'bookmark',
    ),
  );
  return {
    calls,
    /** Round trips whose statements all read (nothing written). */
    reads: () => calls.filter((c) => c.sql.every((q) => /^\s*(select|with)\b/i.test(q) && !/\b(insert|update|delete)\b/i.test(q))),
    writes: () => calls.filter((c) => c.rowsWritten > 0),
    clear: () => void calls.splice(0),
    stop: () => vi.restoreAllMocks(),
  };
}

/**
 * Holds the first D1 round trip (a batch, or a statement run alone) whose SQL `matches`
 * before it is sent, until `release()`: how a test lands another request between a
 * request's reads and its write, deterministically, on the real local D1 (nothing is
 * changed; the call is only late). `reached()` resolves once the call is being held.
 * Each side waits by polling a flag on its own timers: workerd refuses I/O continued
 * from a promise another request resolved. Undone by vi.restoreAllMocks().
 */
export function holdD1Call(matches: (sql: string[]) => boolean) {
  const state = { held: false, released: false };
  const until = async (done: () => boolean) => {
    while (!done()) await new Promise((r) => setTimeout(r, 2));
  };
  const gate = async (sql: string[]) => {
    if (state.held || !matches(sql)) return;
    state.held = true;
    await until(() => state.released);
  };
  const wrapStatement = (stmt: Stmt, q: string): Stmt => {
    stmt.__sql = q;
    const bind = stmt.bind.bind(stmt);
    stmt.bind = (...args: unknown[]) => wrapStatement(bind(...args), q);
    for (const m of ['all', 'run', 'raw', 'first'] as const) {
      const original = (stmt[m] as (...a: unknown[]) => Promise<unknown>).bind(stmt);
      (stmt as unknown as Record<string, unknown>)[m] = async (...a: unknown[]) => {
        await gate([q]);
        return original(...a);
      };
    }
    return stmt;
  };
  const wrapDb = <T extends D1Database | D1DatabaseSession>(db: T): T => {
    const prepare = db.prepare.bind(db);
    const batch = db.batch.bind(db);
    db.prepare = (q: string) => wrapStatement(prepare(q), q);
    db.batch = (async (stmts: Stmt[]) => {
      await gate(stmts.map((s) => s.__sql ?? '?'));
      return batch(stmts);
    }) as T['batch'];
    return db;
  };
  const realSession = env.DB.withSession.bind(env.DB);
  vi.spyOn(env.DB, 'withSession').mockImplementation((c?: string) => wrapDb(realSession(c)));
  return {
    reached: () => until(() => state.held),
    release: () => void (state.released = true),
  };
}
