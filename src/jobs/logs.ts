// Job logs live in R2 as ordered chunks `logs/{job_id}/{seq}`, indexed in D1
// (job_log_chunks: seq, byte offset, size, who wrote it). The job row keeps the next
// sequence number and the log's byte length, so an agent's chunk is accepted exactly
// once, in order: a retried chunk (seq already taken) changes nothing, and a chunk that
// skips ahead is refused. A job's attempts all write to the same log: a claim hands
// the agent the sequence and offset to continue from.
//
// Bounds (docs/callers.md "Limits"):
// - A log holds at most LOG_MAX_BYTES bytes and LOG_MAX_CHUNKS chunks (src/jobs/settings.ts).
//   The statement that appends is conditional on both, so concurrent appends cannot pass
//   them. The first chunk past them is refused (413) and the log then ends with one line
//   the service writes (the truncation marker, one chunk past the caps); every later
//   chunk is refused too.
// - The service's own lines start with `[service`, and only they: a host's text has the
//   `[` of every `[service` (any case, also one cut by the chunk's end) turned into `(`,
//   which keeps its byte length, so the agent's offsets still hold. The index records
//   each chunk's source as well.
// - A read is one D1 query for the index rows of its page (batched with the route's
//   own read where it has one) and at most LOG_PAGE_CHUNKS R2 reads, however long the log.
//
// Compaction: once the job is `done` its log can no longer grow, and compaction writes it
// as ONE object (at most the byte cap), records that on the job row (`log_store`), and
// only then deletes the chunk objects and their index rows. It runs in stages of at most
// COMPACT_STAGE_R2_OPS R2 operations (compactionStage), each recorded on the job row
// (`log_compact_step`), so a log of thousands of chunks is compacted over several
// invocations, each within its budget (docs/contributors.md "Work per invocation"). Every step is
// conditional on the state it starts from, so a retry, a concurrent run or a crash
// between steps leaves a correct log: until the record lands, reads use the chunks;
// after it, the object. The lease endings start it after their response
// (src/features/fleet/lease.ts); the sweep goes on with what is pending
// (compactPendingLogs). A compacted log is served whole by the public route in one R2
// read; appends to it are refused by the appending statement itself (log_store = 'chunks').
import { and, asc, eq, gte, lt, lte, sql, type SQL } from 'drizzle-orm';
import { batchByName } from '../db/batch.ts';
import { prepared, type Placeholders } from '../db/prepared.ts';
import type { Db } from '../db/client.ts';
import { jobLogChunks, jobs, sweepFailures } from '../db/schema.ts';
import { BudgetSpent, type Metered } from '../lib/metered.ts';
import { inLine, recordFailures, settleFailures } from './sweep-items.ts';
import { artifactKey } from '../lib/artifacts.ts';
import type { LogChunk } from 'prover-agent/protocol';
import type { TenantLimits } from './settings.ts';
import { utf8Bytes, utf8Text } from '../lib/bytes.ts';

export type AppendResult =
  | { kind: 'appended' | 'duplicate' }
  | { kind: 'out-of-order'; expectedSeq: number; expectedOffset: number }
  | { kind: 'capped'; detail: string };

type LogPosition = { seq: number; bytes: number; truncated: boolean };
export type LogCaps = Pick<TenantLimits, 'LOG_MAX_BYTES' | 'LOG_MAX_CHUNKS'>;
type Source = 'host' | 'service';
export type LogStore = (typeof jobs.$inferSelect)['log_store'];
/** Whether reads of a log with this store use its compacted object. */
export const isCompacted = (store: LogStore | undefined) => store === 'compacted' || store === 'clean';

/** Most chunks (and so R2 reads) one read of a log serves. */
export const LOG_PAGE_CHUNKS = 128;
/** Most bytes one `GET .../logs` serves (whole chunks; a larger first chunk goes alone). */
export const LOG_PAGE_BYTES = 4 * 1024 * 1024;

/** What begins every line the service writes, and nothing a host writes. */
export const SERVICE_LINE_TAG = '[service';

/** A line written by the service itself, as stored. */
export const serviceLine = (line: string) => `${SERVICE_LINE_TAG} ${new Date().toISOString()}] ${line}\n`;

/**
 * A host's text as stored: the `[` of each `[service` (any case) becomes `(`, and so does
 * a `[` that starts a piece of `[service` cut by the chunk's end (the next chunk could
 * finish it). Same byte length: the agent's offsets are unchanged.
 */
