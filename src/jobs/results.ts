// One record of every result (docs/contributors.md "One record of every result"; issue 28). An attempt never writes the
// object a record serves: every object it writes for its job's results (a PUT of a
// result, a result sent inline with /complete, a dev proof the Worker sealed) is an
// object of its own, `results/{job}/{upload}/{name}.json` (artifactKey.resultUpload),
// recorded in `result_uploads` before its first byte is written, and written by that
// one request and nobody else. Its SHA-256 is computed on the way (a PUT streams
// through a DigestStream, never held whole).
//
// Completion accepts the attempt's files in its one transaction (src/jobs/state.ts
// completeJob): the record it finishes names the object it serves and its digest
// (proofs.proof_objects, programs.baseline_key + baseline_sha256), and the accepted
// uploads' rows go, all conditional on the lease being the job's current one. So a
// host whose lease was revoked, superseded or lapsed while it uploaded writes an object
// that no record names: nothing serves it, downloads it or verifies against it, and
// its PUT, once stored, is answered 409 and the object deleted.
//
// Every row left is garbage the sweep deletes (sweepResultUploads: its object, then the
// row) once its lease is no longer the job's current one and its object can no longer
// appear: it was stored, or its upload's deadline (RESULT_UPLOAD_MAX_MS, enforced on the
// stream itself) is past. Attempt files are found by these rows (a key recorded before
// the upload starts), not by listing a prefix: a listing cannot see an upload still in
// flight, which a row names before its first byte and whose deadline says when it can
// no longer land. A record's deletion purges the stored ones at once (src/features/retention/data.ts).
import { and, asc, eq, inArray, isNotNull, lt, or, sql, type SQL, type SQLWrapper } from 'drizzle-orm';
import type { ResultName } from 'prover-agent/protocol';
import type { Db } from '../db/client.ts';
import { batchByName, type Statement } from '../db/batch.ts';
import { prepared, type Placeholders } from '../db/prepared.ts';
import { jobs, leases, resultUploads, type ServedObject } from '../db/schema.ts';
import { artifactKey, keySql } from '../lib/artifact-keys.ts';
import { ApiError } from '../lib/errors.ts';
import { sha256Hex, toHex } from '../lib/crypto.ts';
import { newUploadId } from '../lib/ids.ts';
import type { CallBudget } from '../lib/metered.ts';
import { idList, inLine, recordFailures, settleFailures } from './sweep-items.ts';
import { utf8Bytes } from '../lib/bytes.ts';

/** An upload's body must arrive within this long from its start, or it is cut off (and never stored). */
export const RESULT_UPLOAD_MAX_MS = 60 * 60_000;
/** Past its deadline, how long the sweep still waits for an upload row that never stored (a Worker that died mid-upload). */
const UPLOAD_SETTLE_MS = 5 * 60_000;
/** Garbage uploads the sweep deletes per call: one bulk R2 delete (at most 1,000 keys) and two D1 statements. */
export const UPLOAD_SWEEP_BATCH = 100;
/** The calls of one sweepResultUploads() batch: its read, one bulk delete, the rows' delete. */
export const UPLOAD_SWEEP_CALLS = 3;

type UploadRow = typeof resultUploads.$inferSelect;
type LeaseRef = { id: string; job_id: string };

/** An object of this attempt, stored whole: what a record may come to name. */
export interface StoredResult {
  id: string;
  name: string;
  key: string;
  size: number;
  sha256: string;
}

const keyOf = (row: Pick<UploadRow, 'job_id' | 'id' | 'name'>) => artifactKey.resultUpload(row.job_id, row.id, row.name);

const stored = (row: UploadRow): StoredResult => ({ id: row.id, name: row.name, key: keyOf(row), size: row.size!, sha256: row.sha256! });

/** Whether `lease` is its job's current one, as SQL (a lease never becomes current again once it is not). */
const leaseIsCurrent = (leaseId: SQLWrapper | string, jobId: SQLWrapper | string) =>
  sql`EXISTS (SELECT 1 FROM ${jobs} JOIN ${leases} ON ${leases.id} = ${jobs.lease_id}
    WHERE ${jobs.id} = ${jobId} AND ${jobs.lease_id} = ${leaseId} AND ${jobs.status} = 'leased' AND ${leases.outcome} IS NULL)`;

/** The row of a new upload of `name` by `lease`, with its id and key. */
function newUpload(lease: LeaseRef, name: string, now: number, done?: { size: number; sha256: string }) {
  const row: UploadRow = {
    id: newUploadId(),
    job_id: lease.job_id,
    lease_id: lease.id,
    name,
    started_at: now,
    stored_at: done ? now : null,
    size: done?.size ?? null,
    sha256: done?.sha256 ?? null,
  };
  return { row, key: keyOf(row) };
}

