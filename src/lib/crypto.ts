/** Lower-case hex of bytes. */
export function toHex(bytes: ArrayBuffer | Uint8Array): string {
  const view = bytes instanceof Uint8Array ? bytes : new Uint8Array(bytes);
  let out = '';
  for (const b of view) out += b.toString(16).padStart(2, '0');
  return out;
}

export async function sha256Hex(text: string | Uint8Array): Promise<string> {
  const data = (typeof text === 'string' ? new TextEncoder().encode(text) : text) as Uint8Array<ArrayBuffer>;
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
  if (!value || value.length < 32) throw new Error(`${name} is not set (at least 32 characters): see README "${where}"`);
  return value;
}
