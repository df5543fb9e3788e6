// /internal/v1/configs: what an operator's GPU host needs of a config, and where the
// operator publishes the keys it made (`prover-agent setup-config --publish`).
// Reading a config: an agent token (or a publisher token scoped to it). Publishing:
// a publisher token only (./publisher-auth.ts), never an agent token.
//
// Publication (protocol: `prover-agent/protocol`, PUBLISHED_KEY_NAMES):
//   - start: the publisher declares the file's SHA-256 and, to replace a published
//     key, the version it supersedes (else 409). The upload goes to an object of its
//     own (artifactKey.configKeyUpload), a staging object nothing serves;
//   - complete: the Worker hashes the stored bytes (within MAX_VERIFIED_KEY_BYTES,
//     src/features/configs/keys.ts) and refuses a mismatch (422: the object is deleted,
//     nothing changes); then one D1 batch records the new version (append-only
//     config_keys: its primary key and triggers refuse a version that does not follow
//     the one the upload saw, so two racing publications cannot both land) and its
//     audit row.
// Every step is a row of key_audit (start, publish, supersede, refusal, abort).
import { artifactKey } from '../../lib/artifact-keys.ts';
import { zValidator } from '@hono/zod-validator';
import { Hono, type Context } from 'hono';
import { ulid } from 'ulid';
import { z } from 'zod';
import { and, asc, eq } from 'drizzle-orm';
import type { FleetConfig, KeyUploadPart, KeyUploadStarted, PublishedKeys, PublishKeyResponse } from 'prover-agent/protocol';
import { configKeys, configs, keyAudit } from '../../db/schema.ts';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import {
  ALWAYS_VERIFIED_KEY_NAMES,
  currentKeyQuery,
  MAX_VERIFIED_KEY_BYTES,
  PUBLISHED_KEY_NAMES,
  sha256OfObject,
  type PublishedKeyName,
} from './keys.ts';
import { ApiError, notFound, validationHook } from '../../lib/errors.ts';
import { jsonBody } from '../../lib/body.ts';
import { BODY_CAPS, MAX_INTERNAL_JSON_BYTES } from '../../lib/limits.ts';
import { ConfigId } from '../../lib/schemas.ts';
import { json, NO_BODY, stream } from '../../middleware/door.ts';
import { publisherDoor, type PublisherEnv } from './publisher-auth.ts';

export const configsInternalApi = new Hono<PublisherEnv>();

/**
 * Size of every key part but the last. R2 wants equal parts of at least 5 MiB, and
 * each part is one request, which must stay under the Workers body limit (100 MB).
 */
export const KEY_PART_SIZE = 64 * 1024 * 1024;
/** R2's cap on the parts of one multipart upload. */
const MAX_PARTS = 10_000;

const ConfigParam = z.object({ config_id: ConfigId });
const KeyParams = ConfigParam.extend({ name: z.enum(PUBLISHED_KEY_NAMES) });
// `{ulid}.{R2's upload id}`: the first names the upload's own object and its audit rows.
const UploadParams = KeyParams.extend({ upload_id: z.string().regex(/^[0-9a-z]{26}\.[^/]{1,1000}$/, 'not an upload id of this service') });
const PartParams = UploadParams.extend({ part_number: z.coerce.number().int().min(1).max(MAX_PARTS) });
const StartBody = z.object({
  sha256: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'the SHA-256 of the file, 64 hex digits')
    .transform((s) => s.toLowerCase()),
  supersedes: z.number().int().min(1).optional(),
});
const CompleteBody = z.object({
  parts: z
    .array(z.object({ part_number: z.number().int().min(1).max(MAX_PARTS), etag: z.string().min(1).max(1024) }))
    .min(1)
    .max(MAX_PARTS),
});

type Ctx = Context<PublisherEnv>;

const actorOf = (c: Ctx) => `publisher:${c.get('publisher').id}`;

function splitUploadId(uploadId: string): { id: string; r2: string } {
  const dot = uploadId.indexOf('.');
  return { id: uploadId.slice(0, dot), r2: uploadId.slice(dot + 1) };
}

/** The insert of one key_audit row, to batch with what it records. */
function audit(db: Db, row: Omit<typeof keyAudit.$inferInsert, 'id' | 'created_at'>) {
  return db.insert(keyAudit).values({ id: ulid(), ...row });
}

configsInternalApi.get('/:config_id', publisherDoor.readConfig(), zValidator('param', ConfigParam, validationHook), async (c) => {
  const id = c.req.valid('param').config_id;
  const db = c.get('db');
  const { config, versions } = await batchByName(db, {
    config: db.select().from(configs).where(eq(configs.id, id)),
    versions: db.select().from(configKeys).where(eq(configKeys.config_id, id)).orderBy(asc(configKeys.version)),
  });
  const cfg = config[0];
  if (!cfg) throw notFound('Config');
  const keys: PublishedKeys = {};
  for (const k of versions) keys[k.name as PublishedKeyName] = { version: k.version, sha256: k.sha256, size: k.size }; // ascending: the last is current
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
    keys,
  };
  return c.json(body);
});

