// The archive (issue 23 item 5, "the database itself must not fill"): finished proofs and
// executions past ARCHIVE_AFTER_DAYS move from D1 to R2 as NDJSON per organization, kind
// and day, in bounded, crash-safe runs, and stay readable by id through the same routes.
// docs/contributors.md "What D1 keeps, and past one database".
import { createExecutionContext, env, waitOnExecutionContext } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src/db/client.ts';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { ARCHIVE_AFTER_DAYS, archiveAfterMs, sweepArchive, toArchive } from '../../src/features/retention/archive.ts';
import { PURGE_SETTLE_MS, sweepPurges } from '../../src/features/retention/purge.ts';
import { setRetention, sweepRetention } from '../../src/features/retention/sweep.ts';
import worker from '../../src/index.ts';
import { countingEnv } from './binding-calls.ts';
import { drainQueuedJobs } from './fleet-helpers.ts';
import { api, countRows, eventually, json, queryPlan, r2Keys, seedTenant, type Tenant, cronPart } from './helpers.ts';
import { jsonPost, readyProgram, succeededExecution, succeededProof } from './run-helpers.ts';

beforeEach(drainQueuedJobs);

const DAY = 86_400_000;
const DELETE: RequestInit = { method: 'DELETE' };
const AFTER = ARCHIVE_AFTER_DAYS * DAY;
/** A run of the archive as it would run a month and a day from now. */
const later = (now = Date.now() + AFTER + DAY, limit?: number, bucket: R2Bucket = env.ARTIFACTS) =>
  sweepArchive(cronPart('archive', { ...env, ARTIFACTS: bucket }), now, AFTER, limit);

/** Every line of the organization's archive objects of `kind`, parsed. */
async function archivedLines(orgId: string, kind: 'proofs' | 'executions') {
  const lines: { id: string; [k: string]: unknown }[] = [];
  for (const key of await r2Keys(`archive/${orgId}/${kind}/`)) {
    const text = await (await env.ARTIFACTS.get(key))!.text();
    for (const line of text.split('\n').filter(Boolean)) lines.push(JSON.parse(line) as { id: string });
  }
  return lines;
}

/** What billing and the lists' totals read: the organization's usage, budgets' and program's counters. */
const counters = async (t: Tenant, program: string) => ({
  usage: (await env.DB.prepare('SELECT * FROM usage_daily WHERE org_id = ? ORDER BY 1, 2, 3').bind(t.orgId).all()).results,
  program: await env.DB.prepare('SELECT proof_count, execution_count, proofs_run FROM programs WHERE id = ?').bind(program).first(),
  org: await env.DB.prepare('SELECT program_count, running_jobs FROM organizations WHERE id = ?').bind(t.orgId).first(),
});

/** A bucket whose writes land and then fail, as a Worker killed right after one would. */
function crashingAfterPut(then: () => Promise<void> = async () => {}): R2Bucket {
  return new Proxy(env.ARTIFACTS, {
    get(target, name) {
      if (name === 'put')
        return async (...args: Parameters<R2Bucket['put']>) => {
          await target.put(...args);
          await then();
          throw new Error('crashed after the write');
        };
      const value = Reflect.get(target, name) as unknown;
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
    },
  });
}

