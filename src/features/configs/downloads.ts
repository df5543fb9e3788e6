// /downloads: the Worker-signed, time-limited links that GET /v1/configs/{id}/pk/…
// and /vk/… hand out (src/features/configs/keys.ts). No API key: the signature is the
// credential, as with an R2 presigned URL. Streams from R2 and honours a Range
// header, so a multi-gigabyte key download can resume. A link names the published
// version it was issued for (signed with it): it serves that version's object, never
// a later one, with that version's SHA-256 as Repr-Digest (RFC 9530).
import { parseByteRange, rangeNotSatisfiable, satisfiedRange } from '../../lib/artifacts.ts';
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../../app-env.ts';
import { openDb } from '../../db/client.ts';
import { checkDownloadSignature, keyVersionQuery, PUBLISHED_KEY_NAMES, reprDigest } from './keys.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { ConfigId, errorResponses } from '../../lib/schemas.ts';
import { door } from '../../middleware/door.ts';

export const downloadsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

downloadsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'downloadConfigKey',
    description:
      'The link comes from GET /v1/configs/{config_id}/pk/{kind} or /vk/{kind}: its `expires` and `signature` are the credential, so it takes no API key. Range requests resume a large key; an expired or altered link is 403.',
    path: '/configs/{config_id}/{name}/{version}',
    tags: ['configs'],
    summary: 'Download a published config key through a signed link (no API key; Range supported)',
    middleware: [door.signedLink()],
    security: [],
    request: {
      params: z.object({
        config_id: ConfigId.openapi({ param: { name: 'config_id', in: 'path' } }),
        name: z.enum(PUBLISHED_KEY_NAMES).openapi({ param: { name: 'name', in: 'path' } }),
        version: z.coerce
          .number()
          .int()
          .min(1)
          .openapi({ param: { name: 'version', in: 'path' } }),
      }),
      query: z.object({ expires: z.coerce.number().int(), signature: z.string().regex(/^[0-9a-fA-F]{64}$/) }),
    },
    responses: {
      200: { description: 'The key file', content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } } },
      206: {
        description: 'The requested byte range',
        content: { 'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) } },
      },
      416: { description: 'Range Not Satisfiable (`Content-Range: bytes */size`)' },
      403: { description: 'Expired or forged link', content: { 'application/json': { schema: z.object({ detail: z.string() }) } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { config_id, name, version } = c.req.valid('param');
    const { expires, signature } = c.req.valid('query');
    await checkDownloadSignature(c.env, config_id, name, version, expires, signature);
    // A version row never changes once written (config_keys is append-only); these links
    // carry no session bookmark, so the primary answers (one read per download).
    const [published] = await keyVersionQuery(openDb(c.env.DB), config_id, name, version);
    if (!published) throw new ApiError(404, `Version ${version} of the ${name} of config ${config_id} is not published`);
    const key = published.r2_key;
    const range = parseByteRange(c.req.header('range'));
    let obj: R2ObjectBody | R2Object | null;
    try {
      obj = await c.env.ARTIFACTS.get(key, range ? { range: range.r2 } : {});
    } catch {
      // R2 refuses a range it cannot satisfy.
      const head = await c.env.ARTIFACTS.head(key);
      if (!head) throw new ApiError(404, `The ${name} of config ${config_id} is no longer published`);
      return rangeNotSatisfiable(head.size);
    }
    if (!obj || !('body' in obj)) throw new ApiError(404, `The ${name} of config ${config_id} is no longer published`);
    const headers = new Headers({
      'content-type': 'application/octet-stream',
      'content-disposition': `attachment; filename="${name}.bin"`,
      'accept-ranges': 'bytes',
      etag: obj.httpEtag,
      // The digest of the whole file (a range's bytes are part of it): RFC 9530 section 3.
      'repr-digest': reprDigest(published.sha256),
    });
    if (!range) {
      headers.set('content-length', String(obj.size));
      return new Response(obj.body, { status: 200, headers });
    }
    // The span is judged against the object's size here, whatever R2 made of the range.
    const r = satisfiedRange(range, obj.size);
    if (!r) {
      await obj.body.cancel();
      return rangeNotSatisfiable(obj.size);
    }
    headers.set('content-length', String(r.end - r.start + 1));
    headers.set('content-range', `bytes ${r.start}-${r.end}/${obj.size}`);
    return new Response(obj.body, { status: 206, headers });
  },
);
