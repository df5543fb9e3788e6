// /console/v1/orgs/{org_id}/api-keys: the organization's API keys for the public API.
// Anyone may make their own, with a scope (src/auth/permissions.ts KEY_SCOPES) their
// role allows; a key is shown once and stored only as its SHA-256. Everyone sees and
// revokes their own keys; those who may keys.manage (owners, admins) every key. What a
// key may do is bounded by its creator's role as it is at each call (src/middleware/auth.ts).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { DEFAULT_KEY_SCOPE, KEY_SCOPES, may, PERMISSIONS, scopesFor } from '../../../auth/permissions.ts';
import { tenantLimits } from '../../../jobs/settings.ts';
import { randomToken } from '../../../lib/crypto.ts';
import { ApiError, isRefusedInsert, notFound, validationHook } from '../../../lib/errors.ts';
import { newApiKeyId } from '../../../lib/ids.ts';
import { CONSOLE_SECURITY, consoleErrors, MessageResponse, OrgParams } from '../../../lib/schemas.ts';
import { asMember, type ConsoleEnv } from '../../../middleware/console-auth.ts';
import { BODY_CAPS } from '../../../lib/limits.ts';
import { door, json } from '../../../middleware/door.ts';
import { createKey, findKey, listKeys, revokeKey, visibleKeys } from '../api-keys.ts';
import { actorOf } from '../audit.ts';
import { ApiKeyListQuery, ApiKeyParams, ApiKeyRecord, CreatedApiKey, NewApiKeyBody } from '../schemas.ts';

export const apiKeysApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

apiKeysApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgApiKeys',
    description:
      "Each key's id, prefix, scope, owner label and when it was created, last used and revoked. A member or viewer sees their own keys; owners and admins see every key of the organization. The secret itself is shown once, when a key is created.",
    path: '/orgs/{org_id}/api-keys',
    middleware: [door.console('keys.own')],
    tags: ['console api keys'],
    security: CONSOLE_SECURITY,
    summary: 'List API keys with their scopes (yours; owners and admins: all), never the keys themselves',
    request: { params: OrgParams, query: ApiKeyListQuery },
    responses: {
      200: { description: 'Keys, newest first', content: { 'application/json': { schema: z.object({ items: z.array(ApiKeyRecord) }) } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const { include_revoked } = c.req.valid('query');
    const { orgId, role } = c.get('membership');
    // All keys with keys.manage (owners, admins), else the user's own.
    const visible = visibleKeys(orgId, c.get('user').id, may(role, 'keys.manage'));
    return c.json({ items: await listKeys(c.get('db'), visible, include_revoked === 'true') }, 200);
  },
);

apiKeysApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'createOrgApiKey',
    path: '/orgs/{org_id}/api-keys',
    middleware: [door.console('keys.own', { body: json(BODY_CAPS.small) })],
    tags: ['console api keys'],
    security: CONSOLE_SECURITY,
    summary: 'Create an API key for yourself, with a scope your role allows; the key is in this response only',
    description:
      'scope: full (what your role allows, as it is at each call), prove (submit, read, verify; no management) or read (reads only); viewers make read keys only. A key never does more than its creator’s current role; it dies with their membership.',
    request: {
      params: OrgParams,
      body: { required: false, content: { 'application/json': { schema: NewApiKeyBody } } },
    },
    responses: {
      201: { description: 'Created', content: { 'application/json': { schema: CreatedApiKey } } },
      ...consoleErrors(403, 404, 409, 422),
    },
  }),
  async (c) => {
    const body = c.req.valid('json') ?? {};
    const scope = body.scope ?? DEFAULT_KEY_SCOPE;
    const { role, orgId } = c.get('membership');
    if (!scopesFor(role).includes(scope)) throw new ApiError(403, `A ${role} may create only ${scopesFor(role).join(' or ')} keys`);
    const key = randomToken('sk');
    // At most ORG_MAX_API_KEYS live keys (../api-keys.ts createKey). Each key has its own
    // rate budget, but they share the organization's (src/middleware/rate-limit.ts). Made
    // only while its creator still holds a role that may give the scope.
    const max = tenantLimits(c.env).ORG_MAX_API_KEYS;
    const made = { id: newApiKeyId(), key, owner: c.get('user').email, name: body.name ?? null, userId: c.get('user').id, scope };
    try {
      const record = await asMember(c, (org) => createKey(c.get('db'), orgId, actorOf(c, org), made, max), KEY_SCOPES[scope].least);
      return c.json({ ...record, key }, 201);
    } catch (err) {
      if (isRefusedInsert(err, 'api_keys'))
        throw new ApiError(
          409,
          `Your organization has ${max} live API keys, the most it may have: revoke one it no longer uses first (keys share the organization's rate limits anyway)`,
        );
      throw err;
    }
  },
);

apiKeysApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'revokeOrgApiKey',
    description:
      'The key stops working at once: the public API answers it 401 (saying it was revoked). The record stays, so the audit log and the key list still say whose it was.',
    path: '/orgs/{org_id}/api-keys/{key_id}',
    middleware: [door.console('keys.own')],
    tags: ['console api keys'],
    security: CONSOLE_SECURITY,
    summary: 'Revoke an API key (yours; owners and admins: any); the public API refuses it at once',
    request: { params: ApiKeyParams },
    responses: {
      200: { description: 'Revoked', content: { 'application/json': { schema: MessageResponse } } },
      ...consoleErrors(403, 404, 409),
    },
  }),
  async (c) => {
    const { key_id } = c.req.valid('param');
    const { orgId, role } = c.get('membership');
    const key = await findKey(c.get('db'), orgId, key_id);
    if (!key) throw notFound('API key');
    const own = key.user_id === c.get('user').id;
    if (!may(role, 'keys.manage') && !own) throw new ApiError(403, 'You can revoke only your own keys');
    if (key.revoked_at) throw new ApiError(409, 'This key is already revoked');
    // Another's key only while the actor may still manage keys.
    await asMember(c, (org) => revokeKey(c.get('db'), orgId, actorOf(c, org), key), own ? undefined : PERMISSIONS['keys.manage'].least);
    return c.json({ message: 'Key revoked' }, 200);
  },
);
