// A streaming multipart/form-data parser. Each part's bytes are handed to a sink as
// they arrive, so a 100 MB upload flows to R2 without ever being held whole in the
// Worker's 128 MB of memory. (`Request.formData()` buffers the whole body, and the
// multipart libraries we looked at buffer each part, which is the same problem for a
// single large VMEXE part.)
import { ApiError, ValidationError, type ValidationIssue } from './errors.ts';
import { concatBytes, DelimiterSearch, indexOfBytes, utf8Bytes, utf8Text } from './bytes.ts';
import { MAX_FILENAME_LENGTH, ONE_READ_BYTES, UNSAFE_NAME_CHARACTER } from './limits.ts';

export interface PartInfo {
  /** The form field name from Content-Disposition. */
  name: string;
  /** Present for file parts. */
  filename?: string;
  contentType?: string;
}

export interface PartSink {
  write(chunk: Uint8Array): void | Promise<void>;
  end(): void | Promise<void>;
}

export interface MultipartLimits {
  /** Whole body, in bytes; beyond it the upload is refused with 413. */
  maxBytes: number;
  maxParts?: number;
  maxHeaderBytes?: number;
}

const CRLF = new Uint8Array([13, 10]);
const HEADER_END = new Uint8Array([13, 10, 13, 10]);

/** The boundary of a multipart/form-data Content-Type, or null if it is not one. */
export function multipartBoundary(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/form-data\b/i.test(contentType)) return null;
  const m = /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  return m ? (m[1] ?? m[2] ?? null) : null;
}

export function tooLarge(maxBytes: number) {
  return new ApiError(413, `Request body too large: the limit is ${maxBytes} bytes`);
}

/**
 * Reads a multipart body, calling `onPart` for each part and streaming its content
 * into the returned sink. Throws ApiError 400 for a malformed body and 413 past
 * `limits.maxBytes`. Sinks already opened are the caller's to clean up on error.
 */
