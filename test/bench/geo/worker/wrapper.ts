// Bench-only (npm run bench:geo): a Worker entry that runs a tree's real Worker with
// env.DB replaced by the latency shim (./d1-shim.ts). The bench generates, per tree,
// a two-line module that imports that tree's src/index.ts and exports
// benchWorker(itsDefaultExport); wrangler dev runs that module as the script.
//
// It serves two routes of its own before anything reaches the app:
//   GET  /__bench/d1        the global statement counters (every handler, also waitUntil work)
//   POST /__bench/d1/reset  zeroes them
// and adds to every other response the D1 figures of that request:
//   x-bench-d1-primary-seq, x-bench-d1-replica-seq   sequential round trips (the critical path)
//   x-bench-d1-primary-calls, x-bench-d1-replica-calls, x-bench-d1-calls
//   x-bench-d1-off-path    calls the response did not wait for (ctx.waitUntil)
// The latency comes from the vars BENCH_PRIMARY_MS and BENCH_REPLICA_MS (wrangler dev --var).
import { BenchDatabase, counts, RequestTally, resetCounts, type Latency, type Scope } from './d1-shim.ts';

interface BenchVars {
  DB: D1Database;
  BENCH_PRIMARY_MS?: string;
  BENCH_REPLICA_MS?: string;
}

// The app's own Env and queue message types are the tree's business: any handler object.
type AppHandler = ExportedHandler<any, any>;

function latencyOf(env: BenchVars): Latency {
  const ms = (v: string | undefined, fallback: number) => (v !== undefined && Number.isFinite(Number(v)) ? Number(v) : fallback);
  return { primaryMs: ms(env.BENCH_PRIMARY_MS, 150), replicaMs: ms(env.BENCH_REPLICA_MS, 5) };
}

/** The app's env, with the shim as DB and without the bench's own vars. */
function appEnv(env: BenchVars, scope: Scope): unknown {
  const { BENCH_PRIMARY_MS: _p, BENCH_REPLICA_MS: _r, ...rest } = env;
  return { ...rest, DB: new BenchDatabase(env.DB, scope) as unknown as D1Database };
}

/** The ExecutionContext the app sees: waitUntil tells the tally which calls are off the response path. */
function appContext(ctx: ExecutionContext, tally: RequestTally | null): ExecutionContext {
  return {
    waitUntil(promise: Promise<unknown>) {
      // Subscribing here, not a microtask later in workerd, starts a lazy thenable (a
      // drizzle query builder) in this turn, so its calls are seen as this waitUntil's.
      const started = promise.then(
        (v) => v,
        (e: unknown) => Promise.reject(e),
      );
      tally?.deferCurrentTurn();
      ctx.waitUntil(started);
    },
    passThroughOnException() {
      ctx.passThroughOnException();
    },
    get props() {
      return ctx.props;
    },
  } as ExecutionContext;
}

export function benchWorker(app: AppHandler): ExportedHandler<BenchVars> {
  return {
    async fetch(request, env, ctx) {
      const url = new URL(request.url);
      if (url.pathname === '/__bench/d1' && request.method === 'GET') return Response.json(counts);
      if (url.pathname === '/__bench/d1/reset' && request.method === 'POST') {
        resetCounts();
        return Response.json(counts);
      }
      counts.handlers.fetch++;
      const tally = new RequestTally();
      const scope: Scope = { tally, emulation: url.pathname.startsWith('/client/v4/'), latency: latencyOf(env) };
      const res = await app.fetch!(request, appEnv(env, scope), appContext(ctx, tally));
      const f = tally.close(scope.latency);
      const out = new Response(res.body, res);
      out.headers.set('x-bench-d1-primary-seq', String(f.primarySeq));
      out.headers.set('x-bench-d1-replica-seq', String(f.replicaSeq));
      out.headers.set('x-bench-d1-primary-calls', String(f.primaryCalls));
      out.headers.set('x-bench-d1-replica-calls', String(f.replicaCalls));
      out.headers.set('x-bench-d1-calls', String(f.calls));
      out.headers.set('x-bench-d1-off-path', String(f.offPath));
      return out;
    },

    async queue(batch, env, ctx) {
      counts.handlers.queue++;
      const scope: Scope = { tally: null, emulation: false, latency: latencyOf(env) };
      await app.queue!(batch, appEnv(env, scope), appContext(ctx, null));
    },

    async scheduled(controller, env, ctx) {
      counts.handlers.scheduled++;
      const scope: Scope = { tally: null, emulation: false, latency: latencyOf(env) };
      await app.scheduled!(controller, appEnv(env, scope), appContext(ctx, null));
    },
  };
}
