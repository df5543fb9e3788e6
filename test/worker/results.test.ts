// One record of every result (src/jobs/results.ts; docs/contributors.md "One record of every result"): an attempt's
// uploads go to objects of their own, and only the completion that accepts them makes a
// record name them, with their digest. The races of issue 28 finding 2, retried as found:
// a host revoked while its upload is in flight, and a lapsed lease finishing a baseline
// upload after another lease committed, both finish after the honest completion; callers
// and later jobs still get the honest bytes.
import { env } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { ClaimedJob } from 'prover-agent/protocol';
import { retrySweepItem, revokeAgentToken } from '../../src/admin/statements.ts';
import { RESULT_UPLOAD_MAX_MS, sweepResultUploads, UPLOAD_SWEEP_CALLS } from '../../src/jobs/results.ts';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { sha256Hex, toBase64 } from '../../src/lib/crypto.ts';
import { CallBudget, metered } from '../../src/lib/metered.ts';
import { sweepPurges } from '../../src/features/retention/purge.ts';
import {
  claimJob,
  devProofOf,
  drainQueuedJobs,
  expectSealed,
  expireLease,
  lease,
  seedAgent,
  servedBaseline,
  upload,
  type TestAgent,
} from './fleet-helpers.ts';
import { api, cronPart, eventually, json, registerProgram, runAdmin, seedConfig, seedTenant } from './helpers.ts';
import { readyProgram, submitProof } from './run-helpers.ts';

beforeEach(drainQueuedJobs);
afterEach(() => vi.restoreAllMocks());

const encoder = new TextEncoder();

/**
 * A PUT of a result whose body arrives in two halves: the request is sent with `first`
 * (its Content-Length saying both), and `finish()` sends `second` and answers the response.
 */
function slowUpload(job: Pick<ClaimedJob, 'job_token'>, name: string, first: string, second: string) {
  let push!: (bytes: Uint8Array | null) => void;
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode(first));
      push = (bytes) => (bytes ? controller.enqueue(bytes) : controller.close());
    },
  });
  const length = encoder.encode(first + second).byteLength;
  const response = api(null, `/internal/v1/lease/results/${name}`, {
    method: 'PUT',
    // Of a known length, as an HTTP body with its Content-Length is.
    body: body.pipeThrough(new FixedLengthStream(length)),
    duplex: 'half',
    headers: { authorization: `Bearer ${job.job_token}`, 'content-length': String(length) },
  } as RequestInit);
  return {
    async finish() {
      push(encoder.encode(second));
      push(null);
      return response;
    },
  };
}

/** The result uploads recorded for a job, as rows. */
const uploadsOf = async (jobId: string) =>
  (
    await env.DB.prepare('SELECT id, lease_id, name, stored_at, sha256 FROM result_uploads WHERE job_id = ? ORDER BY started_at')
      .bind(jobId)
      .all<{ id: string; lease_id: string; name: string; stored_at: number | null; sha256: string | null }>()
  ).results;

/** Waits until the upload of `name` by the job's lease is recorded (its request reached the stream). */
const uploadStarted = (job: Pick<ClaimedJob, 'id' | 'lease_id'>, name: string) =>
  eventually(async () => expect((await uploadsOf(job.id)).some((u) => u.lease_id === job.lease_id && u.name === name)).toBe(true));

const objectsUnder = async (prefix: string) => (await env.ARTIFACTS.list({ prefix })).objects.map((o) => o.key).sort();

const proofRow = (id: string) =>
  env.DB.prepare('SELECT state, proof_files, proof_objects, proof_size FROM proofs WHERE id = ?')
    .bind(id)
    .first<{ state: string; proof_files: string; proof_objects: string | null; proof_size: number }>();

/** The RFC 9530 Repr-Digest of bytes' SHA-256. */
const reprDigestOf = async (bytes: Uint8Array) => `sha-256=:${toBase64(new Uint8Array(await crypto.subtle.digest('SHA-256', bytes)))}:`;