export function hostText(text: string): string {
  let out = text.replace(/\[(?=service)/gi, '(');
  const cut = /\[(?:s(?:e(?:r(?:v(?:i(?:c)?)?)?)?)?)?$/i.exec(out);
  if (cut) out = `${out.slice(0, cut.index)}(${out.slice(cut.index + 1)}`;
  return out;
}

const capDetail = (caps: LogCaps) =>
  `This job's log reached its cap (${caps.LOG_MAX_BYTES} bytes, ${caps.LOG_MAX_CHUNKS} chunks): this chunk and every later one are refused, and the log ends with the service's truncation marker`;

const position = (db: Db, jobId: string) =>
  db.select({ seq: jobs.log_seq, bytes: jobs.log_bytes, truncated: jobs.log_truncated }).from(jobs).where(eq(jobs.id, jobId)).get();

/**
 * The statements that append a chunk of `bytes` at `seq`: its index row and the job's
 * new position, both under one condition (the position is still `seq`, the log is not
 * truncated, and, unless this is the marker, the caps hold after it), so in their batch
 * both apply or neither. The update (`position`) returns the job's id when it applied.
 */
function appendStatements(db: Db, jobId: string, seq: number, bytes: number, source: Source, caps: LogCaps | 'marker') {
  const where = and(
    eq(jobs.id, jobId),
    eq(jobs.log_seq, seq),
    eq(jobs.log_truncated, false),
    eq(jobs.log_store, 'chunks'),
    caps === 'marker' ? undefined : and(lt(jobs.log_seq, caps.LOG_MAX_CHUNKS), lte(sql`${jobs.log_bytes} + ${bytes}`, caps.LOG_MAX_BYTES)),
  );
  const row = db
    .select({
      job_id: jobs.id,
      seq: jobs.log_seq,
      offset: jobs.log_bytes,
      bytes: sql<number>`${bytes}`.as('bytes'),
      source: sql<Source>`${source}`.as('source'),
    })
    .from(jobs)
    .where(where);
  return {
    chunk: db.insert(jobLogChunks).select(row).onConflictDoNothing(),
    position: db
      .update(jobs)
      // A compaction's stages so far were for the log before this chunk: it starts over (compactionStage).
      .set({
        log_seq: seq + 1,
        log_bytes: sql`${jobs.log_bytes} + ${bytes}`,
        log_compact_step: 0,
        ...(caps === 'marker' ? { log_truncated: true } : {}),
      })
      .where(where)
      .returning({ id: jobs.id }),
  };
}

/** The statements that append one chunk (appendStatements), for a batch of the caller's. */
export type LogAppend = ReturnType<typeof appendStatements>;

/**
 * appendLogChunk() in two halves, for a caller that runs the row update in a batch of
 * its own (a lease's last chunk goes with the call that ends it): the chunk's object
 * is written now, and the statements that index it and move the job's log position
 * are returned, unrun (`append`; null when there is nothing to append). The object goes first:
 * if the update then loses a race, the winner wrote the same key. A chunk past the caps
 * stages the truncation marker instead, and its result is `capped`.
 */
export async function stageLogChunk(
  db: Db,
  bucket: R2Bucket,
  jobId: string,
  chunk: LogChunk,
  job: LogPosition,
  caps: LogCaps,
  source: Source = 'host',
): Promise<{ result: AppendResult; append: LogAppend | null }> {
  const none = (result: AppendResult) => ({ result, append: null });
  if (job.truncated) return none({ kind: 'capped', detail: capDetail(caps) });
  if (chunk.seq < job.seq) return none({ kind: 'duplicate' });
  if (chunk.seq > job.seq || chunk.offset !== job.bytes)
    return none({ kind: 'out-of-order', expectedSeq: job.seq, expectedOffset: job.bytes });
  const bytes = utf8Bytes(source === 'host' ? hostText(chunk.text) : chunk.text);
  const put = (b: Uint8Array, s: Source) =>
    bucket.put(artifactKey.jobLogChunk(jobId, chunk.seq, s), b, { httpMetadata: { contentType: 'text/plain; charset=utf-8' } });
  if (job.seq >= caps.LOG_MAX_CHUNKS || job.bytes + bytes.byteLength > caps.LOG_MAX_BYTES) {
    const marker = utf8Bytes(
      serviceLine(
        `log truncated: it reached its cap (${caps.LOG_MAX_BYTES} bytes, ${caps.LOG_MAX_CHUNKS} chunks); later output was refused`,
      ),
    );
    await put(marker, 'service');
    return {
      result: { kind: 'capped', detail: capDetail(caps) },
      append: appendStatements(db, jobId, chunk.seq, marker.byteLength, 'service', 'marker'),
    };
  }
  await put(bytes, source);
  return { result: { kind: 'appended' }, append: appendStatements(db, jobId, chunk.seq, bytes.byteLength, source, caps) };
}

/**
 * The last log chunk of a lease ending that finishes its job, when it is the whole log
 * (nothing was appended before it; most instant jobs' logs): its object is written
 * straight as the compacted log, and the returned statement, for the ending's batch,
 * records it compacted and clean (log_store 'clean', no index row), so the log needs no
 * compaction after the response (6 D1 calls and 3 R2 operations fewer per job). The
 * statement is conditional on the log being still empty and on `leaseId` being the job's
 * current lease, which the ending's own statements then end: a superseded lease records
 * nothing (its object is the compacted log's key, which only a finished log's compaction
 * or this statement ever makes current, and each writes it before recording it). Null,
 * and nothing written, when the chunk is not the whole log or is past the caps: the
 * caller stages it the usual way (stageLogChunk). With no chunk, an empty log is
 * recorded clean the same way.
 */
export async function stageWholeLog(
  db: Db,
  bucket: R2Bucket,
  jobId: string,
  leaseId: string,
  chunk: LogChunk | undefined,
  job: LogPosition,
  caps: LogCaps,
) {
  if (job.seq !== 0 || job.bytes !== 0 || job.truncated) return null;
  if (chunk && (chunk.seq !== 0 || chunk.offset !== 0)) return null;
  const bytes = chunk ? utf8Bytes(hostText(chunk.text)) : new Uint8Array(0);
  if (bytes.byteLength > caps.LOG_MAX_BYTES || caps.LOG_MAX_CHUNKS < 1) return null;
  if (bytes.byteLength > 0)
    await bucket.put(artifactKey.jobLogCompacted(jobId), bytes, {
      httpMetadata: { contentType: 'text/plain; charset=utf-8' },
      customMetadata: { log_seq: '1' },
    });
  // Wrapped: a query builder is a thenable, which an async function's return would run.
  const record = wholeLogRecord(db, { jobId, leaseId, seq: bytes.byteLength > 0 ? 1 : 0, bytes: bytes.byteLength });
  return { record };
}

/** stageWholeLog's record (prepared: most endings make it). */
const wholeLogRecord = prepared((db, p: Placeholders<{ jobId: string; leaseId: string; seq: number; bytes: number }>) =>
  db
    .update(jobs)
    .set({ log_seq: sql`${p.seq}`, log_bytes: sql`${p.bytes}`, log_store: 'clean', log_compact_step: 0 })
    .where(
      and(
        eq(jobs.id, p.jobId),
        eq(jobs.lease_id, p.leaseId),
        eq(jobs.status, 'leased'),
        eq(jobs.log_seq, 0),
        eq(jobs.log_bytes, 0),
        eq(jobs.log_truncated, false),
        eq(jobs.log_store, 'chunks'),
      ),
    ),
);

/**
 * Appends one chunk at (seq, offset) if it is the next one; idempotent for a repeat.
 * `current` is the job's log position when the caller has just read it (a lease
 * callback has), saving a read; the statements are conditional on it either way, and
 * when they do not apply (a repeat landed, or the caps were reached, meanwhile) the
 * position is read again to say which.
 */
export async function appendLogChunk(
  db: Db,
  bucket: R2Bucket,
  jobId: string,
  chunk: LogChunk,
  caps: LogCaps,
  current?: LogPosition,
  source: Source = 'host',
): Promise<AppendResult> {
  let job = current ?? (await position(db, jobId));
  for (let tries = 0; job && tries < 3; tries++) {
    const staged = await stageLogChunk(db, bucket, jobId, chunk, job, caps, source);
    if (!staged.append) return staged.result;
    const { position: moved } = await batchByName(db, staged.append);
    // A marker that lost its race still means this chunk is refused.
    if (moved.length || staged.result.kind === 'capped') return staged.result;
    job = await position(db, jobId);
  }
  if (!job) throw new Error(`job ${jobId} not found`);
  return { kind: 'duplicate' };
}

/** The calls of one appendServiceLog() that meets no race: the log's position, the chunk's object, the batch that appends it. */
export const SERVICE_LINE_CALLS = 3;

/** Appends a line written by the service itself (e.g. why a job still waits), while no agent holds the job. */
export async function appendServiceLog(db: Db, bucket: R2Bucket, jobId: string, line: string, caps: LogCaps): Promise<void> {
  const text = serviceLine(line);
  for (let tries = 0; tries < 3; tries++) {
    const job = await position(db, jobId);
    if (!job || job.truncated) return;
    const r = await appendLogChunk(db, bucket, jobId, { seq: job.seq, offset: job.bytes, text }, caps, job, 'service');
    if (r.kind === 'appended' || r.kind === 'capped') return;
  }
}

// ---------------------------------------------------------------------------
// Reads

export type LogIndexRow = { seq: number; offset: number; bytes: number; source: Source };

/**
 * The index rows of one page of a job's log from byte `offset`: the chunk holding that
 * byte and those after it, at most `limit`. One statement over the (job_id, offset)
 * index, for the caller to batch with its own read; `jobId` may be SQL (a subquery).
 */
export function logPageQuery(db: Db, jobId: SQL | string, offset: number, limit = LOG_PAGE_CHUNKS) {
  const start = sql`coalesce((SELECT max(${jobLogChunks.offset}) FROM ${jobLogChunks} WHERE ${jobLogChunks.job_id} = ${jobId} AND ${jobLogChunks.offset} <= ${offset}), 0)`;
  return db
    .select({ seq: jobLogChunks.seq, offset: jobLogChunks.offset, bytes: jobLogChunks.bytes, source: jobLogChunks.source })
    .from(jobLogChunks)
    .where(and(eq(jobLogChunks.job_id, jobId), gte(jobLogChunks.offset, start)))
    .orderBy(asc(jobLogChunks.offset), asc(jobLogChunks.seq))
    .limit(limit);
}

/** The job id of a subject as SQL, for logPageQuery() in the same batch as the job's own read (src/features/runs/data.ts jobOfSubject). */
export const jobIdOfSubject = (kind: 'proof' | 'execute', subjectId: string) =>
  sql<string>`(SELECT ${jobs.id} FROM ${jobs} WHERE ${jobs.kind} = ${kind} AND ${jobs.subject_id} = ${subjectId})`;

const concat = (parts: Uint8Array[]) => {
  const all = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let pos = 0;
  for (const p of parts) (all.set(p, pos), (pos += p.byteLength));
  return all;
};

/**
 * At most `maxBytes` of a job's log from byte `offset` (whole chunks, so UTF-8 is never
 * cut; a larger first chunk goes alone), read with the index rows of its page (one R2
 * read per row taken, together), and the offset to ask from next. `logBytes` is the
 * log's length when the caller knows it: a log written before the index (no rows where
 * there are bytes) is read the old way, by listing its chunks.
 */
export async function readLogPage(
  bucket: R2Bucket,
  jobId: string | undefined,
  rows: LogIndexRow[],
  offset: number,
  maxBytes: number,
  logBytes?: number,
  store?: LogStore,
): Promise<{ bytes: Uint8Array; next: number }> {
  const from = Math.max(offset, 0);
  if (!jobId) return { bytes: new Uint8Array(0), next: from };
  if (isCompacted(store)) return compactedLogFrom(bucket, jobId, from, maxBytes, logBytes);
  if ((rows.length === 0 || rows[0].offset > from) && logBytes !== undefined && from < logBytes)
    return legacyLogFrom(bucket, jobId, from, maxBytes);
  const taken: LogIndexRow[] = [];
  let size = 0;
  for (const r of rows) {
    if (r.offset + r.bytes <= from) continue;
    const part = r.bytes - Math.max(0, from - r.offset);
    if (taken.length > 0 && size + part > maxBytes) break;
    taken.push(r);
    size += part;
  }
  const parts = await Promise.all(
    taken.map(async (r) => {
      const skip = Math.max(0, from - r.offset);
      const obj = await bucket.get(artifactKey.jobLogChunk(jobId, r.seq, r.source), skip > 0 ? { range: { offset: skip } } : undefined);
      return obj ? new Uint8Array(await obj.arrayBuffer()) : null;
    }),
  );
  // A missing object ends the page there (not written yet: the next read tries again),
  // unless a compaction deleted it after this read's index rows: then the compacted
  // object holds those bytes (a log only grows, so any compacted object is its prefix).
  const got = parts.findIndex((p) => p === null);
  if (got !== -1) {
    const compacted = await compactedLogFrom(bucket, jobId, from, size).catch(() => null);
    if (compacted && compacted.bytes.byteLength > 0) return compacted;
  }
  const kept = (got === -1 ? parts : parts.slice(0, got)) as Uint8Array[];
  const bytes = concat(kept);
  return { bytes, next: from + bytes.byteLength };
}

/**
 * A piece of a job's log for a caller without a batch of its own (the event stream): one
 * D1 round trip (the page's index rows and where the log is stored), then its R2 reads
 * (one ranged read of a compacted log).
 */
export async function jobLogFrom(
  db: Db,
  bucket: R2Bucket,
  jobId: string | undefined,
  offset: number,
  maxBytes: number,
  logBytes?: number,
): Promise<{ text: string; next: number }> {
  const { rows, job } = jobId
    ? await batchByName(db, {
        rows: logPageQuery(db, jobId, offset),
        job: db.select({ store: jobs.log_store }).from(jobs).where(eq(jobs.id, jobId)),
      })
    : { rows: [], job: [] };
  const { bytes, next } = await readLogPage(bucket, jobId, rows, offset, maxBytes, logBytes, job[0]?.store);
  return { text: utf8Text(bytes), next };
}

/** The end of the longest prefix of `bytes` that does not cut a UTF-8 character. */
function wholeCharsEnd(bytes: Uint8Array): number {
  for (let back = 1; back <= Math.min(4, bytes.byteLength); back++) {
    const b = bytes[bytes.byteLength - back];
    if ((b & 0xc0) === 0x80) continue; // a continuation byte: its lead is further back
    const need = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return need > back ? bytes.byteLength - back : bytes.byteLength;
  }
  return bytes.byteLength;
}

/**
 * At most `maxBytes` of a compacted log from byte `offset`: one ranged R2 read (none
 * when there is nothing to read), cut back to a whole UTF-8 character when the range
 * ends inside the log. Empty when there is no compacted object.
 */
async function compactedLogFrom(
  bucket: R2Bucket,
  jobId: string,
  offset: number,
  maxBytes: number,
  logBytes?: number,
): Promise<{ bytes: Uint8Array; next: number }> {
  const length = logBytes === undefined ? maxBytes : Math.min(maxBytes, logBytes - offset);
  if (length <= 0) return { bytes: new Uint8Array(0), next: offset };
  const whole = offset === 0 && logBytes !== undefined && length === logBytes;
  const obj = await bucket.get(artifactKey.jobLogCompacted(jobId), whole ? undefined : { range: { offset, length } });
  if (!obj) return { bytes: new Uint8Array(0), next: offset };
  let bytes = new Uint8Array(await obj.arrayBuffer());
  if (!whole && logBytes !== undefined && offset + bytes.byteLength < logBytes) bytes = bytes.subarray(0, wholeCharsEnd(bytes));
  return { bytes, next: offset + bytes.byteLength };
}

/** A log written before its index: its chunk objects, listed, from `offset` (at most `maxBytes`). */
async function legacyLogFrom(
  bucket: R2Bucket,
  jobId: string,
  offset: number,
  maxBytes: number,
): Promise<{ bytes: Uint8Array; next: number }> {
  const chunks: { key: string; size: number }[] = [];
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix: artifactKey.jobLogPrefix(jobId), cursor });
    for (const o of page.objects) chunks.push({ key: o.key, size: o.size });
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
  chunks.sort((a, b) => (a.key < b.key ? -1 : 1)); // zero-padded sequence numbers sort in order
  const parts: Uint8Array[] = [];
  let at = 0;
  let taken = 0;
  for (const chunk of chunks) {
    const end = at + chunk.size;
    if (end > offset) {
      if (taken > 0 && taken + chunk.size > maxBytes) break;
      const obj = await bucket.get(chunk.key);
      if (!obj) break;
      const bytes = new Uint8Array(await obj.arrayBuffer());
      const part = offset > at ? bytes.subarray(offset - at) : bytes;
      parts.push(part);
      taken += part.byteLength;
    }
    at = end;
  }
  return { bytes: concat(parts), next: offset + taken };
}

