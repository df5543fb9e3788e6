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
//     (`/downloads/...`, src/routes/downloads.ts), which streams from R2 with Range
//     support. This is what `npm start` uses.
import { AwsClient } from 'aws4fetch';
import type { Env } from '../env.ts';
import { PUBLISHED_KEY_NAMES, type PublishedKeyName } from 'prover-agent/protocol';
import { artifactKey } from './artifact-keys.ts';
import { toHex } from './crypto.ts';
import { ApiError } from './errors.ts';

export { PUBLISHED_KEY_NAMES, type PublishedKeyName };

/** The key names behind the client's `pk/{kind}` and `vk/{kind}` paths. */
export const PROVING_KEY_KINDS = ['app', 'agg', 'halo2'] as const;
export const VERIFYING_KEY_KINDS = ['app', 'agg'] as const;


/** How long a download URL stays valid, unless KEY_URL_TTL_SECONDS says otherwise. */
export const DEFAULT_KEY_URL_TTL_SECONDS = 3600;

function ttlSeconds(env: Env): number {
  const n = Number(env.KEY_URL_TTL_SECONDS);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_KEY_URL_TTL_SECONDS;
}

/** A download URL for a published key, valid for the configured time. */
export async function keyDownloadUrl(env: Env, origin: string, configId: string, name: PublishedKeyName, now = Date.now()): Promise<string> {
  const ttl = ttlSeconds(env);
  const object = artifactKey.configKey(configId, name);
  if (env.R2_S3_ENDPOINT && env.R2_S3_BUCKET && env.R2_S3_ACCESS_KEY_ID && env.R2_S3_SECRET_ACCESS_KEY) {
    const client = new AwsClient({ accessKeyId: env.R2_S3_ACCESS_KEY_ID, secretAccessKey: env.R2_S3_SECRET_ACCESS_KEY, service: 's3', region: 'auto' });
    const url = new URL(`${env.R2_S3_ENDPOINT.replace(/\/+$/, '')}/${env.R2_S3_BUCKET}/${object}`);
    url.searchParams.set('X-Amz-Expires', String(ttl));
    const signed = await client.sign(new Request(url, { method: 'GET' }), { aws: { signQuery: true, datetime: amzDate(now) } });
    return signed.url;
  }
  const secret = requireSecret(env);
  const expires = Math.floor(now / 1000) + ttl;
  const signature = await sign(secret, configId, name, expires);
  return `${origin}/downloads/configs/${configId}/${name}?expires=${expires}&signature=${signature}`;
}

/** Checks a Worker-signed download URL's parameters; throws 403 (expired or forged) otherwise. */
export async function checkDownloadSignature(env: Env, configId: string, name: PublishedKeyName, expires: number, signature: string, now = Date.now()) {
  const expected = await sign(requireSecret(env), configId, name, expires);
  if (!timingSafeEqual(expected, signature.toLowerCase())) throw new ApiError(403, 'This download link is not valid');
  if (expires * 1000 < now) throw new ApiError(403, 'This download link has expired: ask the API for a new one');
}

function requireSecret(env: Env): string {
  if (!env.DOWNLOAD_URL_SECRET) {
    throw new ApiError(503, 'Key downloads are not configured on this deployment (the operator sets DOWNLOAD_URL_SECRET or the R2_S3_* credentials)');
  }
  return env.DOWNLOAD_URL_SECRET;
}

async function sign(secret: string, configId: string, name: string, expires: number): Promise<string> {
  const key = await crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return toHex(await crypto.subtle.sign('HMAC', key, new TextEncoder().encode(`config-key\n${configId}\n${name}\n${expires}`)));
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
