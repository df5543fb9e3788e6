// Job logs live in R2 as ordered chunks `logs/{job_id}/{seq}`; reading them is
// listing the prefix and streaming the chunks in sequence order.
import { artifactKey } from '../lib/artifacts.ts';

/** All chunks of a job's logs as one text stream (empty when there are none). */
export async function jobLogStream(bucket: R2Bucket, jobId: string | undefined): Promise<ReadableStream<Uint8Array>> {
  const keys: string[] = [];
  if (jobId) {
    const prefix = artifactKey.jobLogPrefix(jobId);
    let cursor: string | undefined;
    do {
      const page = await bucket.list({ prefix, cursor });
      for (const o of page.objects) keys.push(o.key);
      cursor = page.truncated ? page.cursor : undefined;
    } while (cursor);
    keys.sort(); // zero-padded sequence numbers sort in order
  }
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
