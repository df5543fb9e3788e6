// Texts sealed at rest: AES-256-GCM under a key derived from the Worker secret
// WEBHOOK_ENCRYPTION_KEY (docs/operators.md "Configuration"), bound to a context (associated data)
// so a sealed text moved to another row does not open. Webhook signing secrets are
// sealed for their endpoint's id (src/features/webhooks/secrets.ts), and an idempotent
// answer that shows one is sealed for its key (src/middleware/idempotency.ts): a copy
// of the D1 database alone does not let anyone sign as this service.
import { toBase64 } from './crypto.ts';
import { ApiError } from './errors.ts';
import { utf8Bytes, utf8Text } from './bytes.ts';

/** Stored form: v1.<base64 iv>.<base64 ciphertext and tag>. */
const FORMAT = 'v1';
/** How a sealed text begins (a JSON text never does). */
export const SEALED_PREFIX = `${FORMAT}.`;
const MIN_KEY_CHARS = 32;

const unb64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));

const keys = new Map<string, Promise<CryptoKey>>();

/** The AES key, derived once per isolate from the Worker secret with HKDF-SHA-256. */
function encryptionKey(secret: string | undefined): Promise<CryptoKey> {
  if (!secret || secret.length < MIN_KEY_CHARS)
    throw new ApiError(
      503,
      `Webhooks are not configured on this deployment: WEBHOOK_ENCRYPTION_KEY must be set to at least ${MIN_KEY_CHARS} random characters`,
    );
  // The HKDF info names webhook secrets, their first use: every stored text was sealed under it.
  let key = keys.get(secret);
  if (!key) {
    key = crypto.subtle
      .importKey('raw', utf8Bytes(secret), 'HKDF', false, ['deriveKey'])
      .then((material) =>
        crypto.subtle.deriveKey(
          { name: 'HKDF', hash: 'SHA-256', salt: new Uint8Array(0), info: utf8Bytes('zk-proving webhook secrets v1') },
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

/** `secret` encrypted for `endpointId` (the context it opens under: an endpoint's id, an idempotency key's), as stored. */
export async function sealSecret(encryptionSecret: string | undefined, endpointId: string, secret: string): Promise<string> {
  const key = await encryptionKey(encryptionSecret);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const sealed = await crypto.subtle.encrypt({ name: 'AES-GCM', iv, additionalData: utf8Bytes(endpointId) }, key, utf8Bytes(secret));
  return `${FORMAT}.${toBase64(iv)}.${toBase64(new Uint8Array(sealed))}`;
}

/** The text sealSecret() stored for `endpointId`; throws if it was not sealed for it under this key. */
export async function openSecret(encryptionSecret: string | undefined, endpointId: string, stored: string): Promise<string> {
  const [format, iv, sealed] = stored.split('.');
  if (format !== FORMAT || !iv || !sealed) throw new Error(`webhook secret of ${endpointId} is not in the ${FORMAT} format`);
  const key = await encryptionKey(encryptionSecret);
  const plain = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: unb64(iv), additionalData: utf8Bytes(endpointId) }, key, unb64(sealed));
  return utf8Text(plain);
}