/** What a publication must say about the key's current version: none, or the one it supersedes. */
function conflict(name: string, configId: string, current: number | null, supersedes: number | null): string | null {
  if (current === supersedes) return null;
  if (current === null) return `The ${name} of ${configId} is not published: there is no version ${supersedes} to supersede`;
  return supersedes === null
    ? `The ${name} of ${configId} is published (version ${current}); a new version replaces it only when the upload says \`supersedes: ${current}\``
    : `The ${name} of ${configId} is at version ${current}, not ${supersedes}: another publication came first`;
}

configsInternalApi.post(
  '/:config_id/keys/:name/uploads',
  publisherDoor.publish(json(BODY_CAPS.small)),
  zValidator('param', KeyParams, validationHook),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', StartBody, validationHook),
  async (c) => {
    const { config_id, name } = c.req.valid('param');
    const { sha256, supersedes = null } = c.req.valid('json');
    const db = c.get('db');
    const { config, current } = await batchByName(db, {
      config: db.select({ id: configs.id }).from(configs).where(eq(configs.id, config_id)),
      current: currentKeyQuery(db, config_id, name),
    });
    if (!config[0]) throw notFound('Config');
    const id = ulid().toLowerCase();
    const refused = conflict(name, config_id, current[0]?.version ?? null, supersedes);
    if (refused) {
      await audit(db, {
        config_id,
        name,
        action: 'upload.refused_conflict',
        upload_id: id,
        actor: actorOf(c),
        sha256,
        version: supersedes,
        detail: { current: current[0]?.version ?? null },
      });
      throw new ApiError(409, refused);
    }
    const upload = await c.env.ARTIFACTS.createMultipartUpload(artifactKey.configKeyUpload(config_id, name, id), {
      httpMetadata: { contentType: 'application/octet-stream' },
      customMetadata: { sha256 },
    });
    // The start row is also what /complete holds the upload to: its digest and the version it supersedes.
    await audit(db, {
      config_id,
      name,
      action: 'upload.start',
      upload_id: id,
      actor: actorOf(c),
      sha256,
      version: supersedes,
      detail: { publisher: c.get('publisher').name },
    });
    const body: KeyUploadStarted = { upload_id: `${id}.${upload.uploadId}`, part_size: KEY_PART_SIZE };
    return c.json(body, 201);
  },
);

configsInternalApi.put(
  '/:config_id/keys/:name/uploads/:upload_id/:part_number',
  publisherDoor.publish(stream(KEY_PART_SIZE)),
  zValidator('param', PartParams, validationHook),
  async (c) => {
    const { config_id, name, upload_id, part_number } = c.req.valid('param');
    const length = Number(c.req.header('content-length'));
    if (!Number.isInteger(length) || length < 1) throw new ApiError(411, 'Each part needs a Content-Length (and at least one byte)');
    if (length > KEY_PART_SIZE) throw new ApiError(413, `A part is at most ${KEY_PART_SIZE} bytes`);
    const { id, r2 } = splitUploadId(upload_id);
    // The upload's own object: a part can only ever land in the upload it names.
    const upload = c.env.ARTIFACTS.resumeMultipartUpload(artifactKey.configKeyUpload(config_id, name, id), r2);
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
  },
);

