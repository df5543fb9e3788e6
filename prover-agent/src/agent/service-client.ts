// The service's internal API (/internal/v1), as the agent sees it. Claims use the
// agent token; everything about one claimed job uses that job's lease token.
import { createReadStream, createWriteStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type {
  ClaimedJob,
  ClaimRequest,
  ClaimResponse,
  CompleteRequest,
  CompleteResponse,
  FailRequest,
  FleetConfig,
  HeartbeatRequest,
  HeartbeatResponse,
  KeyUploadComplete,
  KeyUploadPart,
  KeyUploadStart,
  KeyUploadStarted,
  LeaseEnding,
  LeaseStatusResponse,
  LeaveRequest,
  LogChunk,
  PresenceRequest,
  PresenceResponse,
  QueueAckRequest,
  QueueAckResponse,
  QueuePullRequest,
  QueuePullResponse,
  PublishedKeyName,
  PublishKeyResponse,
  PublishedKeys,
  ResultName,
} from '../protocol.ts';
import { DEFAULT_RETRY, fetchJson, fetchWithRetry, type RetryPolicy } from './http.ts';

/** How long the agent keeps a config's published key digests before asking again. */
export const PUBLISHED_KEYS_TTL_MS = 60_000;

export class ServiceClient {
  readonly baseUrl: string;
  private readonly agentToken: string;
  private readonly retry: RetryPolicy;
  private readonly keysCache = new Map<string, { at: number; keys: PublishedKeys }>();

  constructor(baseUrl: string, agentToken: string, retry: Partial<RetryPolicy> = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.agentToken = agentToken;
    this.retry = { ...DEFAULT_RETRY, ...retry };
  }

  private post<T>(path: string, token: string, body: unknown, what: string, policy?: Partial<RetryPolicy>): Promise<T> {
    return fetchJson<T>(
      this.baseUrl + path,
      () => ({
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      }),
      what,
      { ...this.retry, ...policy },
    );
  }

  claim(req: ClaimRequest, policy?: Partial<RetryPolicy>): Promise<ClaimResponse> {
    return this.post('/internal/v1/jobs/claim', this.agentToken, req, 'claim', policy);
  }

  /** Reports who this agent is; the answer carries the queue token and when to report again. */
  presence(req: PresenceRequest, policy?: Partial<RetryPolicy>): Promise<PresenceResponse> {
    return this.post('/internal/v1/agents/presence', this.agentToken, req, 'presence', policy);
  }

  /** Leaves the fleet (a graceful stop): the service stops counting this agent at once. */
  leave(req: LeaveRequest, policy?: Partial<RetryPolicy>): Promise<{ left: boolean }> {
    return this.post('/internal/v1/agents/leave', this.agentToken, req, 'leave', policy);
  }

  /** Pulls job notices through the service (the queue token from presence). */
  pull(queueToken: string, req: QueuePullRequest, policy?: Partial<RetryPolicy>): Promise<QueuePullResponse> {
    return this.post('/internal/v1/queue/pull', queueToken, req, 'queue pull', policy);
  }

  /** Acks pulled notices, or hands them back (`retries`). */
  ack(queueToken: string, req: QueueAckRequest, policy?: Partial<RetryPolicy>): Promise<QueueAckResponse> {
    return this.post('/internal/v1/queue/ack', queueToken, req, 'queue ack', policy);
  }

  /** A config as the fleet prepares hosts for it (GET /internal/v1/configs/{id}). */
  fleetConfig(id: string, policy?: Partial<RetryPolicy>): Promise<FleetConfig> {
    return fetchJson<FleetConfig>(
      `${this.baseUrl}/internal/v1/configs/${encodeURIComponent(id)}`,
      () => ({ headers: { authorization: `Bearer ${this.agentToken}` } }),
      `config ${id}`,
      { ...this.retry, ...policy },
    );
  }

  /**
   * The digests the service publishes for a config's keys, which an engine's copies
   * must match before it proves (engine/openvm/key-digests.ts). Kept for
   * PUBLISHED_KEYS_TTL_MS per config: a job does not cost a request, and a newly
   * published version is seen within that time.
   */
  async publishedKeys(id: string, now = Date.now()): Promise<PublishedKeys> {
    const cached = this.keysCache.get(id);
    if (cached && now - cached.at < PUBLISHED_KEYS_TTL_MS) return cached.keys;
    const keys = (await this.fleetConfig(id)).keys ?? {}; // an older service reports none
    this.keysCache.set(id, { at: now, keys });
    return keys;
  }

  /**
   * Publishes a key file of a config with the operator's publisher token (never the
   * agent token): its SHA-256 declared first (the service checks it at completion),
   * then an upload in parts (protocol.ts), each part streamed from its byte range of
   * the file and retried on its own, so a gigabyte key is never whole in memory and
   * a dropped connection costs one part. A failed publish aborts the upload; the
   * published version stays. `supersedes`: the version this one replaces.
   */
  async publishKey(
    id: string,
    name: PublishedKeyName,
    path: string,
    publish: { publisherToken: string; sha256: string; supersedes?: number },
    policy?: Partial<RetryPolicy>,
  ): Promise<PublishKeyResponse> {
    const retry = { ...this.retry, ...policy };
    const base = `${this.baseUrl}/internal/v1/configs/${encodeURIComponent(id)}/keys/${name}/uploads`;
    const auth = { authorization: `Bearer ${publish.publisherToken}` };
    const { size } = await stat(path);
    if (size === 0) throw new Error(`${path} is empty: nothing to publish as ${name}`);
    const start: KeyUploadStart = {
      sha256: publish.sha256,
      ...(publish.supersedes !== undefined ? { supersedes: publish.supersedes } : {}),
    };
    const started = (await (
      await fetchWithRetry(
        base,
        () => ({ method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify(start) }),
        `publish ${name}: start`,
        retry,
      )
    ).json()) as KeyUploadStarted;
    const uploadUrl = `${base}/${encodeURIComponent(started.upload_id)}`;
    try {
      const parts: KeyUploadPart[] = [];
      for (let n = 1, start = 0; start < size; n++, start += started.part_size) {
        const end = Math.min(size, start + started.part_size); // exclusive
        const res = await fetchWithRetry(
          `${uploadUrl}/${n}`,
          () => ({
            method: 'PUT',
            headers: { ...auth, 'content-type': 'application/octet-stream', 'content-length': String(end - start) },
            body: Readable.toWeb(createReadStream(path, { start, end: end - 1 })) as ReadableStream,
            duplex: 'half',
          }),
          `publish ${name}: part ${n}`,
          retry,
        );
        parts.push((await res.json()) as KeyUploadPart);
      }
      const done = await fetchWithRetry(
        `${uploadUrl}/complete`,
        () => ({
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ parts } satisfies KeyUploadComplete),
        }),
        `publish ${name}: complete`,
        retry,
      );
      return (await done.json()) as PublishKeyResponse;
    } catch (err) {
      await fetch(uploadUrl, { method: 'DELETE', headers: auth }).catch(() => undefined);
      throw err;
    }
  }

  /** One lease's callbacks. */
  lease(job: Pick<ClaimedJob, 'job_token'>, policy?: Partial<RetryPolicy>): LeaseClient {
    return new LeaseClient(this.baseUrl + '/internal/v1/lease', job.job_token, { ...this.retry, ...policy });
  }
}