/** Bytes a PUT's pump moves at a time: a few hundred hops into the runtime per GiB, never more than two of these held. */
const PUMP_BYTES = 1024 * 1024;

/**
 * Copies `source` into `sink` and a SHA-256 of it, PUMP_BYTES at a time (a BYOB read of at
 * least that much, each piece written to both before the next is read: backpressure holds,
 * nothing piles up), cut off past `signal`. Answers the digest.
 */
async function copyHashing(
  source: ReadableStream<Uint8Array>,
  sink: WritableStream<Uint8Array>,
  signal: AbortSignal,
): Promise<ArrayBuffer> {
  const digest = new crypto.DigestStream('SHA-256');
  const hash = digest.getWriter();
  const out = sink.getWriter();
  const reader = source.getReader({ mode: 'byob' });
  const cutOff = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener('abort', cutOff);
  try {
    // One buffer, read into again once both writes of its bytes are done (the runtime's own
    // writable streams have taken the bytes when a write resolves; results.test.ts checks
    // a large upload's stored bytes): no garbage per piece.
    let buffer = new ArrayBuffer(PUMP_BYTES);
    for (;;) {
      if (signal.aborted) throw signal.reason;
      const { done, value } = await reader.readAtLeast(PUMP_BYTES, new Uint8Array(buffer));
      if (value?.byteLength) await Promise.all([hash.write(value), out.write(value)]);
      if (done || !value) break;
      buffer = value.buffer;
    }
    if (signal.aborted) throw signal.reason;
    await Promise.all([hash.close(), out.close()]);
    return await digest.digest;
  } catch (err) {
    await out.abort(err).catch(() => undefined);
    throw err;
  } finally {
    signal.removeEventListener('abort', cutOff);
  }
}

/**
 * A PUT of result `name` by `lease`: recorded, then streamed to its own object (length
 * `length`, hashed on the way, cut off at RESULT_UPLOAD_MAX_MS), then marked stored.
 * Answers the stored result, or 'superseded' when the lease stopped being the job's
 * current one while it uploaded (its object is deleted: no record can name it).
 */
export async function storeUpload(
  db: Db,
  bucket: R2Bucket,
  lease: LeaseRef,
  name: ResultName,
  body: ReadableStream<Uint8Array> | null,
  length: number,
  now = Date.now(),
): Promise<StoredResult | 'superseded'> {
  const { row, key } = newUpload(lease, name, now);
  await db.insert(resultUploads).values(row);
  const forget = () => Promise.allSettled([bucket.delete(key), db.delete(resultUploads).where(eq(resultUploads.id, row.id))]);
  // R2 takes a stream of known length only: the FixedLengthStream also refuses a body
  // longer or shorter than its Content-Length.
  const fixed = new FixedLengthStream(length);
  let digest: ArrayBuffer;
  try {
    const source = body ?? new Response(new Uint8Array(0)).body!;
    [, digest] = await Promise.all([
      bucket.put(key, fixed.readable, { httpMetadata: { contentType: 'application/json' } }),
      copyHashing(source, fixed.writable, AbortSignal.timeout(RESULT_UPLOAD_MAX_MS)),
    ]);
  } catch (err) {
    // Nothing was stored (an R2 put is whole or nothing); the row goes too, or the sweep takes it past its deadline.
    await forget();
    if (err instanceof DOMException && err.name === 'TimeoutError')
      throw new ApiError(408, `The upload did not finish within ${RESULT_UPLOAD_MAX_MS / 60_000} minutes: nothing was stored`);
    throw err;
  }
  const sha256 = toHex(digest);
  const { current } = await batchByName(db, {
    stored: db.update(resultUploads).set({ stored_at: Date.now(), size: length, sha256 }).where(eq(resultUploads.id, row.id)),
    current: db
      .select({ yes: sql<number>`1` })
      .from(leases)
      .where(leaseIsCurrent(lease.id, lease.job_id)),
  });
  if (current.length === 0) {
    await forget();
    return 'superseded';
  }
  return { id: row.id, name, key, size: length, sha256 };
}

/** Stores `text` as an object of this attempt (a result sent inline, a sealed dev proof): recorded first, with its digest. */
export async function storeText(
  db: Db,
  bucket: R2Bucket,
  lease: LeaseRef,
  name: string,
  text: string,
  now = Date.now(),
): Promise<StoredResult> {
  const bytes = utf8Bytes(text);
  const sha256 = await sha256Hex(bytes);
  const { row, key } = newUpload(lease, name, now, { size: bytes.byteLength, sha256 });
  await db.insert(resultUploads).values(row);
  await bucket.put(key, bytes, { httpMetadata: { contentType: 'application/json' }, sha256 });
  return { id: row.id, name, key, size: bytes.byteLength, sha256 };
}

