// Live status streams (Server-Sent Events): GET /v1/proofs/{id}/events and
// GET /v1/executions/{id}/events (docs/callers.md "Live status streams").
//
// - `event: state`: the record exactly as its GET returns it, first and on every change;
//   `event: log`: the log text appended since (in pieces of at most EVENT_LOG_MAX_BYTES,
//   read from the job's R2 chunks, never the whole log at once). The stream ends once
//   the record is terminal and the log is sent up to the length it had then (an
//   ended lease takes no more log chunks).
// - Every event's id is `<log offset>.<state hash>`: the log bytes sent so far and a
//   hash of the last record sent. A reconnect with `Last-Event-ID` resumes from that
//   offset and sends the record only if it changed: nothing is repeated. A reconnect
//   that has everything already, of a finished job, gets 204 (EventSource stops there).
// - Cost: the first read checks the API key in the same batch as the record
//   (asCaller: 401 and 404 answer as JSON, before the stream starts); then one D1
//   statement per poll, at most one poll per EVENT_POLL_MS, in the request's D1 session
//   (the nearest replica): the record with its job's log position, scoped to the API
//   key's organization, so a key revoked meanwhile finds nothing and ends the stream.
// - Open streams are capped per API key and per organization (MAX_STREAMS_PER_KEY,
//   MAX_STREAMS_PER_ORG): the first read's batch also inserts the stream's row in
//   event_streams, conditionally on both counts being under their caps (so concurrent
//   opens cannot pass them), 429 otherwise. The row lapses STREAM_SLOT_TTL_MS after its
//   last refresh (a running stream refreshes it every STREAM_SLOT_REFRESH_MS, one D1
//   write), so a crashed Worker's rows free their slots; a stream that ends deletes it.
// - A stream's polls count against the `reads` rate limits of its key and organization:
//   one request per EVENT_POLLS_PER_READ polls. Past either, the stream sends
//   `event: reconnect` with `retry` of the limit's period and ends.
// - A stream lasts at most EVENT_STREAM_MAX_MS and then tells the client to
//   reconnect; a comment goes out every EVENT_HEARTBEAT_MS of silence so proxies keep
//   it open; polling stops as soon as the client goes away.
import { z } from '@hono/zod-openapi';
import { and, eq, lt, lte, sql, type SQL } from 'drizzle-orm';
import type { Context } from 'hono';
import { streamSSE, type SSEStreamingApi } from 'hono/streaming';
import type { AppEnv } from '../../app-env.ts';
import type { Db } from '../../db/client.ts';
import type { Env } from '../../env.ts';
import { eventStreams, organizations } from '../../db/schema.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError, notFound } from '../../lib/errors.ts';
import { asCaller, declaredAction, orgOfKey } from '../../middleware/auth.ts';
import { countStreamReads, RATE_LIMIT_PERIOD_SECONDS } from '../../middleware/rate-limit.ts';
import { tenantLimits, type TenantLimits } from '../../jobs/settings.ts';
import { jobLogFrom } from '../../jobs/logs.ts';
import type { EventSubject, SubjectRow } from './data.ts';

/** Least time between two polls of one stream's record (one D1 statement each). */
export const EVENT_POLL_MS = 1000;
/** Longest a stream stays open; then it asks the client to reconnect (Last-Event-ID resumes it). */
export const EVENT_STREAM_MAX_MS = 15 * 60 * 1000;
/** Longest silence before a comment line keeps proxies from closing the stream. */
export const EVENT_HEARTBEAT_MS = 15_000;
/** Most log bytes read from R2 for one `log` event (whole chunks: a larger chunk goes alone). */
export const EVENT_LOG_MAX_BYTES = 64 * 1024;
/** An open stream's row in event_streams lapses this long after its last refresh. */
export const STREAM_SLOT_TTL_MS = 150_000;
/** A running stream pushes its row's expiry forward this often (one D1 write). */
export const STREAM_SLOT_REFRESH_MS = 60_000;
/** Every this many polls, a stream counts one request against its key's and organization's `reads` budgets. */
export const EVENT_POLLS_PER_READ = 10;
/** What a reconnecting EventSource waits, in ms (the SSE `retry` field of the closing event). */
const RECONNECT_RETRY_MS = 1000;

/** Where a client is: log bytes it has and the hash of the last record it got. */
export interface Position {
  offset: number;
  stateHash: string | null;
}

const EVENT_ID = /^(\d{1,15})\.([0-9a-f]{16})$/;

/** The position a `Last-Event-ID` names (null: none sent), or 400. */
export function parseLastEventId(header: string | undefined): Position | null {
  if (header === undefined || header.trim() === '') return null;
  const m = EVENT_ID.exec(header.trim());
  if (!m)
    throw new ApiError(
      400,
      'Malformed Last-Event-ID header: send back the id of the last event this stream sent you (or none to start over)',
    );
  return { offset: Number(m[1]), stateHash: m[2] };
}

