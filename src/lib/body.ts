// Request bodies that are read whole (JSON): always against a byte cap before they
// are parsed, and under the reference service's (FastAPI's) Content-Type rules.
import { createMiddleware } from 'hono/factory';
import { ApiError, ValidationError } from './errors.ts';
import { parseJsonText } from './input.ts';
import { readBytesCapped, tooLarge } from './multipart.ts';
import { checkProofInputBytes } from './input-scan.ts';
import { utf8Text } from './bytes.ts';

/**
 * Whether FastAPI reads this body as JSON. Its request handler (fastapi/routing.py,
 * get_request_handler) parses the body as JSON when there is no Content-Type, or
 * when the type's main type is `application` and its subtype is `json` or ends in
 * `+json` (via email.message.Message, which lowercases, ignores parameters and
 * takes a malformed type for text/plain). Any other type leaves the body as raw
 * bytes, which a model then refuses with `model_attributes_type`.
 */
export function isJsonContentType(contentType: string | null | undefined): boolean {
  if (contentType === null || contentType === undefined) return true;
  const m = /^\s*([^\s/;]+)\/([^\s;]+)\s*(?:;|$)/.exec(contentType);
  if (!m) return false;
  const [main, sub] = [m[1].toLowerCase(), m[2].toLowerCase()];
  return main === 'application' && (sub === 'json' || sub.endsWith('+json'));
}

/**
 * The JSON text of a request, read against `maxBytes` (413 beyond it) and checked as
 * FastAPI checks it: an empty body is a missing body, a body under a non-JSON
 * Content-Type is not a dictionary (422 model_attributes_type), malformed JSON is
 * 422 json_invalid, and bytes that are not UTF-8 are the 400 FastAPI answers when
 * Python's json.loads cannot decode them (a UnicodeDecodeError, not a JSONDecodeError).
 */
async function readJsonText(req: Request, maxBytes: number, loc: (string | number)[]): Promise<{ text: string; value: unknown }> {
  return jsonText(req, await readBytesCapped(req, maxBytes), loc);
}

/** readJsonText() of bytes already read. */
function jsonText(req: Request, bytes: Uint8Array, loc: (string | number)[]): { text: string; value: unknown } {
  checkJsonBytes(req, bytes, loc);
  const text = utf8Text(bytes);
  return { text, value: parseJsonText(text, loc) };
}

/** A JSON body's bytes, with readJsonText's cap and checks but for the parse. */
async function readJsonBytes(req: Request, maxBytes: number, loc: (string | number)[]): Promise<Uint8Array> {
  const bytes = await readBytesCapped(req, maxBytes);
  checkJsonBytes(req, bytes, loc);
  return bytes;
}

/** The checks of readJsonText() before the parse. */
function checkJsonBytes(req: Request, bytes: Uint8Array, loc: (string | number)[]): void {
  if (bytes.length === 0) throw new ValidationError([{ loc, msg: 'Field required', type: 'missing' }]);
  if (!isJsonContentType(req.headers.get('content-type')))
    throw new ValidationError([
      { loc, msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' },
    ]);
  checkUtf8(bytes);
}

/** FastAPI's 400 for bytes json.loads cannot decode; checked in slices, never one big string. */
export function checkUtf8(bytes: Uint8Array): void {
  const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });
  const SLICE = 64 * 1024;
  try {
    for (let at = 0; at < bytes.length; at += SLICE) decoder.decode(bytes.subarray(at, at + SLICE), { stream: true });
    decoder.decode();
  } catch {
    throw new ApiError(400, 'There was an error parsing the body');
  }
}

/**
 * A proof input body (`{"input": [...]}`), read and checked in bounded memory: the
 * bytes (under `maxBytes`) are scanned, never parsed into objects, and are what is
 * stored (src/lib/input-scan.ts).
 */
export async function readProofInputBody(req: Request, maxBytes: number): Promise<Uint8Array> {
  const bytes = await readJsonBytes(req, maxBytes, ['body']);
  checkProofInputBytes(bytes);
  return bytes;
}

/** The parsed JSON body of a request (readJsonText's cap and checks). */
export async function readJsonBody(req: Request, maxBytes: number, loc: (string | number)[] = ['body']): Promise<unknown> {
  return (await readJsonText(req, maxBytes, loc)).value;
}

/** The media types Hono's json validator reads a body of (hono/validator: `application/json` and `application/*+json`). */
const VALIDATED_AS_JSON = /^application\/([\w.-]+\+)?json$/i;

/**
 * Route middleware for handlers that validate a JSON body with zod: the body is read
 * and checked once here (cap, Content-Type, empty and malformed bodies), then the
 * same text is handed on as plain JSON for the validator: through Hono's body cache when
 * the request says it is JSON (no second request is made), else as a request that says so.
 */
export const jsonBody = (maxBytes: number, { optional = false } = {}) =>
  createMiddleware(async (c, next) => {
    // Taken in by the door already (src/middleware/door.ts takeSmallJson), or read now.
    const taken = (c.req.bodyCache as { arrayBuffer?: Promise<ArrayBuffer> }).arrayBuffer;
    const bytes = taken ? new Uint8Array(await taken) : await readBytesCapped(c.req.raw, maxBytes);
    if (bytes.byteLength > maxBytes) throw tooLarge(maxBytes);
    // An optional body left out reads as `{}`.
    const text = optional && bytes.length === 0 ? '{}' : jsonText(c.req.raw, bytes, ['body']).text;
    const mediaType = (c.req.header('content-type') ?? '').split(';')[0].trim();
    if (VALIDATED_AS_JSON.test(mediaType)) (c.req.bodyCache as { text?: Promise<string> }).text = Promise.resolve(text);
    else
      c.req.raw = new Request(c.req.raw.url, {
        method: c.req.raw.method,
        headers: { ...Object.fromEntries(c.req.raw.headers), 'content-type': 'application/json' },
        body: text,
      });
    await next();
  });
