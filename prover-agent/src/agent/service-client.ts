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
  FailRequest,
  FleetConfig,
  HeartbeatRequest,
  HeartbeatResponse,
  LogChunk,
  PublishedKeyName,
  PublishKeyResponse,
  ResultName,
} from '../protocol.ts';
import { DEFAULT_RETRY, fetchWithRetry, type RetryPolicy } from './http.ts';

export class ServiceClient {
  readonly baseUrl: string;
  private readonly agentToken: string;
  private readonly retry: RetryPolicy;

  constructor(baseUrl: string, agentToken: string, retry: Partial<RetryPolicy> = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.agentToken = agentToken;
    this.retry = { ...DEFAULT_RETRY, ...retry };
  }

  private async post<T>(path: string, token: string, body: unknown, what: string, policy?: Partial<RetryPolicy>): Promise<T> {
    const res = await fetchWithRetry(
      this.baseUrl + path,
      () => ({ method: 'POST', headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      what,
      { ...this.retry, ...policy },
    );
    return (await res.json()) as T;
  }

  claim(req: ClaimRequest, policy?: Partial<RetryPolicy>): Promise<ClaimResponse> {
    return this.post('/internal/v1/jobs/claim', this.agentToken, req, 'claim', policy);
  }

  /** A config as the fleet prepares hosts for it (GET /internal/v1/configs/{id}). */
  async fleetConfig(id: string, policy?: Partial<RetryPolicy>): Promise<FleetConfig> {
    const res = await fetchWithRetry(
      `${this.baseUrl}/internal/v1/configs/${encodeURIComponent(id)}`,
      () => ({ headers: { authorization: `Bearer ${this.agentToken}` } }),
      `config ${id}`,
      { ...this.retry, ...policy },
    );
    return (await res.json()) as FleetConfig;
  }

  /** Streams a key file to PUT /internal/v1/configs/{id}/keys/{name}; keys run to gigabytes, so never whole in memory. */
  async publishKey(id: string, name: PublishedKeyName, path: string, policy?: Partial<RetryPolicy>): Promise<PublishKeyResponse> {
    const res = await putFile(`${this.baseUrl}/internal/v1/configs/${encodeURIComponent(id)}/keys/${name}`, this.agentToken, path, 'application/octet-stream', `publish ${name}`, {
      ...this.retry,
      ...policy,
    });
    return (await res.json()) as PublishKeyResponse;
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

  private async post<T>(path: string, body: unknown, policy?: Partial<RetryPolicy>): Promise<T> {
    const res = await fetchWithRetry(
      this.base + path,
      () => ({ method: 'POST', headers: this.headers({ 'content-type': 'application/json' }), body: JSON.stringify(body) }),
      path.slice(1),
      { ...this.retry, ...policy },
    );
    return (await res.json()) as T;
  }

  heartbeat(req: HeartbeatRequest, policy?: Partial<RetryPolicy>) {
    return this.post<HeartbeatResponse>('/heartbeat', req, policy);
  }
  logs(chunk: LogChunk) {
    return this.post<{ accepted: string }>('/logs', chunk);
  }
  complete(req: CompleteRequest) {
    return this.post<{ status: string }>('/complete', req);
  }
  fail(req: FailRequest) {
    return this.post<{ status: string }>('/fail', req);
  }
  canceled() {
    return this.post<{ status: string }>('/canceled', {});
  }
  release() {
    return this.post<{ status: string }>('/release', {});
  }

  /** Streams an artifact of the job to `path`. */
  async download(name: string, path: string, signal?: AbortSignal): Promise<void> {
    const res = await fetchWithRetry(this.base + `/artifacts/${encodeURIComponent(name)}`, () => ({ headers: this.headers() }), `download ${name}`, { ...this.retry, signal });
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
    () =>
      ({
        method: 'PUT',
        headers: { authorization: `Bearer ${token}`, 'content-type': contentType, 'content-length': String(size) },
        body: Readable.toWeb(createReadStream(path)) as ReadableStream,
        duplex: 'half',
      }) as RequestInit,
    what,
    retry,
  );
}
