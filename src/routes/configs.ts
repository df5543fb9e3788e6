// /v1/configs: proving-system configurations (service-wide, created by operators),
// their artifacts and download URLs of their published keys.
import { artifactKey } from '../lib/artifact-keys.ts';
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../app-env.ts';
import { streamObject } from '../lib/artifacts.ts';
import { keyDownloadUrl, PROVING_KEY_KINDS, VERIFYING_KEY_KINDS, type PublishedKeyName } from '../lib/config-keys.ts';
import { ApiError, validationHook } from '../lib/errors.ts';
import { configQuery, one } from '../lib/lookups.ts';
import { asCaller } from '../middleware/auth.ts';
import type { Context } from 'hono';
import { ConfigRecord, configRecord } from '../lib/records.ts';
import { ConfigId, errorResponses } from '../lib/schemas.ts';
import { permit } from '../middleware/permit.ts';

export const configsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** A config (service-wide, but only for callers with a live key), in the request's one read. */
async function readConfig(c: Context<AppEnv>, id: string) {
  const [rows] = await asCaller(c, () => [configQuery(c.var.db, id)], ([cfg]) => cfg.length > 0);
  return one(rows, 'Config');
}

const DownloadUrlResponse = z.object({ download_url: z.string().url() }).openapi('DownloadUrl');

const ConfigParams = z.object({ config_id: ConfigId.openapi({ param: { name: 'config_id', in: 'path' } }) });


configsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{config_id}',
    middleware: [permit('records.read')],
    tags: ['configs'],
    summary: 'Get a configuration',
    request: { params: ConfigParams },
    responses: {
      200: { description: 'The configuration', content: { 'application/json': { schema: ConfigRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    return c.json(configRecord(await readConfig(c, c.req.valid('param').config_id)), 200);
  },
);

// Config artifacts, as the published client names them (axiom-api-cli v2.0.0
// crates/sdk/src/config.rs:176-254, download_artifact: GET /configs/{id}/{type}).
const ARTIFACT_NAMES = ['config', 'app_vm_commit', 'evm_verifier'] as const;

configsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{config_id}/{artifact}',
    middleware: [permit('records.read')],
    tags: ['configs'],
    summary: 'Download a config artifact: its openvm.toml (`config`), `app_vm_commit` (hex text) or the `evm_verifier` an operator published',
    request: {
      params: ConfigParams.extend({ artifact: z.enum(ARTIFACT_NAMES).openapi({ param: { name: 'artifact', in: 'path' } }) }),
    },
    responses: {
      200: {
        description: 'The artifact',
        content: { 'text/plain': { schema: z.string() }, 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } },
      },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { config_id, artifact } = c.req.valid('param');
    const config = await readConfig(c, config_id);
    switch (artifact) {
      case 'config':
        if (config.openvm_toml === null) throw new ApiError(404, `Config ${config.id} has no openvm.toml (it was created without one)`);
        return c.body(config.openvm_toml, 200, { 'content-type': 'text/plain; charset=utf-8', 'content-disposition': 'attachment; filename="openvm.toml"' }) as never;
      case 'app_vm_commit':
        return c.text(config.app_vm_commit, 200);
      case 'evm_verifier': {
        const obj = await c.env.ARTIFACTS.get(artifactKey.configKey(config.id, 'evm_verifier'));
        if (!obj) throw unpublished(config.id, 'evm_verifier');
        return streamObject(obj, 'application/octet-stream', 'evm_verifier');
      }
    }
  },
);

for (const [which, kinds] of [
  ['pk', PROVING_KEY_KINDS],
  ['vk', VERIFYING_KEY_KINDS],
] as const) {
  configsApi.openapi(
    createRoute({
      method: 'get',
      path: `/{config_id}/${which}/{kind}`,
      middleware: [permit('records.read')],
      tags: ['configs'],
      summary: `A time-limited download URL for the config's ${which === 'pk' ? 'proving' : 'verifying'} key`,
      description:
        'Keys are published by an operator (`prover-agent setup-config --publish`). The URL needs no API key, supports HTTP Range requests and expires (KEY_URL_TTL_SECONDS, default one hour).',
      request: { params: ConfigParams.extend({ kind: z.enum(kinds as unknown as [string, ...string[]]).openapi({ param: { name: 'kind', in: 'path' } }) }) },
      responses: {
        200: { description: 'Where to download the key', content: { 'application/json': { schema: DownloadUrlResponse } } },
        ...errorResponses(404, 422),
      },
    }),
    async (c) => {
      const { config_id, kind } = c.req.valid('param');
      const config = await readConfig(c, config_id);
      const name = `${kind}_${which}` as PublishedKeyName;
      if (!(await c.env.ARTIFACTS.head(artifactKey.configKey(config.id, name)))) throw unpublished(config.id, name);
      return c.json({ download_url: await keyDownloadUrl(c.env, new URL(c.req.url).origin, config.id, name) }, 200);
    },
  );
}

function unpublished(configId: string, name: PublishedKeyName) {
  return new ApiError(
    404,
    `The ${name} of config ${configId} is not published: an operator publishes it from a GPU host with \`prover-agent setup-config ${configId} --publish\``,
  );
}
