// No tenant or host can exhaust the service (issue 21): a job's log is capped and
// indexed, a host cannot forge the service's lines, rate limits hold per organization
// and on the console, live API keys and open event streams are capped. The Workers pool
// runs small caps (test/vitest.config.ts: LOG_MAX_CHUNKS 64, LOG_MAX_BYTES 256 KiB,
// MAX_STREAMS_PER_ORG 8; the org rate budgets above the keys').
import { env } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createApiKey } from '../../src/admin/statements.ts';
import { openDb } from '../../src/db/client.ts';
import { appendLogChunk, appendServiceLog, LOG_PAGE_CHUNKS } from '../../src/jobs/logs.ts';
import { TENANT_DEFAULTS, tenantLimits } from '../../src/jobs/settings.ts';
import { sha256Hex } from '../../src/lib/crypto.ts';
import { SseReader } from '../sse.ts';
import { as, consoleFetch, postJson, seedUser, send, signIn } from './console-helpers.ts';
import { countedLogRead, writeLongLog } from './log-helpers.ts';
import { claimJob, drainQueuedJobs, lease, seedAgent } from './fleet-helpers.ts';
import { api, countRows, eventually, json, markReady, registerProgram, runAdmin, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import { inOneRateWindow, spend } from './rate-helpers.ts';

beforeEach(drainQueuedJobs);
afterEach(() => vi.restoreAllMocks());

const limits = tenantLimits(env);

async function queuedProof(t?: Tenant) {
  const tenant = t ?? (await seedTenant());
  const program = await registerProgram(tenant, await seedConfig());
  await markReady(program);
  await drainQueuedJobs();
  const { id } = await json<{ id: string }>(
    await api(tenant, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: '{"input": ["0x0101"]}',
      headers: { 'content-type': 'application/json' },
    }),
    200,
  );
  return { t: tenant, proofId: id };
}

const jobOf = async (proofId: string) =>
  (await env.DB.prepare(`SELECT id, log_seq, log_bytes, log_truncated FROM jobs WHERE subject_id = ?`)
    .bind(proofId)
    .first<{ id: string; log_seq: number; log_bytes: number; log_truncated: number }>())!;