configsInternalApi.post(
  '/:config_id/keys/:name/uploads/:upload_id/complete',
  publisherDoor.publish(json(BODY_CAPS.fleet)),
  zValidator('param', UploadParams, validationHook),
  jsonBody(MAX_INTERNAL_JSON_BYTES),
  zValidator('json', CompleteBody, validationHook),
  async (c) => {
    const { config_id, name, upload_id } = c.req.valid('param');
    const { id, r2 } = splitUploadId(upload_id);
    const parts = [...c.req.valid('json').parts].sort((a, b) => a.part_number - b.part_number);
    if (parts.some((p, i) => p.part_number !== i + 1))
      throw new ApiError(422, 'Parts must be numbered 1, 2, … with none missing or repeated');
    const db = c.get('db');
    const { started, done } = await batchByName(db, {
      started: db
        .select()
        .from(keyAudit)
        .where(
          and(eq(keyAudit.upload_id, id), eq(keyAudit.action, 'upload.start'), eq(keyAudit.config_id, config_id), eq(keyAudit.name, name)),
        ),
      done: db.select().from(configKeys).where(eq(configKeys.upload_id, id)),
    });
    const start = started[0];
    if (!start?.sha256) throw new ApiError(404, `No such upload in progress for ${name} of ${config_id}`);
    const supersedes = start.version;
    // A retried completion whose first attempt landed: the same answer, nothing done twice.
    if (done[0]) return c.json(published(done[0], supersedes));

    const objectKey = artifactKey.configKeyUpload(config_id, name, id);
    let obj: R2Object;
    try {
      obj = await c.env.ARTIFACTS.resumeMultipartUpload(objectKey, r2).complete(
        parts.map((p) => ({ partNumber: p.part_number, etag: p.etag })),
      );
    } catch (err) {
      // A retry after R2 completed the upload but before D1 recorded it: the object is this
      // upload's own (nothing else writes its key), so it goes on to be checked and recorded.
      const completed = await c.env.ARTIFACTS.head(objectKey);
      if (!completed) throw new ApiError(409, `The upload of ${name} for ${config_id} cannot be completed: ${(err as Error).message}`);
      obj = completed;
    }
    const refuse = async (status: 409 | 413 | 422, action: string, message: string, detail: Record<string, unknown>): Promise<never> => {
      await c.env.ARTIFACTS.delete(objectKey);
      await audit(db, {
        config_id,
        name,
        action,
        upload_id: id,
        actor: actorOf(c),
        sha256: start.sha256,
        version: supersedes,
        detail: { size: obj.size, ...detail },
      });
      throw new ApiError(status, message);
    };

    const mustVerify = ALWAYS_VERIFIED_KEY_NAMES.includes(name);
    const verified = obj.size <= MAX_VERIFIED_KEY_BYTES;
    if (mustVerify && !verified) {
      await refuse(
        413,
        'upload.refused_size',
        `A ${name} is at most ${MAX_VERIFIED_KEY_BYTES} bytes (the service verifies every verifying key)`,
        {},
      );
    }
    if (verified) {
      const actual = await sha256OfObject(c.env.ARTIFACTS, objectKey);
      if (actual !== start.sha256) {
        await refuse(
          422,
          'upload.refused_digest',
          `The uploaded ${name} has SHA-256 ${actual}, not the declared ${start.sha256}: nothing was published`,
          { actual },
        );
      }
    }

    const version = (supersedes ?? 0) + 1;
    const actor = actorOf(c);
    try {
      // One transaction: the version (refused by config_keys' primary key and triggers unless it
      // follows the one the upload started from) and its audit row.
      const { key } = await batchByName(db, {
        key: db
          .insert(configKeys)
          .values({
            config_id,
            name,
            version,
            sha256: start.sha256,
            size: obj.size,
            r2_key: objectKey,
            verified,
            published_by: actor,
            upload_id: id,
          })
          .returning(),
        audit: audit(db, {
          config_id,
          name,
          action: supersedes === null ? 'key.publish' : 'key.supersede',
          upload_id: id,
          actor,
          sha256: start.sha256,
          version,
          detail: { size: obj.size, verified, supersedes },
        }),
      });
      return c.json(published(key[0], supersedes));
    } catch (err) {
      // Another version landed since this upload started (the primary key or the next-version trigger refused this one),
      // or this very upload was completed by a concurrent retry: then its version stands and is the answer.
      if (
        !/UNIQUE constraint failed: config_keys|config_keys: a version must follow/.test(`${String(err)} ${String((err as Error)?.cause)}`)
      )
        throw err;
      const [mine] = await db.select().from(configKeys).where(eq(configKeys.upload_id, id));
      if (mine) return c.json(published(mine, supersedes));
      return refuse(
        409,
        'upload.refused_conflict',
        `The ${name} of ${config_id} changed while this upload ran (it started from ${supersedes === null ? 'no version' : `version ${supersedes}`}): nothing was published`,
        {},
      );
    }
  },
);

function published(row: typeof configKeys.$inferSelect, supersedes: number | null): PublishKeyResponse {
  return {
    name: row.name as PublishedKeyName,
    version: row.version,
    sha256: row.sha256,
    size: row.size,
    verified: row.verified,
    supersedes,
  };
}

configsInternalApi.delete(
  '/:config_id/keys/:name/uploads/:upload_id',
  publisherDoor.publish(NO_BODY),
  zValidator('param', UploadParams, validationHook),
  async (c) => {
    const { config_id, name, upload_id } = c.req.valid('param');
    const { id, r2 } = splitUploadId(upload_id);
    await c.env.ARTIFACTS.resumeMultipartUpload(artifactKey.configKeyUpload(config_id, name, id), r2)
      .abort()
      .catch(() => undefined); // already gone: the same end
    await audit(c.get('db'), { config_id, name, action: 'upload.abort', upload_id: id, actor: actorOf(c) });
    return c.body(null, 204);
  },
);