describe('an attempt uploads to objects of its own; the record names what it serves', () => {
  it('a revoked host’s upload that finishes after the honest completion is never served: callers get the honest bytes', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const revoked: TestAgent = await seedAgent();
    const a = await claimJob(revoked);
    // A forged proof of the same length class as an honest one: other public values.
    const forged = await devProofOf(a, '0x' + 'ee'.repeat(32));
    const slow = slowUpload(a, 'stark', forged.slice(0, 100), forged.slice(100));
    await uploadStarted(a, 'stark');
    const [inFlight] = await uploadsOf(a.id);

    // The operator revokes the host's token mid-upload: its lease ends, the job goes back to the queue.
    await runAdmin(revokeAgentToken(revoked.token));
    const b = await claimJob(await seedAgent());
    expect(b.id).toBe(a.id);
    expect(b.lease_id).not.toBe(a.lease_id);
    const honest = await devProofOf(b, '0x00');
    await json(await upload(b, 'stark', honest), 200);
    expect(await json(await lease(b, '/complete', { kind: 'proof', proofs: ['stark'], public_values: '0x00', metrics: {} }), 200)).toEqual({
      status: 'completed',
    });
    expect((await proofRow(proofId))!.state).toBe('Succeeded');

    // Only now does the revoked host's upload finish: refused, and its object is gone.
    const late = await slow.finish();
    expect(late.status).toBe(409);

    const res = await api(t, `/v1/proofs/${proofId}/proof/stark`);
    const bytes = new Uint8Array(await res.arrayBuffer());
    const text = new TextDecoder().decode(bytes);
    expectSealed(text, '0x00');
    expect(text).not.toContain('ee'.repeat(32));
    // What the record says: the object served, its digest (sent as Repr-Digest), its size.
    const row = (await proofRow(proofId))!;
    const objects = JSON.parse(row.proof_objects!) as Record<string, { key: string; sha256: string }>;
    expect(JSON.parse(row.proof_files)).toEqual(['stark']);
    expect(objects.stark.key.startsWith(artifactKey.resultUploadPrefix(a.id))).toBe(true);
    expect(objects.stark.sha256).toBe(await sha256Hex(bytes));
    expect(res.headers.get('repr-digest')).toBe(await reprDigestOf(bytes));
    expect(row.proof_size).toBe(bytes.byteLength);
    // Nothing of the revoked lease is left: its row and object went with its 409.
    expect((await uploadsOf(a.id)).filter((u) => u.lease_id === a.lease_id)).toEqual([]);
    expect((await objectsUnder(artifactKey.resultUploadPrefix(a.id))).some((k) => k.includes(inFlight.id))).toBe(false);
    // The honest host's unsealed upload is garbage now (the record serves the sealed copy): the sweep deletes it.
    const left = await uploadsOf(a.id);
    expect(left.map((u) => [u.lease_id, u.name])).toEqual([[b.lease_id, 'stark']]);
    const sweeper = metered(env, new CallBudget(UPLOAD_SWEEP_CALLS, 'uploads'));
    expect(await sweepResultUploads(sweeper.db, sweeper.bucket, sweeper.budget)).toBeGreaterThanOrEqual(1);
    expect(await uploadsOf(a.id)).toEqual([]);
    expect(await objectsUnder(artifactKey.resultUploadPrefix(a.id))).toEqual([objects.stark.key]);
    expectSealed(await (await api(t, `/v1/proofs/${proofId}/proof/stark`)).text(), '0x00');
  });

  it('a lapsed lease that finishes its baseline upload after another lease committed changes nothing later jobs verify against', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    const a = await claimJob(await seedAgent());
    expect(a.kind).toBe('commit');
    const commit = { kind: 'commit', app_exe_commit: '0x' + '11'.repeat(32), app_vm_commit: a.config.app_vm_commit };
    const stale = '{"baseline":"from a lease that lapsed, written late"}';
    const slow = slowUpload(a, 'baseline', stale.slice(0, 10), stale.slice(10));
    await uploadStarted(a, 'baseline');

    // No revocation: the host just went quiet; its lease expires and another host commits the program.
    expect(await expireLease(a)).toBe('expired');
    const b = await claimJob(await seedAgent());
    expect([b.id, b.kind]).toEqual([a.id, 'commit']);
    const honest = '{"baseline":"the committed one"}';
    await json(await upload(b, 'baseline', honest), 200);
    expect(await json(await lease(b, '/complete', commit), 200)).toEqual({ status: 'completed' });
    expect((await json(await api(t, `/v1/programs/${program}`), 200)).status).toBe('ready');

    expect((await slow.finish()).status).toBe(409);
    expect(await servedBaseline(program)).toBe(honest);
    // A proof of the program is verified against the committed baseline: what its job is handed.
    await drainQueuedJobs();
    await submitProof(t, program);
    const proving = await claimJob(await seedAgent());
    expect(await (await lease(proving, '/artifacts/baseline')).text()).toBe(honest);
    expect(proving.shared_artifacts?.baseline).toBe(
      (await env.DB.prepare('SELECT baseline_key FROM programs WHERE id = ?').bind(program).first<{ baseline_key: string }>())!
        .baseline_key,
    );
  });

  it('a lease’s own second upload that finishes after its completion is refused: the record keeps the one it accepted', async () => {
    const t = await seedTenant();
    const program = await registerProgram(t, await seedConfig());
    const job = await claimJob(await seedAgent());
    const first = '{"baseline":"accepted"}';
    await json(await upload(job, 'baseline', first), 200);
    const second = '{"baseline":"sent again, slowly"}';
    const slow = slowUpload(job, 'baseline', second.slice(0, 5), second.slice(5));
    await uploadStarted(job, 'baseline');
    await json(
      await lease(job, '/complete', { kind: 'commit', app_exe_commit: '0x' + '11'.repeat(32), app_vm_commit: job.config.app_vm_commit }),
      200,
    );
    expect((await slow.finish()).status).toBe(409);
    expect(await servedBaseline(program)).toBe(first);
  });

  it('a large PUT, streamed in many pieces, stores exactly the bytes sent, and its digest is theirs', async () => {
    await seedTenant().then(async (t) => submitProof(t, await readyProgram(t)));
    const job = await claimJob(await seedAgent());
    // 5 MiB and some of bytes that differ everywhere, sent in pieces of odd sizes.
    const bytes = new Uint8Array(5 * 1024 * 1024 + 12_345).map((_, i) => (i * 2654435761) >>> 24);
    let at = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (at >= bytes.byteLength) return controller.close();
        const n = Math.min(70_001, bytes.byteLength - at);
        controller.enqueue(bytes.slice(at, at + n));
        at += n;
      },
    });
    const answer = await json<{ sha256: string; size: number }>(
      await api(null, '/internal/v1/lease/results/stark', {
        method: 'PUT',
        body,
        duplex: 'half',
        headers: { authorization: `Bearer ${job.job_token}`, 'content-length': String(bytes.byteLength) },
      } as RequestInit),
      200,
    );
    expect(answer).toMatchObject({ size: bytes.byteLength, sha256: await sha256Hex(bytes) });
    const [row] = await uploadsOf(job.id);
    const stored = new Uint8Array(await (await env.ARTIFACTS.get(artifactKey.resultUpload(job.id, row.id, 'stark')))!.arrayBuffer());
    expect(stored.byteLength).toBe(bytes.byteLength);
    expect(await sha256Hex(stored)).toBe(answer.sha256);
  });

  it('a PUT answers the digest of the bytes it stored; a name the job’s kind has not is 404', async () => {
    await seedTenant().then(async (t) => submitProof(t, await readyProgram(t)));
    const job = await claimJob(await seedAgent());
    const text = await devProofOf(job);
    expect(await json(await upload(job, 'stark', text), 200)).toEqual({
      stored: 'stark',
      size: text.length,
      sha256: await sha256Hex(text),
    });
    expect((await upload(job, 'baseline', '{}')).status).toBe(404);
    expect((await uploadsOf(job.id)).map((u) => [u.name, u.sha256])).toEqual([['stark', await sha256Hex(text)]]);
  });
});