export const eventId = (p: { offset: number; stateHash: string }) => `${p.offset}.${p.stateHash}`;
const stateHashOf = async (json: string) => (await sha256Hex(json)).slice(0, 16);

/**
 * The statements that take an event stream slot for API key `keyHash`, batched with the
 * stream's first read, by name: `lapsed`, the key's lapsed rows go; `counts`, the open
 * counts (for the 429's words); `slot`, the row, inserted only while the key and its
 * organization are under their caps: one conditional statement, so concurrent opens
 * cannot pass them. The insert returns the row's id when it took the slot.
 */
function takeSlot(db: Db, org: SQL<string>, keyHash: string, id: string, now: number, limits: TenantLimits) {
  const open = (where: SQL) => sql<number>`(SELECT count(*) FROM ${eventStreams} WHERE ${where} AND ${eventStreams.expires_at} > ${now})`;
  const ofKey = open(sql`${eventStreams.key_hash} = ${keyHash}`);
  const ofOrg = open(sql`${eventStreams.org_id} = ${org}`);
  return {
    lapsed: db.delete(eventStreams).where(and(eq(eventStreams.key_hash, keyHash), lte(eventStreams.expires_at, now))),
    counts: db
      .select({ key: ofKey.as('key_streams'), org: ofOrg.as('org_streams') })
      .from(organizations)
      .where(eq(organizations.id, org)),
    slot: db
      .insert(eventStreams)
      .select(
        db
          .select({
            id: sql<string>`${id}`.as('id'),
            org_id: organizations.id,
            key_hash: sql<string>`${keyHash}`.as('key_hash'),
            expires_at: sql<number>`${now + STREAM_SLOT_TTL_MS}`.as('expires_at'),
          })
          .from(organizations)
          .where(and(eq(organizations.id, org), lt(ofKey, limits.MAX_STREAMS_PER_KEY), lt(ofOrg, limits.MAX_STREAMS_PER_ORG))),
      )
      .onConflictDoNothing()
      .returning({ id: eventStreams.id }),
  };
}

/**
 * What a stream's polls cost its API key and organization: every EVENT_POLLS_PER_READ-th
 * poll counts one request against both `reads` budgets; past either, why the stream ends.
 */
export function pollBudget(env: Env, keyHash: string, orgId: string) {
  return async (polls: number): Promise<string | null> => {
    if (polls % EVENT_POLLS_PER_READ !== 0 || (await countStreamReads(env, keyHash, orgId))) return null;
    return `This stream's reads (one request per ${EVENT_POLLS_PER_READ} polls) used up the "reads" rate limit of this API key or its organization: reconnect with Last-Event-ID after ${RATE_LIMIT_PERIOD_SECONDS} seconds`;
  };
}

