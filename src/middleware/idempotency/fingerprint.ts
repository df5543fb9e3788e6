// The request fingerprint: what makes "the same request" for an Idempotency-Key,
// hashed while the body streams through to the route, never buffered.
import { StreamSearch, utf8Bytes } from '../../lib/bytes.ts';
import { sha256Hex, toHex } from '../../lib/crypto.ts';

/** Stands in for a multipart body's boundary in the fingerprint. */
const FINGERPRINT_BOUNDARY = utf8Bytes('--idempotency-fingerprint-boundary');

/**
 * A request's fingerprint, computed while its body streams to the route: SHA-256 over
 * the method, path, query (sorted), media type and body bytes. A multipart body is
 * hashed with its boundary replaced by a fixed one: clients pick a new random boundary
 * for every attempt (curl -F, fetch's FormData, reqwest), so the raw bytes of two tries
 * of one upload differ only there. The body is never held: each chunk is hashed and
 * passed on.
 */
export class RequestFingerprint {
  /** Body bytes hashed so far (after boundary normalization). */
  bytes = 0;
  /** Whether the body was read to its end (a fingerprint of a part of it means nothing). */
  complete = false;
  private readonly target: string;
  private readonly mediaType: string;
  private readonly digest = new crypto.DigestStream('SHA-256');
  private readonly writer = this.digest.getWriter();
  /** The boundary's search (linear in the body, whatever the boundary: a KMP matcher). */
  private readonly delimiter: StreamSearch | null;
  private stream: ReadableStream<Uint8Array> | null = null;

  constructor(req: Request) {
    const url = new URL(req.url);
    const query = [...url.searchParams].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
    this.target = `${req.method} ${url.pathname}?${new URLSearchParams(query).toString()}`;
    const contentType = req.headers.get('content-type') ?? '';
    this.mediaType = contentType.split(';')[0].trim().toLowerCase();
    const boundary = /^multipart\//i.test(this.mediaType) ? /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType) : null;
    this.delimiter = boundary ? new StreamSearch(utf8Bytes(`--${boundary[1] ?? boundary[2]}`)) : null;
  }

  /** The request with its body passing through the hash (the route reads it as before). */
  wrap(req: Request): Request {
    if (!req.body) {
      this.finish();
      return req;
    }
    const reader = req.body.getReader();
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const { done, value } = await reader.read();
          if (done) {
            this.finish();
            controller.close();
          } else {
            this.write(value);
            controller.enqueue(value);
          }
        },
        cancel: (reason) => reader.cancel(reason),
      },
      // Pull-driven: a chunk is read from the client only when the route asks for one.
      { highWaterMark: 0 },
    );
    return new Request(req, { body: this.stream, duplex: 'half' } as RequestInit);
  }

  /**
   * Reads what the route left of the body, hashing it, as long as it stays within
   * `maxBytes` (counted over the whole body); false when it is longer, or when the
   * body cannot be read (a route still holds it).
   */
  async readRest(maxBytes: number): Promise<boolean> {
    if (this.complete) return this.bytes <= maxBytes;
    if (!this.stream || this.stream.locked) return false;
    const reader = this.stream.getReader();
    try {
      while (!this.complete) {
        if (this.bytes > maxBytes) {
          await reader.cancel().catch(() => {});
          return false;
        }
        await reader.read();
      }
    } catch {
      return false;
    } finally {
      reader.releaseLock();
    }
    return this.bytes <= maxBytes;
  }

  /** The fingerprint, once the body was read whole. */
  async value(): Promise<string> {
    if (!this.complete) throw new Error('fingerprint of a body not read to its end');
    await this.writer.close().catch(() => {});
    const body = toHex(await this.digest.digest);
    return sha256Hex(`${this.target}\n${this.mediaType}\n${body}`);
  }

  private write(chunk: Uint8Array) {
    if (!this.delimiter) return this.hash(chunk);
    this.delimiter.write(
      chunk,
      (bytes) => this.hash(bytes),
      () => this.hash(FINGERPRINT_BOUNDARY),
    );
  }

  private finish() {
    if (this.complete) return;
    this.delimiter?.end((bytes) => this.hash(bytes));
    this.complete = true;
  }

  private hash(bytes: Uint8Array) {
    if (bytes.length === 0) return;
    this.bytes += bytes.length;
    // Copied: the route may hold (and its sinks reuse) the chunk it was handed.
    void this.writer.write(bytes.slice()).catch(() => {});
  }
}
