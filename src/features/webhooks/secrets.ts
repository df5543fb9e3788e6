// Webhook signing secrets: made here, shown to the caller once (at creation and at
// rotation), and stored only sealed for their endpoint's id (src/lib/sealing.ts), so a
// stored secret moved to another row does not open. After a rotation the previous
// secret signs too, for a grace period, so a receiver can switch without losing events.
import type { webhookEndpoints } from '../../db/schema.ts';
import type { Env } from '../../env.ts';
import { toBase64 } from '../../lib/crypto.ts';
import { openSecret } from '../../lib/sealing.ts';

/** After a rotation, the previous secret signs too (a second signature) for this long. */
export const PREVIOUS_SECRET_GRACE_MS = 24 * 3600_000;

/** Standard Webhooks secrets: `whsec_` + base64 of the key bytes (24 to 64 of them). */
export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 32;

/** A new signing secret. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + toBase64(crypto.getRandomValues(new Uint8Array(SECRET_BYTES)));
}

/**
 * The secrets an endpoint signs with now, or null when its current one cannot be
 * decrypted (WEBHOOK_ENCRYPTION_KEY unset or changed since it was stored): the attempt
 * then fails saying so, rather than the message failing without a trace. A previous
 * secret that cannot be decrypted only loses its second signature.
 */
export async function signingSecrets(env: Env, endpoint: typeof webhookEndpoints.$inferSelect, now: number): Promise<string[] | null> {
  const open = (stored: string) => openSecret(env.WEBHOOK_ENCRYPTION_KEY, endpoint.id, stored).catch(() => null);
  const current = await open(endpoint.secret);
  if (current === null) return null;
  const previous =
    endpoint.previous_secret && (endpoint.previous_secret_expires_at ?? 0) > now ? await open(endpoint.previous_secret) : null;
  return previous === null ? [current] : [current, previous];
}