export async function parseMultipart(
  body: ReadableStream<Uint8Array>,
  boundary: string,
  limits: MultipartLimits,
  onPart: (info: PartInfo) => PartSink | Promise<PartSink>,
): Promise<void> {
  // A boundary holds no CR or LF (RFC 2046 5.1.1: its characters are bchars); a header
  // value holds neither anyway. Which is what the delimiter's search needs.
  if (/[\r\n]/.test(boundary)) throw new ApiError(400, 'Malformed multipart body: the boundary holds a line break');
  // Every boundary after the first is preceded by CRLF; prefixing the body with CRLF
  // makes the first one look the same.
  const delimiter = utf8Bytes(`\r\n--${boundary}`);
  const delimiterSearch = new DelimiterSearch(delimiter);
  const maxHeaderBytes = limits.maxHeaderBytes ?? 16 * 1024;
  const maxParts = limits.maxParts ?? 64;
  let buf: Uint8Array = CRLF;
  let state = 'preamble' as 'preamble' | 'after-boundary' | 'headers' | 'body' | 'done';
  let sink: PartSink | null = null;
  let parts = 0;
  let total = 0;

  const malformed = (why: string) => new ApiError(400, `Malformed multipart body: ${why}`);

  const step = async (final: boolean): Promise<boolean> => {
    switch (state) {
      case 'preamble': {
        const i = delimiterSearch.indexIn(buf);
        if (i < 0) {
          buf = buf.subarray(Math.max(0, buf.length - delimiter.length + 1));
          return false;
        }
        buf = buf.subarray(i + delimiter.length);
        state = 'after-boundary';
        return true;
      }
      case 'after-boundary': {
        // "--" closes the body; otherwise optional whitespace then CRLF starts a part.
        let j = 0;
        if (buf.length < 2) return false;
        if (buf[0] === 45 && buf[1] === 45) {
          state = 'done';
          return false;
        }
        while (j < buf.length && (buf[j] === 32 || buf[j] === 9)) j++;
        if (buf.length < j + 2) return false;
        if (buf[j] !== 13 || buf[j + 1] !== 10) throw malformed('expected CRLF after a boundary');
        buf = buf.subarray(j + 2);
        state = 'headers';
        return true;
      }
      case 'headers': {
        // Every check here looks only at bytes already seen and decides the same way
        // however the body was split: a part with no headers is refused as soon as its
        // first two bytes are known, and the header-size limit is judged on the
        // header block's length (or on a buffer already too long to end in time).
        if (buf.length < 2) return false;
        if (buf[0] === 13 && buf[1] === 10) throw malformed('part without Content-Disposition');
        const i = indexOfBytes(buf, HEADER_END, 0);
        // Without the end marker in `buf`, it can start no earlier than 3 bytes from the end.
        if ((i < 0 ? buf.length - 3 : i) > maxHeaderBytes) throw malformed('part headers too long');
        if (i < 0) return false;
        const info = parsePartHeaders(utf8Text(buf.subarray(0, i)));
        if (!info) throw malformed('part without a form-data Content-Disposition name');
        if (++parts > maxParts) throw new ApiError(413, `Too many multipart parts: the limit is ${maxParts}`);
        buf = buf.subarray(i + HEADER_END.length);
        sink = await onPart(info);
        state = 'body';
        return true;
      }
      case 'body': {
        const i = delimiterSearch.indexIn(buf);
        if (i >= 0) {
          // Views, not copies: `buf` is never written to, so a sink may keep what it is handed.
          if (i > 0) await sink!.write(buf.subarray(0, i));
          await sink!.end();
          sink = null;
          buf = buf.subarray(i + delimiter.length);
          state = 'after-boundary';
          return true;
        }
        // Keep only a tail that may start the next delimiter: usually none, so the next
        // chunk is parsed where it lies, never copied onto a tail.
        const keep = final ? 0 : delimiterStart(buf, delimiter);
        if (buf.length > keep) {
          await sink!.write(buf.subarray(0, buf.length - keep));
          buf = buf.subarray(buf.length - keep);
        }
        return false;
      }
      case 'done':
        return false;
    }
  };

  for await (const value of bodyChunks(body)) {
    // Bytes up to the limit are parsed before a 413, so a malformed body within the
    // limit gets the same 400 whether it arrived in one chunk or byte by byte.
    const room = limits.maxBytes - total;
    total += value.byteLength;
    if (state !== 'done') {
      buf = concatBytes(buf, total > limits.maxBytes ? value.subarray(0, Math.max(0, room)) : value);
      while (await step(false));
    }
    if (total > limits.maxBytes) throw tooLarge(limits.maxBytes);
  }
  if (state !== 'done') throw malformed('the body ended before the closing boundary');
}

/** The buffer bodyChunks() hands a byte stream at each read. */
const BODY_READ_BYTES = 128 * 1024;

/**
 * A body's bytes in chunks as large as what has arrived (up to BODY_READ_BYTES) when
 * the body is a byte stream, as a request's is in workerd; as the stream hands them
 * otherwise. Why: a request body's default reader hands it in chunks of about 4 KiB (a
 * 1 MiB upload in ~260 of them), and each read is a promise and a hop into the
 * runtime, as is each step of the parser and each sink write behind it; a read into
 * our own buffer takes everything that has arrived at once (`npm run bench:api`). It
 * never waits for more than has arrived: a form's parts are handled as they come
 * (a proof's input is stored before the rest of its form is sent). Each chunk is a
 * fresh buffer, never reused: a sink may keep what it is handed.
 */
export async function* bodyChunks(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  let byob: ReadableStreamBYOBReader | null = null;
  try {
    byob = body.getReader({ mode: 'byob' });
  } catch {
    // Not a byte stream (a stream a test or a TransformStream made): read it as it comes.
  }
  if (!byob) {
    const reader = body.getReader();
    try {
      for (let r = await reader.read(); !r.done; r = await reader.read()) yield r.value;
    } finally {
      reader.releaseLock();
    }
    return;
  }
  try {
    for (;;) {
      const { done, value } = await byob.read(new Uint8Array(BODY_READ_BYTES));
      if (value && value.byteLength > 0) yield value;
      if (done) return;
    }
  } finally {
    byob.releaseLock();
  }
}

/** The length of the longest end of `buf` that begins `delimiter` (shorter than it), 0 for none. */
function delimiterStart(buf: Uint8Array, delimiter: Uint8Array): number {
  for (let p = buf.indexOf(delimiter[0], Math.max(0, buf.length - delimiter.length + 1)); p !== -1; p = buf.indexOf(delimiter[0], p + 1)) {
    let j = 1;
    while (p + j < buf.length && buf[p + j] === delimiter[j]) j++;
    if (p + j === buf.length) return buf.length - p;
  }
  return 0;
}

