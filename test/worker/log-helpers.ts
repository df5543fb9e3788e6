// Long job logs for the tests of what reading a log costs (tenant-limits, log-compaction):
// written straight to R2 and the chunk index, past the test caps, as a long proof's log
// would be under the real ones.
import { env } from 'cloudflare:test';
import { vi } from 'vitest';
import { artifactKey } from '../../src/lib/artifact-keys.ts';
import { recordD1Calls } from './d1-calls.ts';
import { api, seedTenant, type Tenant } from './helpers.ts';
import { readyProgram, submitProof } from './run-helpers.ts';

/**
 * Gives the job a log of `n` chunks, chunk i being `line(i)` (10 bytes each: the index
 * says so), and `finished` ends the job; answers the whole log's text.
 */
export async function writeLongLog(jobId: string, n: number, line: (i: number) => string, finished = false): Promise<string> {
  for (let i = 0; i < n; i += 100)
    await Promise.all(
      Array.from({ length: Math.min(100, n - i) }, (_, k) => env.ARTIFACTS.put(artifactKey.jobLogChunk(jobId, i + k), line(i + k))),
    );
  await env.DB.batch([
    env.DB.prepare(
      `WITH RECURSIVE s(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM s WHERE n < ? - 1) INSERT INTO job_log_chunks (job_id, seq, "offset", bytes, source) SELECT ?, n, n * 10, 10, 'host' FROM s`,
    ).bind(n, jobId),
    env.DB.prepare(`UPDATE jobs SET log_seq = ?, log_bytes = ?, status = CASE WHEN ? THEN 'done' ELSE status END WHERE id = ?`).bind(
      n,
      n * 10,
      finished ? 1 : 0,
      jobId,
    ),
  ]);
  return Array.from({ length: n }, (_, i) => line(i)).join('');
}

/** One GET of a logs route, with the D1 round trips and the R2 reads and listings it made. */
export async function countedLogRead(t: Tenant, path: string) {
  const gets = vi.spyOn(env.ARTIFACTS, 'get');
  const lists = vi.spyOn(env.ARTIFACTS, 'list');
  const d1 = recordD1Calls();
  try {
    const res = await api(t, path);
    const text = await res.text();
    const counts = { d1: d1.calls.filter((c) => c.via !== 'binding').length, gets: gets.mock.calls.length, lists: lists.mock.calls.length };
    return { res, text, counts };
  } finally {
    d1.stop();
    gets.mockRestore();
    lists.mockRestore();
  }
}

/** A proof of a fresh tenant's ready program, queued: its job's log is empty. */
export async function queuedProof() {
  const t = await seedTenant();
  const proofId = await submitProof(t, await readyProgram(t));
  const job = (await env.DB.prepare('SELECT id FROM jobs WHERE subject_id = ?').bind(proofId).first<{ id: string }>())!;
  return { t, proofId, jobId: job.id };
}
