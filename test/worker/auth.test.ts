import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../src/admin/statements.ts';
import { api, json, runAdmin, seedTenant } from './helpers.ts';

describe('API keys', () => {
  it('accepts a valid key', async () => {
    const t = await seedTenant();
    expect(await json(await api(t, '/v1/validate_api_key'), 200)).toEqual({ message: 'OK' });
  });

  it('refuses a missing key with 401 and a JSON detail', async () => {
    const body = await json(await api(null, '/v1/validate_api_key'), 401);
    expect(body.detail).toMatch(/Service-API-Key/);
  });

  it('refuses unknown and revoked keys alike', async () => {
    const t = await seedTenant();
    const unknown = await json(await api({ ...t, key: 'sk_not_a_key' }, '/v1/proofs?program_id=x'), 401);
    await runAdmin(revokeApiKey(t.key));
    const revoked = await json(await api(t, '/v1/validate_api_key'), 401);
    expect(revoked).toEqual(unknown);
  });

  it('stores keys only as SHA-256 hashes', async () => {
    const t = await seedTenant();
    const rows = await env.DB.prepare('SELECT * FROM api_keys WHERE org_id = ?').bind(t.orgId).all();
    expect(JSON.stringify(rows.results)).not.toContain(t.key);
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(t.key))), (b) =>
      b.toString(16).padStart(2, '0'),
    ).join('');
    expect(rows.results[0]!.key_hash).toBe(digest);
  });

  it('answers unknown routes with 404 Not Found', async () => {
    const t = await seedTenant();
    expect(await json(await api(t, '/v1/nope'), 404)).toEqual({ detail: 'Not Found' });
    expect(await json(await api(null, '/nothing-here'), 404)).toEqual({ detail: 'Not Found' });
  });
});
