// Webhook signing secrets: made here, shown to the caller once (at creation and at
// rotation), and stored only encrypted, with AES-256-GCM under a key derived from the
// Worker secret WEBHOOK_ENCRYPTION_KEY (README "Configuration"). A copy of the D1
// database alone does not let anyone sign as this service. The endpoint's id is the
// ciphertext's associated data, so a stored secret moved to another row does not decrypt.
import { toBase64 } from './crypto.ts';
import { ApiError } from './errors.ts';

/** After a rotation, the previous secret signs too (a second signature) for this long. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600_000;

/** Standard Webhooks secrets: `whsec_` + base64 of the key bytes (24 to 64 of them). */
export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;
/** Stored form: v1.<base64 iv>.<base64 ciphertext and tag>. */
const FORMAT = 'v1';
/** How a sealed text begins (a JSON text never does). */
export const SEALED_PREFIX = `${FORMAT}.`;
const MIN_KEY_CHARS = 32;

const unb64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

/** A new signing secret. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

const keys = new Map<string, Promise<CryptoKey>>();

/** The AES key, derived once per isolate from the Worker secret with HKDF-SHA-256. */
function encryptionKey(secret: string | undefined): Promise<CryptoKey> {
  if (!secret || secret.length < MIN_KEY_CHARS)
    throw new ApiError(503, `Webhooks are not configured on this deployment: WEBHOOK_ENCRYPTION_KEY must be set to at least ${MIN_KEY_CHARS} random characters`);
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle
      .importKey('raw', new TextEncoder().encode(secret), 'HKDF', false, ['deriveKey'])
      .then((material) =>
        crypto.subtle.deriveKey(
          { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: new TextEncoder().encode('zk-proving webhook secrets v1') },
          material,
          { name: 'AES-GCM', length: 256 },
          false,
          ['encrypt', 'decrypt'],
        ),
      );
    keys.set(secret, key);
  }
  return key;
}

/** `secret` encrypted for endpoint `endpointId`, as stored. */
export async function sealSecret(encryptionSecret: string | undefined, endpointId: string, secret: string): Promise<string> {
  const key = await encryptionKey(encryptionSecret);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: new TextEncoder().encode(endpointId) }, key, new TextEncoder().encode(secret));
  return `${FORMAT}.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

/** The secret sealSecret() stored for `endpointId`; throws if it was not sealed for it under this key. */
export async function openSecret(encryptionSecret: string | undefined, endpointId: string, stored: string): Promise<string> {
  const [format, iv, sealed] = stored.split('.');
  if (format !== FORMAT || !iv || !sealed) throw new Error(`webhook secret of ${endpointId} is not in the ${FORMAT} format`);
  const key = await encryptionKey(encryptionSecret);
  const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: unb64(iv), additionalData: new TextEncoder().encode(endpointId) }, key, unb64(sealed));
  return new TextDecoder().decode(plain);
}
