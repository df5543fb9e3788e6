// Bench-only (npm run bench:geo): a stand-in for the Worker's D1 binding that routes
// every call to a simulated primary or read replica, sleeps that place's round trip
// before the real (local) D1 answers, and counts what it did. The product never runs
// through this: only the bench's wrapper entry (./entry.ts) builds it. Runs in workerd.

/** Where a D1 call is served in the model. */
export type Place = 'primary' | 'replica';

export interface Latency {
  primaryMs: number;
  replicaMs: number;
}

// ---------------------------------------------------------------------------
// The model. Every figure the bench prints depends on these two functions.

const LEADING_NOISE = /^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?\*\/)*/;

/**
 * Whether a statement only reads: ignoring leading whitespace and comments, it starts
 * with SELECT; or with WITH and has no INSERT/UPDATE/DELETE/REPLACE keyword; or it is
 * a PRAGMA that reads (no `=`). Everything else (INSERT, UPDATE, DELETE, REPLACE,
 * CREATE, BEGIN, ...) writes.
 */
export function isReadOnlyStatement(sql: string): boolean {
  const s = sql.replace(LEADING_NOISE, '');
  if (/^select\b/i.test(s)) return true;
  if (/^with\b/i.test(s)) return !/\b(insert|update|delete|replace)\b/i.test(s);
  if (/^pragma\b/i.test(s)) return !s.includes('=');
  return false;
}

/** How a session was opened (D1 Sessions API), and how many calls it has made so far. */
export interface SessionState {
  /** 'first-primary', 'first-unconstrained' (also withSession() without argument), or 'bookmark'. */
  start: 'first-primary' | 'first-unconstrained' | 'bookmark';
  calls: number;
}

/**
 * THE ROUTING MODEL, per D1 call (one statement's first/all/run/raw, one batch or one exec):
 *   - a call that writes (any of its statements is not read-only) goes to the primary;
 *   - a read through the plain binding (env.DB.prepare / env.DB.batch, no session) goes
 *     to the primary: that is what D1 does without the Sessions API;
 *   - a read through a session (env.DB.withSession(...)) goes to a nearby replica,
 *     except the first call of a 'first-primary' session, which goes to the primary.
 * `session` is null for the plain binding. Called once per call, in call order, before
 * the call's `calls` is counted.
 */
export function placeOfCall(statements: readonly string[], session: SessionState | null): { place: Place; write: boolean } {
  const write = statements.some((s) => !isReadOnlyStatement(s));
  if (write) return { place: 'primary', write };
  if (session === null) return { place: 'primary', write };
  if (session.start === 'first-primary' && session.calls === 0) return { place: 'primary', write };
  return { place: 'replica', write };
}

// ---------------------------------------------------------------------------
// Global counters: every statement of every handler (fetch, queue, scheduled), also
// work after the response (ctx.waitUntil). Read and reset through /__bench/d1.

/** Statements and calls of one class (the product's own, or the local queue emulation's). */
export interface StatementCounts {
  reads: Record<Place, number>;
  writes: Record<Place, number>;
  calls: Record<Place, number>;
}

export interface GlobalCounts {
  product: StatementCounts;
  /** The local Queues pull emulation (DEV_QUEUE_EMULATION): its routes and its table. Not D1 in production. */
  emulation: StatementCounts;
  handlers: { fetch: number; queue: number; scheduled: number };
}

const zero = (): StatementCounts => ({
  reads: { primary: 0, replica: 0 },
  writes: { primary: 0, replica: 0 },
  calls: { primary: 0, replica: 0 },
});
export const counts: GlobalCounts = { product: zero(), emulation: zero(), handlers: { fetch: 0, queue: 0, scheduled: 0 } };

export function resetCounts(): void {
  Object.assign(counts, { product: zero(), emulation: zero(), handlers: { fetch: 0, queue: 0, scheduled: 0 } });
}

const EMULATION_TABLE = /\bemulated_queue_messages\b/i;

// ---------------------------------------------------------------------------
// Per-request tally: what the response waited for.

/**
 * One synchronous stretch of JavaScript (up to the next microtask): a call and the
 * ctx.waitUntil() that the same code hands it to happen in the same turn, e.g.
 * `const touch = db.update(...).run(); ctx.waitUntil(touch)` (drizzle calls the
 * binding synchronously from `.run()`).
 */