describe('the archive', () => {
  it('moves finished proofs and executions to NDJSON in R2, keeps the same JSON by id, 404 for another organization, counters unchanged', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const proof = await succeededProof(t, program);
    const execution = await succeededExecution(t, program);
    const proofBefore = await json(await api(t, `/v1/proofs/${proof.id}`), 200);
    const executionBefore = await json(await api(t, `/v1/executions/${execution.id}`), 200);
    const stark = await (await api(t, `/v1/proofs/${proof.id}/proof/stark`)).text();
    const log = await (await api(t, `/v1/proofs/${proof.id}/logs`)).text();
    expect(log).toMatch(/proving/);
    const before = await counters(t, program);

    // Not yet: a month has not passed.
    expect(await sweepArchive(cronPart('archive'), Date.now(), AFTER)).toEqual({ archived: 0, objects: 0 });
    expect(await countRows('proofs', 'id = ?', proof.id)).toBe(1);

    expect(await later()).toEqual({ archived: 2, objects: 2 });
    // Out of D1: the records, their jobs and their log index rows; a stub each.
    expect(await countRows('proofs', 'id = ?', proof.id)).toBe(0);
    expect(await countRows('executions', 'id = ?', execution.id)).toBe(0);
    expect(await countRows('jobs', 'id IN (?, ?)', proof.jobId, execution.jobId)).toBe(0);
    expect(await countRows('job_log_chunks', 'job_id IN (?, ?)', proof.jobId, execution.jobId)).toBe(0);
    expect(await countRows('archived', 'id IN (?, ?)', proof.id, execution.id)).toBe(2);
    // In R2: NDJSON under the organization, kind and day, one line each, with the job's row.
    const day = String(proofBefore.created_at).slice(0, 10);
    expect(await r2Keys(`archive/${t.orgId}/proofs/${day}/`)).toHaveLength(1);
    const [line] = await archivedLines(t.orgId, 'proofs');
    expect(line).toMatchObject({ id: proof.id, org_id: t.orgId, program_id: program, state: 'Succeeded', cost: proofBefore.cost });
    expect(line.job).toMatchObject({ id: proof.jobId, kind: 'proof', subject_id: proof.id });
    expect((await archivedLines(t.orgId, 'executions')).map((l) => l.id)).toEqual([execution.id]);

    // Read by id: the same JSON; its files still download; another organization's 404.
    expect(await json(await api(t, `/v1/proofs/${proof.id}`), 200)).toEqual(proofBefore);
    expect(await json(await api(t, `/v1/executions/${execution.id}`), 200)).toEqual(executionBefore);
    expect(await (await api(t, `/v1/proofs/${proof.id}/proof/stark`)).text()).toBe(stark);
    expect(await (await api(t, `/v1/proofs/${proof.id}/logs`)).text()).toBe(log);
    const other = await seedTenant();
    await json(await api(other, `/v1/proofs/${proof.id}/logs`), 404);
    expect((await json(await api(other, `/v1/proofs/${proof.id}`), 404)).detail).toMatch(/not found/i);
    expect((await json(await api(other, `/v1/executions/${execution.id}`), 404)).detail).toMatch(/not found/i);
    expect((await json(await api(other, `/v1/proofs/${proof.id}/proof/stark`), 404)).detail).toMatch(/not found/i);
    // Lists cover D1's records; their totals are the program's counters, unchanged.
    const page = await json(await api(t, `/v1/proofs?program_id=${program}`), 200);
    expect(page.items).toEqual([]);
    expect(await counters(t, program)).toEqual(before);

    // A run with nothing left to do does nothing.
    expect(await later()).toEqual({ archived: 0, objects: 0 });
  });

  it('a live record is read in one round trip (its key and its row); the archive is asked for only on the primary, when D1 has no row', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const proof = await succeededProof(t, program);
    const { env: counted, counts } = countingEnv();
    const get = async () => {
      const ctx = createExecutionContext();
      const res = await worker.fetch(
        new Request(`https://api.test/v1/proofs/${proof.id}`, { headers: { 'Service-API-Key': t.key } }),
        counted,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      return res;
    };
    const live = await json(await get(), 200);
    counts.reset();
    expect(await json(await get(), 200)).toEqual(live);
    expect({ roundTrips: counts.d1, statements: counts.d1Statements, r2: counts.r2 }).toEqual({ roundTrips: 1, statements: 2, r2: 0 });
    // Its log page: the key, the run, its job and the page's index rows, no stub.
    counts.reset();
    const logs = await worker.fetch(
      new Request(`https://api.test/v1/proofs/${proof.id}/logs`, { headers: { 'Service-API-Key': t.key } }),
      counted,
      createExecutionContext(),
    );
    expect(await logs.text()).toMatch(/proving/);
    expect({ roundTrips: counts.d1, statements: counts.d1Statements }).toEqual({ roundTrips: 1, statements: 4 });

    expect(await later()).toEqual({ archived: 1, objects: 1 });
    counts.reset();
    expect(await json(await get(), 200)).toEqual(live);
    // The replica's (here: the one database's) answer has no row; the primary's has the stub, then its object is read.
    expect({ roundTrips: counts.d1, statements: counts.d1Statements, r2: counts.r2ByOp }).toEqual({
      roundTrips: 2,
      statements: 2 + 3,
      r2: { get: 1 },
    });
  });

  it('a crash after the object is written leaves the rows; the next run writes the same object again: nothing lost, nothing twice', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const ids = [(await succeededProof(t, program)).id, (await succeededProof(t, program)).id];
    const records = await Promise.all(ids.map(async (id) => json(await api(t, `/v1/proofs/${id}`), 200)));

    const now = Date.now() + AFTER + DAY;
    expect(await later(now, undefined, crashingAfterPut())).toEqual({ archived: 0, objects: 0 });
    // The object is written, the rows are all still there, its plan is pending, its failure counted.
    expect(await archivedLines(t.orgId, 'proofs')).toHaveLength(2);
    expect(await countRows('proofs', 'org_id = ?', t.orgId)).toBe(2);
    expect(await countRows('archive_objects', 'org_id = ? AND written_at IS NULL', t.orgId)).toBe(1);
    expect(await countRows('archived', 'id IN (?, ?)', ...ids)).toBe(0);
    const pending = (await env.DB.prepare('SELECT id FROM archive_objects WHERE org_id = ?').bind(t.orgId).first<{ id: number }>())!.id;
    expect(await countRows('sweep_failures', `kind = 'archive' AND item = ? AND attempts = 1`, String(pending))).toBe(1);
    // Within its retry delay the next run leaves it, and plans no other object of its records.
    expect(await later(now + 1000)).toEqual({ archived: 0, objects: 0 });
    expect(await countRows('archive_objects', 'org_id = ?', t.orgId)).toBe(1);

    expect(await later(now + 61_000)).toEqual({ archived: 2, objects: 1 });
    expect(await countRows('sweep_failures', `kind = 'archive' AND item = ?`, String(pending))).toBe(0);
    const lines = await archivedLines(t.orgId, 'proofs');
    expect(lines.map((l) => l.id).sort()).toEqual([...ids].sort());
    expect(await r2Keys(`archive/${t.orgId}/`)).toHaveLength(1);
    expect(await countRows('proofs', 'org_id = ?', t.orgId)).toBe(0);
    expect(await countRows('archive_objects', 'org_id = ?', t.orgId)).toBe(1);
    for (const [i, id] of ids.entries()) expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toEqual(records[i]);
  });

  it('a record deleted while its object is written is not archived as it was: the object stays pending and is written again', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await succeededProof(t, program);
    // The owner's DELETE lands between the object's write and the batch that finishes it.
    let tombstone: Record<string, unknown> = {};
    const racing = new Proxy(env.ARTIFACTS, {
      get(target, name) {
        if (name === 'put')
          return async (...args: Parameters<R2Bucket['put']>) => {
            const written = await target.put(...args);
            if (String(args[0]).startsWith('archive/')) tombstone = await json(await api(t, `/v1/proofs/${id}`, DELETE), 200);
            return written;
          };
        const value = Reflect.get(target, name) as unknown;
        return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
      },
    });
    expect(await later(undefined, undefined, racing)).toEqual({ archived: 0, objects: 0 });
    expect(tombstone.deleted_at).toEqual(expect.any(String));
    expect(await countRows('proofs', 'id = ?', id)).toBe(1);
    expect((await archivedLines(t.orgId, 'proofs'))[0].deleted_at).toBeNull(); // what was written: stale

    expect(await later()).toEqual({ archived: 1, objects: 1 });
    const lines = await archivedLines(t.orgId, 'proofs');
    expect(lines).toHaveLength(1);
    expect(lines[0].deleted_at).toBe(tombstone.deleted_at);
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toEqual(tombstone);
  });

  it('DELETE of an archived record purges its files and makes it a tombstone, once; another organization’s is 404', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const proof = await succeededProof(t, program);
    const execution = await succeededExecution(t, program);
    const before = await json(await api(t, `/v1/proofs/${proof.id}`), 200);
    expect(await later()).toEqual({ archived: 2, objects: 2 });
    // Input and stark proof (its served object, under its job's results): still there.
    expect(
      [...(await r2Keys(`proofs/${proof.id}/`)), ...(await r2Keys(artifactKey.resultUploadPrefix(proof.jobId)))].length,
    ).toBeGreaterThanOrEqual(2);

    const other = await seedTenant();
    await json(await api(other, `/v1/proofs/${proof.id}`, DELETE), 404);
    const tombstone = await json(await api(t, `/v1/proofs/${proof.id}`, DELETE), 200);
    expect(tombstone).toEqual({ ...before, deleted_at: expect.any(String), deleted_by: expect.stringMatching(/\(API key sk_/) });
    // Its objects go (the purge after the response), as a live record's do; the sweep's second pass ends the purge.
    // (The object it served is the one its archived line names, under its job's results.)
    const owned = async () => [
      ...(await r2Keys(`proofs/${proof.id}/`)),
      ...(await r2Keys(`logs/${proof.jobId}`)),
      ...(await r2Keys(artifactKey.resultUploadPrefix(proof.jobId))),
    ];
    await eventually(async () => expect(await owned()).toEqual([]));
    await sweepPurges(cronPart('retention'), Date.now() + PURGE_SETTLE_MS + 1000);
    expect(await countRows('purges', 'subject_id = ?', proof.id)).toBe(0);
    // It reads as its tombstone; its files 404 saying so; a second DELETE answers the same.
    expect(await json(await api(t, `/v1/proofs/${proof.id}`), 200)).toEqual(tombstone);
    expect((await json(await api(t, `/v1/proofs/${proof.id}/proof/stark`), 404)).detail).toMatch(/deleted/);
    expect((await json(await api(t, `/v1/proofs/${proof.id}/logs`), 404)).detail).toMatch(/deleted/);
    expect(await json(await api(t, `/v1/proofs/${proof.id}`, DELETE), 200)).toEqual(tombstone);
    expect(await countRows('purges', 'subject_id = ?', proof.id)).toBe(0);

    const gone = await json(await api(t, `/v1/executions/${execution.id}`, DELETE), 200);
    expect(gone.deleted_at).toEqual(expect.any(String));
    expect(gone.deleted_by).toEqual(tombstone.deleted_by);
    expect(gone.public_values).toBeNull();
    await eventually(async () => expect(await r2Keys(`executions/${execution.id}/`)).toEqual([]));
    expect(await json(await api(t, `/v1/executions/${execution.id}`), 200)).toEqual(gone);
  });

  it('waits for a finished job’s log compaction: its retries need the job’s row', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id, jobId } = await succeededProof(t, program);
    await env.DB.prepare(`UPDATE jobs SET log_store = 'compacted' WHERE id = ?`).bind(jobId).run();
    expect(await later()).toEqual({ archived: 0, objects: 0 });
    expect(await countRows('proofs', 'id = ?', id)).toBe(1);
    await env.DB.prepare(`UPDATE jobs SET log_store = 'clean' WHERE id = ?`).bind(jobId).run();
    expect(await later()).toEqual({ archived: 1, objects: 1 });
  });

  it('is bounded per run, and leaves running and recent records alone', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const done = [(await succeededProof(t, program)).id, (await succeededProof(t, program)).id, (await succeededProof(t, program)).id];
    const { id: queued } = await json<{ id: string }>(
      await api(t, `/v1/proofs?program_id=${program}`, jsonPost({ input: ['0x0101'] })),
      200,
    );

    expect(await later(undefined, 2)).toEqual({ archived: 2, objects: 1 });
    expect(await countRows('proofs', 'org_id = ?', t.orgId)).toBe(2);
    expect(await later(undefined, 2)).toEqual({ archived: 1, objects: 1 });
    expect(await countRows('archived', `id IN (${done.map(() => '?').join(', ')})`, ...done)).toBe(3);
    // The queued proof is not finished: it stays, however old.
    expect(await later(undefined, 2)).toEqual({ archived: 0, objects: 0 });
    expect(await countRows('proofs', 'id = ?', queued)).toBe(1);
    expect((await archivedLines(t.orgId, 'proofs')).map((l) => l.id).sort()).toEqual([...done].sort());
  });

  it('keeps an organization’s live records while its retention still has their files to delete, then archives the tombstones', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const { id } = await succeededProof(t, program);
    await setRetention(openDb(env.DB), t.orgId, 60, { userId: null, email: 'operator@localhost' });
    // Past the archive's 30 days but within the retention's 60: kept in D1, files and all.
    expect(await later()).toEqual({ archived: 0, objects: 0 });
    expect(await countRows('proofs', 'id = ?', id)).toBe(1);
    // Past the retention: the retention sweep deletes its files, then the archive takes the tombstone.
    const past = Date.now() + 61 * DAY;
    await sweepRetention(cronPart('retention'), past);
    expect(await later(past)).toEqual({ archived: 1, objects: 1 });
    const record = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(record.deleted_at).toEqual(expect.any(String));
  });

  it('finds its candidates by index seeks per organization, never a scan of the records', async () => {
    for (const kind of ['proof', 'execution'] as const) {
      const plan = await queryPlan(toArchive(openDb(env.DB), kind, Date.now(), AFTER, 200));
      expect(plan).toMatch(new RegExp(`SEARCH ${kind}s USING INDEX ${kind}s_org \\(org_id=\\? AND created_at<\\?\\)`));
      expect(plan).not.toMatch(new RegExp(`SCAN ${kind}s`));
    }
  });

  it('reads ARCHIVE_AFTER_DAYS (default 30; fractions for a local benchmark)', () => {
    expect(archiveAfterMs({})).toBe(30 * DAY);
    expect(archiveAfterMs({ ARCHIVE_AFTER_DAYS: '7' })).toBe(7 * DAY);
    expect(archiveAfterMs({ ARCHIVE_AFTER_DAYS: '0.5' })).toBe(DAY / 2);
    expect(archiveAfterMs({ ARCHIVE_AFTER_DAYS: 'soon' })).toBe(30 * DAY);
    expect(archiveAfterMs({ ARCHIVE_AFTER_DAYS: '-1' })).toBe(30 * DAY);
  });
});
