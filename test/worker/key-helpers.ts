// Helpers for tests of key publication: a publisher token made by the operator's own
// statement, and the upload protocol (prover-agent/protocol, PUBLISHED_KEY_NAMES) as HTTP calls.
import { exports } from 'cloudflare:workers';
import { expect } from 'vitest';
import { createPublisherToken, type NewPublisherToken } from '../../src/admin/statements.ts';
import { BASE, json, runAdmin } from './helpers.ts';

/** A live publisher token for the configs named (null: every config). */
export function seedPublisher(configIds: string[] | null, opts: Partial<NewPublisherToken> = {}, now?: number): Promise<string> {
  return runAdmin(createPublisherToken({ name: `publisher-${crypto.randomUUID().slice(0, 8)}`, configIds, ...opts }, undefined, now));
}

/** A call to /internal/v1 with a bearer token. */
export const internalApi = (token: string, path: string, init: RequestInit = {}) =>
  exports.default.fetch(new Request(BASE + path, { ...init, headers: { authorization: `Bearer ${token}`, ...(init.headers ?? {}) } }));

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  return [...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))].map((b) => b.toString(16).padStart(2, '0')).join('');
}

/** The RFC 9530 `Repr-Digest` a download of these bytes carries. */
export async function reprDigestOf(bytes: Uint8Array): Promise<string> {
  return `sha-256=:${btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))))}:`;
}

/** Starts an upload; the Response, for the tests that expect a refusal. */
export function startUpload(token: string, cfg: string, name: string, body: { sha256?: string; supersedes?: number } = {}) {
  return internalApi(token, `/internal/v1/configs/${cfg}/keys/${name}/uploads`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
}

export function putPart(token: string, cfg: string, name: string, uploadId: string, n: number, bytes: Uint8Array) {
  return internalApi(token, `/internal/v1/configs/${cfg}/keys/${name}/uploads/${encodeURIComponent(uploadId)}/${n}`, {
    method: 'PUT',
    body: bytes,
    headers: { 'content-length': String(bytes.length) },
  });
}

export function completeUpload(token: string, cfg: string, name: string, uploadId: string, parts: unknown[]) {
  return internalApi(token, `/internal/v1/configs/${cfg}/keys/${name}/uploads/${encodeURIComponent(uploadId)}/complete`, {
    method: 'POST',
    body: JSON.stringify({ parts }),
    headers: { 'content-type': 'application/json' },
  });
}

/**
 * Publishes `bytes` as a key in one part, declaring their digest (or `opts.sha256`);
 * the completion's Response.
 */
export async function publishKey(
  token: string,
  cfg: string,
  name: string,
  bytes: Uint8Array,
  opts: { sha256?: string; supersedes?: number } = {},
) {
  const started = await json(
    await startUpload(token, cfg, name, { sha256: opts.sha256 ?? (await sha256Hex(bytes)), supersedes: opts.supersedes }),
    201,
  );
  expect(started.part_size).toBeGreaterThanOrEqual(5 * 1024 * 1024);
  const part = await json(await putPart(token, cfg, name, started.upload_id, 1, bytes), 200);
  return completeUpload(token, cfg, name, started.upload_id, [part]);
}