/** The latest stored upload of each result of `lease`, by name. */
export async function storedUploads(db: Db, lease: LeaseRef): Promise<Map<string, StoredResult>> {
  const rows = await db
    .select()
    .from(resultUploads)
    .where(and(eq(resultUploads.lease_id, lease.id), eq(resultUploads.job_id, lease.job_id), isNotNull(resultUploads.stored_at)))
    .orderBy(asc(resultUploads.stored_at), asc(resultUploads.id));
  return new Map(rows.map((r) => [r.name, stored(r)]));
}

/** Rows reserved by a job token before its lease was read (reserveByToken): their ids and names, and when. */
export interface TokenReservation {
  rows: { id: string; name: string }[];
  now: number;
}

/** Ids for the rows of a TokenReservation of `names`. */
export const tokenReservation = (names: readonly string[], now = Date.now()): TokenReservation => ({
  rows: names.map((name) => ({ id: newUploadId(), name })),
  now,
});

/**
 * reserve() for a callback that has not read its lease yet (its first batch reads it):
 * each row's job and lease are those of the job token `lease` names, and it is written only
 * while that lease is its job's current one, its agent token live and `also` holds (the
 * job's kind and engine, say). After the batch, a completion that found its lease current
 * adopts them (AttemptResults.adopt).
 */
export function reserveByToken(
  db: Db,
  lease: { ofToken: SQL; current: SQL },
  rows: readonly { id: string; name: string }[],
  now: number,
): Statement[] {
  return rows.map(({ id, name }) =>
    db.insert(resultUploads).select(
      db
        .select({
          id: sql`${id}`.as('id'),
          job_id: leases.job_id,
          lease_id: leases.id,
          name: sql`${name}`.as('name'),
          started_at: sql`${now}`.as('started_at'),
          stored_at: sql`NULL`.as('stored_at'),
          size: sql`NULL`.as('size'),
          sha256: sql`NULL`.as('sha256'),
        })
        .from(leases)
        .where(and(lease.ofToken, lease.current)),
    ),
  );
}

/** A reserved upload's row, marked stored (prepared: most completions make it). */
const markStored = prepared((db, p: Placeholders<{ id: string; now: number; size: number; sha256: string }>) =>
  db
    .update(resultUploads)
    .set({ stored_at: sql`${p.now}`, size: sql`${p.size}`, sha256: sql`${p.sha256}` })
    .where(eq(resultUploads.id, p.id)),
);

/**
 * A completion's results (src/features/fleet/lease.ts /complete): those sent inline with
 * it and those its lease uploaded before, what it accepts, and what its transaction
 * records. An inline result is stored only once accepted; an upload is read once.
 *
 * A completion that knows which texts it will store (a proof's sealed dev proofs) reserves
 * their rows in a batch it makes anyway (`reserve`, its read of the subject): each row is
 * then in `result_uploads` before its object's first byte, as an upload's is, without a
 * round trip of its own; the completion's batch marks the written ones stored (`before`)
 * ahead of accepting them, so a completion that does not apply leaves garbage the sweep
 * takes at once.
 */
export class AttemptResults {
  private readonly accepted = new Map<string, StoredResult>();
  private readonly reserved = new Map<string, UploadRow>();
  private readonly written: StoredResult[] = [];
  private uploads: Promise<Map<string, StoredResult>> | null = null;
  constructor(
    private readonly db: Db,
    private readonly bucket: R2Bucket,
    private readonly lease: LeaseRef,
    private readonly inline: Partial<Record<ResultName, string>>,
  ) {}

  /** Result `name` of this attempt: its text when sent inline, else its stored upload; null when neither. */
  async get(name: ResultName): Promise<{ size: number; text: string } | { size: number; upload: StoredResult } | null> {
    const text = this.inline[name];
    if (text !== undefined) return { size: utf8Bytes(text).byteLength, text };
    this.uploads ??= storedUploads(this.db, this.lease);
    const upload = (await this.uploads).get(name);
    return upload ? { size: upload.size, upload } : null;
  }

  /** The statement that records rows for texts named `names` this completion will store (accept), for a batch of its own; none for no names. */
  reserve(names: readonly string[], now = Date.now()) {
    const rows = names.map((name) => newUpload(this.lease, name, now).row);
    for (const row of rows) this.reserved.set(row.name, row);
    return rows.length ? this.db.insert(resultUploads).values(rows) : undefined;
  }

