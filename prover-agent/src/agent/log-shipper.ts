// Ships a job's log lines to the service in ordered chunks (sequence + byte offset),
// batching lines for a moment so a chatty engine does not make a request per line.
// A chunk is resent until accepted; the service drops repeats, so nothing is
// duplicated and nothing is reordered.
//
// What it holds is bounded, whatever the engine prints (issue 28):
//   a line       at most MAX_LOG_LINE_CHARS characters; a longer one is cut, with a mark
//   the backlog  at most MAX_HELD_BYTES waiting to be sent or in flight: past that, lines
//                are left out until the service has taken what was sent
//   the cap      a job's log has caps on the service (README "Limits"), which the claim
//                states (LogPosition.max_bytes, max_chunks). The shipper keeps
//                END_RESERVE_BYTES and one chunk of them for the attempt's end and, once
//                the rest is used, leaves out what follows, so the log still ends with
//                the attempt's last lines (its error, how it ended). A service that
//                states no caps answers 413 past them: then nothing more is sent, and
//                the service's own truncation marker ends the log.
// What is left out is said where it was: one line `[agent] N lines (B bytes) left out
// here: <why>`, then the last lines before the gap closed (at most TAIL_BYTES of them;
// at the attempt's end, its last lines).
import { MAX_LOG_LINE_CHARS } from '../engine/types.ts';
import { cutLine } from '../lib/lines.ts';
import type { LogChunk, LogPosition } from '../protocol.ts';
import type { LeaseClient } from './service-client.ts';
import type { Logger } from './log.ts';
import { HttpError } from './http.ts';

const FLUSH_MS = 500;
/** A chunk is sent once this much waits; it is at most this and one line. */
const MAX_CHUNK_BYTES = 256 * 1024;
/**
 * Log text held at once, waiting or in flight: the bound on a job's log in the agent's
 * memory. The service's default cap on a whole log (README "Limits"), so that under it
 * a burst of output is left out for the cap, which keeps the attempt's end, not for
 * the backlog.
 */
export const MAX_HELD_BYTES = 4 * 1024 * 1024;
/** The last lines of a gap kept to follow its note: at least the last line, whatever its size. */
export const TAIL_BYTES = 64 * 1024;
/** Room kept under the log's byte cap for the attempt's end: a gap's note and its tail. */
export const END_RESERVE_BYTES = TAIL_BYTES + 4 * MAX_LOG_LINE_CHARS;

const byteLength = (s: string) => Buffer.byteLength(s);

/** Lines left out: how many, and the last ones. */
class Gap {
  lines = 0;
  bytes = 0;
  readonly tail: string[] = [];
  tailBytes = 0;
  why: 'cap' | 'backlog';
  constructor(why: 'cap' | 'backlog') {
    this.why = why;
  }

  add(line: string, bytes: number): void {
    this.lines++;
    this.bytes += bytes;
    this.tail.push(line);
    this.tailBytes += bytes;
    while (this.tailBytes > TAIL_BYTES && this.tail.length > 1) this.tailBytes -= byteLength(this.tail.shift()!);
  }

  /** The note and the tail, as the lines that stand for the gap in the log (the tail alone when nothing was left out). */
  asLines(caps: string): string[] {
    const omitted = this.lines - this.tail.length;
    if (omitted === 0) return this.tail;
    const why =
      this.why === 'cap'
        ? `this job's log is capped (${caps}) and the rest is kept for the attempt's end`
        : `the engine printed faster than the service took its log`;
    const note = `[agent] ${omitted} lines (${this.bytes - this.tailBytes} bytes) left out here: ${why}; the ${this.tail.length} lines that came after them follow\n`;
    return [note, ...this.tail];
  }
}

export class LogShipper {
  private seq: number;
  private offset: number;
  private pending: string[] = [];
  private pendingBytes = 0;
  /** Bytes sent and not answered yet. */
  private inFlight = 0;
  /** Bytes of this attempt handed over so far (sent, in flight or pending): what counts against the cap. */
  private taken = 0;
  /** Chunks of this attempt sent so far. */
  private chunks = 0;
  /** Bytes and chunks this attempt may use before its end (the rest is the end's reserve); Infinity when the service states no cap. */
  private readonly roomBytes: number;
  private readonly roomChunks: number;
  private readonly capsText: string;
  private gap: Gap | null = null;
  private timer: NodeJS.Timeout | null = null;
  private sending: Promise<void> = Promise.resolve();
  /** The service refused the log as full (413): nothing more is sent. */
  private capped = false;
  private readonly lease: LeaseClient;
  private readonly log: Logger;

