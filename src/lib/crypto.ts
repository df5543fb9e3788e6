import { utf8Bytes } from './bytes.ts';

/** The two hex digits of each byte value, and their ASCII codes (the lookup tables of toHex and hexAscii). */
const HEX_PAIRS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, '0'));
const HEX_DIGITS = utf8Bytes('0123456789abcdef');
/** Bytes per slice of toHex: each slice is one join of short strings, never a long chain of concatenations. */
const HEX_SLICE = 16 * 1024;

/**
 * Lower-case hex of bytes: a table lookup per byte, joined per slice (a string built by
 * `+=` a byte at a time is a chain of millions of pieces, hundreds of MB for a 16 MiB
 * child proof). For large bytes that go on to storage, hexAscii() makes no string at all.
 */
export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  const slices: string[] = [];
  const pairs: string[] = new Array(Math.min(HEX_SLICE, view.length));
  for (let at = 0; at < view.length; at += HEX_SLICE) {
    const n = Math.min(HEX_SLICE, view.length - at);
    pairs.length = n;
    for (let i = 0; i < n; i++) pairs[i] = HEX_PAIRS[view[at + i]]!;
    slices.push(pairs.join(''));
  }
  return slices.join('');
}

/** Lower-case hex of bytes as ASCII bytes (twice as many), for bodies streamed to storage. */
export function hexAscii(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length * 2);
  for (let i = 0, o = 0; i < bytes.length; i++, o += 2) {
    const b = bytes[i];
    out[o] = HEX_DIGITS[b >> 4]!;
    out[o + 1] = HEX_DIGITS[b & 15]!;
  }
  return out;
}

export async function sha256Hex(text: string | Uint8Array): Promise<string> {
  const data = (typeof text === 'string' ? utf8Bytes(text) : text) as Uint8Array<ArrayBuffer>;
  return toHex(await crypto.subtle.digest('SHA-256', data));
}

/** Standard base64 of bytes, in slices (a spread of a large array would overflow the call stack). */
export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary);
}

/** A random secret token with a readable prefix, e.g. `sk_...`. */
export function randomToken(prefix: string, bytes = 24): string {
  const raw = new Uint8Array(bytes);
  crypto.getRandomValues(raw);
  return `${prefix}_${toHex(raw)}`;
}

/**
 * A signing key from the Worker's secrets, refused when it is missing or shorter than 32
 * characters: better no token at all than tokens anyone could forge.
 */
export function signingSecret(value: string | undefined, name: string, where: string): string {
  if (!value || value.length < 32) throw new Error(`${name} is not set (at least 32 characters): see ${where}`);
  return value;
}

/** HMAC-SHA-256 of `message` under `secret`, as lower-case hex. */
export async function hmacSha256Hex(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey('raw', utf8Bytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toHex(await crypto.subtle.sign('HMAC', key, utf8Bytes(message)));
}
