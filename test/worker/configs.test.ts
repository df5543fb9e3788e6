import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { setConfigActive } from '../../src/admin/statements.ts';
import { api, APP_VM_COMMIT, json, runAdmin, seedConfig, seedTenant } from './helpers.ts';

describe('GET /v1/configs/{id}', () => {
  it('returns every field of the record with its type', async () => {
    const t = await seedTenant();
    const id = await seedConfig();
    const cfg = await json(await api(t, `/v1/configs/${id}`), 200);
    expect(cfg).toEqual({
      id,
      created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/),
      openvm_version: '1.4.0',
      stark_backend_version: '1.2.0',
      status: 'ready',
      active: true,
      app_vm_commit: APP_VM_COMMIT,
    });
    await runAdmin(setConfigActive(id, false));
    expect((await json(await api(t, `/v1/configs/${id}`), 200)).active).toBe(false);
  });

  it('finds a config by its id in any letter case (ULIDs are case-insensitive)', async () => {
    const t = await seedTenant();
    const id = await seedConfig();
    const lower = 'cfg_' + id.slice(4).toLowerCase();
    expect((await json(await api(t, `/v1/configs/${lower}`), 200)).id).toBe(id);
    // The published client's default id (a reference-service config): unknown here, so 404, not 422.
    await json(await api(t, '/v1/configs/cfg_01k3w1spnpnxzry017g5jzcy97'), 404);
  });

  it('404s an unknown config and 422s a malformed id', async () => {
    const t = await seedTenant();
    await json(await api(t, '/v1/configs/cfg_01JD00000000000000000000ZZ'), 404);
    const bad = await json(await api(t, '/v1/configs/not-a-config'), 422);
    expect(bad.detail[0]).toMatchObject({ loc: ['path', 'config_id'], type: 'string_pattern_mismatch' });
  });

  it('serves config artifacts published by the operator, 404 otherwise', async () => {
    const t = await seedTenant();
    const id = await seedConfig();
    await json(await api(t, `/v1/configs/${id}/openvm.toml`), 404);
    await env.ARTIFACTS.put(`configs/${id}/openvm.toml`, '[app_vm_config]\n', { httpMetadata: { contentType: 'text/plain' } });
    const res = await api(t, `/v1/configs/${id}/openvm.toml`);
    expect(res.status).toBe(200);
    expect(await res.text()).toBe('[app_vm_config]\n');
  });
});
