// Job logs live in R2 as ordered chunks `logs/{job_id}/{seq}`. The job row keeps the
// next sequence number and the log's byte length, so an agent's chunk is accepted
// exactly once, in order: a retried chunk (seq already taken) changes nothing, and a
// chunk that skips ahead is refused. A job's attempts all write to the same log: a
// claim hands the agent the sequence and offset to continue from.
import { eq, sql, and } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { jobs } from '../db/schema.ts';
import { artifactKey } from '../lib/artifacts.ts';
import type { LogChunk } from 'prover-agent/protocol';

export type AppendResult = { kind: 'appended' | 'duplicate' } | { kind: 'out-of-order'; expectedSeq: number; expectedOffset: number };

type LogPosition = { seq: number; bytes: number };

/**
 * Appends one chunk at (seq, offset) if it is the next one; idempotent for a repeat.
 * `current` is the job's log position when the caller has just read it (a lease
 * callback has), saving a read; the update is conditional on it either way.
 */
export async function appendLogChunk(db: Db, bucket: R2Bucket, jobId: string, chunk: LogChunk, current?: LogPosition): Promise<AppendResult> {
  const job = current ?? (await db.select({ seq: jobs.log_seq, bytes: jobs.log_bytes }).from(jobs).where(eq(jobs.id, jobId)).get());
  if (!job) throw new Error(`job ${jobId} not found`);
  const staged = await stageLogChunk(db, bucket, jobId, chunk, job);
  if (!staged.statement) return staged.result;
  const moved = await staged.statement;
  return { kind: moved.length ? 'appended' : 'duplicate' };
}

/**
 * appendLogChunk() in two halves, for a caller that runs the row update in a batch of
 * its own (a lease's last chunk goes with the call that ends it): the chunk's object
 * is written now, and the statement that moves the job's log position is returned,
 * unrun (null when there is nothing to append). The object goes first: if the update
 * then loses a race, the winner wrote the same key.
 */
export async function stageLogChunk(db: Db, bucket: R2Bucket, jobId: string, chunk: LogChunk, job: LogPosition) {
  if (chunk.seq < job.seq) return { result: { kind: 'duplicate' } as AppendResult, statement: null };
  if (chunk.seq > job.seq || chunk.offset !== job.bytes) return { result: { kind: 'out-of-order', expectedSeq: job.seq, expectedOffset: job.bytes } as AppendResult, statement: null };
  const bytes = new TextEncoder().encode(chunk.text);
  await bucket.put(artifactKey.jobLogChunk(jobId, chunk.seq), bytes, { httpMetadata: { contentType: 'text/plain; charset=utf-8' } });
  const statement = db
    .update(jobs)
    .set({ log_seq: chunk.seq + 1, log_bytes: sql`${jobs.log_bytes} + ${bytes.byteLength}` })
    .where(and(eq(jobs.id, jobId), eq(jobs.log_seq, chunk.seq)))
    .returning({ id: jobs.id });
  return { result: { kind: 'appended' } as AppendResult, statement };
}

/** Appends a line written by the service itself (e.g. why a job still waits), while no agent holds the job. */
export async function appendServiceLog(db: Db, bucket: R2Bucket, jobId: string, line: string): Promise<void> {
  const text = `[service ${new Date().toISOString()}] ${line}\n`;
  for (let tries = 0; tries < 3; tries++) {
    const job = await db.select({ seq: jobs.log_seq, bytes: jobs.log_bytes }).from(jobs).where(eq(jobs.id, jobId)).get();
    if (!job) return;
    const r = await appendLogChunk(db, bucket, jobId, { seq: job.seq, offset: job.bytes, text });
    if (r.kind === 'appended') return;
  }
}

/** The chunk objects of a job's log, in order, with their sizes. */
async function logChunks(bucket: R2Bucket, jobId: string | undefined): Promise<{ key: string; size: number }[]> {
  const chunks: { key: string; size: number }[] = [];
  if (jobId) {
    const prefix = artifactKey.jobLogPrefix(jobId);
    let cursor: string | undefined;
    do {
      const page = await bucket.list({ prefix, cursor });
      for (const o of page.objects) chunks.push({ key: o.key, size: o.size });
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
    chunks.sort((a, b) => (a.key < b.key ? -1 : 1)); // zero-padded sequence numbers sort in order
  }
  return chunks;
}

/** All chunks of a job's logs as one text stream (empty when there are none). */
export async function jobLogStream(bucket: R2Bucket, jobId: string | undefined): Promise<ReadableStream<Uint8Array>> {
  const keys = (await logChunks(bucket, jobId)).map((c) => c.key);
  let i = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      while (i < keys.length) {
        const obj = await bucket.get(keys[i++]!);
        if (obj) {
          controller.enqueue(new Uint8Array(await obj.arrayBuffer()));
          return;
        }
      }
      controller.close();
    },
  });
}

/**
 * At most `maxBytes` of a job's log from byte `offset` (whole chunks, so UTF-8 is never
 * cut), and the offset to ask from next: how a reader follows a running job's log.
 */
export async function jobLogFrom(bucket: R2Bucket, jobId: string | undefined, offset: number, maxBytes: number): Promise<{ text: string; next: number }> {
  const parts: Uint8Array[] = [];
  let at = 0;
  let taken = 0;
  for (const chunk of await logChunks(bucket, jobId)) {
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
  const all = new Uint8Array(taken);
  let pos = 0;
  for (const p of parts) (all.set(p, pos), (pos += p.byteLength));
  return { text: new TextDecoder().decode(all), next: Math.max(offset, 0) + taken };
}

/** A job's logs as a plain-text response (empty for a job that has none yet, or no job). */
export async function logResponse(bucket: R2Bucket, jobId: string | undefined): Promise<Response> {
  return new Response(await jobLogStream(bucket, jobId), { headers: { 'content-type': 'text/plain; charset=utf-8' } });
}