// ---------------------------------------------------------------------------
// Compaction

/**
 * Objects one stage of a compaction reads, at most: a stage makes at most
 * COMPACT_STAGE_R2_OPS R2 operations and COMPACT_STAGE_CALLS calls in all, whatever the
 * log's length. So a stage fits in one invocation of Workers Free (50 subrequests), and
 * a full log of LOG_MAX_CHUNKS (2,048) chunks and its marker takes 69 stages and its
 * clean-up, spread over invocations by their budgets (src/jobs/invocations.ts), never
 * 2,053 operations in one (docs/contributors.md "Work per invocation").
 */
export const COMPACT_FAN_IN = 32;
/** R2 operations of the largest stage: COMPACT_FAN_IN reads and one write (a clean-up makes fewer: a bulk delete per 1,000 keys). */
export const COMPACT_STAGE_R2_OPS = COMPACT_FAN_IN + 1;
/** Calls of the largest stage: its R2 operations, the job's read, its index rows' read and the update that records it. */
export const COMPACT_STAGE_CALLS = COMPACT_STAGE_R2_OPS + 3;
/** Most chunks a compaction takes (a capped log has LOG_MAX_CHUNKS and its marker; older or odder logs are kept in chunks). */
const COMPACT_MAX_CHUNKS = 4096;
/** Room for the truncation marker past LOG_MAX_BYTES. */
const MARKER_ROOM = 1024;
/**
 * Pending compactions the sweep looks at per run, at most: each goes as far as the run's
 * budget lets it, which is the real bound (a small log takes two stages of a few calls,
 * so a run finishes several; a mass expiry leaves hundreds).
 */