describe('a job’s log is capped', () => {
  it(
    'a log flood is refused past LOG_MAX_CHUNKS with 413, and the stored log ends with one truncation marker',
    { timeout: 60_000 },
    async () => {
      expect(limits.LOG_MAX_CHUNKS).toBe(64);
      const { t, proofId } = await queuedProof();
      const job = await claimJob(await seedAgent());
      let offset = 0;
      for (let seq = 0; seq < limits.LOG_MAX_CHUNKS; seq++) {
        const text = `line ${seq}\n`;
        expect(await json(await lease(job, '/logs', { seq, offset, text }), 200)).toEqual({ accepted: 'appended' });
        offset += text.length;
      }
      // The flood goes on: every further chunk is refused, whatever its seq.
      for (let i = 0; i < 5; i++) {
        const res = await lease(job, '/logs', { seq: limits.LOG_MAX_CHUNKS + (i > 2 ? 1 : 0), offset, text: 'more\n' });
        const body = await json<{ detail: string }>(res, 413);
        expect(body.detail).toContain(`This job's log reached its cap (${limits.LOG_MAX_BYTES} bytes, ${limits.LOG_MAX_CHUNKS} chunks)`);
      }
      const row = await jobOf(proofId);
      expect(row.log_truncated).toBe(1);
      expect(row.log_seq).toBe(limits.LOG_MAX_CHUNKS + 1); // the marker, once
      const res = await api(t, `/v1/proofs/${proofId}/logs`);
      const text = await res.text();
      expect(res.headers.get('x-log-truncated')).toBe('true');
      expect(new TextEncoder().encode(text).byteLength).toBe(row.log_bytes);
      expect(text.match(/\[service [^\]]+\] log truncated/g)).toHaveLength(1);
      expect(text.endsWith(' later output was refused\n')).toBe(true);
      expect(text).not.toContain('more');
      // The ending's last chunk is dropped too; the ending itself applies.
      await json(
        await lease(job, '/fail', { error: 'boom', retryable: false, log: { seq: row.log_seq, offset: row.log_bytes, text: 'last\n' } }),
        200,
      );
      expect((await jobOf(proofId)).log_seq).toBe(row.log_seq);
    },
  );

  it(
    'past LOG_MAX_BYTES too; the statement that appends enforces the caps, not the caller’s read of the position',
    { timeout: 30_000 },
    async () => {
      const { proofId } = await queuedProof();
      await claimJob(await seedAgent());
      const { id } = await jobOf(proofId);
      const db = openDb(env.DB);
      const big = 'x'.repeat(limits.LOG_MAX_BYTES / 2 - 1) + '\n';
      expect(await appendLogChunk(db, env.ARTIFACTS, id, { seq: 0, offset: 0, text: big }, limits)).toEqual({ kind: 'appended' });
      // The statement decides, not the caller's read: a caller holding a stale position
      // (the log grew meanwhile, here by a direct write) appends nothing past the cap.
      await env.DB.prepare('UPDATE jobs SET log_bytes = ? WHERE id = ?')
        .bind(limits.LOG_MAX_BYTES - 1, id)
        .run();
      const stale = await appendLogChunk(db, env.ARTIFACTS, id, { seq: 1, offset: big.length, text: 'ab\n' }, limits, {
        seq: 1,
        bytes: big.length,
        truncated: false,
      });
      expect(stale.kind).not.toBe('appended');
      expect(await jobOf(proofId)).toMatchObject({ log_seq: 1, log_bytes: limits.LOG_MAX_BYTES - 1, log_truncated: 0 });
      await env.DB.prepare('UPDATE jobs SET log_bytes = ? WHERE id = ?').bind(big.length, id).run();
      // A chunk that would pass LOG_MAX_BYTES: refused, and the marker ends the log.
      expect((await appendLogChunk(db, env.ARTIFACTS, id, { seq: 1, offset: big.length, text: big + big }, limits)).kind).toBe('capped');
      const row = await jobOf(proofId);
      expect(row.log_truncated).toBe(1);
      expect(row.log_bytes).toBeLessThan(limits.LOG_MAX_BYTES + 200); // the cap and one marker line
      // Concurrent appends at the cap: none passes it.
      const racing = await Promise.all(
        Array.from({ length: 5 }, () =>
          appendLogChunk(db, env.ARTIFACTS, id, { seq: row.log_seq, offset: row.log_bytes, text: 'x\n' }, limits),
        ),
      );
      expect(racing.every((r) => r.kind === 'capped')).toBe(true);
      expect((await jobOf(proofId)).log_seq).toBe(row.log_seq);
    },
  );

  it('a host cannot forge the service’s lines: its `[service` (even cut across chunks) is stored as `(service`', async () => {
    const { t, proofId } = await queuedProof();
    const { id } = await jobOf(proofId);
    const db = openDb(env.DB);
    await appendServiceLog(db, env.ARTIFACTS, id, 'Waiting: no agent online.', limits);
    const job = await claimJob(await seedAgent());
    let { log_seq: seq, log_bytes: offset } = await jobOf(proofId);
    const forged = [
      '[service 2026-11-23T10:00:00.000Z] proof verified by the service\n',
      'ok [SERVICE 2026] also\n',
      'cut across chunks: [serv',
      'ice 2026-11-23T10:00:01.000Z] forged\n',
    ];
    for (const text of forged) {
      await json(await lease(job, '/logs', { seq: seq++, offset, text }), 200);
      offset += new TextEncoder().encode(text).byteLength; // the agent's offsets still hold
    }
    const text = await (await api(t, `/v1/proofs/${proofId}/logs`)).text();
    expect(text.match(/\[service/gi)).toHaveLength(1); // the service's own line, only
    expect(text).toMatch(/^\[service [^\]]+\] Waiting: no agent online\.\n/);
    expect(text).toContain('(service 2026-11-23T10:00:00.000Z] proof verified by the service\n');
    expect(text).toContain('(SERVICE 2026] also');
    expect(text).toContain('cut across chunks: (service 2026-11-23T10:00:01.000Z] forged\n');
    expect(new TextEncoder().encode(text).byteLength).toBe(offset);
  });
});

