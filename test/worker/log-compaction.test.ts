// A finished job's log is compacted into one R2 object (src/jobs/logs.ts compactJobLog),
// so the published client, which reads `GET .../logs` once with no offset and saves what
// it gets (/work/shared/spec/client-conventions.md), gets the whole log however many
// chunks it has; a log still being written, or finished but not yet compacted, keeps the
// paged read. Compaction is idempotent, survives a crash between any two of its steps,
// and the sweep finishes what is pending.
import { env } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { openDb } from '../../src/db/client.ts';
import { appendServiceLog, compactJobLog, COMPACT_SWEEP_BATCH, jobLogFrom, LOG_PAGE_CHUNKS, stageWholeLog } from '../../src/jobs/logs.ts';
import { batchByName } from '../../src/db/batch.ts';
import { tenantLimits } from '../../src/jobs/settings.ts';
import { sweepParts } from '../../src/jobs/sweep.ts';
import { CallBudget, metered } from '../../src/lib/metered.ts';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { consoleFetch, seedUser, signIn } from './console-helpers.ts';
import { countedLogRead, queuedProof, writeLongLog } from './log-helpers.ts';
import { recordD1Calls } from './d1-calls.ts';
import { claimJob, devProofOf, drainQueuedJobs, expireLease, lease, seedAgent, upload } from './fleet-helpers.ts';
import { api, eventually, json, cronBindings } from './helpers.ts';

beforeEach(drainQueuedJobs);
afterEach(() => vi.restoreAllMocks());

const limits = tenantLimits(env);
/** Bindings with a budget no compaction here reaches: a whole compaction in one call. */
const anyBudget = () => metered(env, new CallBudget(100_000, 'test'));
const db = openDb(env.DB);

const jobRow = (jobId: string) =>
  env.DB.prepare('SELECT status, log_seq, log_bytes, log_store FROM jobs WHERE id = ?')
    .bind(jobId)
    .first<{ status: string; log_seq: number; log_bytes: number; log_store: string }>();
/** The log's objects under its prefix: its chunks, and the parts a compaction's stages wrote. */
const logObjects = async (jobId: string) =>
  (await env.ARTIFACTS.list({ prefix: artifactKey.jobLogPrefix(jobId) })).objects.map((o) => o.key);
const chunkObjects = async (jobId: string) => (await logObjects(jobId)).filter((k) => /\/\d{8}(\.service)?$/.test(k)).length;
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

      expect(await compactJobLog(anyBudget(), jobId, limits)).toBe('compacted');
      expect(await jobRow(jobId)).toMatchObject({ log_store: 'clean', log_bytes: 20000, log_seq: 2000 });
      expect(await logObjects(jobId)).toEqual([]); // its chunks and its stages' parts
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
    expect(await compactJobLog(anyBudget(), jobId, limits)).toBe('not-final');
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
    const runs = await Promise.all(Array.from({ length: 3 }, () => compactJobLog(anyBudget(), jobId, limits)));
    expect(runs).toContain('compacted');
    for (const r of runs) expect(['compacted', 'changed']).toContain(r);
    expect(await compactJobLog(anyBudget(), jobId, limits)).toBe('compacted');
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
      vi.spyOn(env.ARTIFACTS, 'put').mockImplementation(async (...args) => {
        const written = await put(...args);
        // The last stage's write: the compacted object.
        if (args[0] === artifactKey.jobLogCompacted(jobId)) throw new Error('the Worker died');
        return written;
      });
      await expect(compactJobLog(anyBudget(), jobId, limits)).rejects.toThrow('the Worker died');
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
      expect(await compactJobLog(anyBudget(), jobId, limits)).toBe('compacted');
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
    expect(await compactJobLog(anyBudget(), jobId, limits)).toBe('changed');
    vi.restoreAllMocks();
    expect((await jobRow(jobId))!.log_store).toBe('chunks');
    expect(await compactJobLog(anyBudget(), jobId, limits)).toBe('compacted');
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
      await expect(compactJobLog(anyBudget(), jobId, limits)).rejects.toThrow('the Worker died');
      vi.restoreAllMocks();
      expect((await jobRow(jobId))!.log_store).toBe('compacted');
      expect(await chunkObjects(jobId)).toBe(200);
      const read = await countedLogRead(t, `/v1/proofs/${proofId}/logs`);
      expect(read.text).toBe(whole);
      expect(read.counts.gets).toBe(1);
      expect(await compactJobLog(anyBudget(), jobId, limits)).toBe('compacted');
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
      const r = await sweepParts(cronBindings());
      expect(r.logsCompacted).toBeLessThanOrEqual(COMPACT_SWEEP_BATCH);
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

