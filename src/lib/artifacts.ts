// R2 artifact keys and streaming writes. Every object a request writes is tracked
// by an ArtifactBatch so that a failed request deletes what it wrote.
import type { PartSink } from './multipart.ts';

export { artifactKey } from './artifact-keys.ts';

/**
 * R2 multipart parts must all have the same size (but the last) and be at least
 * 5 MiB; 8 MiB keeps at most ~8 MiB of an upload in memory at once.
 */
export const R2_PART_SIZE = 8 * 1024 * 1024;

/** Objects written by one request; `rollback()` deletes them all. */
export class ArtifactBatch {
  private readonly keys: string[] = [];
  private readonly uploads: R2MultipartUpload[] = [];
  readonly bucket: R2Bucket;
  constructor(bucket: R2Bucket) {
    this.bucket = bucket;
  }

  async put(key: string, value: string | Uint8Array, contentType = 'application/json'): Promise<void> {
    this.keys.push(key);
    await this.bucket.put(key, value, { httpMetadata: { contentType } });
  }

  /** A sink streaming a part into `key`: one PUT when small, an R2 multipart upload when large. */
  stream(key: string, contentType = 'application/octet-stream'): R2StreamSink {
    this.keys.push(key);
    return new R2StreamSink(this.bucket, key, contentType, (u) => this.uploads.push(u));
  }

  async rollback(): Promise<void> {
    await Promise.allSettled([...this.uploads.map((u) => u.abort()), this.keys.length ? this.bucket.delete(this.keys) : Promise.resolve()]);
  }
}

export class R2StreamSink implements PartSink {
  size = 0;
  private pending: Uint8Array[] = [];
  private pendingSize = 0;
  private upload: R2MultipartUpload | null = null;
  private readonly parts: R2UploadedPart[] = [];
  private readonly bucket: R2Bucket;
  private readonly key: string;
  private readonly contentType: string;
  private readonly track: (u: R2MultipartUpload) => void;

  constructor(bucket: R2Bucket, key: string, contentType: string, track: (u: R2MultipartUpload) => void) {
    this.bucket = bucket;
    this.key = key;
    this.contentType = contentType;
    this.track = track;
  }

  async write(chunk: Uint8Array): Promise<void> {
    this.size += chunk.byteLength;
    this.pending.push(chunk);
    this.pendingSize += chunk.byteLength;
    while (this.pendingSize >= R2_PART_SIZE) await this.flushPart(R2_PART_SIZE);
  }

  async end(): Promise<void> {
    if (!this.upload) {
      await this.bucket.put(this.key, this.take(this.pendingSize), { httpMetadata: { contentType: this.contentType } });
      return;
    }
    if (this.pendingSize > 0) await this.flushPart(this.pendingSize);
    await this.upload.complete(this.parts);
  }

  private async flushPart(size: number): Promise<void> {
    if (!this.upload) {
      this.upload = await this.bucket.createMultipartUpload(this.key, { httpMetadata: { contentType: this.contentType } });
      this.track(this.upload);
    }
    this.parts.push(await this.upload.uploadPart(this.parts.length + 1, this.take(size)));
  }

  /** Removes exactly `size` bytes from the front of the pending chunks. */
  private take(size: number): Uint8Array {
    const out = new Uint8Array(size);
    let o = 0;
    while (o < size) {
      const head = this.pending[0];
      const n = Math.min(head.byteLength, size - o);
      out.set(head.subarray(0, n), o);
      o += n;
      if (n === head.byteLength) this.pending.shift();
      else this.pending[0] = head.subarray(n);
    }
    this.pendingSize -= size;
    return out;
  }
}

/** Streams an R2 object as a response body; the route's declared content type documents it. */
export function streamObject(obj: R2ObjectBody, contentType: string, filename?: string): Response {
  const headers: Record<string, string> = { 'content-type': contentType, 'content-length': String(obj.size) };
  if (filename) headers['content-disposition'] = `attachment; filename="${filename}"`;
  return new Response(obj.body, { headers });
}

/**
 * One byte range of a `Range` header (RFC 9110 14.1.2: `bytes=a-b`, `bytes=a-`,
 * `bytes=-n`), as an R2 range and the span it asks for; null for a header that is not
 * one such range, which a download ignores (RFC 9110 14.2: the whole object, 200).
 */
export function parseByteRange(
  header: string | undefined,
): { r2: R2Range; start: number | null; end: number | null; suffix: number | null } | null {
  const m = /^\s*bytes\s*=\s*(\d{0,15})\s*-\s*(\d{0,15})\s*$/i.exec(header ?? '');
  if (!m || (m[1] === '' && m[2] === '')) return null;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    return { r2: { suffix }, start: null, end: null, suffix };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? null : Number(m[2]);
  if (end !== null && end < start) return null;
  return { r2: end === null ? { offset: start } : { offset: start, length: end - start + 1 }, start, end, suffix: null };
}

/**
 * The inclusive span of `size` bytes a parsed range serves, or null when none of it
 * exists (a start at or past the end, a zero-length suffix): that is 416 Range Not
 * Satisfiable, its Content-Range naming only the size, never the whole object as a 206.
 */
export function satisfiedRange(range: NonNullable<ReturnType<typeof parseByteRange>>, size: number): { start: number; end: number } | null {
  if (range.suffix !== null) return range.suffix === 0 || size === 0 ? null : { start: Math.max(0, size - range.suffix), end: size - 1 };
  if (range.start! >= size) return null;
  return { start: range.start!, end: Math.min(size - 1, range.end ?? size - 1) };
}

/** The 416 of an unsatisfiable range (RFC 9110 15.5.17). */
export const rangeNotSatisfiable = (size: number) => new Response(null, { status: 416, headers: { 'content-range': `bytes */${size}` } });
