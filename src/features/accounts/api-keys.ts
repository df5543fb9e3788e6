// An organization's API keys for the public API, as the console manages them: made for
// oneself with a scope (src/auth/permissions.ts KEY_SCOPES), shown once and stored only as
// its SHA-256, revoked by their owner or by those who may keys.manage. What a key may do
// at each call is src/middleware/auth.ts's business.
import { and, desc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { z } from '@hono/zod-openapi';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { apiKeys, type KeyScope } from '../../db/schema.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { revoke } from '../../lib/revoke.ts';
import { auditEntry, type Actor } from './audit.ts';
import type { ApiKeyRecord } from './schemas.ts';

/** Characters of a key shown to tell it apart: `sk_` and 8 hex digits. */
export const KEY_PREFIX_LENGTH = 11;

/** Most keys one list answers. */
const LIST_LIMIT = 500;

type KeyRow = typeof apiKeys.$inferSelect;

export const keyRecord = (k: KeyRow): z.infer<typeof ApiKeyRecord> => ({
  id: k.id,
  name: k.name,
  owner: k.owner,
  prefix: k.prefix,
  owner_user_id: k.user_id,
  scope: k.scope,
  created_at: k.created_at,
  last_used_at: k.last_used_at,
  revoked_at: k.revoked_at,
});

/** The keys of an organization one user may see: all of them (`all`, with keys.manage), else their own. */
export function visibleKeys(orgId: string, userId: string, all: boolean): SQL | undefined {
  const org = eq(apiKeys.org_id, orgId);
  return all ? org : and(org, eq(apiKeys.user_id, userId));
}

/** The keys `visible` picks, newest first, revoked ones too when asked. */
export async function listKeys(db: Db, visible: SQL | undefined, includeRevoked: boolean) {
  const rows = await db
    .select()
    .from(apiKeys)
    .where(and(visible, includeRevoked ? undefined : isNull(apiKeys.revoked_at)))
    .orderBy(desc(apiKeys.created_at), desc(apiKeys.id))
    .limit(LIST_LIMIT);
  return rows.map(keyRecord);
}

/**
 * A new key, with its audit entry, in one batch; at most `max` live keys: the insert
 * itself is refused (its org_id null, the whole batch with it: isRefusedInsert) when the
 * organization has as many, so concurrent creates cannot pass the cap, and when its
 * creator no longer stands as checked (the actor's standing: removed, demoted below the
 * scope, signed out), so a key is never made for someone who has left. Answers its record.
 */
export async function createKey(
  db: Db,
  orgId: string,
  actor: Actor,
  key: { id: string; key: string; owner: string; name: string | null; userId: string; scope: KeyScope },
  max: number,
): Promise<z.infer<typeof ApiKeyRecord>> {
  const room = sql`(SELECT count(*) FROM ${apiKeys} WHERE ${apiKeys.org_id} = ${orgId} AND ${apiKeys.revoked_at} IS NULL) < ${max}`;
  const prefix = key.key.slice(0, KEY_PREFIX_LENGTH);
  await batchByName(db, {
    key: db.insert(apiKeys).values({
      id: key.id,
      org_id: sql`CASE WHEN ${room} THEN ${actor.standing ?? orgId} END`,
      key_hash: await sha256Hex(key.key),
      owner: key.owner,
      name: key.name,
      prefix,
      user_id: key.userId,
      scope: key.scope,
    }),
    audit: auditEntry(db, orgId, actor, 'api_key.create', key.id, { prefix, name: key.name, scope: key.scope }),
  });
  return keyRecord((await db.select().from(apiKeys).where(eq(apiKeys.id, key.id)).get())!);
}

/** A key of the organization, or undefined. */
export const findKey = (db: Db, orgId: string, keyId: string) =>
  db
    .select()
    .from(apiKeys)
    .where(and(eq(apiKeys.id, keyId), eq(apiKeys.org_id, orgId)))
    .get();

/** Revokes a key and records it, in one batch (none of it once the actor no longer stands). */
export async function revokeKey(db: Db, orgId: string, actor: Actor, key: KeyRow): Promise<void> {
  await batchByName(db, {
    audit: auditEntry(db, orgId, actor, 'api_key.revoke', key.id, { prefix: key.prefix, name: key.name, owner: key.owner }),
    key: revoke(db, apiKeys, eq(apiKeys.id, key.id), new Date().toISOString()),
  });
}