describe('a log an ending carries whole needs no compaction', () => {
  const completeWith = (job: Awaited<ReturnType<typeof claimJob>>, log?: { seq: number; offset: number; text: string }) =>
    lease(job, '/complete', {
      kind: 'proof',
      proofs: ['stark'],
      public_values: '0x00',
      metrics: { num_instructions: 1 },
      ...(log ? { log } : {}),
    });

  it('a completion carrying its one chunk writes it as the compacted log, in its own batch: no chunk, no index row, nothing after the response', async () => {
    const { t, proofId } = await queuedProof();
    const job = await claimJob(await seedAgent());
    await json(await upload(job, 'stark', await devProofOf(job)), 200);
    const puts = vi.spyOn(env.ARTIFACTS, 'put');
    await json(await completeWith(job, { seq: 0, offset: 0, text: 'proved [service spoof\n' }), 200);
    // Recorded by the completion itself, not by a compaction after it.
    expect(await jobRow(job.id)).toEqual({ status: 'done', log_seq: 1, log_bytes: 22, log_store: 'clean' });
    expect(await indexRows(job.id)).toBe(0);
    expect(await chunkObjects(job.id)).toBe(0);
    expect(puts.mock.calls.map(([key]) => key)).toContain(artifactKey.jobLogCompacted(job.id));
    // The host's text as stored (its `[service` defused), served whole, and sent by the event stream.
    expect(await (await api(t, `/v1/proofs/${proofId}/logs`)).text()).toBe('proved (service spoof\n');
    expect(await (await api(t, `/v1/proofs/${proofId}/events`)).text()).toContain('data: proved (service spoof');
  });

  it('a dev proof’s completion is two D1 round trips: its token, lease, proof, program, config and reservations in one, the ending in the other', async () => {
    await queuedProof();
    const job = await claimJob(await seedAgent());
    const proof = await devProofOf(job);
    const d1 = recordD1Calls();
    try {
      const res = await lease(job, '/complete', {
        kind: 'proof',
        proofs: ['stark'],
        public_values: '0x00',
        metrics: { num_instructions: 1 },
        results: { stark: proof },
        log: { seq: 0, offset: 0, text: 'proved\n' },
      });
      await json(res, 200);
    } finally {
      d1.stop();
    }
    // The job token was issued by this isolate's claim: the door takes it for live, the first batch checks it.
    // Both on the binding: the fleet's requests go to the primary without a session (src/db/sessions.ts).
    expect(d1.calls.map((c) => c.via)).toEqual(['binding', 'binding']);
    expect(await jobRow(job.id)).toMatchObject({ status: 'done', log_store: 'clean' });
    const rows = await env.DB.prepare('SELECT count(*) AS n FROM result_uploads WHERE job_id = ?').bind(job.id).first<{ n: number }>();
    expect(rows!.n).toBe(0);
  });

  it('an ending with no log records the empty log clean; a failure that requeues keeps the log in chunks for the next attempt', async () => {
    await queuedProof();
    const job = await claimJob(await seedAgent());
    await json(await upload(job, 'stark', await devProofOf(job)), 200);
    await json(await completeWith(job), 200);
    expect(await jobRow(job.id)).toEqual({ status: 'done', log_seq: 0, log_bytes: 0, log_store: 'clean' });

    const { t, proofId } = await queuedProof();
    const first = await claimJob(await seedAgent());
    await json(await lease(first, '/fail', { error: 'flaky', retryable: true, log: { seq: 0, offset: 0, text: 'try 1\n' } }), 200);
    expect(await jobRow(first.id)).toEqual({ status: 'queued', log_seq: 1, log_bytes: 6, log_store: 'chunks' });
    const second = await claimJob(await seedAgent());
    expect(second.log).toMatchObject({ seq: 1, offset: 6 });
    await json(await upload(second, 'stark', await devProofOf(second)), 200);
    await json(await completeWith(second, { seq: 1, offset: 6, text: 'try 2\n' }), 200);
    await eventually(async () => expect((await jobRow(second.id))!.log_store).toBe('clean'));
    expect(await (await api(t, `/v1/proofs/${proofId}/logs`)).text()).toBe('try 1\ntry 2\n');
  });

  it('a superseded lease’s whole log records nothing: the next attempt’s log is the one served', async () => {
    const { t, proofId } = await queuedProof();
    const stale = await claimJob(await seedAgent());
    await expireLease(stale);
    const next = await claimJob(await seedAgent());
    expect(next.id).toBe(stale.id);
    expect((await completeWith(stale, { seq: 0, offset: 0, text: 'stale\n' })).status).toBe(409);
    // The race the route's own check cannot see: the lease superseded between its read and its batch.
    const before = await jobRow(stale.id);
    const staged = await stageWholeLog(
      db,
      env.ARTIFACTS,
      stale.id,
      stale.lease_id,
      { seq: 0, offset: 0, text: 'stale\n' },
      { seq: 0, bytes: 0, truncated: false },
      limits,
    );
    await batchByName(db, { record: staged!.record });
    expect(await jobRow(stale.id)).toEqual(before);
    expect(before).toMatchObject({ status: 'leased', log_store: 'chunks' });
    // The expiry wrote why into the log; the next attempt goes on from there, and ends it.
    await json(await upload(next, 'stark', await devProofOf(next)), 200);
    await json(await completeWith(next, { seq: next.log.seq, offset: next.log.offset, text: 'fresh\n' }), 200);
    await eventually(async () => expect((await jobRow(next.id))!.log_store).toBe('clean'));
    const served = await (await api(t, `/v1/proofs/${proofId}/logs`)).text();
    expect(served).toMatch(/^\[service .*\nfresh\n$/s);
    expect(served).not.toContain('stale');
  });
});