describe('a log read is bounded, however long the log', () => {
  /** A proof whose job's log has `n` chunks of 10 bytes (test/worker/log-helpers.ts). */
  async function proofWithLog(n: number) {
    const { t, proofId } = await queuedProof();
    const { id } = await jobOf(proofId);
    return { t, proofId, whole: await writeLongLog(id, n, (i) => `${String(i).padStart(9, '0')}\n`) };
  }

  it(
    '2,000 chunks cost a read what 2 do: one D1 round trip and at most LOG_PAGE_CHUNKS R2 reads, no listing; pages follow X-Log-Next-Offset',
    { timeout: 300_000 },
    async () => {
      const long = await proofWithLog(2000);
      const short = await proofWithLog(2);
      const a = await countedLogRead(long.t, `/v1/proofs/${long.proofId}/logs`);
      const b = await countedLogRead(short.t, `/v1/proofs/${short.proofId}/logs`);
      expect(b.text).toBe(short.whole);
      expect(b.counts).toEqual({ d1: 1, gets: 2, lists: 0 });
      expect(a.counts).toEqual({ d1: 1, gets: LOG_PAGE_CHUNKS, lists: 0 });
      expect(a.text).toBe(long.whole.slice(0, LOG_PAGE_CHUNKS * 10));
      expect(a.res.headers.get('x-log-next-offset')).toBe(String(LOG_PAGE_CHUNKS * 10));
      expect(a.res.headers.get('x-log-length')).toBe('20000');
      expect(a.res.headers.get('link')).toBe(`</v1/proofs/${long.proofId}/logs?offset=${LOG_PAGE_CHUNKS * 10}>; rel="next"`);
      // The last page, from the middle of a chunk, costs the same.
      const tail = await countedLogRead(long.t, `/v1/proofs/${long.proofId}/logs?offset=19995`);
      expect(tail.text).toBe(long.whole.slice(19995));
      expect(tail.counts).toEqual({ d1: 1, gets: 1, lists: 0 });
      expect(tail.res.headers.get('link')).toBeNull();
      // Following the pages gives the whole log.
      let all = '';
      for (let next: string | null = `/v1/proofs/${long.proofId}/logs`; next;) {
        const res: Response = await api(long.t, next);
        all += await res.text();
        next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1] ?? null;
      }
      expect(all).toBe(long.whole);
      await json(await api(long.t, `/v1/proofs/${long.proofId}/logs?offset=20001`), 416);
    },
  );
});

describe('rate limits per organization', () => {
  // The organizations' budgets here (test/vitest.config.ts), spent through the binding
  // down to their last requests, in one window (test/worker/rate-helpers.ts).
  const ORG_READS = 2000;
  const ORG_UPLOADS = 300;

  it('many keys of one organization share its budget: 429 once it is spent, whichever key; other organizations go on', async () => {
    const res = await inOneRateWindow(async () => {
      const t = await seedTenant();
      const keys = [
        t,
        ...(await Promise.all(
          Array.from({ length: 11 }, async (_, i) => ({ ...t, key: await runAdmin(createApiKey(t.orgId, `minted ${i + 1}`)) })),
        )),
      ];
      // Two requests per key left in the organization's budget, far inside each key's own (250).
      await spend(env.RATE_LIMIT_ORG_READS, t.orgId, ORG_READS - 2 * keys.length);
      for (let round = 0; round < 2; round++)
        for (const key of keys) expect((await api(key, '/v1/validate_api_key')).status, `round ${round}`).toBe(200);
      const res = await api(keys[5], '/v1/validate_api_key');
      expect(res.status).toBe(429);
      // A key minted now has a fresh key budget, not a fresh organization budget.
      const fresh = { ...t, key: await runAdmin(createApiKey(t.orgId, 'minted later')) };
      expect((await api(fresh, '/v1/validate_api_key')).status).toBe(429);
      return res;
    });
    expect(res.headers.get('retry-after')).toBe('60');
    expect((await res.json<{ detail: string }>()).detail).toContain(`this API key's organization has used its "reads" limit`);
    expect((await api(await seedTenant(), '/v1/validate_api_key')).status).toBe(200);
  });

  it('a request with a body counts once against its organization’s budget, as one without', async () => {
    const config = await seedConfig();
    await inOneRateWindow(async () => {
      const t = await seedTenant();
      const keys = [
        t,
        ...(await Promise.all(
          Array.from({ length: 9 }, async (_, i) => ({ ...t, key: await runAdmin(createApiKey(t.orgId, `uploader ${i}`)) })),
        )),
      ];
      // One upload per key left in the organization's budget: counted twice, the sixth would be refused.
      await spend(env.RATE_LIMIT_ORG_UPLOADS, t.orgId, ORG_UPLOADS - keys.length);
      // A form type with no boundary: refused (400) after its first read, which counted it.
      const init = { method: 'POST', body: 'not a form', headers: { 'content-type': 'multipart/form-data' } };
      for (const [i, key] of keys.entries()) {
        const res = await api(key, `/v1/programs?config_id=${config}`, init);
        expect(res.status, `upload ${i + 1}: ${await res.text()}`).toBe(400);
      }
      const over = await api(keys[0], `/v1/programs?config_id=${config}`, init);
      expect(over.status).toBe(429);
      expect((await over.json<{ detail: string }>()).detail).toContain(`this API key's organization has used its "uploads" limit`);
    });
  });
});

