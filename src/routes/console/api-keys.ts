// /console/v1/orgs/{org_id}/api-keys: the organization's API keys for the public API.
// Anyone may make their own, with a scope (src/auth/permissions.ts KEY_SCOPES) their
// role allows; a key is shown once and stored only as its SHA-256. Everyone sees and
// revokes their own keys; those who may keys.manage (owners, admins) every key. What a
// key may do is bounded by its creator's role as it is at each call (src/middleware/auth.ts).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, desc, eq, isNull, sql, type SQL } from 'drizzle-orm';
import type { Context } from 'hono';
import { apiKeys } from '../../db/schema.ts';
import { auditEntry } from '../../lib/audit.ts';
import { ApiKeyRecord, CreatedApiKey } from '../../lib/console-records.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams } from '../../lib/console-schemas.ts';
import { randomToken, sha256Hex } from '../../lib/crypto.ts';
import { ApiError, isRefusedInsert, notFound, validationHook } from '../../lib/errors.ts';
import { tenantLimits } from '../../jobs/settings.ts';
import { newApiKeyId } from '../../lib/ids.ts';
import { MAX_API_KEY_NAME_LENGTH } from '../../lib/limits.ts';
import { revoke } from '../../lib/revoke.ts';
import { MessageResponse } from '../../lib/schemas.ts';
import { DEFAULT_KEY_SCOPE, KEY_SCOPE_NAMES, may, scopesFor } from '../../auth/permissions.ts';
import { actorOf, type ConsoleEnv } from '../../middleware/console-auth.ts';
import { permit } from '../../middleware/permit.ts';

export const apiKeysApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

/** Characters of a key shown to tell it apart: `sk_` and 8 hex digits. */
export const KEY_PREFIX_LENGTH = 11;

type KeyRow = typeof apiKeys.$inferSelect;
const keyRecord = (k: KeyRow): z.infer<typeof ApiKeyRecord> => ({
  id: k.id,
  name: k.owner,
  prefix: k.prefix,
  owner_user_id: k.user_id,
  scope: k.scope,
  created_at: k.created_at,
  last_used_at: k.last_used_at,
  revoked_at: k.revoked_at,
});

/** The keys this user may see: all with keys.manage (owners, admins), else their own. */
function visibleKeys(c: Context<ConsoleEnv>): SQL {
  const org = eq(apiKeys.org_id, c.var.membership.orgId);
  return may(c.var.membership.role, 'keys.manage') ? org : and(org, eq(apiKeys.user_id, c.var.user.id))!;
}

apiKeysApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs/{org_id}/api-keys',
    middleware: [permit('keys.own')],
    tags: ['console api keys'],
    security: CONSOLE_SECURITY,
    summary: 'List API keys with their scopes (yours; owners and admins: all), never the keys themselves',
    request: { params: OrgParams, query: z.object({ include_revoked: z.enum(['true', 'false']).default('false') }) },
    responses: { 200: { description: 'Keys, newest first', content: { 'application/json': { schema: z.object({ items: z.array(ApiKeyRecord) }) } } }, ...consoleErrors(404, 422) },
  }),
  async (c) => {
    const { include_revoked } = c.req.valid('query');
    const rows = await c.var.db
      .select()
      .from(apiKeys)
      .where(and(visibleKeys(c), include_revoked === 'true' ? undefined : isNull(apiKeys.revoked_at)))
      .orderBy(desc(apiKeys.created_at), desc(apiKeys.id))
      .limit(500);
    return c.json({ items: rows.map(keyRecord) }, 200);
  },
);

