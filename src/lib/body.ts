// Request bodies that are read whole (JSON): always against a byte cap before they
// are parsed, and under the reference service's (FastAPI's) Content-Type rules.
import { createMiddleware } from 'hono/factory';
import { ValidationError } from './errors.ts';
import { parseJsonText } from './input.ts';
import { readTextCapped } from './multipart.ts';

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
  const [main, sub] = [m[1]!.toLowerCase(), m[2]!.toLowerCase()];
  return main === 'application' && (sub === 'json' || sub.endsWith('+json'));
}

/**
 * The JSON body of a request, read against `maxBytes` (413 beyond it). As FastAPI
 * answers: an empty body is a missing body, a body under a non-JSON Content-Type is
 * not a dictionary (422 model_attributes_type), malformed JSON is 422 json_invalid.
 */
export async function readJsonBody(req: Request, maxBytes: number, loc: (string | number)[] = ['body']): Promise<unknown> {
  const text = await readTextCapped(req, maxBytes);
  if (text.length === 0) throw new ValidationError([{ loc, msg: 'Field required', type: 'missing' }]);
  if (!isJsonContentType(req.headers.get('content-type')))
    throw new ValidationError([{ loc, msg: 'Input should be a valid dictionary or object to extract fields from', type: 'model_attributes_type' }]);
  return parseJsonText(text, loc);
}

/**
 * Route middleware for handlers that validate a JSON body with zod: the body is read
 * with readJsonBody (cap, Content-Type, empty and malformed bodies), then handed on
 * as plain JSON so the validator parses the bytes already read and nothing more.
 */
export const jsonBody = (maxBytes: number) =>
  createMiddleware(async (c, next) => {
    const value = await readJsonBody(c.req.raw, maxBytes);
    c.req.raw = new Request(c.req.raw.url, {
      method: c.req.raw.method,
      headers: { ...Object.fromEntries(c.req.raw.headers), 'content-type': 'application/json' },
      body: JSON.stringify(value),
    });
    await next();
  });