describe('records from before the migration, and purges', () => {
  it('a proof finished before migration 0022 (no proof_objects) is served from its fixed key, and purged from it', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    await env.DB.prepare(
      `UPDATE proofs SET state = 'Succeeded', terminated_at = ?, proof_files = '["stark"]', proof_objects = NULL WHERE id = ?`,
    )
      .bind(new Date().toISOString(), proofId)
      .run();
    await env.DB.prepare(`UPDATE jobs SET status = 'done' WHERE subject_id = ?`).bind(proofId).run();
    await env.ARTIFACTS.put(artifactKey.proofOutput(proofId, 'stark'), '{"legacy":true}');
    const res = await api(t, `/v1/proofs/${proofId}/proof/stark`);
    expect(await res.text()).toBe('{"legacy":true}');
    expect(res.headers.get('repr-digest')).toBeNull(); // no digest was recorded for it
    await json(await api(t, `/v1/proofs/${proofId}`, { method: 'DELETE' }), 200);
    await sweepPurges(cronPart('retention'), Date.now() + 120_000);
    expect(await env.ARTIFACTS.head(artifactKey.proofOutput(proofId, 'stark'))).toBeNull();
  });

  it('a deleted proof’s purge takes what its record names and every file its attempts stored; an upload cut off mid-way goes after its deadline', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    // Attempt 1 stores a proof and fails; attempt 2 starts an upload and dies mid-way; attempt 3 completes.
    const one = await claimJob(await seedAgent());
    await json(await upload(one, 'stark', await devProofOf(one)), 200);
    await json(await lease(one, '/fail', { error: 'disk full', retryable: true }), 200);
    const two = await claimJob(await seedAgent());
    await env.DB.prepare('INSERT INTO result_uploads (id, job_id, lease_id, name, started_at) VALUES (?, ?, ?, ?, ?)')
      .bind('upl_cut_off', two.id, two.lease_id, 'stark', Date.now())
      .run();
    expect(await expireLease(two)).toBe('expired');
    const three = await claimJob(await seedAgent());
    await json(
      await lease(three, '/complete', {
        kind: 'proof',
        proofs: ['stark'],
        public_values: '0x00',
        metrics: {},
        results: { stark: await devProofOf(three) },
      }),
      200,
    );
    const served = JSON.parse((await proofRow(proofId))!.proof_objects!).stark.key as string;
    const attemptOne = (await uploadsOf(one.id)).find((u) => u.lease_id === one.lease_id)!;
    const attemptOneKey = artifactKey.resultUpload(one.id, attemptOne.id, 'stark');
    expect(await objectsUnder(artifactKey.resultUploadPrefix(one.id))).toEqual([served, attemptOneKey].sort());

    await json(await api(t, `/v1/proofs/${proofId}`, { method: 'DELETE' }), 200);
    const purge = await env.DB.prepare(`SELECT keys FROM purges WHERE subject_id = ?`).bind(proofId).first<{ keys: string }>();
    expect(JSON.parse(purge!.keys)).toMatchObject({ proofs: [served], attempts: [attemptOneKey] });
    await eventually(async () => expect(await objectsUnder(artifactKey.resultUploadPrefix(one.id))).toEqual([]));
    // The cut-off upload's row waits out its deadline (its bytes could still land until then), then goes.
    const sweeper = () => metered(env, new CallBudget(UPLOAD_SWEEP_CALLS, 'uploads'));
    const sweep = async (now: number) => {
      const m = sweeper();
      return sweepResultUploads(m.db, m.bucket, m.budget, now);
    };
    await sweep(Date.now());
    expect((await uploadsOf(one.id)).map((u) => u.id)).toEqual(['upl_cut_off']);
    await sweep(Date.now() + RESULT_UPLOAD_MAX_MS + 10 * 60_000);
    expect(await uploadsOf(one.id)).toEqual([]);
  });
});