export const COMPACT_SWEEP_BATCH = 16;

export type CompactOutcome = 'compacted' | 'kept' | 'not-final' | 'changed';

/**
 * How a log of `chunks` chunks is compacted: objects of level 0 are its chunks; a stage
 * joins up to COMPACT_FAN_IN consecutive objects of one level into one object of the next
 * (artifactKey.jobLogPart), until a level has at most COMPACT_FAN_IN objects, which the
 * last stage joins into the compacted object. `counts[l]`: the objects of level l.
 */
export function compactionPlan(chunks: number): { counts: number[]; stages: { level: number; index: number }[] } {
  const counts = [chunks];
  while (counts.at(-1)! > COMPACT_FAN_IN) counts.push(Math.ceil(counts.at(-1)! / COMPACT_FAN_IN));
  const stages = counts.slice(1).flatMap((count, l) => Array.from({ length: count }, (_, index) => ({ level: l + 1, index })));
  // The last stage: level counts.length, its one object being the compacted log.
  stages.push({ level: counts.length, index: 0 });
  return { counts, stages };
}

/** The chunks object (level, index) of a plan covers: [from, to). */
const spanOf = (chunks: number, level: number, index: number) => {
  const width = COMPACT_FAN_IN ** level;
  return { from: index * width, to: Math.min((index + 1) * width, chunks) };
};

