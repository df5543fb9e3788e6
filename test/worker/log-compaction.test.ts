// A finished job's log is compacted into one R2 object (src/jobs/logs.ts compactJobLog),
// so the published client, which reads `GET .../logs` once with no offset and saves what
// it gets (/work/shared/spec/client-conventions.md), gets the whole log however many
// chunks it has; a log still being written, or finished but not yet compacted, keeps the
// paged read. Compaction is idempotent, survives a crash between any two of its steps,
// and the sweep finishes what is pending.
import { env } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDb } from '../../src/db/client.ts';
import { appendServiceLog, compactJobLog, jobLogFrom, LOG_PAGE_CHUNKS } from '../../src/jobs/logs.ts';
import { tenantLimits } from '../../src/jobs/settings.ts';
import { sweep } from '../../src/jobs/sweep.ts';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { consoleFetch, seedUser, signIn } from './console-helpers.ts';
import { countedLogRead, writeLongLog } from './log-helpers.ts';
import { claimJob, drainQueuedJobs, lease, seedAgent } from './fleet-helpers.ts';
import { api, eventually, json, markReady, registerProgram, seedConfig, seedTenant } from './helpers.ts';

beforeEach(drainQueuedJobs);
afterEach(() => vi.restoreAllMocks());

const limits = tenantLimits(env);
const db = openDb(env.DB);

async function queuedProof() {
  const t = await seedTenant();
  const program = await registerProgram(t, await seedConfig());
  await markReady(program);
  await drainQueuedJobs();
  const { id } = await json<{ id: string }>(
    await api(t, `/v1/proofs?program_id=${program}`, {
      method: 'POST',
      body: '{"input": ["0x0101"]}',
      headers: { 'content-type': 'application/json' },
    }),
    200,
  );
  const job = (await env.DB.prepare('SELECT id FROM jobs WHERE subject_id = ?').bind(id).first<{ id: string }>())!;
  return { t, proofId: id, jobId: job.id };
}

const jobRow = (jobId: string) =>
  env.DB.prepare('SELECT status, log_seq, log_bytes, log_store FROM jobs WHERE id = ?')
    .bind(jobId)
    .first<{ status: string; log_seq: number; log_bytes: number; log_store: string }>();
const chunkObjects = async (jobId: string) => (await env.ARTIFACTS.list({ prefix: artifactKey.jobLogPrefix(jobId) })).objects.length;
const indexRows = async (jobId: string) =>
  (await env.DB.prepare('SELECT count(*) AS n FROM job_log_chunks WHERE job_id = ?').bind(jobId).first<{ n: number }>())!.n;

/**
 * A proof whose job's log has `n` chunks of 10 bytes (the last one `ü…`, two bytes a
 * character), written straight to R2 and the index (past the test caps, as a long
 * proof's log would be under the real ones); `finished` ends the job.
 */
async function proofWithLog(n: number, finished = true) {
  const { t, proofId, jobId } = await queuedProof();
  const line = (i: number) => (i === n - 1 ? 'üüüü\n\n' : `${String(i).padStart(9, '0')}\n`);
  return { t, proofId, jobId, whole: await writeLongLog(jobId, n, line, finished) };
}