function parsePartHeaders(text: string): PartInfo | null {
  let disposition = '';
  let contentType: string | undefined;
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon < 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-disposition') disposition = value;
    else if (name === 'content-type') contentType = value;
  }
  if (!/^form-data\b/i.test(disposition)) return null;
  const params = dispositionParams(disposition);
  if (params.name === undefined) return null;
  const filename = params['filename*'] ?? params.filename;
  return { name: params.name, filename: filename === undefined ? undefined : cleanFilename(filename), contentType };
}

const UNSAFE_NAME_CHARACTERS = new RegExp(UNSAFE_NAME_CHARACTER.source, 'gu');

/**
 * A filename as a name may use it (a program's default name is its ELF's): what a
 * stored name may not hold (UNSAFE_NAME_CHARACTER: control characters, which would
 * otherwise split log lines and headers, and bidirectional formatting characters, which
 * make a name read as another) removed, and cut to MAX_FILENAME_LENGTH characters (code
 * points, never half a pair).
 */
export function cleanFilename(filename: string): string {
  const clean = filename.replace(UNSAFE_NAME_CHARACTERS, '');
  if (clean.length <= MAX_FILENAME_LENGTH) return clean;
  return Array.from(clean).slice(0, MAX_FILENAME_LENGTH).join('');
}

