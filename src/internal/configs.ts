// /internal/v1/configs: what an operator's GPU host needs of a config, and where it
// publishes the keys it made (`prover-agent setup-config`). Agent tokens only.
// The upload protocol is described in the fleet protocol (`prover-agent/protocol`, PUBLISHED_KEY_NAMES).
import { artifactKey } from '../lib/artifact-keys.ts';
import { zValidator } from '@hono/zod-validator';
import { Hono } from 'hono';
import { z } from 'zod';
import { eq } from 'drizzle-orm';
import type { FleetConfig, KeyUploadPart, KeyUploadStarted, PublishKeyResponse } from 'prover-agent/protocol';
import { configs } from '../db/schema.ts';
import { PUBLISHED_KEY_NAMES } from '../lib/config-keys.ts';
import { ApiError, notFound, validationHook } from '../lib/errors.ts';
import { jsonBody } from '../lib/body.ts';
import { MAX_INTERNAL_JSON_BYTES } from '../lib/limits.ts';
import { ConfigId } from '../lib/schemas.ts';
import { requireAgentToken, type InternalEnv } from './auth.ts';

export const configsInternalApi = new Hono<InternalEnv>();
configsInternalApi.use(requireAgentToken);

/**
 * Size of every key part but the last. R2 wants equal parts of at least 5 MiB, and
 * each part is one request, which must stay under the Workers body limit (100 MB).
 */
export const KEY_PART_SIZE = 64 * 1024 * 1024;
/** R2's cap on the parts of one multipart upload. */
const MAX_PARTS = 10_000;

const ConfigParam = z.object({ config_id: ConfigId });
const KeyParams = ConfigParam.extend({ name: z.enum(PUBLISHED_KEY_NAMES) });
const UploadParams = KeyParams.extend({ upload_id: z.string().min(1).max(1024) });
const PartParams = UploadParams.extend({ part_number: z.coerce.number().int().min(1).max(MAX_PARTS) });
const CompleteBody = z.object({
  parts: z
    .array(z.object({ part_number: z.number().int().min(1).max(MAX_PARTS), etag: z.string().min(1).max(1024) }))
    .min(1)
    .max(MAX_PARTS),
});

async function configOf(c: { var: InternalEnv['Variables'] }, id: string) {
  const row = await c.var.db.select().from(configs).where(eq(configs.id, id)).get();
  if (!row) throw notFound('Config');
  return row;
}

configsInternalApi.get('/:config_id', zValidator('param', ConfigParam, validationHook), async (c) => {
  const cfg = await configOf(c, c.req.valid('param').config_id);
  const body: FleetConfig = {
    id: cfg.id,
    engine: cfg.engine,
    openvm_version: cfg.openvm_version,
    stark_backend_version: cfg.stark_backend_version,
    app_vm_commit: cfg.app_vm_commit,
    deferral_enabled: cfg.deferral_enabled,
    public_values_bytes: cfg.public_values_bytes,
    active: cfg.active,
    openvm_toml: cfg.openvm_toml,
  };
  return c.json(body);
});

configsInternalApi.post('/:config_id/keys/:name/uploads', zValidator('param', KeyParams, validationHook), async (c) => {
  const { config_id, name } = c.req.valid('param');
  const cfg = await configOf(c, config_id);
  const upload = await c.env.ARTIFACTS.createMultipartUpload(artifactKey.configKey(cfg.id, name), {
    httpMetadata: { contentType: 'application/octet-stream' },
  });
  const body: KeyUploadStarted = { upload_id: upload.uploadId, part_size: KEY_PART_SIZE };
  return c.json(body, 201);
});

configsInternalApi.put('/:config_id/keys/:name/uploads/:upload_id/:part_number', zValidator('param', PartParams, validationHook), async (c) => {
  const { config_id, name, upload_id, part_number } = c.req.valid('param');
  const length = Number(c.req.header('content-length'));
  if (!Number.isInteger(length) || length < 1) throw new ApiError(411, 'Each part needs a Content-Length (and at least one byte)');
  if (length > KEY_PART_SIZE) throw new ApiError(413, `A part is at most ${KEY_PART_SIZE} bytes`);
  const upload = c.env.ARTIFACTS.resumeMultipartUpload(artifactKey.configKey(config_id, name), upload_id);
  // A fixed-length stream lets R2 take the body as it arrives, never whole in memory.
  const body = c.req.raw.body!.pipeThrough(new FixedLengthStream(length));
  let part: R2UploadedPart;
  try {
    part = await upload.uploadPart(part_number, body);
  } catch (err) {
    throw new ApiError(404, `No such upload in progress for ${name} of ${config_id} (${(err as Error).message})`);
  }
  const out: KeyUploadPart = { part_number: part.partNumber, etag: part.etag };
  return c.json(out);
});

configsInternalApi.post(
  '/:config_id/keys/:name/uploads/:upload_id/complete',
  zValidator('param', UploadParams, validationHook),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', CompleteBody, validationHook),
  async (c) => {
    const { config_id, name, upload_id } = c.req.valid('param');
    const parts = [...c.req.valid('json').parts].sort((a, b) => a.part_number - b.part_number);
    if (parts.some((p, i) => p.part_number !== i + 1)) throw new ApiError(422, 'Parts must be numbered 1, 2, … with none missing or repeated');
    const upload = c.env.ARTIFACTS.resumeMultipartUpload(artifactKey.configKey(config_id, name), upload_id);
    let obj: R2Object;
    try {
      obj = await upload.complete(parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })));
    } catch (err) {
      throw new ApiError(409, `The upload of ${name} for ${config_id} cannot be completed: ${(err as Error).message}`);
    }
    const out: PublishKeyResponse = { name, size: obj.size };
    return c.json(out);
  },
);

configsInternalApi.delete('/:config_id/keys/:name/uploads/:upload_id', zValidator('param', UploadParams, validationHook), async (c) => {
  const { config_id, name, upload_id } = c.req.valid('param');
  await c.env.ARTIFACTS.resumeMultipartUpload(artifactKey.configKey(config_id, name), upload_id)
    .abort()
    .catch(() => undefined); // already gone: the same end
  return c.body(null, 204);
});