let turn: object | null = null;
function currentTurn(): object {
  if (turn === null) {
    turn = {};
    queueMicrotask(() => (turn = null));
  }
  return turn;
}

interface CallRecord {
  place: Place;
  startEvent: number;
  endEvent: number;
  turn: object;
  /** Handed to ctx.waitUntil: off the response path. */
  deferred: boolean;
}

export interface RequestFigures {
  /** Primary round trips on the request's critical path of D1 calls. */
  primarySeq: number;
  /** Replica round trips on that path. */
  replicaSeq: number;
  primaryCalls: number;
  replicaCalls: number;
  calls: number;
  /** Calls left out: handed to ctx.waitUntil, or still in flight when the response was ready. */
  offPath: number;
}

/**
 * The D1 calls of one request, in event order (starts and ends numbered by one counter,
 * so overlap is exact, never a matter of clock resolution).
 */
export class RequestTally {
  private events = 0;
  private readonly calls: CallRecord[] = [];
  private closedAt: number | null = null;

  start(place: Place): CallRecord | null {
    if (this.closedAt !== null) return null; // after the response: counted globally only
    const rec: CallRecord = { place, startEvent: ++this.events, endEvent: Infinity, turn: currentTurn(), deferred: false };
    this.calls.push(rec);
    return rec;
  }

  end(rec: CallRecord | null): void {
    if (rec) rec.endEvent = ++this.events;
  }

  /** ctx.waitUntil() was called: calls started in this same turn and still in flight are its work. */
  deferCurrentTurn(): void {
    if (turn === null) return;
    for (const c of this.calls) if (c.turn === turn && c.endEvent === Infinity) c.deferred = true;
  }

  /**
   * The response is ready. On its path: the calls that finished before it and were not
   * handed to waitUntil. Sequential round trips: the longest chain of those calls in
   * which each call started after the one before it had ended (it waited for it, or at
   * least came after it); calls in flight together are in no chain with each other, so
   * parallel calls count once. Of several longest chains, the slowest in the model
   * (latency) is the one reported, split into its primary and replica round trips.
   * When calls are either all at once or one after another, this is simply the number
   * of calls that started while no other was in flight.
   */
  close(latency: Latency): RequestFigures {
    const closeEvent = (this.closedAt = ++this.events);
    const onPath = this.calls.filter((c) => !c.deferred && c.endEvent < closeEvent);
    // The slowest chain ending with each call (onPath is in start order, so every call
    // that ended before this one started comes earlier in the list).
    const cost = (p: Place) => (p === 'primary' ? latency.primaryMs : latency.replicaMs) + 1e-6;
    type Chain = { ms: number; primary: number; replica: number };
    const chains: Chain[] = [];
    let best: Chain = { ms: 0, primary: 0, replica: 0 };
    onPath.forEach((c, i) => {
      let before: Chain = { ms: 0, primary: 0, replica: 0 };
      for (let j = 0; j < i; j++) if (onPath[j].endEvent < c.startEvent && chains[j].ms > before.ms) before = chains[j]!;
      const chain = {
        ms: before.ms + cost(c.place),
        primary: before.primary + (c.place === 'primary' ? 1 : 0),
        replica: before.replica + (c.place === 'replica' ? 1 : 0),
      };
      chains.push(chain);
      if (chain.ms > best.ms) best = chain;
    });
    return {
      primarySeq: best.primary,
      replicaSeq: best.replica,
      primaryCalls: onPath.filter((c) => c.place === 'primary').length,
      replicaCalls: onPath.filter((c) => c.place === 'replica').length,
      calls: onPath.length,
      offPath: this.calls.length - onPath.length,
    };
  }
}

// ---------------------------------------------------------------------------
// The binding stand-in.

/** What the calls of one handler invocation share. */
export interface Scope {
  /** Null outside a fetch (queue, scheduled): nothing to report per request. */
  tally: RequestTally | null;
  /** Everything in this invocation is the local queue emulation's (its routes). */
  emulation: boolean;
  latency: Latency;
}

const sleep = (ms: number) => (ms > 0 ? new Promise<void>((r) => setTimeout(r, ms)) : Promise.resolve());

/** The plain binding or one session: where a call comes from. */
class Origin {
  constructor(
    readonly scope: Scope,
    readonly session: SessionState | null,
  ) {}