/** An object a stage joins, and its size as the index says. */
type Piece = { key: string; bytes: number };

/** Source reads a stage keeps in flight ahead of the one it copies (under the platform's 6 open connections). */
const COMPACT_READ_AHEAD = 4;

/**
 * Writes `target` as the concatenation of `sources`, streamed (a source at a time, the
 * next COMPACT_READ_AHEAD ones' reads started while the current one is copied; nothing
 * held whole), each source checked to be the size the index says. 'missing' (and nothing
 * written) when one is gone or not that size.
 */
async function joinObjects(
  bucket: R2Bucket,
  target: string,
  sources: Piece[],
  metadata: Record<string, string>,
): Promise<'written' | 'missing'> {
  const total = sources.reduce((n, s) => n + s.bytes, 0);
  const { readable, writable } = new FixedLengthStream(total);
  const putting = bucket.put(target, readable, { httpMetadata: { contentType: 'text/plain; charset=utf-8' }, customMetadata: metadata });
  const reads: Promise<R2ObjectBody | null>[] = [];
  const readAhead = (upTo: number) => {
    while (reads.length < Math.min(upTo, sources.length)) reads.push(bucket.get(sources[reads.length].key));
  };
  const stop = async (why: unknown, from: number) => {
    await Promise.allSettled(reads.slice(from).map((r) => r.then((o) => o?.body.cancel())));
    await writable.abort(why).catch(() => undefined);
    await putting.catch(() => undefined);
  };
  try {
    for (let i = 0; i < sources.length; i++) {
      readAhead(i + 1 + COMPACT_READ_AHEAD);
      const obj = await reads[i];
      if (!obj || obj.size !== sources[i].bytes) {
        await obj?.body.cancel();
        await stop(new Error('a source object is missing'), i + 1);
        return 'missing';
      }
      await obj.body.pipeTo(writable, { preventClose: true });
    }
    await writable.close();
  } catch (err) {
    await stop(err, 0);
    throw err;
  }
  await putting;
  return 'written';
}