describe('a finished log is compacted and served whole', () => {
  it(
    '2,000 chunks, finished: paged until compacted, then whole with no offset in one R2 read and one D1 round trip; ranged from an offset',
    { timeout: 300_000 },
    async () => {
      const { t, proofId, jobId, whole } = await proofWithLog(2000);
      const bytes = new TextEncoder().encode(whole).byteLength;
      expect(bytes).toBe(20000);
      // Finished but not compacted yet (pending): the paged read, as before.
      const before = await countedLogRead(t, `/v1/proofs/${proofId}/logs`);
      expect(before.counts).toEqual({ d1: 1, gets: LOG_PAGE_CHUNKS, lists: 0 });
      expect(before.res.headers.get('link')).not.toBeNull();

      expect(await compactJobLog(db, env.ARTIFACTS, jobId, limits)).toBe('compacted');
      expect(await jobRow(jobId)).toMatchObject({ log_store: 'clean', log_bytes: 20000, log_seq: 2000 });
      expect(await chunkObjects(jobId)).toBe(0);
      expect(await indexRows(jobId)).toBe(0);

      const all = await countedLogRead(t, `/v1/proofs/${proofId}/logs`);
      expect(all.counts).toEqual({ d1: 1, gets: 1, lists: 0 });
      expect(all.text).toBe(whole);
      expect(all.res.headers.get('x-log-next-offset')).toBe('20000');
      expect(all.res.headers.get('x-log-length')).toBe('20000');
      expect(all.res.headers.get('link')).toBeNull();
      // From an offset (inside a character of the last chunk is the caller's choice): one ranged read to the end.
      const tail = await countedLogRead(t, `/v1/proofs/${proofId}/logs?offset=15000`);
      expect(tail.counts).toEqual({ d1: 1, gets: 1, lists: 0 });
      expect(tail.text).toBe(new TextDecoder().decode(new TextEncoder().encode(whole).subarray(15000)));
      expect(tail.res.headers.get('x-log-next-offset')).toBe('20000');
      expect((await countedLogRead(t, `/v1/proofs/${proofId}/logs?offset=20000`)).text).toBe('');
      await json(await api(t, `/v1/proofs/${proofId}/logs?offset=20001`), 416);
      // The event stream's and the console's bounded reads of it never cut a character: 5
      // bytes from the last chunk (`üüüü\n\n`, two bytes each) are two whole `ü`.
      expect(await jobLogFrom(db, env.ARTIFACTS, jobId, 19990, 5, 20000)).toEqual({ text: 'üü', next: 19994 });
      expect(await jobLogFrom(db, env.ARTIFACTS, jobId, 19994, 100, 20000)).toEqual({ text: 'üü\n\n', next: 20000 });
      const member = await signIn(await seedUser(t.orgId, 'member'));
      const consoleRead = await consoleFetch(`/console/v1/orgs/${t.orgId}/proofs/${proofId}/logs?offset=10000`, { token: member.token });
      expect(await consoleRead.text()).toBe(whole.slice(10000));
      expect(consoleRead.headers.get('x-log-next-offset')).toBe('20000');
    },
  );

  it('a log still being written is not compacted and keeps the paged read', { timeout: 60_000 }, async () => {
    const { t, proofId, jobId } = await proofWithLog(300, false);
    expect(await compactJobLog(db, env.ARTIFACTS, jobId, limits)).toBe('not-final');
    expect((await jobRow(jobId))!.log_store).toBe('chunks');
    expect(await chunkObjects(jobId)).toBe(300);
    const page = await countedLogRead(t, `/v1/proofs/${proofId}/logs`);
    expect(page.counts.gets).toBe(LOG_PAGE_CHUNKS);
    expect(page.res.headers.get('x-log-next-offset')).toBe(String(LOG_PAGE_CHUNKS * 10));
  });
});

