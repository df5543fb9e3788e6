import { and, eq, isNull } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { apiKeys } from '../db/schema.ts';
import { ApiError } from '../lib/errors.ts';
import { sha256Hex } from '../lib/crypto.ts';

export const API_KEY_HEADER = 'Service-API-Key';

/**
 * Resolves the `Service-API-Key` header to the caller's organization. Keys are
 * looked up by their SHA-256; unknown and revoked keys get the same 401.
 */
export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header(API_KEY_HEADER);
  if (!key) throw new ApiError(401, `Missing API key: send it in the ${API_KEY_HEADER} header`);
  const hash = await sha256Hex(key);
  const row = await c.var.db
    .select({ id: apiKeys.id, org_id: apiKeys.org_id, owner: apiKeys.owner })
    .from(apiKeys)
    .where(and(eq(apiKeys.key_hash, hash), isNull(apiKeys.revoked_at)))
    .get();
  if (!row) throw new ApiError(401, 'Invalid or revoked API key');
  c.set('caller', { orgId: row.org_id, owner: row.owner, keyId: row.id });
  await next();
});