  /** One round trip: route it, count it, wait the place's latency, then let the real D1 answer. */
  async call<T>(statements: readonly string[], exec: () => Promise<T>): Promise<T> {
    const { place } = placeOfCall(statements, this.session);
    if (this.session) this.session.calls++;
    const emulationCall = this.scope.emulation || statements.every((s) => EMULATION_TABLE.test(s));
    (emulationCall ? counts.emulation : counts.product).calls[place]++;
    for (const s of statements) {
      const c = this.scope.emulation || EMULATION_TABLE.test(s) ? counts.emulation : counts.product;
      // A read in a writing batch is served where the batch is: the primary.
      if (isReadOnlyStatement(s)) c.reads[place]++;
      else c.writes[place]++;
    }
    const rec = this.scope.tally?.start(place) ?? null;
    try {
      await sleep(place === 'primary' ? this.scope.latency.primaryMs : this.scope.latency.replicaMs);
      return await exec();
    } finally {
      this.scope.tally?.end(rec);
    }
  }

  prepare(real: D1PreparedStatement, sql: string): BenchStatement {
    return new BenchStatement(real, sql, this);
  }

  batch<T>(statements: D1PreparedStatement[], run: (real: D1PreparedStatement[]) => Promise<D1Result<T>[]>): Promise<D1Result<T>[]> {
    const unwrapped = statements.map((s) => (s instanceof BenchStatement ? s.real : s));
    const sqls = statements.map((s) => (s instanceof BenchStatement ? s.sql : ''));
    return this.call(sqls, () => run(unwrapped));
  }
}

/** A prepared (and maybe bound) statement; its executing methods are round trips. */
export class BenchStatement {
  constructor(
    readonly real: D1PreparedStatement,
    readonly sql: string,
    private readonly origin: Origin,
  ) {}

  bind(...values: unknown[]): BenchStatement {
    return new BenchStatement(this.real.bind(...values), this.sql, this.origin);
  }

  first(colName?: string): Promise<unknown> {
    return this.origin.call([this.sql], () => (colName === undefined ? this.real.first() : this.real.first(colName)));
  }

  run(): Promise<D1Result> {
    return this.origin.call([this.sql], () => this.real.run());
  }

  all(): Promise<D1Result> {
    return this.origin.call([this.sql], () => this.real.all());
  }

  raw(options?: { columnNames?: boolean }): Promise<unknown[]> {
    return this.origin.call([this.sql], () => (options?.columnNames ? this.real.raw({ columnNames: true }) : this.real.raw()));
  }
}

function sessionStart(constraintOrBookmark: string | undefined): SessionState['start'] {
  if (constraintOrBookmark === 'first-primary') return 'first-primary';
  if (constraintOrBookmark === undefined || constraintOrBookmark === 'first-unconstrained') return 'first-unconstrained';
  return 'bookmark';
}

/** The D1DatabaseSession stand-in; bookmarks are the real session's. */
class BenchSession {
  private readonly origin: Origin;
  constructor(
    private readonly real: D1DatabaseSession,
    scope: Scope,
    start: SessionState['start'],
  ) {
    this.origin = new Origin(scope, { start, calls: 0 });
  }

  prepare(sql: string): BenchStatement {
    return this.origin.prepare(this.real.prepare(sql), sql);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    return this.origin.batch<T>(statements, (s) => this.real.batch<T>(s));
  }

  getBookmark(): string | null {
    return this.real.getBookmark();
  }
}

/** The D1Database stand-in handed to the app as env.DB. */
export class BenchDatabase {
  private readonly origin: Origin;
  constructor(
    private readonly real: D1Database,
    private readonly scope: Scope,
  ) {
    this.origin = new Origin(scope, null);
  }

  prepare(sql: string): BenchStatement {
    return this.origin.prepare(this.real.prepare(sql), sql);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    return this.origin.batch<T>(statements, (s) => this.real.batch<T>(s));
  }

  exec(query: string): Promise<D1ExecResult> {
    const statements = query.split(';').filter((s) => s.trim() !== '');
    return this.origin.call(statements, () => this.real.exec(query));
  }

  withSession(constraintOrBookmark?: string): BenchSession {
    return new BenchSession(this.real.withSession(constraintOrBookmark), this.scope, sessionStart(constraintOrBookmark));
  }

  dump(): Promise<ArrayBuffer> {
    return this.real.dump();
  }
}