/** A stream of `subject` record `id`'s events, for the authenticated route that serves it. */
export async function eventStream(c: Context<AppEnv>, subject: EventSubject, id: string): Promise<Response> {
  const resume = parseLastEventId(c.req.header('Last-Event-ID'));
  const limits = tenantLimits(c.env);
  const hash = c.get('apiKeyHash');
  const slotId = crypto.randomUUID();
  // The first read: the key, the record and the stream's slot in one batch (on the
  // primary, as it writes; 404 confirmed there).
  const {
    record: rows,
    counts,
    slot,
  } = await asCaller(
    c,
    (org) => ({ record: subject.query(c.get('db'), org, id), ...takeSlot(c.get('db'), org, hash, slotId, Date.now(), limits) }),
    ({ record }) => record.length > 0,
  );
  const primary = c.get('sessions').primary();
  const release = () =>
    primary
      .delete(eventStreams)
      .where(eq(eventStreams.id, slotId))
      .run()
      .catch((err: unknown) =>
        console.error(JSON.stringify({ level: 'warn', msg: 'event stream slot not released; it lapses', error: String(err) })),
      );
  /** Runs `p` past the response where the Worker can (a test calling app.fetch directly has no execution context). */
  const background = (p: Promise<unknown>) => {
    try {
      c.executionCtx.waitUntil(p);
    } catch {
      // It runs on its own.
    }
  };
  const first = rows[0];
  const refuse = (res: Response | Error) => {
    if (slot.length) background(release());
    if (res instanceof Error) throw res;
    return res;
  };
  if (!first) return refuse(notFound(subject.name));
  const { json, terminal } = subject.record(first);
  if (resume && terminal && resume.stateHash === (await stateHashOf(json)) && resume.offset >= (first.log_bytes ?? 0))
    return refuse(c.body(null, 204));
  if (!slot.length) {
    const [n] = counts;
    const keyFull = !n || n.key >= limits.MAX_STREAMS_PER_KEY;
    throw new ApiError(
      429,
      keyFull
        ? `Too many open event streams: this API key has ${n?.key ?? limits.MAX_STREAMS_PER_KEY} open, the most is ${limits.MAX_STREAMS_PER_KEY}. Close one (or let it end) and retry.`
        : `Too many open event streams: this API key's organization has ${n.org} open, the most is ${limits.MAX_STREAMS_PER_ORG}. Close one (or let it end) and retry.`,
      { 'Retry-After': String(RATE_LIMIT_PERIOD_SECONDS) },
    );
  }
  // Later polls: the record alone, in the request's session. Scoped to the key's
  // organization by a subquery, it is also the key's check: revoked, or its creator
  // demoted below the route's action, it finds nothing.
  const pollDb = c.get('db');
  const org = orgOfKey(hash, declaredAction(c));
  const orgId = c.get('caller').orgId;
  let refreshed = Date.now();
  const budget = pollBudget(c.env, hash, orgId);
  const afterPoll = async (polls: number): Promise<string | null> => {
    if (Date.now() - refreshed >= STREAM_SLOT_REFRESH_MS) {
      refreshed = Date.now();
      await primary
        .update(eventStreams)
        .set({ expires_at: refreshed + STREAM_SLOT_TTL_MS })
        .where(eq(eventStreams.id, slotId))
        .run();
    }
    return budget(polls);
  };
  return streamSSE(c, async (stream) => {
    try {
      await follow(stream, {
        subject,
        first,
        from: resume ?? { offset: 0, stateHash: null },
        poll: () => subject.query(pollDb, org, id).all(),
        readLog: (jobId, offset, maxBytes, logBytes) => jobLogFrom(pollDb, c.env.ARTIFACTS, jobId, offset, maxBytes, logBytes),
        afterPoll,
        signal: c.req.raw.signal,
        path: c.req.path,
      });
    } finally {
      const released = release();
      background(released);
      await released;
    }
  });
}

/** Time as a stream sees it: real in the Worker; a test may run 15 minutes in a moment. */
export interface StreamClock {
  now(): number;
  /** Resolves after `ms`, or at once when the client goes away (`stop`). */
  sleep(ms: number, stop: StopSignal): Promise<void>;
}

const realClock: StreamClock = { now: () => Date.now(), sleep: (ms, stop) => stop.sleep(ms) };

export interface Follow {
  subject: EventSubject;
  /** The record as the first read found it. */
  first: SubjectRow;
  /** Where the client is (a resumed stream), or the start. */
  from: Position;
  /** One D1 statement: the record and its log position now. */
  poll: () => Promise<SubjectRow[]>;
  /** A piece of the job's log from `offset` (src/jobs/logs.ts jobLogFrom: one D1 round trip for the index and the log's store, then R2). */
  readLog: (jobId: string | undefined, offset: number, maxBytes: number, logBytes: number) => Promise<{ text: string; next: number }>;
  /**
   * After each poll (`polls` so far): keeps the stream's slot and counts its reads. A
   * string ends the stream with `event: reconnect` carrying it, `retry` a rate-limit period.
   */
  afterPoll?: (polls: number) => Promise<string | null>;
  signal?: AbortSignal;
  path: string;
  clock?: StreamClock;
}