/**
 * One stage of the compaction of a finished job's log (see the top of this module), at
 * most COMPACT_STAGE_CALLS calls: 'stage' when it did one and there is more, else how the
 * compaction stands. Safe to run again at any point and alongside another run: each
 * stage rewrites the same object from the same sources, and records itself only if the
 * log is still what it read (finished, not grown) and no other run recorded it first.
 * 1. `chunks`, stage by stage (log_compact_step counts them): the first checks that the
 *    index rows tile the log end to end; each writes one object of the plan
 *    (compactionPlan) from its sources, and the last writes the compacted object and
 *    records it (`compacted`). A crash before a stage's record leaves an object nobody
 *    reads, which the stage's rerun writes again, the same bytes.
 * 2. `compacted`: the chunk objects and the plan's parts are deleted (a bulk delete per
 *    1,000 keys), then the index rows, and the job is `clean`.
 * A log that cannot be compacted (no index: written before it; past the bounds; a chunk
 * object gone) is `kept` in chunks, and read as before.
 */
export async function compactionStage(m: Metered, jobId: string, caps: LogCaps): Promise<CompactOutcome | 'stage'> {
  const { db, bucket } = m;
  const job = await db
    .select({ status: jobs.status, seq: jobs.log_seq, bytes: jobs.log_bytes, store: jobs.log_store, step: jobs.log_compact_step })
    .from(jobs)
    .where(eq(jobs.id, jobId))
    .get();
  if (!job || job.status !== 'done') return 'not-final';
  if (job.store === 'kept' || job.store === 'clean') return job.store === 'clean' ? 'compacted' : 'kept';
  if (job.store === 'compacted') return cleanUp(m, jobId, job.seq);
  // The record, conditional on the log being exactly what was read (finished, not grown) and at this stage.
  const asRead = and(
    eq(jobs.id, jobId),
    eq(jobs.status, 'done'),
    eq(jobs.log_store, 'chunks'),
    eq(jobs.log_seq, job.seq),
    eq(jobs.log_bytes, job.bytes),
    eq(jobs.log_compact_step, job.step),
  );
  const record = async (set: { log_store?: LogStore; log_compact_step?: number }) =>
    (await db.update(jobs).set(set).where(asRead).returning({ id: jobs.id })).length === 1;
  if (job.bytes === 0) return (await record({ log_store: 'clean' })) ? 'compacted' : 'changed';
  if (job.seq > COMPACT_MAX_CHUNKS || job.bytes > caps.LOG_MAX_BYTES + MARKER_ROOM)
    return (await record({ log_store: 'kept' })) ? 'kept' : 'changed';
  const plan = compactionPlan(job.seq);
  const stage = plan.stages[job.step];
  if (!stage) return (await record({ log_compact_step: 0 })) ? 'stage' : 'changed';
  const last = job.step === plan.stages.length - 1;
  // The index rows of the stage's span (all of them for the first stage, which checks them).
  const span = job.step === 0 ? { from: 0, to: job.seq } : spanOf(job.seq, stage.level, stage.index);
  const rows = await db
    .select({ seq: jobLogChunks.seq, offset: jobLogChunks.offset, bytes: jobLogChunks.bytes, source: jobLogChunks.source })
    .from(jobLogChunks)
    .where(and(eq(jobLogChunks.job_id, jobId), gte(jobLogChunks.seq, span.from), lt(jobLogChunks.seq, span.to)))
    .orderBy(asc(jobLogChunks.seq))
    .limit(COMPACT_MAX_CHUNKS + 1);
  if (job.step === 0) {
    // The rows must tile the log: seq 0.. in order, each starting where the one before ended.
    let end = 0;
    let covers = rows.length === job.seq;
    for (const [i, r] of rows.entries()) {
      covers &&= r.seq === i && r.offset === end;
      end += r.bytes;
    }
    covers &&= end === job.bytes;
    if (!covers) return (await record({ log_store: 'kept' })) ? 'kept' : 'changed';
  }
  // The stage's sources: objects of the level below, each as many bytes as its chunks.
  const { from, to } = spanOf(job.seq, stage.level, stage.index);
  const below = stage.level - 1;
  const sources: Piece[] = [];
  for (const r of rows) {
    if (r.seq < from || r.seq >= to) continue;
    const index = Math.floor(r.seq / COMPACT_FAN_IN ** below);
    const key = below === 0 ? artifactKey.jobLogChunk(jobId, r.seq, r.source) : artifactKey.jobLogPart(jobId, below, index);
    if (sources.at(-1)?.key === key) sources.at(-1)!.bytes += r.bytes;
    else sources.push({ key, bytes: r.bytes });
  }
  const target = last ? artifactKey.jobLogCompacted(jobId) : artifactKey.jobLogPart(jobId, stage.level, stage.index);
  if ((await joinObjects(bucket, target, sources, { log_seq: String(job.seq) })) === 'missing')
    // A chunk gone (or not as indexed) while the log is still `chunks`: nothing to compact it
    // from. A part gone (another run of an older plan rewrote it): the stages start over.
    return below === 0
      ? (await record({ log_store: 'kept' }))
        ? 'kept'
        : 'changed'
      : (await record({ log_compact_step: 0 }))
        ? 'stage'
        : 'changed';
  if (!(await record(last ? { log_store: 'compacted' } : { log_compact_step: job.step + 1 }))) return 'changed';
  return 'stage';
}

