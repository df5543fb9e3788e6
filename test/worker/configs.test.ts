import { env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { setConfigActive } from '../../src/admin/statements.ts';
import { exports } from 'cloudflare:workers';
import { api, APP_VM_COMMIT, BASE, json, runAdmin, seedConfig, seedTenant } from './helpers.ts';
import { seedAgent } from './fleet-helpers.ts';
import { internalApi, publishKey, reprDigestOf, seedPublisher, sha256Hex } from './key-helpers.ts';

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

  it('serves its openvm.toml as `config`, app_vm_commit from the record, and evm_verifier once published', async () => {
    const t = await seedTenant();
    const bare = await seedConfig();
    expect((await json(await api(t, `/v1/configs/${bare}/config`), 404)).detail).toMatch(/no openvm.toml/);
    const id = await seedConfig({ openvm_toml: '[app_vm_config.rv32i]\n' });
    const toml = await api(t, `/v1/configs/${id}/config`);
    expect(toml.status).toBe(200);
    expect(await toml.text()).toBe('[app_vm_config.rv32i]\n');
    expect(await (await api(t, `/v1/configs/${id}/app_vm_commit`)).text()).toBe(APP_VM_COMMIT);
    expect((await json(await api(t, `/v1/configs/${id}/evm_verifier`), 404)).detail).toMatch(/evm_verifier .* not published.*setup-config/);
    // An object at a key path is not a publication: only a recorded version is served.
    await env.ARTIFACTS.put(`configs/${id}/keys/evm_verifier`, 'verifier bytes');
    await json(await api(t, `/v1/configs/${id}/evm_verifier`), 404);
    const verifier = new TextEncoder().encode('verifier bytes');
    await json(await publishKey(await seedPublisher([id]), id, 'evm_verifier', verifier), 200);
    const served = await api(t, `/v1/configs/${id}/evm_verifier`);
    expect(served.headers.get('repr-digest')).toBe(await reprDigestOf(verifier));
    expect(await served.text()).toBe('verifier bytes');
    expect((await json(await api(t, `/v1/configs/${id}/openvm.toml`), 422)).detail[0].loc).toEqual(['path', 'artifact']);
  });
});

describe('config keys: published by the operator, downloaded through signed URLs', () => {
  const agentApi = internalApi;

  it('404s an unpublished key naming it and the command that publishes it', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    for (const path of ['pk/app', 'pk/agg', 'pk/halo2', 'vk/app', 'vk/agg']) {
      const body = await json(await api(t, `/v1/configs/${cfg}/${path}`), 404);
      expect(body.detail).toContain(`${path.slice(3)}_${path.slice(0, 2)} of config ${cfg} is not published`);
      expect(body.detail).toContain('setup-config');
    }
    expect((await json(await api(t, `/v1/configs/${cfg}/vk/halo2`), 422)).detail[0].loc).toEqual(['path', 'kind']);
  });

  it('publishes a key in parts with a publisher token, then hands out a URL that needs no API key and serves ranges', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const key = new Uint8Array(1000).map((_, i) => i % 251);
    const sha256 = await sha256Hex(key);
    expect(await json(await publishKey(await seedPublisher([cfg]), cfg, 'agg_pk', key), 200)).toEqual({
      name: 'agg_pk',
      size: 1000,
      version: 1,
      sha256,
      verified: true,
      supersedes: null,
    });
    const link = await json(await api(t, `/v1/configs/${cfg}/pk/agg`), 200);
    expect(link).toEqual({ download_url: expect.any(String), sha256, version: 1, size: 1000 });
    const { download_url } = link;
    expect(download_url).toMatch(new RegExp(`^${BASE}/downloads/configs/${cfg}/agg_pk/1\\?expires=\\d+&signature=[0-9a-f]{64}$`));

    const whole = await exports.default.fetch(new Request(download_url));
    expect(whole.status).toBe(200);
    expect(whole.headers.get('accept-ranges')).toBe('bytes');
    expect(whole.headers.get('repr-digest')).toBe(await reprDigestOf(key));
    expect(new Uint8Array(await whole.arrayBuffer())).toEqual(key);
    const part = await exports.default.fetch(new Request(download_url, { headers: { range: 'bytes=100-199' } }));
    expect(part.status).toBe(206);
    expect(part.headers.get('repr-digest')).toBe(whole.headers.get('repr-digest')); // the whole file's digest (RFC 9530)
    expect(part.headers.get('content-range')).toBe('bytes 100-199/1000');
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(key.slice(100, 200));
    const tail = await exports.default.fetch(new Request(download_url, { headers: { range: 'bytes=-10' } }));
    expect(tail.headers.get('content-range')).toBe('bytes 990-999/1000');

    const forged = download_url.replace(/signature=./, (m: string) => m.slice(0, -1) + (m.endsWith('0') ? '1' : '0'));
    expect((await json(await exports.default.fetch(new Request(forged)), 403)).detail).toMatch(/not valid/);
    const moved = download_url.replace('agg_pk', 'app_pk');
    await json(await exports.default.fetch(new Request(moved)), 403);
    const otherVersion = download_url.replace('agg_pk/1', 'agg_pk/2');
    await json(await exports.default.fetch(new Request(otherVersion)), 403);
  });

  it('refuses expired links; key uploads need a publisher token, not an API key', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    await json(await publishKey(publisher, cfg, 'app_vk', new Uint8Array([1, 2, 3])), 200);
    const past = Math.floor(Date.now() / 1000) - 10;
    const { download_url } = await json(await api(t, `/v1/configs/${cfg}/vk/app`), 200);
    const url = new URL(download_url);
    url.searchParams.set('expires', String(past));
    await json(await exports.default.fetch(new Request(url)), 403);
    await json(await agentApi(t.key, `/internal/v1/configs/${cfg}/keys/app_vk/uploads`, { method: 'POST' }), 401);
    const asJson = { 'content-type': 'application/json' };
    await json(
      await agentApi(publisher, `/internal/v1/configs/${cfg}/keys/bogus/uploads`, { method: 'POST', body: '{}', headers: asJson }),
      422,
    );
  });

  it('gives agents the fleet record of a config, openvm.toml included', async () => {
    const cfg = await seedConfig({ openvm_toml: '[app_vm_config.rv32m]\n' });
    const agent = await seedAgent();
    expect(await json(await agentApi(agent.token, `/internal/v1/configs/${'cfg_' + cfg.slice(4).toLowerCase()}`), 200)).toEqual({
      id: cfg,
      engine: 'dev',
      openvm_version: '1.4.0',
      stark_backend_version: '1.2.0',
      app_vm_commit: APP_VM_COMMIT,
      deferral_enabled: false,
      public_values_bytes: 32,
      active: true,
      openvm_toml: '[app_vm_config.rv32m]\n',
      keys: {},
    });
    await json(await agentApi(agent.token, '/internal/v1/configs/cfg_01JD00000000000000000000ZZ'), 404);
  });
});
