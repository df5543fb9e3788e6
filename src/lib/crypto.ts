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

/** A random secret token with a readable prefix, e.g. `sk_...`. */
export function randomToken(prefix: string, bytes = 24): string {
  const raw = new Uint8Array(bytes);
  crypto.getRandomValues(raw);
  return `${prefix}_${toHex(raw)}`;
}