/** Stage 2: the chunks and the plan's parts, now that the compacted object serves reads: objects first, then their rows. */
async function cleanUp({ db, bucket }: Metered, jobId: string, chunks: number): Promise<'compacted'> {
  const rows = await db
    .select({ seq: jobLogChunks.seq, source: jobLogChunks.source })
    .from(jobLogChunks)
    .where(eq(jobLogChunks.job_id, jobId))
    .limit(COMPACT_MAX_CHUNKS + 1);
  const { counts } = compactionPlan(chunks);
  const keys = [
    ...rows.map((r) => artifactKey.jobLogChunk(jobId, r.seq, r.source)),
    ...counts.slice(1).flatMap((count, l) => Array.from({ length: count }, (_, i) => artifactKey.jobLogPart(jobId, l + 1, i))),
  ];
  for (let i = 0; i < keys.length; i += 1000) await bucket.delete(keys.slice(i, i + 1000)); // R2 deletes at most 1,000 keys per call
  await batchByName(db, {
    chunks: db.delete(jobLogChunks).where(eq(jobLogChunks.job_id, jobId)),
    job: db
      .update(jobs)
      .set({ log_store: 'clean' })
      .where(and(eq(jobs.id, jobId), eq(jobs.log_store, 'compacted'))),
  });
  return 'compacted';
}

