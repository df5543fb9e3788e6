// The job log shipper (prover-agent/src/agent/log-shipper.ts) against a lease client
// that keeps what it is sent, as the service does (in order, by sequence and offset):
// what it holds stays bounded whatever it is given, and a log that reaches its cap ends
// with a line saying what was left out, followed by the attempt's last lines.
import { describe, expect, it } from 'vitest';
import { END_RESERVE_BYTES, LogShipper, MAX_HELD_BYTES } from '../../prover-agent/src/agent/log-shipper.ts';
import { HttpError } from '../../prover-agent/src/agent/http.ts';
import { createLogger } from '../../prover-agent/src/agent/log.ts';
import type { LeaseClient } from '../../prover-agent/src/agent/service-client.ts';
import { MAX_LOG_LINE_CHARS } from '../../prover-agent/src/engine/types.ts';
import { cutMark } from '../../prover-agent/src/lib/lines.ts';
import type { LogChunk, LogPosition } from '../../prover-agent/src/protocol.ts';

const quiet = createLogger('error', {}, () => true);

/**
 * A lease's log as the service keeps it: chunks appended in order (a chunk that is not
 * the next one is an error here: the shipper never sends one), refused with 413 past
 * `caps`. `hold()` makes the next sends wait until `release()`.
 */
function serviceLog(start: LogPosition, caps?: { bytes: number; chunks: number }) {
  let text = '';
  let seq = start.seq;
  let offset = start.offset;
  let gate: Promise<void> | null = null;
  let open = () => {};
  const append = (chunk: LogChunk) => {
    if (chunk.seq !== seq || chunk.offset !== offset)
      throw new Error(`out of order: ${chunk.seq}/${chunk.offset}, expected ${seq}/${offset}`);
    const bytes = Buffer.byteLength(chunk.text);
    if (caps && (offset + bytes > caps.bytes || seq + 1 > caps.chunks)) throw new HttpError(413, 'log cap', 'logs');
    text += chunk.text;
    seq += 1;
    offset += bytes;
  };
  const lease = {
    async logs(chunk: LogChunk) {
      if (gate) await gate;
      append(chunk);
      return { accepted: 'appended' };
    },
  } as unknown as LeaseClient;
  return {
    lease,
    /** The log after the lease's ending carried `last` (as /complete or /fail would). */
    ended: (last: LogChunk | undefined) => {
      if (last) append(last);
      return { text, bytes: offset, chunks: seq };
    },
    hold: () => {
      gate = new Promise<void>((resolve) => (open = resolve));
    },
    release: () => {
      gate = null;
      open();
    },
  };
}