apiKeysApi.openapi(
  createRoute({
    method: 'post',
    path: '/orgs/{org_id}/api-keys',
    middleware: [permit('keys.own')],
    tags: ['console api keys'],
    security: CONSOLE_SECURITY,
    summary: 'Create an API key for yourself, with a scope your role allows; the key is in this response only',
    description:
      'scope: full (what your role allows, as it is at each call), prove (submit, read, verify; no management) or read (reads only); viewers make read keys only. A key never does more than its creator’s current role; it dies with their membership.',
    request: {
      params: OrgParams,
      body: {
        required: false,
        content: {
          'application/json': {
            schema: z.object({ name: z.string().trim().min(1).max(MAX_API_KEY_NAME_LENGTH).optional(), scope: z.enum(KEY_SCOPE_NAMES).default(DEFAULT_KEY_SCOPE) }),
          },
        },
      },
    },
    responses: {
      201: { description: 'Created', content: { 'application/json': { schema: CreatedApiKey } } },
      ...consoleErrors(403, 404, 409, 422),
    },
  }),
  async (c) => {
    const body = c.req.valid('json') ?? {};
    const scope = body.scope ?? DEFAULT_KEY_SCOPE;
    const { role } = c.var.membership;
    if (!scopesFor(role).includes(scope)) throw new ApiError(403, `A ${role} may create only ${scopesFor(role).join(' or ')} keys`);
    const db = c.var.db;
    const orgId = c.var.membership.orgId;
    const key = randomToken('sk');
    const id = newApiKeyId();
    const owner = body.name ? `${c.var.user.email} (${body.name})` : c.var.user.email;
    // At most ORG_MAX_API_KEYS live keys: the insert itself is refused (its org_id null,
    // the whole batch with it) when the organization has as many, so concurrent creates
    // cannot pass the cap. Each key has its own rate budget, but they share the
    // organization's (src/middleware/rate-limit.ts).
    const max = tenantLimits(c.env).ORG_MAX_API_KEYS;
    const room = sql`(SELECT count(*) FROM ${apiKeys} WHERE ${apiKeys.org_id} = ${orgId} AND ${apiKeys.revoked_at} IS NULL) < ${max}`;
    try {
      await db.batch([
        db.insert(apiKeys).values({
          id,
          org_id: sql`CASE WHEN ${room} THEN ${orgId} END`,
          key_hash: await sha256Hex(key),
          owner,
          prefix: key.slice(0, KEY_PREFIX_LENGTH),
          user_id: c.var.user.id,
          scope,
        }),
        auditEntry(db, orgId, actorOf(c), 'api_key.create', id, { prefix: key.slice(0, KEY_PREFIX_LENGTH), name: owner, scope }),
      ]);
    } catch (err) {
      if (isRefusedInsert(err, 'api_keys'))
        throw new ApiError(409, `Your organization has ${max} live API keys, the most it may have: revoke one it no longer uses first (keys share the organization's rate limits anyway)`);
      throw err;
    }
    const row = (await db.select().from(apiKeys).where(eq(apiKeys.id, id)).get())!;
    return c.json({ ...keyRecord(row), key }, 201);
  },
);

apiKeysApi.openapi(
  createRoute({
    method: 'delete',
    path: '/orgs/{org_id}/api-keys/{key_id}',
    middleware: [permit('keys.own')],
    tags: ['console api keys'],
    security: CONSOLE_SECURITY,
    summary: 'Revoke an API key (yours; owners and admins: any); the public API refuses it at once',
    request: { params: OrgParams.extend({ key_id: z.string().min(1).max(64).openapi({ param: { name: 'key_id', in: 'path' } }) }) },
    responses: { 200: { description: 'Revoked', content: { 'application/json': { schema: MessageResponse } } }, ...consoleErrors(403, 404, 409) },
  }),
  async (c) => {
    const { key_id } = c.req.valid('param');
    const db = c.var.db;
    const orgId = c.var.membership.orgId;
    const key = await db.select().from(apiKeys).where(and(eq(apiKeys.id, key_id), eq(apiKeys.org_id, orgId))).get();
    if (!key) throw notFound('API key');
    if (!may(c.var.membership.role, 'keys.manage') && key.user_id !== c.var.user.id) throw new ApiError(403, 'You can revoke only your own keys');
    if (key.revoked_at) throw new ApiError(409, 'This key is already revoked');
    await db.batch([
      revoke(db, apiKeys, eq(apiKeys.id, key_id), new Date().toISOString()),
      auditEntry(db, orgId, actorOf(c), 'api_key.revoke', key_id, { prefix: key.prefix, name: key.owner }),
    ]);
    return c.json({ message: 'Key revoked' }, 200);
  },
);