/**
 * Compacts a finished job's log stage by stage while `m`'s budget fits another stage:
 * its outcome, or 'partial' when the budget stopped it first (the sweep goes on from
 * there: jobs_log_pending).
 */
export async function compactJobLog(m: Metered, jobId: string, caps: LogCaps): Promise<CompactOutcome | 'partial'> {
  while (m.budget.fits(COMPACT_STAGE_CALLS)) {
    const r = await compactionStage(m, jobId, caps);
    if (r !== 'stage') return r;
  }
  return 'partial';
}

/**
 * compactJobLog() for jobs just ended, off the response path, within `m`'s budget: a
 * failure is logged and left pending for the sweep, as is whatever the budget leaves.
 */
export async function compactAfterEnding(m: Metered, jobIds: readonly string[], caps: LogCaps): Promise<void> {
  for (const id of jobIds) {
    if (!m.budget.fits(COMPACT_STAGE_CALLS)) return;
    await compactJobLog(m, id, caps).catch((err) =>
      console.error(JSON.stringify({ level: 'error', msg: 'log compaction failed; the sweep retries it', job_id: id, error: String(err) })),
    );
  }
}

/**
 * The sweep's part: finished jobs whose compaction is pending (jobs_log_pending) and in
 * line (src/jobs/sweep-items.ts), COMPACT_SWEEP_BATCH at most, each compacted as far as
 * `m`'s budget goes. A compaction that fails counts a failure of the job's log and waits
 * (at last set aside), so it never keeps the others waiting. Answers the logs finished.
 */
export async function compactPendingLogs(m: Metered, caps: LogCaps, now = Date.now()): Promise<number> {
  if (!m.budget.fits(1 + COMPACT_STAGE_CALLS)) return 0;
  const { db } = m;
  const pending = await db
    .select({ id: jobs.id, failed: sql<number>`EXISTS (SELECT 1 FROM ${sweepFailures} f WHERE f.kind = 'log' AND f.item = ${jobs.id})` })
    .from(jobs)
    // Literally jobs_log_pending's condition, so the planner can use it.
    .where(and(sql`${jobs.status} = 'done' AND ${jobs.log_store} IN ('chunks', 'compacted')`, inLine('log', jobs.id, now)))
    .limit(COMPACT_SWEEP_BATCH);
  let done = 0;
  for (const { id, failed } of pending) {
    if (!m.budget.fits(COMPACT_STAGE_CALLS)) break;
    try {
      const r = await compactJobLog(m, id, caps);
      if (r === 'partial' || r === 'changed') continue;
      done++;
      if (failed) await batchByName(db, { settled: settleFailures(db, 'log', [id]) });
    } catch (err) {
      if (err instanceof BudgetSpent) break;
      await recordFailures(db, 'log', [id], err, now);
    }
  }
  return done;
}
