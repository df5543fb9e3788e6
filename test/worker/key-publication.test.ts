// Key publication (SECURITY.md "The publishing credential", "Published keys and their digests"): only the operator's publisher token
// publishes a config's keys; a published version is never overwritten, a new one must
// say which it supersedes, the declared SHA-256 is checked, links serve the version
// they were issued for, and every step is audited.
import { env } from 'cloudflare:test';
import { exports } from 'cloudflare:workers';
import { describe, expect, it } from 'vitest';
import { revokePublisherTokenById } from '../../src/admin/statements.ts';
import { seedAgent } from './fleet-helpers.ts';
import { api, countRows, json, r2Keys, runAdmin, seedConfig, seedTenant } from './helpers.ts';
import { completeUpload, internalApi, publishKey, putPart, reprDigestOf, seedPublisher, sha256Hex, startUpload } from './key-helpers.ts';

const bytes = (text: string) => new TextEncoder().encode(text);

async function auditActions(cfg: string, name: string): Promise<string[]> {
  const { results } = await env.DB.prepare('SELECT action FROM key_audit WHERE config_id = ? AND name = ? ORDER BY id')
    .bind(cfg, name)
    .all<{ action: string }>();
  return results.map((r) => r.action);
}

describe('who publishes keys', () => {
  it('an agent token cannot start, put, complete or abort a key upload', async () => {
    const cfg = await seedConfig();
    const agent = await seedAgent();
    const vk = bytes('the operator verifying key');
    expect((await json(await startUpload(agent.token, cfg, 'app_vk', { sha256: await sha256Hex(vk) }), 401)).detail).toMatch(
      /publisher token/,
    );

    // An upload the operator started: the agent token can neither feed nor finish it.
    const publisher = await seedPublisher([cfg]);
    const started = await json(await startUpload(publisher, cfg, 'app_vk', { sha256: await sha256Hex(vk) }), 201);
    await json(await putPart(agent.token, cfg, 'app_vk', started.upload_id, 1, bytes('attacker bytes')), 401);
    const part = await json(await putPart(publisher, cfg, 'app_vk', started.upload_id, 1, vk), 200);
    await json(await completeUpload(agent.token, cfg, 'app_vk', started.upload_id, [part]), 401);
    const abort = await internalApi(
      agent.token,
      `/internal/v1/configs/${cfg}/keys/app_vk/uploads/${encodeURIComponent(started.upload_id)}`,
      { method: 'DELETE' },
    );
    expect(abort.status).toBe(401);
    expect(await countRows('config_keys', 'config_id = ?', cfg)).toBe(0);

    expect(await json(await completeUpload(publisher, cfg, 'app_vk', started.upload_id, [part]), 200)).toMatchObject({
      version: 1,
      verified: true,
    });
  });

  it('a publisher token is scoped to its configs, expires and can be revoked', async () => {
    const cfg = await seedConfig();
    const other = await seedConfig();
    const sha256 = await sha256Hex(bytes('k'));
    const scoped = await seedPublisher([cfg]);
    expect((await json(await startUpload(scoped, other, 'app_vk', { sha256 }), 403)).detail).toMatch(/not scoped/);
    // Scope is by the config's canonical id, whatever the case of the URL.
    await json(await startUpload(scoped, 'cfg_' + cfg.slice(4).toLowerCase(), 'app_vk', { sha256 }), 201);

    const expired = await seedPublisher(null, { ttlDays: 1 }, Date.now() - 2 * 24 * 3600 * 1000);
    await json(await startUpload(expired, cfg, 'agg_vk', { sha256 }), 401);

    const revoked = await seedPublisher(null);
    await json(await startUpload(revoked, cfg, 'agg_vk', { sha256 }), 201);
    const { id } = (await env.DB.prepare('SELECT id FROM publisher_tokens ORDER BY created_at DESC, id DESC LIMIT 1').first<{
      id: string;
    }>())!;
    await runAdmin(revokePublisherTokenById(id));
    await json(await startUpload(revoked, cfg, 'agg_vk', { sha256 }), 401);
  });

  it('a publisher token reads the fleet record of a config in its scope, with its current keys', async () => {
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    const vk = bytes('vk v1');
    await json(await publishKey(publisher, cfg, 'agg_vk', vk), 200);
    const record = await json(await internalApi(publisher, `/internal/v1/configs/${cfg}`), 200);
    expect(record.keys).toEqual({ agg_vk: { version: 1, sha256: await sha256Hex(vk), size: vk.length } });
    await json(await internalApi(publisher, `/internal/v1/configs/${await seedConfig()}`), 403);
  });
});

