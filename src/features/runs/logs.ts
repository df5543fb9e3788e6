// The public logs routes' HTTP side (GET /v1/proofs/{id}/logs, /v1/executions/{id}/logs):
// one page of a job's log as a plain-text answer, and its OpenAPI. Reading the log
// (its index, its R2 chunks) is src/jobs/logs.ts.
import { z } from '@hono/zod-openapi';
import { isCompacted, LOG_PAGE_BYTES, LOG_PAGE_CHUNKS, readLogPage, type LogIndexRow, type LogStore } from '../../jobs/logs.ts';
import { queryInt } from '../../lib/schemas.ts';

/**
 * One page of a job's logs as a plain-text response (empty for a job that has none yet,
 * or no job): `X-Log-Next-Offset` says where the next page starts, and while the log has
 * more, `Link: <…?offset=N>; rel="next"` names it. 416 for an offset past the log's end.
 */
export async function logPageResponse(
  bucket: R2Bucket,
  url: string,
  job: { id: string; log_bytes: number; log_truncated: boolean; log_store: LogStore } | undefined,
  rows: LogIndexRow[],
  offset: number,
): Promise<Response> {
  const total = job?.log_bytes ?? 0;
  if (offset > total)
    return Response.json(
      { detail: `Offset ${offset} is past the end of this log (${total} bytes)` },
      { status: 416, headers: { 'Content-Range': `bytes */${total}` } },
    );
  // A compacted log is whole from `offset` in one R2 read: the published client, which
  // reads once without `offset` (see the route's doc), gets all of it.
  const maxBytes = isCompacted(job?.log_store) ? total : LOG_PAGE_BYTES;
  const { bytes, next } = await readLogPage(bucket, job?.id, rows, offset, maxBytes, total, job?.log_store);
  const headers: Record<string, string> = {
    'content-type': 'text/plain; charset=utf-8',
    'X-Log-Next-Offset': String(next),
    'X-Log-Length': String(total),
  };
  if (job?.log_truncated) headers['X-Log-Truncated'] = 'true';
  if (next < total) {
    const u = new URL(url);
    u.searchParams.set('offset', String(next));
    headers.Link = `<${u.pathname}${u.search}>; rel="next"`;
  }
  return new Response(bytes, { headers });
}

export const LogPageQuerySchema = z.object({
  offset: queryInt(0, undefined, 0, 'Byte offset to read from (X-Log-Next-Offset of the page before)'),
});

/** The description and responses of a record's logs route. */
export function logRouteDoc(record: string) {
  return {
    description: [
      `Plain text: the ${record}'s log from byte \`offset\` (default 0), one page of at most ${LOG_PAGE_CHUNKS} chunks and ${LOG_PAGE_BYTES / (1024 * 1024)} MiB (whole chunks; a larger first chunk alone) while the log can grow; once the job has finished and its log is compacted, all of the log from \`offset\` in one answer.`,
      'X-Log-Next-Offset is where the next page starts and X-Log-Length the log\'s length now; while the log has more, `Link: <…?offset=N>; rel="next"` names the next page.',
      "A log holds at most LOG_MAX_BYTES bytes and LOG_MAX_CHUNKS chunks; one that reached its cap ends with a `[service …] log truncated` line and says X-Log-Truncated: true. Lines starting `[service` are the service's own: a host's text never contains `[service`.",
    ].join('\n\n'),
    responses: {
      200: {
        description: 'Log text',
        headers: {
          'X-Log-Next-Offset': { schema: { type: 'integer' as const } },
          'X-Log-Length': { schema: { type: 'integer' as const } },
          'X-Log-Truncated': { schema: { type: 'string' as const } },
          Link: { schema: { type: 'string' as const } },
        },
        content: { 'text/plain': { schema: z.string() } },
      },
      416: {
        description: 'The offset is past the end of the log',
        content: { 'application/json': { schema: z.object({ detail: z.string() }) } },
      },
    },
  };
}