describe('compaction is idempotent and crash-safe', () => {
  it('retried and concurrent runs give one compacted log; a compacted log takes no more appends', { timeout: 300_000 }, async () => {
    const { t, proofId, jobId, whole } = await proofWithLog(500);
    const runs = await Promise.all(Array.from({ length: 3 }, () => compactJobLog(db, env.ARTIFACTS, jobId, limits)));
    expect(runs).toContain('compacted');
    for (const r of runs) expect(['compacted', 'changed']).toContain(r);
    expect(await compactJobLog(db, env.ARTIFACTS, jobId, limits)).toBe('compacted');
    expect(await jobRow(jobId)).toMatchObject({ log_store: 'clean', log_bytes: 5000, log_seq: 500 });
    expect(await chunkObjects(jobId)).toBe(0);
    // The appending statement refuses a compacted log: its length stays the object's.
    await appendServiceLog(db, env.ARTIFACTS, jobId, 'late line', limits);
    expect(await jobRow(jobId)).toMatchObject({ log_bytes: 5000, log_seq: 500 });
    expect(await (await api(t, `/v1/proofs/${proofId}/logs`)).text()).toBe(whole);
  });

  it(
    'a crash between writing the compacted object and recording it: reads stay on the chunks, whole and right; the retry completes it',
    { timeout: 60_000 },
    async () => {
      const { t, proofId, jobId, whole } = await proofWithLog(200);
      const put = env.ARTIFACTS.put.bind(env.ARTIFACTS);
      vi.spyOn(env.ARTIFACTS, 'put').mockImplementationOnce(async (...args) => {
        await put(...args);
        throw new Error('the Worker died');
      });
      await expect(compactJobLog(db, env.ARTIFACTS, jobId, limits)).rejects.toThrow('the Worker died');
      vi.restoreAllMocks();
      expect(await env.ARTIFACTS.head(artifactKey.jobLogCompacted(jobId))).not.toBeNull();
      expect((await jobRow(jobId))!.log_store).toBe('chunks');
      let read = '';
      for (let next: string | null = `/v1/proofs/${proofId}/logs`; next;) {
        const res: Response = await api(t, next);
        read += await res.text();
        next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1] ?? null;
      }
      expect(read).toBe(whole);
      expect(await compactJobLog(db, env.ARTIFACTS, jobId, limits)).toBe('compacted');
      expect(await (await api(t, `/v1/proofs/${proofId}/logs`)).text()).toBe(whole);
    },
  );

  it('a log that grew between the read and the record is not recorded from the stale object', { timeout: 60_000 }, async () => {
    const { t, proofId, jobId, whole } = await proofWithLog(50);
    const put = env.ARTIFACTS.put.bind(env.ARTIFACTS);
    let grew = false;
    vi.spyOn(env.ARTIFACTS, 'put').mockImplementation(async (...args) => {
      const r = await put(...args);
      // The lease's expiry line lands after the job ended (src/jobs/lease-checks.ts afterExpiry).
      if (args[0] === artifactKey.jobLogCompacted(jobId) && !grew)
        ((grew = true), await appendServiceLog(db, env.ARTIFACTS, jobId, 'lease expired', limits));
      return r;
    });
    expect(await compactJobLog(db, env.ARTIFACTS, jobId, limits)).toBe('changed');
    vi.restoreAllMocks();
    expect((await jobRow(jobId))!.log_store).toBe('chunks');
    expect(await compactJobLog(db, env.ARTIFACTS, jobId, limits)).toBe('compacted');
    const text = await (await api(t, `/v1/proofs/${proofId}/logs`)).text();
    expect(text.startsWith(whole)).toBe(true);
    expect(text).toMatch(/\[service [^\]]+\] lease expired\n$/);
  });

  it(
    'a crash after the record, before the chunks are deleted: the compacted object serves reads; the retry deletes the chunks',
    { timeout: 60_000 },
    async () => {
      const { t, proofId, jobId, whole } = await proofWithLog(200);
      vi.spyOn(env.ARTIFACTS, 'delete').mockRejectedValueOnce(new Error('the Worker died'));
      await expect(compactJobLog(db, env.ARTIFACTS, jobId, limits)).rejects.toThrow('the Worker died');
      vi.restoreAllMocks();
      expect((await jobRow(jobId))!.log_store).toBe('compacted');
      expect(await chunkObjects(jobId)).toBe(200);
      const read = await countedLogRead(t, `/v1/proofs/${proofId}/logs`);
      expect(read.text).toBe(whole);
      expect(read.counts.gets).toBe(1);
      expect(await compactJobLog(db, env.ARTIFACTS, jobId, limits)).toBe('compacted');
      expect(await chunkObjects(jobId)).toBe(0);
      expect((await jobRow(jobId))!.log_store).toBe('clean');
    },
  );
});

describe('who compacts', () => {
  it('the sweep finishes a pending compaction, in bounded batches', { timeout: 90_000 }, async () => {
    const { t, proofId, jobId, whole } = await proofWithLog(300);
    const pending = (await env.DB.prepare(
      `SELECT count(*) AS n FROM jobs WHERE status = 'done' AND log_store IN ('chunks', 'compacted')`,
    ).first<{ n: number }>())!.n;
    let runs = 0;
    while ((await jobRow(jobId))!.log_store !== 'clean' && runs++ <= pending) {
      const r = await sweep(db, env);
      expect(r.logsCompacted).toBeLessThanOrEqual(4);
    }
    expect((await jobRow(jobId))!.log_store).toBe('clean');
    expect(await (await api(t, `/v1/proofs/${proofId}/logs`)).text()).toBe(whole);
  });

  it('a lease that ends the job compacts its log after the response; the event stream still sends it', { timeout: 60_000 }, async () => {
    const { t, proofId } = await queuedProof();
    const job = await claimJob(await seedAgent());
    let offset = 0;
    let text = '';
    for (let seq = 0; seq < 20; seq++) {
      const line = `step ${seq}\n`;
      await json(await lease(job, '/logs', { seq, offset, text: line }), 200);
      offset += line.length;
      text += line;
    }
    await json(await lease(job, '/fail', { error: 'boom', retryable: false, log: { seq: 20, offset, text: 'last\n' } }), 200);
    text += 'last\n';
    await eventually(async () => expect((await jobRow(job.id))!.log_store).toBe('clean'));
    expect(await (await api(t, `/v1/proofs/${proofId}/logs`)).text()).toBe(text);
    const events = await (await api(t, `/v1/proofs/${proofId}/events`)).text();
    expect(events).toContain('event: log');
    expect(events).toContain('data: step 19');
    expect(events).toContain('data: last');
  });
});
