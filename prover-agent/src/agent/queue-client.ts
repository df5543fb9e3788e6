// The Cloudflare Queues HTTP pull-consumer API: pull a batch with a visibility
// timeout, then ack or retry each message by lease id. In production the base URL is
// https://api.cloudflare.com/client/v4 with an API token that has Account › Queues ›
// Edit; locally the Worker serves the same two endpoints (DEV_QUEUE_EMULATION).
import { fetchWithRetry, type RetryPolicy, DEFAULT_RETRY } from './http.ts';

export interface PulledMessage {
  id: string;
  body: string;
  attempts: number;
  lease_id: string;
  timestamp_ms: number;
  metadata?: Record<string, string>;
}

export interface QueueClientOptions {
  baseUrl: string;
  accountId: string;
  queueId: string;
  token: string;
}

export class QueueClient {
  private readonly url: string;
  private readonly token: string;
  private readonly retry: RetryPolicy;

  constructor(o: QueueClientOptions, retry: Partial<RetryPolicy> = {}) {
    this.url = `${o.baseUrl.replace(/\/+$/, '')}/accounts/${encodeURIComponent(o.accountId)}/queues/${encodeURIComponent(o.queueId)}/messages`;
    this.token = o.token;
    this.retry = { ...DEFAULT_RETRY, ...retry };
  }

  private async post<T>(action: 'pull' | 'ack', body: unknown, policy?: Partial<RetryPolicy>): Promise<T> {
    const res = await fetchWithRetry(
      `${this.url}/${action}`,
      () => ({ method: 'POST', headers: { authorization: `Bearer ${this.token}`, 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      `queue ${action}`,
      { ...this.retry, ...policy },
    );
    const json = (await res.json()) as { success: boolean; errors?: { message: string }[]; result: T };
    if (!json.success) throw new Error(`queue ${action}: ${json.errors?.map((e) => e.message).join('; ') || 'unsuccessful'}`);
    return json.result;
  }

  async pull(batchSize: number, visibilityTimeoutMs: number, policy?: Partial<RetryPolicy>): Promise<PulledMessage[]> {
    const result = await this.post<{ messages?: PulledMessage[] }>('pull', { batch_size: batchSize, visibility_timeout_ms: visibilityTimeoutMs }, policy);
    return result.messages ?? [];
  }

  async ack(acks: string[], retries: { lease_id: string; delay_seconds?: number }[]): Promise<void> {
    if (acks.length === 0 && retries.length === 0) return;
    await this.post('ack', { acks: acks.map((lease_id) => ({ lease_id })), retries });
  }
}

/** The job notice a message carries. `json` content comes base64-encoded; `text` does not. */
export function decodeNotice(m: PulledMessage): { job_id?: string; kind?: string } {
  const type = m.metadata?.['CF-Content-Type'] ?? 'json';
  try {
    const text = type === 'text' ? m.body : Buffer.from(m.body, 'base64').toString('utf8');
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' ? (v as { job_id?: string; kind?: string }) : {};
  } catch {
    return {};
  }
}