describe('the console API is rate limited', () => {
  it('webhook test sends per organization: 429 past the sends budget, other console requests go on', { timeout: 30_000 }, async () => {
    await inOneRateWindow(async () => {
      const t = await seedTenant();
      const owner = await signIn(await seedUser(t.orgId, 'owner'));
      const base = `/console/v1/orgs/${t.orgId}/webhooks`;
      const hook = await json<{ id: string }>(await postJson(base, { url: 'http://127.0.0.1:9/hook' }, { token: owner.token }), 201);
      // The organization's sends budget is 20 (test/vitest.config.ts): 18 spent, 2 left.
      await spend(env.RATE_LIMIT_CONSOLE_SENDS, t.orgId, 18);
      for (let sent = 0; sent < 2; sent++)
        await json(await consoleFetch(`${base}/${hook.id}/test`, { method: 'POST', token: owner.token }), 202);
      const res = await consoleFetch(`${base}/${hook.id}/test`, { method: 'POST', token: owner.token });
      expect(res.status).toBe(429);
      expect((await res.json<{ detail: string }>()).detail).toContain(
        'this organization has used its limit of webhook tests and redeliveries',
      );
      expect(res.headers.get('retry-after')).toBe('60');
      // Another admin's session of the same organization: the sends budget is the organization's.
      const admin = await signIn(await seedUser(t.orgId, 'admin'));
      expect((await consoleFetch(`${base}/${hook.id}/test`, { method: 'POST', token: admin.token })).status).toBe(429);
      await as(admin, base);
    });
  });
});

describe('live API keys per organization', () => {
  it(
    'are capped by the insert itself: concurrent creates stop at ORG_MAX_API_KEYS with 409; a revoke frees one',
    { timeout: 60_000 },
    async () => {
      expect(limits.ORG_MAX_API_KEYS).toBe(TENANT_DEFAULTS.ORG_MAX_API_KEYS);
      const t = await seedTenant(); // one live key already
      const s = await signIn(await seedUser(t.orgId, 'owner'));
      const org = `/console/v1/orgs/${t.orgId}`;
      const results = await Promise.all(
        Array.from({ length: limits.ORG_MAX_API_KEYS + 10 }, () =>
          consoleFetch(`${org}/api-keys`, { method: 'POST', token: s.token, body: '{}' }),
        ),
      );
      const statuses = results.map((r) => r.status);
      expect(statuses.filter((x) => x === 201)).toHaveLength(limits.ORG_MAX_API_KEYS - 1);
      expect(statuses.filter((x) => x === 409)).toHaveLength(11);
      const refused = results.find((r) => r.status === 409)!;
      expect((await refused.json<{ detail: string }>()).detail).toContain(
        `Your organization has ${limits.ORG_MAX_API_KEYS} live API keys, the most it may have`,
      );
      const live = await env.DB.prepare('SELECT count(*) AS n FROM api_keys WHERE org_id = ? AND revoked_at IS NULL')
        .bind(t.orgId)
        .first<{ n: number }>();
      expect(live!.n).toBe(limits.ORG_MAX_API_KEYS);
      const created = await Promise.all(results.filter((r) => r.status === 201).map((r) => r.json<{ id: string }>()));
      await send(s, 'DELETE', `${org}/api-keys/${created[0].id}`, undefined, 200);
      await send(s, 'POST', `${org}/api-keys`, {}, 201);
      await send(s, 'POST', `${org}/api-keys`, {}, 409);
    },
  );
});