describe('published versions', () => {
  it('a second publication of a key is refused (409) and does not replace the first', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    await json(await publishKey(publisher, cfg, 'evm_verifier', bytes('operator verifier')), 200);
    // Refused at the start, before a byte is uploaded...
    expect(
      (await json(await startUpload(publisher, cfg, 'evm_verifier', { sha256: await sha256Hex(bytes('other')) }), 409)).detail,
    ).toMatch(/supersedes: 1/);
    // ...and a stale or made-up supersede too.
    await json(await startUpload(publisher, cfg, 'evm_verifier', { sha256: await sha256Hex(bytes('other')), supersedes: 2 }), 409);
    expect(await (await api(t, `/v1/configs/${cfg}/evm_verifier`)).text()).toBe('operator verifier');
    expect(await auditActions(cfg, 'evm_verifier')).toEqual([
      'upload.start',
      'key.publish',
      'upload.refused_conflict',
      'upload.refused_conflict',
    ]);
  });

  it('two uploads racing to publish the first version: one lands, the other is refused at completion', async () => {
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    const [a, b] = [bytes('first racer'), bytes('second racer')];
    const sa = await json(await startUpload(publisher, cfg, 'agg_vk', { sha256: await sha256Hex(a) }), 201);
    const sb = await json(await startUpload(publisher, cfg, 'agg_vk', { sha256: await sha256Hex(b) }), 201);
    const pa = await json(await putPart(publisher, cfg, 'agg_vk', sa.upload_id, 1, a), 200);
    const pb = await json(await putPart(publisher, cfg, 'agg_vk', sb.upload_id, 1, b), 200);
    await json(await completeUpload(publisher, cfg, 'agg_vk', sa.upload_id, [pa]), 200);
    expect((await json(await completeUpload(publisher, cfg, 'agg_vk', sb.upload_id, [pb]), 409)).detail).toMatch(/nothing was published/);
    const rows = await env.DB.prepare('SELECT version, sha256 FROM config_keys WHERE config_id = ?').bind(cfg).all();
    expect(rows.results).toEqual([{ version: 1, sha256: await sha256Hex(a) }]);
    // The loser's object is gone; the winner's stays.
    expect(await r2Keys(`configs/${cfg}/keys/agg_vk/`)).toHaveLength(1);
  });

  it('a wrong declared digest is refused at completion and nothing changes', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    const good = bytes('the real app vk');
    await json(await publishKey(publisher, cfg, 'app_vk', good), 200);
    const before = await json(await api(t, `/v1/configs/${cfg}/vk/app`), 200);

    const tampered = bytes('bytes swapped in transit');
    const refused = await json(
      await publishKey(publisher, cfg, 'app_vk', tampered, { sha256: await sha256Hex(bytes('what was declared')), supersedes: 1 }),
      422,
    );
    expect(refused.detail).toContain(await sha256Hex(tampered));
    expect(await countRows('config_keys', 'config_id = ?', cfg)).toBe(1);
    expect(await r2Keys(`configs/${cfg}/keys/app_vk/`)).toHaveLength(1);
    const after = await json(await api(t, `/v1/configs/${cfg}/vk/app`), 200);
    expect({ ...after, download_url: null }).toEqual({ ...before, download_url: null });
    expect(new Uint8Array(await (await exports.default.fetch(new Request(after.download_url))).arrayBuffer())).toEqual(good);
    expect(await auditActions(cfg, 'app_vk')).toEqual(['upload.start', 'key.publish', 'upload.start', 'upload.refused_digest']);
    const detail = await env.DB.prepare("SELECT detail FROM key_audit WHERE config_id = ? AND action = 'upload.refused_digest'")
      .bind(cfg)
      .first<{ detail: string }>();
    expect(JSON.parse(detail!.detail)).toMatchObject({ actual: await sha256Hex(tampered), size: tampered.length });
  });

  it('a supersede publishes a new version; a link issued before it still serves the old bytes, with their digest', async () => {
    const t = await seedTenant();
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    const [v1, v2] = [bytes('halo2 pk, first'), bytes('halo2 pk, second and longer')];
    await json(await publishKey(publisher, cfg, 'halo2_pk', v1), 200);
    const old = await json(await api(t, `/v1/configs/${cfg}/pk/halo2`), 200);
    expect(await json(await publishKey(publisher, cfg, 'halo2_pk', v2, { supersedes: 1 }), 200)).toMatchObject({
      version: 2,
      supersedes: 1,
      sha256: await sha256Hex(v2),
    });

    const oldDownload = await exports.default.fetch(new Request(old.download_url));
    expect(new Uint8Array(await oldDownload.arrayBuffer())).toEqual(v1);
    expect(oldDownload.headers.get('repr-digest')).toBe(await reprDigestOf(v1));

    const fresh = await json(await api(t, `/v1/configs/${cfg}/pk/halo2`), 200);
    expect(fresh).toMatchObject({ version: 2, sha256: await sha256Hex(v2), size: v2.length });
    const newDownload = await exports.default.fetch(new Request(fresh.download_url));
    expect(new Uint8Array(await newDownload.arrayBuffer())).toEqual(v2);
    expect(newDownload.headers.get('repr-digest')).toBe(await reprDigestOf(v2));

    const agent = await seedAgent();
    expect((await json(await internalApi(agent.token, `/internal/v1/configs/${cfg}`), 200)).keys.halo2_pk).toEqual({
      version: 2,
      sha256: await sha256Hex(v2),
      size: v2.length,
    });
    expect(await auditActions(cfg, 'halo2_pk')).toEqual(['upload.start', 'key.publish', 'upload.start', 'key.supersede']);
    const actors = await env.DB.prepare('SELECT DISTINCT actor FROM key_audit WHERE config_id = ?').bind(cfg).all<{ actor: string }>();
    expect(actors.results.map((r) => r.actor)).toEqual([expect.stringMatching(/^publisher:pub_/)]);
  });

  it('a retried completion answers the version it published, once', async () => {
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    const key = bytes('agg pk');
    const started = await json(await startUpload(publisher, cfg, 'agg_pk', { sha256: await sha256Hex(key) }), 201);
    const part = await json(await putPart(publisher, cfg, 'agg_pk', started.upload_id, 1, key), 200);
    const first = await json(await completeUpload(publisher, cfg, 'agg_pk', started.upload_id, [part]), 200);
    expect(await json(await completeUpload(publisher, cfg, 'agg_pk', started.upload_id, [part]), 200)).toEqual(first);
    expect(await countRows('config_keys', 'config_id = ?', cfg)).toBe(1);
  });

  it('a completion retried after R2 completed the upload but before D1 recorded it still publishes it, checked', async () => {
    const cfg = await seedConfig();
    const publisher = await seedPublisher([cfg]);
    const key = bytes('app pk, first try cut short');
    const started = await json(await startUpload(publisher, cfg, 'app_pk', { sha256: await sha256Hex(key) }), 201);
    const part = await json(await putPart(publisher, cfg, 'app_pk', started.upload_id, 1, key), 200);
    // The first attempt's R2 step, as if the Worker died before its D1 batch.
    const [id, r2] = [started.upload_id.slice(0, 26), started.upload_id.slice(27)];
    await env.ARTIFACTS.resumeMultipartUpload(`configs/${cfg}/keys/app_pk/${id}`, r2).complete([{ partNumber: 1, etag: part.etag }]);
    expect(await json(await completeUpload(publisher, cfg, 'app_pk', started.upload_id, [part]), 200)).toMatchObject({
      version: 1,
      sha256: await sha256Hex(key),
      verified: true,
    });
  });

  it('published versions and their audit are append-only, whatever the statement', async () => {
    const cfg = await seedConfig();
    await json(await publishKey(await seedPublisher([cfg]), cfg, 'app_pk', bytes('pk')), 200);
    await expect(env.DB.prepare("UPDATE config_keys SET sha256 = 'x' WHERE config_id = ?").bind(cfg).run()).rejects.toThrow(/append-only/);
    await expect(env.DB.prepare('DELETE FROM config_keys WHERE config_id = ?').bind(cfg).run()).rejects.toThrow(/append-only/);
    await expect(env.DB.prepare('DELETE FROM key_audit WHERE config_id = ?').bind(cfg).run()).rejects.toThrow(/append-only/);
  });
});
