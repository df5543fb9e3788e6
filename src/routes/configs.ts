// /v1/configs: proving-system configurations (service-wide, created by operators).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { eq } from 'drizzle-orm';
import type { AppEnv } from '../app-env.ts';
import { configs } from '../db/schema.ts';
import { artifactKey, streamObject } from '../lib/artifacts.ts';
import { notFound, validationHook } from '../lib/errors.ts';
import { ConfigRecord, configRecord } from '../lib/records.ts';
import { ConfigId, errorResponses } from '../lib/schemas.ts';

export const configsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

const ConfigParams = z.object({ config_id: ConfigId.openapi({ param: { name: 'config_id', in: 'path' } }) });

export async function findConfig(c: { var: AppEnv['Variables'] }, id: string) {
  return c.var.db.select().from(configs).where(eq(configs.id, id)).get();
}

configsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{config_id}',
    tags: ['configs'],
    summary: 'Get a configuration',
    request: { params: ConfigParams },
    responses: {
      200: { description: 'The configuration', content: { 'application/json': { schema: ConfigRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const row = await findConfig(c, c.req.valid('param').config_id);
    if (!row) throw notFound('Config');
    return c.json(configRecord(row), 200);
  },
);

configsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{config_id}/{artifact}',
    tags: ['configs'],
    summary: 'Download a config artifact (e.g. openvm.toml, a verifying key) published by the operator',
    request: {
      params: ConfigParams.extend({
        artifact: z
          .string()
          .regex(/^[A-Za-z0-9._-]{1,128}$/, 'artifact names are letters, digits, dot, dash and underscore')
          .openapi({ param: { name: 'artifact', in: 'path' }, example: 'openvm.toml' }),
      }),
    },
    responses: {
      200: { description: 'The artifact bytes', content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { config_id, artifact } = c.req.valid('param');
    if (!(await findConfig(c, config_id))) throw notFound('Config');
    const obj = await c.env.ARTIFACTS.get(artifactKey.configArtifact(config_id, artifact));
    if (!obj) throw notFound(`Artifact '${artifact}' of this config`);
    return streamObject(obj, obj.httpMetadata?.contentType ?? 'application/octet-stream', artifact);
  },
);
