// A bench-only Worker entry: the service's own Worker (src/index.ts), unchanged, plus
// routes that make only the binding calls the API's routes are built on, with
// none of the service's code around them: what the local platform alone costs, next to
// which `npm run bench:api` reads its routes (test/bench/BENCH-API.md "The platform's
// share"). Benches run it with `wrangler dev test/bench/workers/platform.ts`; it is
// never deployed.
//
//   GET  /__bench/platform/nothing     no call: what a request alone costs (the base of the others)
//   GET  /__bench/platform/d1          one D1 statement (`SELECT 1`) in a D1 session, as every
//                                      caller's request reads (src/db/sessions.ts): a D1 round trip
//   GET  /__bench/platform/rate-limit  the two Rate Limiting calls every /v1 request makes
//                                      (its API key's, then its organization's)
//   POST /__bench/platform/r2          the request's body stored in R2 as it comes (one put)
//   POST /__bench/platform/queue       one job notice sent to the jobs queue (the product's
//                                      message; its consumer then handles it as any notice)
//   POST /__bench/platform/repeat      `bench:api --attribute`: one of a GET's parts, run `n` times
//                                      in a row inside this one request (see `repeat` below)
import worker from '../../../src/index.ts';
import type { Env } from '../../../src/env.ts';

/** The two Rate Limiting calls every /v1 request makes: its API key's, then its organization's (the `rate-limit` row). */
async function twoRateLimitCalls(env: Env): Promise<{ key: boolean; org: boolean }> {
  const key = await env.RATE_LIMIT_READS.limit({ key: 'bench-platform-key' });
  const org = await env.RATE_LIMIT_ORG_READS.limit({ key: 'bench-platform-org' });
  return { key: key.success, org: org.success };
}

/** A D1 statement as sent: its SQL and its bound values. */
interface SentStatement {
  sql: string;
  params: unknown[];
}

/** The statements of the last D1 batch the route run with `what=capture` sent in a session. */
let captured: SentStatement[] | null = null;

/** `env` with its D1 sessions' batches recorded into `captured` (every call goes through unchanged). */
function capturing(env: Env): Env {
  const wrap = (session: D1DatabaseSession): D1DatabaseSession => {
    const sent = new WeakMap<D1PreparedStatement, SentStatement>();
    return {
      prepare: (sql: string) => {
        const statement = session.prepare(sql);
        const bind = statement.bind.bind(statement);
        Object.defineProperty(statement, 'bind', {
          value: (...params: unknown[]) => {
            const bound = bind(...params);
            sent.set(bound, { sql, params });
            return bound;
          },
        });
        return statement;
      },
      batch: <T>(statements: D1PreparedStatement[]) => {
        captured = statements.map((s) => sent.get(s) ?? { sql: '?', params: [] });
        return session.batch<T>(statements);
      },
      getBookmark: () => session.getBookmark(),
    };
  };
  const DB = {
    prepare: (sql: string) => env.DB.prepare(sql),
    batch: <T>(statements: D1PreparedStatement[]) => env.DB.batch<T>(statements),
    exec: (sql: string) => env.DB.exec(sql),
    dump: () => env.DB.dump(),
    withSession: (start?: string) => wrap(env.DB.withSession(start)),
  };
  return { ...env, DB };
}

/**
 * The platform calls a GET of the API makes (the `rate-limit` and `d1` rows', in a row),
 * with `statements` as its D1 batch: in a session, as the API reads, or (`on`: 'binding')
 * on the binding itself, to show what the session costs.
 */
async function getCalls(env: Env, statements: SentStatement[], on: 'session' | 'binding' = 'session'): Promise<string> {
  await twoRateLimitCalls(env);
  const d1 = on === 'session' ? env.DB.withSession('first-unconstrained') : env.DB;
  await d1.batch(statements.map((s) => d1.prepare(s.sql).bind(...s.params)));
  return Response.json({ ok: true }).text();
}

/**
 * A part of a GET of the API, `n` times in a row inside this one request: what each
 * costs is read from workerd's CPU around the request (`bench:api --attribute`), with no
 * HTTP, no concurrency and no sampling profiler between (whose samples, a few
 * milliseconds apart here, put a router that takes a microsecond at a tenth of a GET).
 *   capture     the route once, its D1 batch kept (`captured`)
 *   route       the route, through the service's Worker (its status must be 200)
 *   calls       its platform calls alone: the two rate-limit calls and `SELECT 1` in a session
 *   binding     the same, `SELECT 1` on the binding itself (what the session costs)
 *   statements  the same, with the route's own D1 batch (`captured`) for the `SELECT 1`
 */
async function repeat(request: Request, env: Env, ctx: ExecutionContext): Promise<Response> {
  const { what, n, path, headers } = await request.json<{ what: string; n: number; path: string; headers: Record<string, string> }>();
  const route = async (e: Env) => {
    const res = await worker.fetch(new Request(new URL(path, request.url), { headers }), e, ctx);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${text.slice(0, 200)}`);
  };
  const one = { sql: 'SELECT 1 AS one', params: [] };
  const parts = new Map<string, () => Promise<unknown>>([
    ['capture', () => route(capturing(env))],
    ['route', () => route(env)],
    ['calls', () => getCalls(env, [one])],
    ['binding', () => getCalls(env, [one], 'binding')],
    [
      'statements',
      () => {
        if (!captured) throw new Error('nothing captured yet: repeat what=capture first');
        return getCalls(env, captured);
      },
    ],
  ]);
  const part = parts.get(what);
  if (!part) return new Response(`unknown part ${what}`, { status: 404 });
  for (let i = 0; i < n; i++) await part();
  return Response.json({ what, n, statements: what === 'capture' ? captured?.length : undefined });
}

async function platform(request: Request, env: Env, ctx: ExecutionContext, route: string): Promise<Response> {
  switch (route) {
    case 'nothing':
      return Response.json({ ok: true });
    case 'd1': {
      // In a session, as the API reads (read replicas are reached only through one): the
      // local runtime charges ~0.15-0.2 ms of CPU more per call for it than for the binding's
      // own prepare() (test/bench/BENCH-API.md "The platform's share").
      const session = env.DB.withSession('first-unconstrained');
      return Response.json(await session.prepare('SELECT 1 AS one').first());
    }
    case 'rate-limit':
      return Response.json(await twoRateLimitCalls(env));
    case 'r2': {
      if (!request.body) return new Response('a body is needed', { status: 400 });
      const put = await env.ARTIFACTS.put(`bench/platform/${crypto.randomUUID()}`, request.body);
      return Response.json({ size: put?.size }, { status: 201 });
    }
    case 'queue':
      await env.JOBS.send({ job_id: 'bench-platform', kind: 'proof' }, { contentType: 'json' });
      return Response.json({ sent: true });
    case 'repeat':
      return repeat(request, env, ctx);
    default:
      return new Response('unknown platform route', { status: 404 });
  }
}

export default {
  fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/__bench/platform/')) return platform(request, env, ctx, url.pathname.slice('/__bench/platform/'.length));
    return worker.fetch(request, env, ctx);
  },
  queue: (batch, env) => worker.queue(batch, env),
  scheduled: (controller, env, ctx) => worker.scheduled(controller, env, ctx),
} satisfies ExportedHandler<Env, Parameters<typeof worker.queue>[0] extends MessageBatch<infer B> ? B : never>;