/** The stream's loop: send what changed, wait for the next poll, read again. */
export async function follow(stream: SSEStreamingApi, f: Follow): Promise<void> {
  const clock = f.clock ?? realClock;
  const started = clock.now();
  let lastWrite = started;
  let lastRead = started;
  let polls = 0;
  let row = f.first;
  let sentJson: string | null = null;
  const sent: Position = { ...f.from };
  const gone = stopSignal(stream, f.signal);
  const send = async (event: string, data: string, extra: { retry?: number } = {}) => {
    await stream.writeSSE({ event, data, id: eventId({ offset: sent.offset, stateHash: sent.stateHash ?? '0'.repeat(16) }), ...extra });
    lastWrite = clock.now();
  };
  try {
    for (;;) {
      const { json, terminal } = f.subject.record(row);
      if (json !== sentJson) {
        const hash = await stateHashOf(json);
        if (hash !== sent.stateHash) {
          sent.stateHash = hash;
          await send('state', json);
        }
        sentJson = json;
      }
      const logEnd = row.log_bytes ?? 0;
      while (sent.offset < logEnd && !gone.stopped) {
        const piece = await f.readLog(row.log_job_id ?? undefined, sent.offset, EVENT_LOG_MAX_BYTES, logEnd);
        if (piece.next <= sent.offset) break; // not readable yet: the next poll tries again
        sent.offset = piece.next;
        await send('log', piece.text);
      }
      if (terminal && sent.offset >= logEnd) return;
      if (gone.stopped) return;
      if (clock.now() - started >= EVENT_STREAM_MAX_MS) {
        await send(
          'reconnect',
          JSON.stringify({
            detail: `This stream ends after ${EVENT_STREAM_MAX_MS / 60_000} minutes: reconnect with Last-Event-ID to go on`,
          }),
          { retry: RECONNECT_RETRY_MS },
        );
        return;
      }
      // Wait for the next poll, keeping the connection alive meanwhile.
      for (let now = clock.now(); now - lastRead < EVENT_POLL_MS && !gone.stopped; now = clock.now()) {
        if (now - lastWrite >= EVENT_HEARTBEAT_MS) {
          await stream.write(': keep-alive\n\n');
          lastWrite = clock.now();
          continue;
        }
        await clock.sleep(Math.min(EVENT_POLL_MS - (now - lastRead), EVENT_HEARTBEAT_MS - (now - lastWrite)), gone);
      }
      if (gone.stopped) return;
      // The next wait counts from when this read ended, so reads start at least
      // EVENT_POLL_MS apart however a clock that only moves on I/O (workerd's) reads them.
      const [next] = await f.poll();
      lastRead = clock.now();
      const stop = await f.afterPoll?.(++polls);
      if (stop) {
        await send('reconnect', JSON.stringify({ detail: stop }), { retry: RATE_LIMIT_PERIOD_SECONDS * 1000 });
        return;
      }
      if (!next) {
        // Records are never deleted: the API key was revoked meanwhile.
        await send(
          'error',
          JSON.stringify({
            detail: 'This API key stopped working while the stream was open (revoked, or its creator left the organization)',
          }),
        );
        return;
      }
      row = next;
    }
  } catch (err) {
    if (gone.stopped) return;
    console.error(
      JSON.stringify({ level: 'error', msg: 'event stream failed; asking the client to reconnect', path: f.path, error: String(err) }),
    );
    await send('reconnect', JSON.stringify({ detail: 'The stream was interrupted: reconnect with Last-Event-ID to go on' }), {
      retry: RECONNECT_RETRY_MS,
    }).catch(() => {});
  }
}

export type StopSignal = ReturnType<typeof stopSignal>;

/** Whether the client went away (the response stream was canceled, or the request aborted), and a sleep that ends when it does. */
function stopSignal(stream: SSEStreamingApi, signal: AbortSignal | undefined) {
  const wakers = new Set<() => void>();
  const state = {
    stopped: false,
    sleep(ms: number) {
      if (state.stopped || ms <= 0) return Promise.resolve();
      return new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          wakers.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, ms);
        wakers.add(wake);
      });
    },
  };
  const stop = () => {
    state.stopped = true;
    for (const wake of [...wakers]) wake();
  };
  stream.onAbort(stop);
  signal?.addEventListener('abort', stop);
  return state;
}

// ---------------------------------------------------------------------------
// OpenAPI of the two routes.

export const EventStreamHeaders = z.object({
  'Last-Event-ID': z.string().optional().openapi({
    description: 'The id of the last event received: the stream resumes after it, without repeats',
    example: '1536.9f86d081884c7d65',
  }),
});

/** The description and responses of a record's event stream route. */
export function eventStreamDoc(record: string, terminal: string) {
  const example = [
    `event: state`,
    `data: {"id":"…","state":"Executing",…}`,
    `id: 0.5e2bf5a1d3c07c44`,
    ``,
    `event: log`,
    `data: [agent] attempt 1 …`,
    `id: 58.5e2bf5a1d3c07c44`,
    ``,
    `: keep-alive`,
    ``,
  ].join('\n');
  return {
    description: [
      `Server-Sent Events (text/event-stream) following one ${record} until it ends: \`event: state\` carries the ${record} exactly as its GET returns it, first and on every change; \`event: log\` carries the log text appended since the previous event (line breaks as LF).`,
      `The stream ends after the terminal state (${terminal}) and the rest of the log. Every event has an \`id\` (\`<log offset>.<state hash>\`): reconnect with it as \`Last-Event-ID\` to resume without repeats; a reconnect to a finished ${record} that has everything already gets 204.`,
      `After ${EVENT_STREAM_MAX_MS / 60_000} minutes the stream sends \`event: reconnect\` and closes: reconnect with Last-Event-ID. A comment line (\`: keep-alive\`) is sent after ${EVENT_HEARTBEAT_MS / 1000} s of silence. \`event: error\` (then the end) if the API key is revoked meanwhile.`,
      `The service reads the ${record} at most once a second per open stream.`,
    ].join('\n\n'),
    responses: {
      200: { description: 'The event stream', content: { 'text/event-stream': { schema: z.string().openapi({ example }) } } },
      204: { description: `Resumed after the end: the ${record} is finished and the Last-Event-ID has all of it` },
    },
  };
}