describe('garbage uploads are swept within their budget, a failing one set aside', () => {
  it('an R2 delete that keeps failing counts on its uploads and sets them aside; the next ones still go', async () => {
    const t = await seedTenant();
    const proofId = await submitProof(t, await readyProgram(t));
    const job = await claimJob(await seedAgent());
    await json(await upload(job, 'stark', await devProofOf(job)), 200);
    await json(await lease(job, '/fail', { error: 'no', retryable: false }), 200);
    expect((await proofRow(proofId))!.state).toBe('Failed');
    const [row] = await uploadsOf(job.id);
    const sweepAt = async (now: number) => {
      const m = metered(env, new CallBudget(UPLOAD_SWEEP_CALLS, 'uploads'));
      return sweepResultUploads(m.db, m.bucket, m.budget, now);
    };
    const failures = () =>
      env.DB.prepare(`SELECT attempts, set_aside_at FROM sweep_failures WHERE kind = 'upload' AND item = ?`)
        .bind(row.id)
        .first<{ attempts: number; set_aside_at: number | null }>();
    const del = vi.spyOn(env.ARTIFACTS, 'delete').mockRejectedValue(new Error('R2 is down'));
    let now = Date.now();
    for (let i = 1; i <= 8; i++) {
      expect(await sweepAt(now)).toBe(0);
      expect(await failures()).toMatchObject({ attempts: i });
      // Waiting out its delay: the next sweep within it does not try it.
      del.mockClear();
      await sweepAt(now + 1000);
      expect(del.mock.calls.flat(2)).not.toContain(artifactKey.resultUpload(job.id, row.id, 'stark'));
      now += 3_600_000;
    }
    expect((await failures())!.set_aside_at).not.toBeNull();
    vi.restoreAllMocks();
    // Set aside: never tried again, and a new garbage upload goes past it.
    const t2 = await seedTenant();
    await submitProof(t2, await readyProgram(t2));
    const other = await claimJob(await seedAgent());
    await json(await upload(other, 'stark', await devProofOf(other)), 200);
    await json(await lease(other, '/fail', { error: 'no', retryable: false }), 200);
    expect(await sweepAt(now + 86_400_000)).toBeGreaterThanOrEqual(1);
    expect(await uploadsOf(other.id)).toEqual([]);
    expect((await uploadsOf(job.id)).map((u) => u.id)).toEqual([row.id]);
    // The operator puts it back in line (npm run admin -- retry-sweep-item upload ID): it goes.
    await runAdmin(retrySweepItem('upload', row.id));
    expect(await sweepAt(now + 86_400_000)).toBeGreaterThanOrEqual(1);
    expect(await uploadsOf(job.id)).toEqual([]);
  });
});