export class LeaseClient {
  private readonly base: string;
  private readonly token: string;
  private readonly retry: RetryPolicy;

  constructor(base: string, token: string, retry: RetryPolicy) {
    this.base = base;
    this.token = token;
    this.retry = retry;
  }

  private headers(extra: Record<string, string> = {}) {
    return { authorization: `Bearer ${this.token}`, ...extra };
  }

  private post<T>(path: string, body: unknown, policy?: Partial<RetryPolicy>): Promise<T> {
    return fetchJson<T>(
      this.base + path,
      () => ({ method: 'POST', headers: this.headers({ 'content-type': 'application/json' }), body: JSON.stringify(body) }),
      path.slice(1),
      { ...this.retry, ...policy },
    );
  }

  heartbeat(req: HeartbeatRequest, policy?: Partial<RetryPolicy>) {
    return this.post<HeartbeatResponse>('/heartbeat', req, policy);
  }
  status(policy?: Partial<RetryPolicy>): Promise<LeaseStatusResponse> {
    return fetchJson<LeaseStatusResponse>(this.base + '/status', () => ({ headers: this.headers() }), 'status', {
      ...this.retry,
      ...policy,
    });
  }
  logs(chunk: LogChunk) {
    return this.post<{ accepted: string }>('/logs', chunk);
  }
  complete(req: CompleteRequest) {
    return this.post<CompleteResponse>('/complete', req);
  }
  fail(req: FailRequest) {
    return this.post<{ status: string }>('/fail', req);
  }
  canceled(ending: LeaseEnding = {}) {
    return this.post<{ status: string }>('/canceled', ending);
  }
  release(ending: LeaseEnding = {}) {
    return this.post<{ status: string }>('/release', ending);
  }

  /** Streams an artifact of the job to `path`. */
  async download(name: string, path: string, signal?: AbortSignal): Promise<void> {
    const res = await fetchWithRetry(
      this.base + `/artifacts/${encodeURIComponent(name)}`,
      () => ({ headers: this.headers() }),
      `download ${name}`,
      { ...this.retry, signal },
    );
    await pipeline(Readable.fromWeb(res.body as import('node:stream/web').ReadableStream), createWriteStream(path), { signal });
  }

  /** Streams a result file to the service (with its length: it goes straight to storage). */
  async upload(name: ResultName, path: string): Promise<void> {
    await putFile(this.base + `/results/${name}`, this.token, path, 'application/json', `upload ${name}`, this.retry);
  }
}

/** PUTs a file as a stream, with its length (the service writes it straight to storage); a fresh stream per attempt. */
async function putFile(url: string, token: string, path: string, contentType: string, what: string, retry: RetryPolicy): Promise<Response> {
  const { size } = await stat(path);
  return fetchWithRetry(
    url,
    () => ({
      method: 'PUT',
      headers: { authorization: `Bearer ${token}`, 'content-type': contentType, 'content-length': String(size) },
      body: Readable.toWeb(createReadStream(path)) as ReadableStream,
      duplex: 'half',
    }),
    what,
    retry,
  );
}