describe('job log shipper', () => {
  it('cuts a line past MAX_LOG_LINE_CHARS, with a mark, and keeps every line of a multi-line text', async () => {
    const service = serviceLog({ seq: 0, offset: 0 });
    const logs = new LogShipper(service.lease, { seq: 0, offset: 0 }, quiet);
    logs.line('y'.repeat(MAX_LOG_LINE_CHARS * 3));
    logs.line('first\nsecond\n');
    const { text } = service.ended(await logs.last());
    expect(text).toBe(`${'y'.repeat(MAX_LOG_LINE_CHARS)}${cutMark(MAX_LOG_LINE_CHARS)}\nfirst\nsecond\n`);
  });

  it('a log that reaches its cap ends with a line saying what was left out, then the attempt’s last lines, within the cap', async () => {
    const start = { seq: 2, offset: 1000, max_bytes: 512 * 1024, max_chunks: 100 };
    const service = serviceLog(start, { bytes: start.max_bytes, chunks: start.max_chunks });
    const logs = new LogShipper(service.lease, start, quiet);
    logs.line('first line');
    for (let i = 0; i < 20_000; i++) logs.line(`guest line ${i} ${'z'.repeat(100)}`);
    logs.line('error: the guest panicked');
    const { text, bytes, chunks } = service.ended(await logs.last());
    expect(bytes).toBeLessThanOrEqual(start.max_bytes);
    expect(chunks).toBeLessThanOrEqual(start.max_chunks);
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toBe('first line');
    expect(lines.at(-1)).toBe('error: the guest panicked');
    const note = lines.findIndex((l) => l.startsWith('[agent] '));
    expect(lines[note]).toMatch(/^\[agent\] \d+ lines \(\d+ bytes\) left out here: this job's log is capped \(524288 bytes, 100 chunks\)/);
    // The note counts what is missing: the lines before it, the left out and the ones after it are all the lines given.
    const omitted = Number(/\] (\d+) lines/.exec(lines[note])![1]);
    expect(note + omitted + (lines.length - note - 1)).toBe(20_002);
    // What came after the gap is the end of what was given, in order.
    expect(lines[note + 1]).toMatch(/^guest line \d+ /);
    expect(Number(lines.at(-2)!.split(' ')[2])).toBe(19_999);
    // The room kept for the end was used, not more: the log is full to within the reserve.
    expect(bytes).toBeGreaterThan(start.max_bytes - END_RESERVE_BYTES);
  });

  it('keeps a chunk for the end when the log runs out of chunks first', async () => {
    const start = { seq: 0, offset: 0, max_bytes: 1 << 30, max_chunks: 3 };
    const service = serviceLog(start, { bytes: start.max_bytes, chunks: start.max_chunks });
    const logs = new LogShipper(service.lease, start, quiet);
    for (const chunk of ['chunk 0', 'chunk 1']) {
      logs.line(chunk);
      await logs.flush();
    }
    for (let i = 0; i < 200; i++) logs.line(`later ${i} ${'v'.repeat(1000)}`);
    logs.line('the end');
    const { text, chunks } = service.ended(await logs.last());
    expect(chunks).toBe(3);
    const lines = text.trimEnd().split('\n');
    expect(lines.slice(0, 2)).toEqual(['chunk 0', 'chunk 1']);
    expect(lines[2]).toMatch(/^\[agent\] \d+ lines \(\d+ bytes\) left out here: this job's log is capped \(1073741824 bytes, 3 chunks\)/);
    expect(lines[3]).toMatch(/^later \d+ v/);
    expect(lines.at(-2)).toMatch(/^later 199 v/);
    expect(lines.at(-1)).toBe('the end');
  });

  it('holds a bounded number of bytes while the service is slow, says what it left out, and catches up', async () => {
    const service = serviceLog({ seq: 0, offset: 0 });
    const logs = new LogShipper(service.lease, { seq: 0, offset: 0 }, quiet);
    service.hold();
    let most = 0;
    for (let i = 0; i < 50_000; i++) {
      logs.line(`line ${i} ${'w'.repeat(200)}`);
      most = Math.max(most, logs.heldBytes);
    }
    // 10 MB given while nothing was taken: at most MAX_HELD_BYTES waited, and the gap's tail.
    expect(most).toBeLessThanOrEqual(MAX_HELD_BYTES + 128 * 1024);
    service.release();
    await logs.flush();
    logs.line('after the gap');
    const { text } = service.ended(await logs.last());
    const lines = text.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^line 0 /);
    expect(lines.find((l) => l.startsWith('[agent] '))).toMatch(/left out here: the engine printed faster than the service took its log/);
    expect(lines.at(-1)).toBe('after the gap');
    expect(lines.at(-2)).toMatch(/^line 49999 /);
  });

  it('a service that states no caps and answers 413: nothing more is sent (its own marker ends the log)', async () => {
    const service = serviceLog({ seq: 0, offset: 0 }, { bytes: 20, chunks: 100 });
    const logs = new LogShipper(service.lease, { seq: 0, offset: 0 }, quiet);
    logs.line('fits');
    await logs.flush();
    logs.line('this line does not fit under the cap');
    await logs.flush();
    logs.line('nor does this one');
    expect(await logs.last()).toBeUndefined();
    expect(service.ended(undefined).text).toBe('fits\n');
  });
});
