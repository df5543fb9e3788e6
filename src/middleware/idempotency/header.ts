// The `Idempotency-Key` header (IETF draft-ietf-httpapi-idempotency-key-header): its
// name, the replay header's, and its syntax.
import { ApiError } from '../../lib/errors.ts';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** Longest key accepted (the header's value, unquoted). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/**
 * The key an `Idempotency-Key` header names, or 400 saying what is wrong with it. The
 * draft makes the value a Structured Field string (`"..."`); the bare form most
 * clients send (Stripe's) is accepted too and names the same key, and a value that
 * starts with a quote is read as the quoted form. Keys are 1-255 printable ASCII
 * characters.
 */
export function parseIdempotencyKey(header: string): string {
  let key = header.trim();
  if (key.startsWith('"')) {
    if (key.length < 2 || !key.endsWith('"')) throw malformed('a quoted key must end with a quote');
    key = unquote(key.slice(1, -1));
  }
  if (key.length === 0) throw malformed('it is empty');
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) throw malformed(`it is longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  if (!/^[\x20-\x7e]+$/.test(key)) throw malformed('only printable ASCII characters (space to ~) are allowed');
  return key;
}

/** The content of a Structured Field string (RFC 8941 3.3.3): backslash-quote and backslash-backslash are its only escapes; a bare quote cannot occur. */
function unquote(inner: string): string {
  let out = '';
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i];
    if (ch === '"') throw malformed('a quoted key may hold " only escaped as \\"');
    if (ch === '\\') {
      const next = inner[++i];
      if (next !== '"' && next !== '\\') throw malformed('a quoted key may escape only " and \\');
      out += next;
    } else out += ch;
  }
  return out;
}

const malformed = (why: string) =>
  new ApiError(
    400,
    `Malformed ${IDEMPOTENCY_KEY_HEADER} header: ${why}. Send 1-${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters, such as a UUID.`,
  );
