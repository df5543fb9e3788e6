// /v1/configs: proving-system configurations (service-wide, created by operators),
// their artifacts and download URLs of their published keys. A key is served as
// the config's current version recorded in D1 (src/features/configs/keys.ts), read in the
// request's one batch with the config, and always with its SHA-256.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../../app-env.ts';
import { streamObject } from '../../lib/artifacts.ts';
import { currentKeyQuery, keyDownload, PROVING_KEY_KINDS, reprDigest, VERIFYING_KEY_KINDS, type PublishedKeyName } from './keys.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { one } from '../../lib/pages.ts';
import { configQuery } from './data.ts';
import { asCaller } from '../../middleware/auth.ts';
import type { Context } from 'hono';
import { ConfigRecord, configRecord } from './schemas.ts';
import { ConfigId, errorResponses } from '../../lib/schemas.ts';
import { door } from '../../middleware/door.ts';

export const configsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** A config (service-wide, but only for callers with a live key), in the request's one read. */
async function readConfig(c: Context<AppEnv>, id: string) {
  const { config } = await asCaller(
    c,
    () => ({ config: configQuery(c.get('db'), id) }),
    ({ config }) => config.length > 0,
  );
  return one(config, 'Config');
}

/** A config and the current version of one of its keys, in the request's one read (a replica missing either asks the primary). */
async function readConfigKey(c: Context<AppEnv>, id: string, name: PublishedKeyName) {
  const { rows, key } = await asCaller(
    c,
    () => ({ rows: configQuery(c.get('db'), id), key: currentKeyQuery(c.get('db'), id, name) }),
    ({ rows, key }) => rows.length > 0 && key.length > 0,
  );
  const config = one(rows, 'Config');
  if (!key[0]) throw unpublished(config.id, name);
  return key[0];
}

const DownloadUrlResponse = z
  .object({
    download_url: z.string().url(),
    sha256: z.string().openapi({ description: 'SHA-256 (hex) of the key file the link serves' }),
    version: z.number().int().openapi({ description: 'The published version the link serves, whatever is published later' }),
    size: z.number().int(),
  })
  .openapi('DownloadUrl');

const ConfigParams = z.object({ config_id: ConfigId.openapi({ param: { name: 'config_id', in: 'path' } }) });

configsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getConfig',
    description:
      'A zkVM configuration: its openvm and stark-backend versions, its `app_vm_commit`, and whether it is active. A program is bound to one config when it is registered.',
    path: '/{config_id}',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
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
    operationId: 'downloadConfigArtifact',
    description:
      '`config` is the openvm.toml text, `app_vm_commit` bare hex text, and `evm_verifier` the verifier contract an operator published (404 until then).',
    path: '/{config_id}/{artifact}',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['configs'],
    summary:
      'Download a config artifact: its openvm.toml (`config`), `app_vm_commit` (hex text) or the `evm_verifier` an operator published',
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
    if (artifact === 'evm_verifier') {
      const key = await readConfigKey(c, config_id, 'evm_verifier');
      const obj = await c.env.ARTIFACTS.get(key.r2_key);
      if (!obj) throw unpublished(key.config_id, 'evm_verifier');
      const res = streamObject(obj, 'application/octet-stream', 'evm_verifier');
      res.headers.set('repr-digest', reprDigest(key.sha256));
      return res;
    }
    const config = await readConfig(c, config_id);
    switch (artifact) {
      case 'config':
        if (config.openvm_toml === null) throw new ApiError(404, `Config ${config.id} has no openvm.toml (it was created without one)`);
        return c.body(config.openvm_toml, 200, {
          'content-type': 'text/plain; charset=utf-8',
          'content-disposition': 'attachment; filename="openvm.toml"',
        });
      case 'app_vm_commit':
        return c.text(config.app_vm_commit, 200);
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
      operationId: which === 'pk' ? 'getProvingKeyUrl' : 'getVerifyingKeyUrl',
      path: `/{config_id}/${which}/{kind}`,
      middleware: [door.apiKey('records.read', { rate: 'reads' })],
      tags: ['configs'],
      summary: `A time-limited download URL for the config's ${which === 'pk' ? 'proving' : 'verifying'} key`,
      description:
        'Keys are published by an operator (`prover-agent setup-config --publish`). The URL needs no API key, supports HTTP Range requests, expires (KEY_URL_TTL_SECONDS, default one hour) and serves the version it was issued for, whose SHA-256 is `sha256` (and its Repr-Digest header).',
      request: { params: ConfigParams.extend({ kind: z.enum(kinds).openapi({ param: { name: 'kind', in: 'path' } }) }) },
      responses: {
        200: { description: 'Where to download the key', content: { 'application/json': { schema: DownloadUrlResponse } } },
        ...errorResponses(404, 422),
      },
    }),
    async (c) => {
      const { config_id, kind } = c.req.valid('param');
      const key = await readConfigKey(c, config_id, `${kind}_${which}` as PublishedKeyName);
      return c.json(await keyDownload(c.env, new URL(c.req.url).origin, key), 200);
    },
  );
}

function unpublished(configId: string, name: PublishedKeyName) {
  return new ApiError(
    404,
    `The ${name} of config ${configId} is not published: an operator publishes it from a GPU host with \`prover-agent setup-config ${configId} --publish\``,
  );
}
