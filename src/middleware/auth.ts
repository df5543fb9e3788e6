import { and, eq, isNull, lt, or } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../app-env.ts';
import { apiKeys } from '../db/schema.ts';
import { ApiError } from '../lib/errors.ts';
import { sha256Hex } from '../lib/crypto.ts';

export const API_KEY_HEADER = 'Service-API-Key';
const LAST_USED_RESOLUTION_MS = 60_000;

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
  // "Last used" for the console, written at most once a minute per key and after the response.
  const now = new Date();
  const touch = c.var.db
    .update(apiKeys)
    .set({ last_used_at: now.toISOString() })
    .where(and(eq(apiKeys.id, row.id), or(isNull(apiKeys.last_used_at), lt(apiKeys.last_used_at, new Date(now.getTime() - LAST_USED_RESOLUTION_MS).toISOString()))))
    .run();
  try {
    c.executionCtx.waitUntil(touch);
  } catch {
    await touch; // no execution context (tests calling app.fetch directly)
  }
  await next();
});
