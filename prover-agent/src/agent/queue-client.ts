// The agent's presence in the fleet and its way to the jobs queue, both through the
// service: a presence report at start and then once a minute (its only D1 write while
// idle) returns the queue token that pulls and acks job notices for the next few
// minutes (the service holds the queue's credentials; the host holds none). A pull
// refused for its token (expired: the service was unreachable for minutes, or the
// agent token was revoked) reports presence at once and tries again.
import type { PresenceRequest, QueueMessage } from '../protocol.ts';
import { HttpError, type RetryPolicy } from './http.ts';
import type { ServiceClient } from './service-client.ts';

export type PulledMessage = QueueMessage;

export class FleetQueue {
  private token: { value: string; expiresAt: number } | null = null;
  private nextReportAt = 0;
  private reporting: Promise<void> | null = null;
  private readonly service: ServiceClient;
  private readonly whoAmI: PresenceRequest;
  private readonly retry: Partial<RetryPolicy>;

  constructor(service: ServiceClient, whoAmI: PresenceRequest, retry: Partial<RetryPolicy>) {
    this.service = service;
    this.whoAmI = whoAmI;
    this.retry = retry;
  }

  /**
   * Reports presence (now, or when due): who the agent is, and a fresh queue token. One
   * report at a time: the timer and a pull that both find it due share the one in flight.
   */
  async reportPresence(force = false): Promise<void> {
    if (this.reporting) return this.reporting;
    if (!force && this.token && Date.now() < this.nextReportAt) return;
    this.reporting = (async () => {
      // Due an interval after it was sent, not answered: the service takes the queue token
      // for live without a read for an interval after it issued it (before the answer came).
      const sentAt = Date.now();
      const r = await this.service.presence(this.whoAmI, this.retry);
      this.token = { value: r.queue_token, expiresAt: r.queue_token_expires_at };
      this.nextReportAt = sentAt + r.presence_interval_ms;
    })().finally(() => (this.reporting = null));
    return this.reporting;
  }

  /** Leaves the fleet: the service stops counting this agent at once (a few tries; the agent is stopping). */
  async leave(): Promise<void> {
    await this.service.leave({ agent_id: this.whoAmI.agent_id }, { attempts: 3, timeoutMs: 5_000 });
  }

  async pull(batchSize: number, visibilityTimeoutMs: number): Promise<PulledMessage[]> {
    return (
      await this.withToken((t) => this.service.pull(t, { batch_size: batchSize, visibility_timeout_ms: visibilityTimeoutMs }, this.retry))
    ).messages;
  }

  async ack(acks: string[], retries: { lease_id: string; delay_seconds?: number }[]): Promise<void> {
    if (acks.length === 0 && retries.length === 0) return;
    await this.withToken((t) => this.service.ack(t, { acks: acks.map((lease_id) => ({ lease_id })), retries }, this.retry));
  }

  private async withToken<T>(call: (token: string) => Promise<T>): Promise<T> {
    await this.reportPresence();
    try {
      return await call(this.token!.value);
    } catch (err) {
      if (!(err instanceof HttpError && err.status === 401)) throw err;
      await this.reportPresence(true);
      return call(this.token!.value);
    }
  }
}

/** The job notice a message carries. `json` content comes base64-encoded; `text` does not. */
export function decodeNotice(m: PulledMessage): { job_id?: string; kind?: string } {
  const type = m.metadata?.['CF-Content-Type'] ?? 'json';
  try {
    const text = type === 'text' ? m.body : Buffer.from(m.body, 'base64').toString('utf8');
    const v = JSON.parse(text) as unknown;
    return v && typeof v === 'object' ? v : {};
  } catch {
    return {};
  }
}
