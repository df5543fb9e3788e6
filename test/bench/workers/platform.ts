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
import worker from '../../../src/index.ts';
import type { Env } from '../../../src/env.ts';

async function platform(request: Request, env: Env, route: string): Promise<Response> {
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
    case 'rate-limit': {
      const key = await env.RATE_LIMIT_READS.limit({ key: 'bench-platform-key' });
      const org = await env.RATE_LIMIT_ORG_READS.limit({ key: 'bench-platform-org' });
      return Response.json({ key: key.success, org: org.success });
    }
    case 'r2': {
      if (!request.body) return new Response('a body is needed', { status: 400 });
      const put = await env.ARTIFACTS.put(`bench/platform/${crypto.randomUUID()}`, request.body);
      return Response.json({ size: put?.size }, { status: 201 });
    }
    case 'queue':
      await env.JOBS.send({ job_id: 'bench-platform', kind: 'proof' }, { contentType: 'json' });
      return Response.json({ sent: true });
    default:
      return new Response('unknown platform route', { status: 404 });
  }
}

export default {
  fetch(request, env, ctx) {
    const url = new URL(request.url);
    if (url.pathname.startsWith('/__bench/platform/')) return platform(request, env, url.pathname.slice('/__bench/platform/'.length));
    return worker.fetch(request, env, ctx);
  },
  queue: (batch, env) => worker.queue(batch, env),
  scheduled: (controller, env, ctx) => worker.scheduled(controller, env, ctx),
} satisfies ExportedHandler<Env, Parameters<typeof worker.queue>[0] extends MessageBatch<infer B> ? B : never>;
