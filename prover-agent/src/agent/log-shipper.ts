// Ships a job's log lines to the service in ordered chunks (sequence + byte offset),
// batching lines for a moment so a chatty engine does not make a request per line.
// A chunk is resent until accepted; the service drops repeats, so nothing is
// duplicated and nothing is reordered. A job's log has a cap on the service (413 past
// it, README "Limits"): then the rest of this attempt's lines are dropped, not sent.
import type { LogChunk } from '../protocol.ts';
import type { LeaseClient } from './service-client.ts';
import type { Logger } from './log.ts';
import { HttpError } from './http.ts';

const FLUSH_MS = 500;
const MAX_CHUNK_BYTES = 256 * 1024;

export class LogShipper {
  private seq: number;
  private offset: number;
  private pending = '';
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();
  /** The service refused the log as full (413): nothing more is sent. */
  private capped = false;
  private readonly lease: LeaseClient;
  private readonly log: Logger;

  constructor(lease: LeaseClient, start: { seq: number; offset: number }, log: Logger) {
    this.lease = lease;
    this.seq = start.seq;
    this.offset = start.offset;
    this.log = log;
  }

  line(text: string): void {
    if (this.capped) return;
    this.pending += text.endsWith('\n') ? text : text + '\n';
    if (Buffer.byteLength(this.pending) >= MAX_CHUNK_BYTES) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /**
   * What is not sent yet, as the chunk that goes with the call that ends the lease
   * (protocol LeaseEnding), once the chunks in flight have landed. It stays pending: if
   * that call fails, the next one (a /fail after a failed /complete) carries it again,
   * and the service keeps one copy. Text too big to ride along is sent on its own first.
   */
  async last(): Promise<LogChunk | undefined> {
    if (Buffer.byteLength(this.pending) > MAX_CHUNK_BYTES) await this.flush();
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.sending;
    return this.pending && !this.capped ? { seq: this.seq, offset: this.offset, text: this.pending } : undefined;
  }

  /** Sends everything written so far; resolves when the service has it. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const text = this.pending;
    this.pending = '';
    if (text) {
      this.sending = this.sending.then(async () => {
        const chunk = { seq: this.seq, offset: this.offset, text };
        try {
          await this.lease.logs(chunk);
          this.seq += 1;
          this.offset += Buffer.byteLength(text);
        } catch (err) {
          if (err instanceof HttpError && err.status === 413) {
            this.capped = true;
            this.pending = '';
            this.log.warn('job log reached its cap on the service; the rest of this attempt is not shipped', { error: String(err) });
            return;
          }
          // The lease is gone or the service refused: logs of this attempt stop here.
          this.log.warn('could not ship job logs', { error: String(err) });
        }
      });
    }
    return this.sending;
  }
}