  constructor(lease: LeaseClient, start: LogPosition, log: Logger) {
    this.lease = lease;
    this.seq = start.seq;
    this.offset = start.offset;
    this.log = log;
    this.roomBytes = start.max_bytes === undefined ? Infinity : start.max_bytes - start.offset - END_RESERVE_BYTES;
    this.roomChunks = start.max_chunks === undefined ? Infinity : start.max_chunks - start.seq - 1;
    this.capsText = `${start.max_bytes} bytes, ${start.max_chunks} chunks`;
  }

  /** Bytes of log text held now (waiting, in flight, a gap's tail): what the bounds above keep small. */
  get heldBytes(): number {
    return this.pendingBytes + this.inFlight + (this.gap?.tailBytes ?? 0);
  }

  /** Adds `text`: one line or several, each cut at MAX_LOG_LINE_CHARS. */
  line(text: string): void {
    if (this.capped) return;
    this.closeBacklogGap();
    const lines = (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
    for (const l of lines) this.add(cutLine(l, MAX_LOG_LINE_CHARS) + '\n');
    this.scheduleFlush();
  }

  private add(line: string): void {
    const bytes = byteLength(line);
    if (!this.gap) {
      if (this.taken + bytes > this.roomBytes || this.chunks >= this.roomChunks) this.gap = new Gap('cap');
      else if (this.pendingBytes + this.inFlight + bytes > MAX_HELD_BYTES) this.gap = new Gap('backlog');
      else return this.hold(line, bytes);
    }
    this.gap.add(line, bytes);
  }

  private hold(line: string, bytes: number): void {
    this.pending.push(line);
    this.pendingBytes += bytes;
    this.taken += bytes;
  }

  private scheduleFlush(): void {
    if (this.pendingBytes >= MAX_CHUNK_BYTES) void this.flush();
    else if (this.pendingBytes > 0) this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS);
  }

  /**
   * A backlog gap closes once the service has taken half of what was held: its note and
   * tail take its place in the log. If they no longer fit under the cap, it becomes the
   * cap's gap, which stays open to the attempt's end.
   */
  private closeBacklogGap(): void {
    const gap = this.gap;
    if (gap?.why !== 'backlog' || this.pendingBytes + this.inFlight > MAX_HELD_BYTES / 2) return;
    const lines = gap.asLines(this.capsText);
    const bytes = lines.reduce((n, l) => n + byteLength(l), 0);
    if (this.taken + bytes > this.roomBytes || this.chunks >= this.roomChunks) {
      gap.why = 'cap';
      return;
    }
    this.gap = null;
    for (const l of lines) this.hold(l, byteLength(l));
  }

  /**
   * What is not sent yet, as the chunk that goes with the call that ends the lease
   * (protocol LeaseEnding), once the chunks in flight have landed: with a gap's note and
   * tail (the attempt's last lines) in the room kept for them. It stays pending: if
   * that call fails, the next one (a /fail after a failed /complete) carries it again,
   * and the service keeps one copy. Text too big to ride along is sent on its own first.
   */
  async last(): Promise<LogChunk | undefined> {
    // Until nothing is in flight (a chunk that lands may start the next: see flush()).
    for (let s = this.sending; ; s = this.sending) {
      await s;
      if (s === this.sending) break;
    }
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    const gap = this.gap;
    if (gap) {
      const end = gap.asLines(this.capsText);
      if (this.pendingBytes + end.reduce((n, l) => n + byteLength(l), 0) > MAX_CHUNK_BYTES) await this.flush();
      this.gap = null;
      for (const l of end) this.hold(l, byteLength(l));
    } else if (this.pendingBytes > MAX_CHUNK_BYTES) await this.flush();
    return this.pending.length && !this.capped ? { seq: this.seq, offset: this.offset, text: this.pending.join('') } : undefined;
  }

  /** Sends everything written so far; resolves when the service has it. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (this.pending.length === 0 || this.capped) return this.sending;
    const text = this.pending.join('');
    const bytes = this.pendingBytes;
    this.pending = [];
    this.pendingBytes = 0;
    this.inFlight += bytes;
    this.chunks++;
    this.sending = this.sending.then(async () => {
      try {
        if (this.capped) return;
        await this.lease.logs({ seq: this.seq, offset: this.offset, text });
        this.seq += 1;
        this.offset += bytes;
      } catch (err) {
        if (err instanceof HttpError && err.status === 413) {
          this.capped = true;
          this.pending = [];
          this.pendingBytes = 0;
          this.gap = null;
          this.log.warn('job log reached its cap on the service; the rest of this attempt is not shipped', { error: String(err) });
          return;
        }
        // The lease is gone or the service refused: logs of this attempt stop here.
        this.log.warn('could not ship job logs', { error: String(err) });
      } finally {
        this.inFlight -= bytes;
        // The service caught up: what was left out meanwhile is said, and goes out with the next chunk.
        if (!this.capped && this.gap?.why === 'backlog') {
          this.closeBacklogGap();
          this.scheduleFlush();
        }
      }
    });
    return this.sending;
  }
}
