import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { revokeApiKey } from '../../src/admin/statements.ts';
import { exports } from 'cloudflare:workers';
import { apiKeyHeaders } from '../../src/middleware/auth.ts';
import { api, BASE, json, runAdmin, seedTenant } from './helpers.ts';

describe('API keys', () => {
  it('accepts a valid key', async () => {
    const t = await seedTenant();
    expect(await json(await api(t, '/v1/validate_api_key'), 200)).toEqual({ message: 'OK' });
  });

  it('refuses a missing key with 401 and a JSON detail naming the headers it is read from', async () => {
    const body = await json(await api(null, '/v1/validate_api_key'), 401);
    expect(body.detail).toMatch(/Service-API-Key/);
    expect(body.detail).toMatch(/Axiom-API-Key/);
  });

  it('takes the key from the published client’s own header too (Axiom-API-Key), unmodified', async () => {
    const t = await seedTenant();
    const viaClientHeader = (key: string) =>
      exports.default.fetch(new Request(`${BASE}/v1/validate_api_key`, { headers: { 'Axiom-API-Key': key } }));
    expect(await json(await viaClientHeader(t.key), 200)).toEqual({ message: 'OK' });
    expect((await viaClientHeader('sk_not_a_key')).status).toBe(401);
    // With both, the interface's header wins.
    const both = await exports.default.fetch(
      new Request(`${BASE}/v1/validate_api_key`, { headers: { 'Service-API-Key': t.key, 'Axiom-API-Key': 'sk_wrong' } }),
    );
    expect(both.status).toBe(200);
  });

  it('reads the accepted headers from API_KEY_HEADERS when a deployment sets it', () => {
    expect(apiKeyHeaders({})).toEqual(['Service-API-Key', 'Axiom-API-Key']);
    expect(apiKeyHeaders({ API_KEY_HEADERS: ' X-Key , Service-API-Key ' })).toEqual(['X-Key', 'Service-API-Key']);
  });

  it('refuses unknown and revoked keys, telling a revoked key so only to whoever sends it', async () => {
    const t = await seedTenant();
    const unknown = await json(await api({ ...t, key: 'sk_not_a_key' }, '/v1/proofs?program_id=x'), 401);
    expect(unknown).toEqual({ detail: 'Invalid API key: no key has this secret (check that it was copied whole)' });
    await runAdmin(revokeApiKey(t.key));
    const revoked = await json(await api(t, '/v1/validate_api_key'), 401);
    expect(revoked.detail).toMatch(/^This API key was revoked at /);
  });

  it('stores keys only as SHA-256 hashes', async () => {
    const t = await seedTenant();
    const rows = await env.DB.prepare('SELECT * FROM api_keys WHERE org_id = ?').bind(t.orgId).all();
    expect(JSON.stringify(rows.results)).not.toContain(t.key);
    const digest = Array.from(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(t.key))), (b) =>
      b.toString(16).padStart(2, '0'),
    ).join('');
    expect(rows.results[0].key_hash).toBe(digest);
  });

  it('answers unknown routes with 404 Not Found', async () => {
    const t = await seedTenant();
    expect(await json(await api(t, '/v1/nope'), 404)).toEqual({ detail: 'Not Found' });
    expect(await json(await api(null, '/nothing-here'), 404)).toEqual({ detail: 'Not Found' });
  });
});
