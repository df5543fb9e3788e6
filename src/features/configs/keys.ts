// A config's published key files (proving and verifying keys, the EVM verifier):
// where they live in R2, and the time-limited URLs callers download them from.
//
// Keys are gigabytes, so the API never streams them through a JSON call: the
// published client asks `GET /v1/configs/{id}/pk/{app|agg|halo2}` (or `vk/…`),
// reads `{download_url}` and GETs that URL without its API key
// (axiom-api-cli v2.0.0 crates/sdk/src/config.rs:24-80, 120-175). The URL is
//   - an R2 S3-compatible presigned URL when the deployment has S3 credentials
//     (R2_S3_* vars/secrets; signed with aws4fetch), served by R2 itself, or
//   - a URL of this Worker signed with HMAC-SHA256 under DOWNLOAD_URL_SECRET
//     (`/downloads/...`, src/features/configs/downloads.ts), which streams from R2 with Range
//     support. This is what `npm start` uses.
//
// What is served is a version (src/db/schema.ts configKeys): each publication is its
// own R2 object, recorded in D1 with its SHA-256, and a link names the version it was
// issued for, so a link handed out before a new version still serves the bytes it was
// issued for. Every answer carries the digest: `sha256` in the JSON next to
// `download_url` (the published client reads only `download_url` and ignores other
// fields: axiom-api-cli v2.0.0 crates/sdk/src/config.rs:30-33, a serde struct without
// deny_unknown_fields), and `Repr-Digest` (RFC 9530) on the bytes the Worker serves.
import { AwsClient } from 'aws4fetch';
import { and, desc, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { configKeys } from '../../db/schema.ts';
import type { Env } from '../../env.ts';
import { PUBLISHED_KEY_NAMES, type PublishedKeyName } from 'prover-agent/protocol';
import { toBase64, toHex } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';
import { utf8Bytes } from '../../lib/bytes.ts';

export { PUBLISHED_KEY_NAMES, type PublishedKeyName };

export type KeyVersion = typeof configKeys.$inferSelect;

/**
 * Keys the Worker always hashes at publication (a verifying key or verifier is what a
 * caller checks proofs against, and is kilobytes to megabytes): one bigger than
 * MAX_VERIFIED_KEY_BYTES is refused. Any other key is hashed when it is at most that
 * big; a bigger proving key (hundreds of MB to gigabytes) is recorded with the digest
 * its publisher declared, unverified by the Worker (docs/operators.md "Publishing keys" says why),
 * and every agent checks its own copy against that digest before proving.
 */
export const ALWAYS_VERIFIED_KEY_NAMES: readonly PublishedKeyName[] = ['app_vk', 'agg_vk', 'evm_verifier'];
export const MAX_VERIFIED_KEY_BYTES = 512 * 1024 * 1024;

/** The current (highest) version of a config's key: empty when none is published. */
export const currentKeyQuery = (db: Db, configId: string, name: PublishedKeyName) =>
  db
    .select()
    .from(configKeys)
    .where(and(eq(configKeys.config_id, configId), eq(configKeys.name, name)))
    .orderBy(desc(configKeys.version))
    .limit(1);

/** One version of a config's key, current or superseded. */
export const keyVersionQuery = (db: Db, configId: string, name: PublishedKeyName, version: number) =>
  db
    .select()
    .from(configKeys)
    .where(and(eq(configKeys.config_id, configId), eq(configKeys.name, name), eq(configKeys.version, version)));

/** The RFC 9530 Repr-Digest field of a lowercase hex SHA-256. */
export function reprDigest(sha256: string): string {
  const bytes = new Uint8Array(sha256.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(sha256.slice(2 * i, 2 * i + 2), 16);
  return `sha-256=:${toBase64(bytes)}:`;
}

/** The SHA-256 (lowercase hex) of an R2 object, streamed through: memory stays bounded whatever its size. */
export async function sha256OfObject(bucket: R2Bucket, key: string): Promise<string | null> {
  const obj = await bucket.get(key);
  if (!obj) return null;
  const digest = new crypto.DigestStream('SHA-256');
  await obj.body.pipeTo(digest);
  return toHex(await digest.digest);
}

/** What GET /v1/configs/{id}/pk|vk/{kind} answers: the link and what it will serve. */
export async function keyDownload(env: Env, origin: string, key: KeyVersion, now = Date.now()) {
  return { download_url: await keyDownloadUrl(env, origin, key, now), sha256: key.sha256, version: key.version, size: key.size };
}

/** The key names behind the client's `pk/{kind}` and `vk/{kind}` paths. */
export const PROVING_KEY_KINDS = ['app', 'agg', 'halo2'] as const;
export const VERIFYING_KEY_KINDS = ['app', 'agg'] as const;

/** How long a download URL stays valid, unless KEY_URL_TTL_SECONDS says otherwise. */
export const DEFAULT_KEY_URL_TTL_SECONDS = 3600;

function ttlSeconds(env: Env): number {
  const n = Number(env.KEY_URL_TTL_SECONDS);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_KEY_URL_TTL_SECONDS;
}

/** A download URL for one version of a published key, valid for the configured time. */
export async function keyDownloadUrl(env: Env, origin: string, key: KeyVersion, now = Date.now()): Promise<string> {
  const ttl = ttlSeconds(env);
  const object = key.r2_key;
  if (env.R2_S3_ENDPOINT && env.R2_S3_BUCKET && env.R2_S3_ACCESS_KEY_ID && env.R2_S3_SECRET_ACCESS_KEY) {
    const client = new AwsClient({
      accessKeyId: env.R2_S3_ACCESS_KEY_ID,
      secretAccessKey: env.R2_S3_SECRET_ACCESS_KEY,
      service: 's3',
      region: 'auto',
    });
    const url = new URL(`${env.R2_S3_ENDPOINT.replace(/\/+$/, '')}/${env.R2_S3_BUCKET}/${object}`);
    url.searchParams.set('X-Amz-Expires', String(ttl));
    const signed = await client.sign(new Request(url, { method: 'GET' }), { aws: { signQuery: true, datetime: amzDate(now) } });
    return signed.url;
  }
  const secret = requireSecret(env);
  const expires = Math.floor(now / 1000) + ttl;
  const signature = await sign(secret, key.config_id, key.name, key.version, expires);
  return `${origin}/downloads/configs/${key.config_id}/${key.name}/${key.version}?expires=${expires}&signature=${signature}`;
}

/** Checks a Worker-signed download URL's parameters; throws 403 (expired or forged) otherwise. */
export async function checkDownloadSignature(
  env: Env,
  configId: string,
  name: PublishedKeyName,
  version: number,
  expires: number,
  signature: string,
  now = Date.now(),
) {
  const expected = await sign(requireSecret(env), configId, name, version, expires);
  if (!timingSafeEqual(expected, signature.toLowerCase())) throw new ApiError(403, 'This download link is not valid');
  if (expires * 1000 < now) throw new ApiError(403, 'This download link has expired: ask the API for a new one');
}

function requireSecret(env: Env): string {
  if (!env.DOWNLOAD_URL_SECRET) {
    throw new ApiError(
      503,
      'Key downloads are not configured on this deployment (the operator sets DOWNLOAD_URL_SECRET or the R2_S3_* credentials)',
    );
  }
  return env.DOWNLOAD_URL_SECRET;
}

async function sign(secret: string, configId: string, name: string, version: number, expires: number): Promise<string> {
  const key = await crypto.subtle.importKey('raw', utf8Bytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  // `config-key-version`: a link of the unversioned form signed before cannot pass for one of this form.
  return toHex(await crypto.subtle.sign('HMAC', key, utf8Bytes(`config-key-version\n${configId}\n${name}\n${version}\n${expires}`)));
}

function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/** SigV4's timestamp form, so signing is deterministic for a given `now`. */
function amzDate(now: number): string {
  return new Date(now).toISOString().replace(/[:-]|\.\d{3}/g, '');
}