  /** Rows reserveByToken() recorded, taken as this completion's reservations (the batch that ran them found its lease current). */
  adopt(reservation: TokenReservation): void {
    for (const { id, name } of reservation.rows)
      this.reserved.set(name, {
        id,
        name,
        job_id: this.lease.job_id,
        lease_id: this.lease.id,
        started_at: reservation.now,
        stored_at: null,
        size: null,
        sha256: null,
      });
  }

  /** Accepts `file` as what the record serves: stored first if it is text (inline, or made here). */
  async accept(name: string, file: { text: string } | { upload: StoredResult }): Promise<ServedObject & { size: number }> {
    const result = 'upload' in file ? file.upload : await this.store(name, file.text);
    this.accepted.set(result.id, result);
    return { key: result.key, sha256: result.sha256, size: result.size };
  }

  /** A text stored as an object of this attempt: under its reserved row, or recorded now. */
  private async store(name: string, text: string): Promise<StoredResult> {
    const row = this.reserved.get(name);
    if (!row) return storeText(this.db, this.bucket, this.lease, name, text);
    this.reserved.delete(name);
    const bytes = utf8Bytes(text);
    const sha256 = await sha256Hex(bytes);
    const key = keyOf(row);
    await this.bucket.put(key, bytes, { httpMetadata: { contentType: 'application/json' }, sha256 });
    const result = { id: row.id, name, key, size: bytes.byteLength, sha256 };
    this.written.push(result);
    return result;
  }

  /**
   * For the ending's batch, first: the reserved rows whose objects were written, marked
   * stored (the sweep takes them at once if the ending does not accept them), and those
   * never written (the completion failed first), gone.
   */
  settleStatements(now = Date.now()) {
    const unused = [...this.reserved.values()].map((r) => r.id);
    return [
      ...this.written.map((w) => markStored(this.db, { id: w.id, now, size: w.size, sha256: w.sha256 })),
      ...(unused.length ? [this.db.delete(resultUploads).where(inArray(resultUploads.id, idList(unused)))] : []),
    ];
  }

  /** The accepted uploads' ids, for the completion's transaction (acceptStatement). */
  get acceptedIds(): string[] {
    return [...this.accepted.keys()];
  }
}

/**
 * The statement that takes the accepted uploads off the garbage list, for the completion's
 * batch, before its job stops being leased: it applies only while `mine` (the lease is
 * current and the job not canceled) holds, as the record's own update does, so either
 * the record names them and their rows are gone, or neither.
 */
export function acceptStatement(db: Db, ids: readonly string[], mine: SQL | undefined) {
  if (ids.length === 0) return undefined;
  return db.delete(resultUploads).where(and(inArray(resultUploads.id, idList(ids)), sql`EXISTS (SELECT 1 FROM ${jobs} WHERE ${mine})`));
}

/** The keys of a job's stored attempt files, as SQL (a JSON array), for a purge row (src/features/retention/data.ts). */
export const attemptKeysSql = (jobId: SQL) =>
  sql`(SELECT json_group_array(${keySql(artifactKey.resultUpload, resultUploads.job_id, resultUploads.id, resultUploads.name)})
    FROM ${resultUploads} WHERE ${resultUploads.job_id} = ${jobId} AND ${resultUploads.stored_at} IS NOT NULL)`;

/**
 * The sweep's part: up to UPLOAD_SWEEP_BATCH garbage uploads (their lease is not the
 * job's current one, and their object is stored or can no longer appear), their objects
 * deleted in one call, then their rows. Answers how many went.
 */
export async function sweepResultUploads(db: Db, bucket: R2Bucket, budget: CallBudget, now = Date.now()): Promise<number> {
  if (!budget.fits(UPLOAD_SWEEP_CALLS)) return 0;
  const rows = await db
    .select({ id: resultUploads.id, job_id: resultUploads.job_id, name: resultUploads.name })
    .from(resultUploads)
    .where(
      and(
        sql`NOT ${leaseIsCurrent(resultUploads.lease_id, resultUploads.job_id)}`,
        or(isNotNull(resultUploads.stored_at), lt(resultUploads.started_at, now - RESULT_UPLOAD_MAX_MS - UPLOAD_SETTLE_MS)),
        inLine('upload', resultUploads.id, now),
      ),
    )
    .orderBy(asc(resultUploads.started_at))
    .limit(UPLOAD_SWEEP_BATCH);
  if (rows.length === 0) return 0;
  const ids = rows.map((r) => r.id);
  try {
    await bucket.delete(rows.map(keyOf));
  } catch (err) {
    await recordFailures(db, 'upload', ids, err, now);
    return 0;
  }
  await batchByName(db, {
    rows: db.delete(resultUploads).where(inArray(resultUploads.id, idList(ids))),
    failures: settleFailures(db, 'upload', ids),
  });
  return rows.length;
}
