// Console passwords: PBKDF2-HMAC-SHA-256 through WebCrypto, 100,000 iterations (the
// most workerd allows), a 16-byte random salt per password. Why PBKDF2 rather than a
// JavaScript scrypt/argon2: docs/contributors.md "Console internals", numbers from
// `npm run bench:password`. The stored string names the algorithm and iteration count,
// so a later change of parameters can re-hash at the next sign-in.
import { toHex } from '../../lib/crypto.ts';
import { utf8Bytes } from '../../lib/bytes.ts';

export const PASSWORD_ITERATIONS = 100_000;
const SALT_BYTES = 16;
const HASH_BITS = 256;

function fromHex(hex: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

async function derive(password: string, salt: Uint8Array<ArrayBuffer>, iterations: number): Promise<Uint8Array> {
  const key = await crypto.subtle.importKey('raw', utf8Bytes(password), 'PBKDF2', false, ['deriveBits']);
  return new Uint8Array(await crypto.subtle.deriveBits({ name: 'PBKDF2', hash: 'SHA-256', salt, iterations }, key, HASH_BITS));
}

/** `pbkdf2-sha256$<iterations>$<salt hex>$<hash hex>` */
export async function hashPassword(password: string, iterations = PASSWORD_ITERATIONS): Promise<string> {
  const salt = crypto.getRandomValues(new Uint8Array(SALT_BYTES));
  return `pbkdf2-sha256$${iterations}$${toHex(salt)}$${toHex(await derive(password, salt, iterations))}`;
}

/** Whether `password` matches `stored`; a malformed or missing hash never matches. */
export async function verifyPassword(password: string, stored: string | null): Promise<boolean> {
  const parts = stored?.split('$');
  if (!parts || parts.length !== 4 || parts[0] !== 'pbkdf2-sha256') {
    // Same work as a real check, so that timing does not tell which accounts exist.
    await derive(password, new Uint8Array(SALT_BYTES), PASSWORD_ITERATIONS);
    return false;
  }
  const iterations = Number(parts[1]);
  if (!Number.isInteger(iterations) || iterations < 1 || iterations > PASSWORD_ITERATIONS) return false;
  const actual = await derive(password, fromHex(parts[2]), iterations);
  const expected = fromHex(parts[3]);
  if (actual.length !== expected.length) return false;
  let diff = 0;
  for (let i = 0; i < actual.length; i++) diff |= actual[i] ^ expected[i];
  return diff === 0;
}