/** Parameters of a Content-Disposition value, quoted strings unescaped, RFC 5987 `filename*` decoded. */
function dispositionParams(value: string): Record<string, string> {
  const out: Record<string, string> = {};
  const re = /;\s*([^=;\s]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^;]*))/g;
  for (let m = re.exec(value); m; m = re.exec(value)) {
    const key = m[1].toLowerCase();
    let v = m[2] !== undefined ? m[2].replace(/\\(.)/g, '$1') : (m[3] ?? '').trim();
    if (key.endsWith('*')) {
      const ext = /^[^']*'[^']*'(.*)$/.exec(v);
      try {
        v = decodeURIComponent(ext ? ext[1] : v);
      } catch {
        /* keep the raw value */
      }
    }
    out[key] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------
// Forms: what the routes that take multipart bodies read through.

/** How a route takes the parts of one name (parts no rule names are read past). */
export interface PartRule<S extends PartSink = PartSink> {
  /** Where a part's bytes go; `index` counts the parts of this name from 0. */
  sink(part: PartInfo, index: number): S | Promise<S>;
  /** Without one, the form is refused: 422 `missing` at ["body", name]. */
  required?: boolean;
  /**
   * Most parts of this name. One more is refused: a single part (1) at once, 400; a
   * list, with 422 `too_long` once the body is read (parts past it are read past).
   * Unset: every one is kept.
   */
  max?: number;
  /** Only a text field counts: a file part of this name is read past. */
  fieldOnly?: boolean;
}

export type PartRules = Record<string, PartRule<any>>;

/** The sinks a form filled, by rule name, in the order their parts came. */
export type FormParts<R extends PartRules> = { [K in keyof R]: Awaited<ReturnType<R[K]['sink']>>[] };

/** The caps a form is read under (its route's door declares them): the whole body, and each named part. */
export interface FormLimits {
  maxBytes: number;
  /** Bytes of one part of each name listed; past it, 413. */
  parts?: Record<string, number>;
}

/**
 * A request's multipart/form-data body, to read by rules. Null when the request is
 * not multipart (no boundary, or no body); its declared length is checked first either
 * way: past `maxBytes`, 413 before a byte is read.
 */
export function multipartForm(req: Request, limits: FormLimits): MultipartForm | null {
  if (Number(req.headers.get('content-length') ?? NaN) > limits.maxBytes) throw tooLarge(limits.maxBytes);
  const boundary = multipartBoundary(req.headers.get('content-type') ?? undefined);
  return boundary && req.body ? new MultipartForm(req.body, boundary, limits) : null;
}

/** `sink`, refusing (413) the `index`th part of `name` (from 0) past `cap` bytes. */
function cappedPart(sink: PartSink, name: string, index: number, cap: number): PartSink {
  let size = 0;
  return {
    write(chunk) {
      size += chunk.byteLength;
      if (size > cap) throw new ApiError(413, `Part ${index + 1} named "${name}" is too large: the limit is ${cap} bytes`);
      return sink.write(chunk);
    },
    end: () => sink.end(),
  };
}

export class MultipartForm {
  constructor(
    private readonly body: ReadableStream<Uint8Array>,
    private readonly boundary: string,
    private readonly limits: FormLimits,
  ) {}

  /** Reads the body whole, each part into its rule's sink; then refuses a form short of its rules (422). */
  async read<R extends PartRules>(rules: R, maxParts?: number): Promise<FormParts<R>> {
    const got: Record<string, PartSink[]> = Object.fromEntries(Object.keys(rules).map((name) => [name, []]));
    const over = new Set<string>();
    const caps = this.limits.parts ?? {};
    await parseMultipart(this.body, this.boundary, { maxBytes: this.limits.maxBytes, maxParts }, async (part) => {
      const rule = Object.hasOwn(rules, part.name) ? rules[part.name] : undefined;
      if (!rule || (rule.fieldOnly && part.filename !== undefined)) return DISCARD;
      const sinks = got[part.name];
      if (rule.max !== undefined && sinks.length >= rule.max) {
        if (rule.max === 1) throw new ApiError(400, `More than one "${part.name}" part`);
        over.add(part.name);
        return DISCARD;
      }
      const index = sinks.length;
      const sink = await rule.sink(part, index);
      sinks.push(sink);
      return Object.hasOwn(caps, part.name) ? cappedPart(sink, part.name, index, caps[part.name]) : sink;
    });
    const tooLong = [...over].map((name): ValidationIssue => ({
      loc: ['body', name],
      msg: `List should have at most ${rules[name].max} items`,
      type: 'too_long',
    }));
    if (tooLong.length) throw new ValidationError(tooLong);
    const missing = Object.entries(rules)
      .filter(([name, rule]) => rule.required && got[name].length === 0)
      .map(([name]): ValidationIssue => ({ loc: ['body', name], msg: 'Field required', type: 'missing' }));
    if (missing.length) throw new ValidationError(missing);
    return got as FormParts<R>;
  }
}

/** A sink for parts a route has no use for: read past and dropped. */
export const DISCARD: PartSink = { write() {}, end() {} };

/** A sink that collects a small part (a text field, a proof JSON) in memory, up to a cap. */
export class MemorySink implements PartSink {
  private chunks: Uint8Array[] = [];
  size = 0;
  private readonly cap: number;
  private readonly onOverflow: () => Error;
  constructor(cap: number, onOverflow: () => Error) {
    this.cap = cap;
    this.onOverflow = onOverflow;
  }
  write(chunk: Uint8Array) {
    this.size += chunk.byteLength;
    if (this.size > this.cap) throw this.onOverflow();
    this.chunks.push(chunk);
  }
  end() {}
  bytes(): Uint8Array {
    const out = new Uint8Array(this.size);
    let o = 0;
    for (const c of this.chunks) {
      out.set(c, o);
      o += c.byteLength;
    }
    return out;
  }
  text(): string {
    return utf8Text(this.bytes());
  }
  /** bytes(), letting go of the chunks: the part is held once, not twice. */
  take(): Uint8Array {
    const out = this.bytes();
    this.chunks = [];
    return out;
  }
}

/** Reads a small body whole, refusing (413) past `cap` even without a Content-Length. */
export async function readBytesCapped(req: Request, cap: number): Promise<Uint8Array> {
  if (!req.body) return new Uint8Array(0);
  const declared = Number(req.headers.get('content-length') ?? NaN);
  if (declared > cap) throw tooLarge(cap);
  // A small body of a declared length (the framing ends it there) in one native read.
  if (declared <= ONE_READ_BYTES) {
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (bytes.byteLength > cap) throw tooLarge(cap);
    return bytes;
  }
  const sink = new MemorySink(cap, () => tooLarge(cap));
  for await (const chunk of bodyChunks(req.body)) sink.write(chunk);
  return sink.bytes();
}

/** readBytesCapped, as UTF-8 text (malformed sequences replaced). */
export async function readTextCapped(req: Request, cap: number): Promise<string> {
  return utf8Text(await readBytesCapped(req, cap));
}
