// A Server-Sent Events reader for tests and benchmarks (Worker tests in workerd, e2e
// tests and benches in Node): parses a text/event-stream body as the HTML standard's
// EventSource does (https://html.spec.whatwg.org/multipage/server-sent-events.html,
// "Interpreting an event stream"), event by event, as the bytes arrive.

export interface SseEvent {
  /** `message` when the stream named none. */
  event: string;
  data: string;
  /** The `id` field of this event, if it had one. */
  id: string | undefined;
  retry: number | undefined;
}

export class SseReader {
  /** Comment lines (without their `:`), in order. */
  readonly comments: string[] = [];
  /** The last event id seen (what EventSource would send as Last-Event-ID). */
  lastEventId = '';
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();
  private buffer = '';
  private ended = false;

  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
  }

  /** The next event, or null once the stream has ended. */
  async next(): Promise<SseEvent | null> {
    let data: string[] = [];
    let event = '';
    let id: string | undefined;
    let retry: number | undefined;
    for (;;) {
      const line = await this.line();
      if (line === null) return null;
      if (line === '') {
        if (data.length === 0 && event === '' && id === undefined) continue;
        if (data.length === 0) {
          // No data: EventSource dispatches nothing, but the id still counts.
          data = [];
          event = '';
          id = undefined;
          continue;
        }
        return { event: event || 'message', data: data.join('\n'), id, retry };
      }
      if (line.startsWith(':')) {
        this.comments.push(line.slice(1).trimStart());
        continue;
      }
      const colon = line.indexOf(':');
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? '' : line.slice(colon + 1);
      if (value.startsWith(' ')) value = value.slice(1);
      if (field === 'data') data.push(value);
      else if (field === 'event') event = value;
      else if (field === 'id' && !value.includes('\0')) ((id = value), (this.lastEventId = value));
      else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value);
    }
  }

  /** Every remaining event, until the stream ends. */
  async rest(): Promise<SseEvent[]> {
    const out: SseEvent[] = [];
    for (let e = await this.next(); e; e = await this.next()) out.push(e);
    return out;
  }

  /** Stops reading: the server sees the client go away. */
  async cancel(): Promise<void> {
    this.ended = true;
    await this.reader.cancel().catch(() => {});
  }

  /** The next line (CRLF, LF or CR ended), or null at the end of the stream. */
  private async line(): Promise<string | null> {
    for (;;) {
      const m = /\r\n|\r|\n/.exec(this.buffer);
      // A CR at the very end may be the first half of a CRLF: wait for more.
      if (m && !(m[0] === '\r' && m.index === this.buffer.length - 1 && !this.ended)) {
        const line = this.buffer.slice(0, m.index);
        this.buffer = this.buffer.slice(m.index + m[0].length);
        return line;
      }
      if (this.ended) return null;
      const { done, value } = await this.reader.read();
      if (done) {
        this.ended = true;
        this.buffer += this.decoder.decode();
        // An incomplete last event is dropped, as EventSource drops it.
        if (!/[\r\n]/.test(this.buffer)) return null;
        continue;
      }
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }
}
