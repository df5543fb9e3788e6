// Per-key rate limits (issue 10 item 6) on the real Rate Limiting binding, with the
// Workers pool's small limits (test/vitest.config.ts). A key's budget is spent through
// the binding down to its last requests, in one window (test/worker/rate-helpers.ts).
import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/lib/crypto.ts';
import { RATE_LIMIT_PERIOD_SECONDS } from '../../src/middleware/rate-limit.ts';
import { api, countRows, seedTenant, type Tenant } from './helpers.ts';
import { inOneRateWindow, spend } from './rate-helpers.ts';
import { declarationOf } from './routes.ts';

/** The budget a route declares at its door. */
const budgetOf = (method: string, path: string) => declarationOf({ method, path })?.rate;

describe('per-API-key rate limits', { timeout: 30_000 }, () => {
  it('classifies endpoints as their doors declare: reads, submissions, uploads', () => {
    expect(budgetOf('GET', '/v1/proofs')).toBe('reads');
    expect(budgetOf('GET', '/v1/programs/:program_id/download/:artifact')).toBe('reads');
    expect(budgetOf('POST', '/v1/proofs')).toBe('submissions');
    expect(budgetOf('POST', '/v1/proofs/:proof_id/cancel')).toBe('submissions');
    expect(budgetOf('PUT', '/v1/programs/:program_id')).toBe('submissions');
    expect(budgetOf('POST', '/v1/projects')).toBe('submissions');
    expect(budgetOf('POST', '/v1/executions')).toBe('submissions');
    expect(budgetOf('POST', '/v1/programs')).toBe('uploads');
    expect(budgetOf('POST', '/v1/verify')).toBe('uploads');
    expect(budgetOf('POST', '/v1/verify/stark')).toBe('uploads');
  });

  // Each class's per-key limit (test/vitest.config.ts) and binding.
  const classes: { cls: string; send: (t: Tenant) => Promise<Response>; binding: RateLimit; limit: number }[] = [
    { cls: 'reads', send: (t) => api(t, '/v1/validate_api_key'), binding: env.RATE_LIMIT_READS, limit: 250 },
    {
      cls: 'submissions',
      send: (t) => api(t, '/v1/projects', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '""' }),
      binding: env.RATE_LIMIT_SUBMISSIONS,
      limit: 100,
    },
    {
      cls: 'uploads',
      send: (t) => api(t, '/v1/verify/stark?program_id=not-a-uuid', { method: 'POST', body: new FormData() }),
      binding: env.RATE_LIMIT_UPLOADS,
      limit: 30,
    },
  ];

  for (const { cls, send, binding, limit } of classes) {
    it(`${cls}: past the limit a key gets 429 with Retry-After and a detail naming the limit; other keys and classes go on`, async () => {
      const { tenant, res } = await inOneRateWindow(async () => {
        const tenant = await seedTenant();
        // All but its last two requests spent: those two pass, the next is refused.
        await spend(binding, await sha256Hex(tenant.key), limit - 2);
        for (let i = 0; i < 2; i++) {
          const passed = await send(tenant);
          expect(passed.status, await passed.text()).not.toBe(429);
          expect(passed.status).toBeLessThan(500);
        }
        const res = await send(tenant);
        expect(res.status).toBe(429);
        return { tenant, res };
      });
      expect(res.headers.get('retry-after')).toBe(String(RATE_LIMIT_PERIOD_SECONDS));
      const { detail } = await res.json<{ detail: string }>();
      expect(detail).toContain(`Rate limit exceeded: this API key has used its "${cls}" limit`);
      expect(detail).toContain(`Retry after ${RATE_LIMIT_PERIOD_SECONDS} seconds`);

      // Another key of the same organization has its own counter.
      const other = await seedTenant();
      const res2 = await send(other);
      expect(res2.status).not.toBe(429);
      await res2.body?.cancel();
      // The limited key can still use the other classes.
      for (const c of classes.filter((c) => c.cls !== cls)) {
        const r = await c.send(tenant);
        expect(r.status, c.cls).not.toBe(429);
        await r.body?.cancel();
      }
    });
  }

  it('a limited submission stores nothing and reads no body', async () => {
    const before = await countRows('projects');
    await inOneRateWindow(async () => {
      const tenant = await seedTenant();
      await spend(env.RATE_LIMIT_SUBMISSIONS, await sha256Hex(tenant.key), 100);
      const limited = await api(tenant, '/v1/projects', { method: 'POST', headers: { 'content-type': 'application/json' }, body: '""' });
      expect(limited.status).toBe(429);
      // A body too large to be read would be a 413 if it were read: limited first.
      const huge = await api(tenant, '/v1/projects', {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify('x'.repeat(1 << 20)),
      });
      expect(huge.status).toBe(429);
    });
    expect(await countRows('projects')).toBe(before);
  });

  it('unauthenticated requests are refused before any limit is counted', async () => {
    const res = await api(null, '/v1/validate_api_key');
    expect(res.status).toBe(401);
  });
});
