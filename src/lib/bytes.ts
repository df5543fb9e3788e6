// Byte-array helpers for the readers that scan request bodies as they stream (the
// multipart reader, the idempotency fingerprint): Uint8Array has neither. Every scan
// here is linear in the bytes scanned, whatever the needle (issue 21).

/**
 * UTF-8 both ways, with one encoder and one decoder for the isolate: a whole input is
 * encoded or decoded with no state kept between calls, and making either is a native
 * object each time (a registration made three decoders, its parts' headers and its
 * fields). A decoder that streams (`{ stream: true }`) keeps state: it needs its own.
 */
const encoder = new TextEncoder();
const decoder = new TextDecoder();
// workers-types say encode() answers a view of any buffer; it is always a new ArrayBuffer (the
// Encoding standard), which is what crypto.subtle asks for.
export const utf8Bytes = (text: string): Uint8Array<ArrayBuffer> => encoder.encode(text) as Uint8Array<ArrayBuffer>;
/** Malformed sequences become U+FFFD, as a default TextDecoder's do. */
export const utf8Text = (bytes: ArrayBuffer | ArrayBufferView): string => decoder.decode(bytes);

/** `a` followed by `b` (`b` itself when `a` is empty: no copy). */
export function concatBytes(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.length === 0) return b;
  const out = new Uint8Array(a.length + b.length);
  out.set(a, 0);
  out.set(b, a.length);
  return out;
}

/** Where `needle` first occurs in `hay` at or after `from`, or -1. */
export function indexOfBytes(hay: Uint8Array, needle: Uint8Array, from: number): number {
  const first = needle[0];
  const last = hay.length - needle.length;
  for (let i = hay.indexOf(first, from); i !== -1 && i <= last; i = hay.indexOf(first, i + 1)) {
    let j = 1;
    while (j < needle.length && hay[i + j] === needle[j]) j++;
    if (j === needle.length) return i;
  }
  return -1;
}

/**
 * Finds a multipart body's delimiter (CRLF, "--", its boundary) in its chunks, stepping
 * over most bytes unread: Horspool's table says how far the window may move from its
 * last byte. indexOfBytes stops at each CR instead, one call into the runtime per CR: a
 * 1 MiB ELF holds ~4,000 of them, about 0.6 ms of a registration's CPU, against ~0.1 ms
 * here (`npm run bench:api`). Linear in the bytes scanned, whatever the body: a window is
 * compared only when it starts with the needle's first byte, which the needle holds
 * nowhere else (a boundary holds no CR), so a compare ends by the next such byte of the
 * body, and no two compares overlap. At worst (a body of the bytes that end the needle)
 * the window moves one byte at a time.
 */
export class DelimiterSearch {
  private readonly needle: Uint8Array;
  /** How far the window moves when its last byte is `b`: from b's last place in the needle (its own end left out) to that end. */
  private readonly skip = new Uint32Array(256);

  constructor(needle: Uint8Array) {
    if (needle.length === 0 || needle.indexOf(needle[0], 1) !== -1)
      throw new Error('DelimiterSearch: the needle must hold its first byte once, and nowhere else');
    this.needle = needle;
    const m = needle.length;
    this.skip.fill(m);
    for (let i = 0; i < m - 1; i++) this.skip[needle[i]] = m - 1 - i;
  }

  /** Where the needle first occurs in `hay` at or after `from`, or -1. */
  indexIn(hay: Uint8Array, from = 0): number {
    const { needle, skip } = this;
    const m = needle.length;
    const first = needle[0];
    for (let end = from + m - 1; end < hay.length; end += skip[hay[end]]) {
      const start = end - m + 1;
      if (hay[start] !== first) continue;
      let j = 1;
      while (j < m && hay[start + j] === needle[j]) j++;
      if (j === m) return start;
    }
    return -1;
  }
}

/**
 * Finds every occurrence of `needle` in a stream of chunks (non-overlapping, left to
 * right) in time linear in the stream, whatever the needle: Knuth-Morris-Pratt, so a
 * 4,000-byte needle over a body of the same byte costs one step per byte, not 4,000
 * (a naive search rescans each partial match). The bytes of a partial match that may
 * straddle chunks are never copied: they are the needle's own prefix.
 */
export class StreamSearch {
  private readonly needle: Uint8Array;
  /** fail[i]: length of the longest proper border of needle[0..i]. */
  private readonly fail: Uint32Array;
  /** Bytes of the needle matched by the stream's last bytes. */
  private matched = 0;

  constructor(needle: Uint8Array) {
    if (needle.length === 0) throw new Error('StreamSearch: empty needle');
    this.needle = needle;
    this.fail = new Uint32Array(needle.length);
    for (let i = 1, k = 0; i < needle.length; i++) {
      while (k > 0 && needle[i] !== needle[k]) k = this.fail[k - 1]!;
      if (needle[i] === needle[k]) k++;
      this.fail[i] = k;
    }
  }

  /**
   * Feeds a chunk: `data` gets the stream's bytes that are not part of a match (in
   * order, in slices of the chunk or of the needle), `match` is called at each match.
   * The bytes of a possible match still open at the chunk's end are held back (as the
   * count `matched`) until the next chunk or end() tells.
   */
  write(chunk: Uint8Array, data: (bytes: Uint8Array) => void, match: () => void): void {
    const needle = this.needle;
    const m = needle.length;
    // Stream positions relative to this chunk: the held-back bytes are [-held, 0).
    const held = this.matched;
    let emitted = -held;
    const emit = (to: number) => {
      if (to <= emitted) return;
      if (emitted < 0) {
        const end = Math.min(to, 0);
        data(needle.subarray(emitted + held, end + held));
        emitted = end;
      }
      if (to > emitted) data(chunk.subarray(emitted, to));
      emitted = to;
    };
    let q = this.matched;
    for (let i = 0; i < chunk.length; i++) {
      if (q === 0) {
        // Outside a partial match, skip natively to the next candidate start.
        const next = chunk.indexOf(needle[0], i);
        if (next < 0) break;
        i = next;
      }
      const b = chunk[i];
      while (q > 0 && needle[q] !== b) q = this.fail[q - 1]!;
      if (needle[q] === b) q++;
      if (q === m) {
        emit(i + 1 - m);
        match();
        emitted = i + 1;
        q = 0;
      }
    }
    emit(chunk.length - q);
    this.matched = q;
  }

  /** The stream ended: the bytes of an unfinished match were data after all. */
  end(data: (bytes: Uint8Array) => void): void {
    if (this.matched > 0) data(this.needle.subarray(0, this.matched));
    this.matched = 0;
  }
}