describe('open event streams are capped', () => {
  async function open(t: Tenant, proofId: string) {
    const res = await api(t, `/v1/proofs/${proofId}/events`);
    if (res.status !== 200) return { res, sse: null };
    const sse = new SseReader(res.body!);
    expect((await sse.next())!.event).toBe('state');
    return { res, sse };
  }

  it('per key: the N+1th stream is 429; a closed stream frees its slot; a crashed Worker’s slots lapse', { timeout: 60_000 }, async () => {
    const { t, proofId } = await queuedProof();
    const streams = [];
    for (let i = 0; i < limits.MAX_STREAMS_PER_KEY; i++) streams.push((await open(t, proofId)).sse!);
    const over = await open(t, proofId);
    expect(over.res.status).toBe(429);
    expect((await over.res.json<{ detail: string }>()).detail).toBe(
      `Too many open event streams: this API key has ${limits.MAX_STREAMS_PER_KEY} open, the most is ${limits.MAX_STREAMS_PER_KEY}. Close one (or let it end) and retry.`,
    );
    // Another key is not held back by this one's streams.
    const other = { ...t, key: await runAdmin(createApiKey(t.orgId, 'other')) };
    const ok = await open(other, proofId);
    expect(ok.res.status).toBe(200);
    await ok.sse!.cancel();
    // Closing one frees its slot (its row is deleted when its loop sees the client gone).
    await streams.pop()!.cancel();
    const keyHash = await sha256Hex(t.key);
    await eventually(async () => expect(await countRows('event_streams', 'key_hash = ?', keyHash)).toBe(limits.MAX_STREAMS_PER_KEY - 1));
    const again = await open(t, proofId);
    expect(again.res.status).toBe(200);
    streams.push(again.sse!);
    for (const s of streams) await s.cancel();

    // Rows left by a Worker that died (never deleted) count until they lapse.
    const t2 = await seedTenant();
    const { proofId: p2 } = await queuedProof(t2);
    const hash = await sha256Hex(t2.key);
    const insert = (expires: number) =>
      Array.from({ length: limits.MAX_STREAMS_PER_KEY }, () =>
        env.DB.prepare('INSERT INTO event_streams (id, org_id, key_hash, expires_at) VALUES (?, ?, ?, ?)').bind(
          crypto.randomUUID(),
          t2.orgId,
          hash,
          expires,
        ),
      );
    await env.DB.batch(insert(Date.now() + 60_000));
    expect((await open(t2, p2)).res.status).toBe(429);
    await env.DB.prepare('UPDATE event_streams SET expires_at = ? WHERE key_hash = ?')
      .bind(Date.now() - 1, hash)
      .run();
    const lapsed = await open(t2, p2);
    expect(lapsed.res.status).toBe(200);
    await lapsed.sse!.cancel();
  });

  it('per organization: its keys together hold at most MAX_STREAMS_PER_ORG', { timeout: 60_000 }, async () => {
    expect(limits.MAX_STREAMS_PER_ORG).toBe(8);
    const { t, proofId } = await queuedProof();
    const b = { ...t, key: await runAdmin(createApiKey(t.orgId, 'b')) };
    const streams = [];
    for (let i = 0; i < limits.MAX_STREAMS_PER_KEY; i++) streams.push((await open(t, proofId)).sse!);
    for (let i = 0; i < limits.MAX_STREAMS_PER_ORG - limits.MAX_STREAMS_PER_KEY; i++) streams.push((await open(b, proofId)).sse!);
    const over = await open(b, proofId);
    expect(over.res.status).toBe(429);
    expect((await over.res.json<{ detail: string }>()).detail).toContain(
      `this API key's organization has ${limits.MAX_STREAMS_PER_ORG} open, the most is ${limits.MAX_STREAMS_PER_ORG}`,
    );
    for (const s of streams) await s.cancel();
  });
});
