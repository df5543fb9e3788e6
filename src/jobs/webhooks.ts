// Sending webhooks (README "Webhooks"). Events are recorded by triggers, as delivery
// rows, in the same transaction as the state change that causes them
// (migrations/0006_webhooks.sql): nothing is sent for a change that did not commit, and
// nothing committed is lost. From there:
//
// - The transition's own batch (src/jobs/state.ts) reads back the deliveries its
//   triggers just made (unsentDeliveries: no extra round trip) and its caller sends one
//   message per delivery to the Worker's own WEBHOOKS queue (enqueueDeliveries).
// - This Worker consumes that queue (deliverWebhook): one attempt per message. The
//   first attempt renders the record exactly as GET returns it and stores the body with
//   the delivery, so every later attempt sends the same bytes, under the same
//   `webhook-id`. A 2xx delivers; anything else (a timeout, a redirect, a refused URL)
//   is retried with a delayed message, on RETRY_DELAYS_SECONDS, then the delivery fails.
// - The cron sweep (sweepWebhooks) sends a fresh message for every pending delivery
//   whose attempt is overdue (a send that failed, a message lost with a restarted
//   Worker), so a crash between commit and send delays a webhook, never loses it.
//   Receivers get at-least-once delivery and deduplicate on `webhook-id`.
//
// Every message names the attempt it is for (the delivery's `attempts` when it was
// sent); a message whose attempt was already made (a duplicate, or one the sweep
// replaced) finds the count moved on and does nothing. Each attempt is recorded by a
// batch that recognises its own attempt row, so two copies of one message racing each
// other record one attempt, move the endpoint's failure count once and schedule one retry.
import { and, asc, eq, inArray, lt, sql, type SQL } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import type { Db } from '../db/client.ts';
import { RequestSessions } from '../db/sessions.ts';
import { configs, executions, programs, projects, proofs, verifications, webhookAttempts, webhookDeliveries, webhookEndpoints } from '../db/schema.ts';
import type { Env, WebhookMessage } from '../env.ts';
import { executionRecord, proofRecord, verificationRecord } from '../lib/records.ts';
import { programRecord } from '../features/programs/schemas.ts';
import { openSecret } from '../lib/webhook-secrets.ts';
import { renderPayload } from '../lib/webhook-endpoints.ts';
import { urlPolicy, webhookUrlProblem } from '../lib/webhook-url.ts';

export type SubjectKind = (typeof webhookDeliveries.$inferSelect)['subject_kind'];
type DeliveryRow = typeof webhookDeliveries.$inferSelect;
type EndpointRow = typeof webhookEndpoints.$inferSelect;

/** Seconds before each retry: the first within 10 s, then growing, about a day in all (23 h 42 min); then the delivery fails. */
export const RETRY_DELAYS_SECONDS = [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 28800];
/** An attempt gets this long for an answer (connecting, the status and the body's first bytes). */
export const ATTEMPT_TIMEOUT_MS = 10_000;
/** Most response-body bytes kept with an attempt. */
export const RESPONSE_EXCERPT_BYTES = 512;
/** An endpoint is disabled after this many deliveries in a row ended failed (every retry spent)... */
export const DISABLE_AFTER_FAILED_DELIVERIES = 20;
/** ...or once every attempt for this long has failed. */
export const DISABLE_AFTER_FAILING_MS = 24 * 3600_000;
/** Defaults of the vars (README "Configuration"). */
export const WEBHOOK_DEFAULTS = { WEBHOOK_REQUEUE_AFTER_SECONDS: 60, WEBHOOK_RETENTION_DAYS: 30 };

export const isWebhookMessage = (body: unknown): body is WebhookMessage =>
  !!body && typeof body === 'object' && (body as { type?: unknown }).type === 'webhook' && typeof (body as { delivery_id?: unknown }).delivery_id === 'string';

/** What a message is made from: the delivery, its attempt count, and what to render (null: its payload is stored). */
export interface DeliveryRef {
  id: string;
  attempts: number;
  render: SubjectKind | null;
}

/** The reference of a delivery row. */
export const refOf = (d: Pick<DeliveryRow, 'id' | 'attempts' | 'subject_kind' | 'payload'>): DeliveryRef => ({
  id: d.id,
  attempts: d.attempts,
  render: d.payload === null ? d.subject_kind : null,
});

/** DeliveryRef.render in SQL, for statements that read delivery rows. */
const renderSql = sql<SubjectKind | null>`CASE WHEN ${webhookDeliveries.payload} IS NULL THEN ${webhookDeliveries.subject_kind} END`;

const num = (v: string | undefined, fallback: number) => (v !== undefined && v !== '' && Number.isFinite(Number(v)) ? Number(v) : fallback);
const isoNow = (ms: number) => new Date(ms).toISOString();

// ---------------------------------------------------------------------------
// Emitting: what a state change's batch reads back, and the messages its caller sends.

/**
 * The deliveries the triggers made for `subjects` (ids, as SQL) and nothing has
 * attempted yet: for the end of a state change's batch, so its caller can send them
 * without another round trip. One seek of the tiny webhook_deliveries_unsent index.
 */
export function unsentDeliveries(db: Db, subjects: SQL | string | { getSQL(): SQL }, org?: string | SQL<string>) {
  // Literal conditions, as the partial index says them (a bound 0 would not match it).
  const unsent = sql.raw(`"webhook_deliveries"."attempts" = 0 AND "webhook_deliveries"."status" = 'pending'`);
  const ids = typeof subjects === 'string' ? eq(webhookDeliveries.subject_id, subjects) : inArray(webhookDeliveries.subject_id, subjects as SQL);
  return db
    .select({ id: webhookDeliveries.id, attempts: webhookDeliveries.attempts, render: renderSql })
    .from(webhookDeliveries)
    .where(and(ids, unsent, org === undefined ? undefined : eq(webhookDeliveries.org_id, org)));
}

const message = (d: DeliveryRef): WebhookMessage => ({ type: 'webhook', delivery_id: d.id, attempt: d.attempts, ...(d.render ? { render: d.render } : {}) });

/**
 * One queue message per delivery, due now (or after `delaySeconds`). A failed send is
 * logged, not raised: the delivery is committed, and the sweep sends it when it is overdue.
 */
export async function enqueueDeliveries(env: Env, deliveries: readonly DeliveryRef[], delaySeconds = 0): Promise<void> {
  for (let i = 0; i < deliveries.length; i += 100) {
    const chunk = deliveries.slice(i, i + 100);
    try {
      await env.WEBHOOKS.sendBatch(chunk.map((d) => ({ body: message(d), contentType: 'json', ...(delaySeconds > 0 ? { delaySeconds } : {}) })));
    } catch (err) {
      console.error(JSON.stringify({ level: 'warn', msg: 'webhook messages not sent; the sweep sends them when due', deliveries: chunk.map((d) => d.id), error: String(err) }));
    }
  }
}

/** Sends the deliveries a request's batch emitted once the answer is on its way (the sweep covers a lost send). */
export function enqueueAfterResponse(c: { env: Env; executionCtx: { waitUntil(p: Promise<unknown>): void } }, deliveries: readonly DeliveryRef[]): void {
  if (deliveries.length === 0) return;
  const sending = enqueueDeliveries(c.env, deliveries);
  try {
    c.executionCtx.waitUntil(sending);
  } catch {
    // No execution context (a test calling app.request directly): it runs on its own.
  }
}

// ---------------------------------------------------------------------------
// Signing (Standard Webhooks, with its reference library: pure JavaScript, no Node built-ins)

/**
 * The `webhook-signature` header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` under
 * each secret, space-separated (the current secret first; the previous one during the
 * grace after a rotation). Receivers accept a message if any signature matches.
 */
export function signatureHeader(secrets: readonly string[], id: string, timestampSeconds: number, body: string): string {
  return secrets.map((s) => new Webhook(s).sign(id, new Date(timestampSeconds * 1000), body)).join(' ');
}

/**
 * The secrets an endpoint signs with now, or null when its current one cannot be
 * decrypted (WEBHOOK_ENCRYPTION_KEY unset or changed since it was stored): the attempt
 * then fails saying so, rather than the message failing without a trace. A previous
 * secret that cannot be decrypted only loses its second signature.
 */
async function signingSecrets(env: Env, endpoint: EndpointRow, now: number): Promise<string[] | null> {
  const open = (stored: string) => openSecret(env.WEBHOOK_ENCRYPTION_KEY, endpoint.id, stored).catch(() => null);
  const current = await open(endpoint.secret);
  if (current === null) return null;
  const previous = endpoint.previous_secret && (endpoint.previous_secret_expires_at ?? 0) > now ? await open(endpoint.previous_secret) : null;
  return previous === null ? [current] : [current, previous];
}

// ---------------------------------------------------------------------------
// Payloads

/** The statements reading the record a delivery is about, while its payload is still to render (none without a kind). */
function subjectStatements(db: Db, deliveryId: string, kind: SubjectKind | undefined) {
  const subject = sql`(SELECT ${webhookDeliveries.subject_id} FROM ${webhookDeliveries} WHERE ${webhookDeliveries.id} = ${deliveryId} AND ${webhookDeliveries.payload} IS NULL)`;
  switch (kind) {
    case 'proof':
      return [db.select().from(proofs).where(eq(proofs.id, subject))] as const;
    case 'execution':
      return [db.select().from(executions).where(eq(executions.id, subject))] as const;
    case 'verification':
      return [db.select().from(verifications).where(eq(verifications.id, subject))] as const;
    case 'program': {
      const column = (c: typeof programs.project_id | typeof programs.config_id) => sql`(SELECT ${c} FROM ${programs} WHERE ${programs.id} = ${subject})`;
      return [
        db.select().from(programs).where(eq(programs.id, subject)),
        db.select().from(projects).where(eq(projects.id, column(programs.project_id))),
        db.select().from(configs).where(eq(configs.id, column(programs.config_id))),
      ] as const;
    }
    case 'test':
    case undefined:
      return [] as const;
  }
}

/** The record subjectStatements() read, as GET returns it; undefined when it is gone. */
function subjectRecord(kind: SubjectKind, rows: unknown[][]): unknown {
  const [first, project, config] = rows as [never[], never[], never[]];
  if (!first?.[0]) return undefined;
  switch (kind) {
    case 'proof':
      return proofRecord(first[0]);
    case 'execution':
      return executionRecord(first[0]);
    case 'verification':
      return verificationRecord(first[0]);
    case 'program':
      return project?.[0] && config?.[0] ? programRecord(first[0], project[0], config[0]) : undefined;
    case 'test':
      return undefined;
  }
}

// ---------------------------------------------------------------------------
// Delivering: one attempt per message

export interface AttemptResult {
  status_code: number | null;
  error: string | null;
  latency_ms: number;
  response_excerpt: string;
}

/** The first `max` bytes of a body as UTF-8 text (whole characters only); the rest is never read. */
async function excerpt(body: ReadableStream<Uint8Array> | null, max = RESPONSE_EXCERPT_BYTES): Promise<string> {
  if (!body) return '';
  const reader = body.getReader();
  const kept = new Uint8Array(max);
  let length = 0;
  try {
    while (length < max) {
      const { done, value } = await reader.read();
      if (done) break;
      const take = Math.min(value.length, max - length);
      kept.set(value.subarray(0, take), length);
      length += take;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  // stream: true leaves a character cut at the end undecoded; replacement characters can
  // make the text longer than its bytes, so it is cut again to `max` bytes of UTF-8.
  let text = new TextDecoder().decode(kept.subarray(0, length), { stream: true });
  while (new TextEncoder().encode(text).length > max) text = text.slice(0, -1);
  return text;
}

/** Sends one attempt: POST, 10 s, redirects not followed (a redirect is a failure). */
export async function sendAttempt(url: string, headers: Record<string, string>, body: string, timeoutMs = ATTEMPT_TIMEOUT_MS): Promise<AttemptResult> {
  const started = Date.now();
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal });
    const text = await excerpt(res.body);
    const latency_ms = Date.now() - started;
    if (res.status >= 300 && res.status < 400) {
      const to = res.headers.get('location');
      return { status_code: res.status, error: `redirect${to ? ` to ${to.slice(0, 200)}` : ''} not followed: give the endpoint's final URL`, latency_ms, response_excerpt: text };
    }
    return { status_code: res.status, error: res.ok ? null : `HTTP ${res.status}`, latency_ms, response_excerpt: text };
  } catch (err) {
    const latency_ms = Date.now() - started;
    const timedOut = signal.aborted || (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'));
    return { status_code: null, error: timedOut ? `no answer within ${timeoutMs / 1000} s` : `request failed: ${String(err instanceof Error ? err.message : err).slice(0, 300)}`, latency_ms, response_excerpt: '' };
  }
}

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'not-sent' | 'stale';

export interface DeliveryReport {
  outcome: DeliveryOutcome;
  /** D1 statements and round trips this message cost (logged; the benchmark sums them). */
  statements: number;
  roundTrips: number;
}

/** The short form of an attempt's result, for reasons and logs. */
const describe = (r: AttemptResult) => (r.status_code !== null && !r.error ? `HTTP ${r.status_code}` : (r.error ?? `HTTP ${r.status_code}`));

/**
 * Makes the attempt a WEBHOOKS message asks for (see the top of this module). `now` is
 * for tests; the attempt itself happens when it is called.
 */
export async function deliverWebhook(env: Env, msg: WebhookMessage, now = Date.now()): Promise<DeliveryReport> {
  const report: DeliveryReport = { outcome: 'stale', statements: 0, roundTrips: 0 };
  const batch = async <T extends readonly unknown[]>(db: Db, statements: T) => {
    report.statements += statements.length;
    report.roundTrips++;
    return (await db.batch(statements as never)) as unknown as { [K in keyof T]: unknown[] };
  };
  // The delivery and its endpoint (and, before the first attempt, the record to send) in
  // one read from the nearest replica; anything that would stop the attempt (no such
  // delivery, its attempt made) is confirmed on the primary, as a replica may be behind
  // the commit that sent this message.
  const sessions = new RequestSessions(env.DB, 'first-unconstrained');
  const read = (db: Db, kind: SubjectKind | undefined) =>
    batch(db, [
      db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, msg.delivery_id)),
      db
        .select()
        .from(webhookEndpoints)
        .where(eq(webhookEndpoints.id, sql`(SELECT ${webhookDeliveries.endpoint_id} FROM ${webhookDeliveries} WHERE ${webhookDeliveries.id} = ${msg.delivery_id})`)),
      ...subjectStatements(db, msg.delivery_id, kind),
    ] as const);
  const due = (d: DeliveryRow | undefined): d is DeliveryRow => !!d && d.status === 'pending' && d.attempts === msg.attempt;
  type Read = [DeliveryRow[], EndpointRow[], ...unknown[][]];
  let [[delivery], [endpoint], ...subject] = (await read(sessions.db, msg.render)) as unknown as Read;
  if (!due(delivery)) [[delivery], [endpoint], ...subject] = (await read(sessions.primary(), msg.render)) as unknown as Read;
  if (!due(delivery)) return report; // made already, or gone with its endpoint's retention

  const db = sessions.primary();
  /** Ends the delivery without an attempt, saying why. */
  const notSent = async (why: string) => {
    await batch(db, [
      db
        .update(webhookDeliveries)
        .set({ status: 'failed', last_error: why, next_attempt_at: now })
        .where(and(eq(webhookDeliveries.id, delivery.id), eq(webhookDeliveries.attempts, msg.attempt), eq(webhookDeliveries.status, 'pending'))),
    ] as const);
    report.outcome = 'not-sent';
    log(delivery, endpoint, { outcome: 'not-sent', error: why }, report);
    return report;
  };
  if (!endpoint) return notSent('Not sent: the endpoint was deleted');
  if (endpoint.disabled) return notSent(`Not sent: the endpoint is disabled (${endpoint.disabled_reason ?? 'no reason recorded'})`);

  let payload = delivery.payload;
  if (payload === null) {
    // The message's hint named another kind (or none): read the record now.
    if (delivery.subject_kind !== msg.render) subject = (await batch(db, subjectStatements(db, delivery.id, delivery.subject_kind))) as unknown as unknown[][];
    const record = subjectRecord(delivery.subject_kind, subject);
    if (record === undefined) return notSent(`Not sent: the ${delivery.subject_kind} ${delivery.subject_id} no longer exists`);
    payload = renderPayload(delivery.event_type, delivery.created_at, record);
  }

  // The attempt.
  const attemptedAt = Date.now();
  const problem = webhookUrlProblem(endpoint.url, urlPolicy(env));
  const secrets = problem ? null : await signingSecrets(env, endpoint, now);
  const refused = (why: string): AttemptResult => ({ status_code: null, error: `not sent: ${why}`, latency_ms: 0, response_excerpt: '' });
  let result: AttemptResult;
  if (problem) result = refused(problem);
  else if (!secrets) result = refused("the endpoint's signing secret cannot be decrypted: WEBHOOK_ENCRYPTION_KEY is unset or not the key it was stored under; rotate the endpoint's secret");
  else {
    const timestamp = Math.floor(attemptedAt / 1000);
    const headers = {
      'content-type': 'application/json',
      'user-agent': 'zk-proving-webhooks/1',
      'webhook-id': delivery.id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': signatureHeader(secrets, delivery.id, timestamp, payload),
    };
    result = await sendAttempt(endpoint.url, headers, payload);
  }

  // Its record, in one batch that goes on only if its own attempt row went in (a copy of
  // this message that got there first made the attempt; this one then changes nothing).
  const ok = result.status_code !== null && result.status_code >= 200 && result.status_code < 300;
  const attempts = msg.attempt + 1;
  const inRound = attempts - delivery.round_start;
  const retryIn = ok ? null : (RETRY_DELAYS_SECONDS[inRound - 1] ?? null);
  const status = ok ? 'delivered' : retryIn === null ? 'failed' : 'pending';
  const endedAt = Date.now();
  const attemptId = `att_${crypto.randomUUID()}`;
  const mine = sql`EXISTS (SELECT 1 FROM ${webhookAttempts} WHERE ${webhookAttempts.id} = ${attemptId})`;
  const [, updated, endpointAfter] = await batch(db, [
    db
      .insert(webhookAttempts)
      .select(
        sql`SELECT ${attemptId}, ${delivery.id}, ${attempts}, ${isoNow(attemptedAt)}, ${result.status_code}, ${result.error}, ${result.latency_ms}, ${result.response_excerpt}
          FROM ${webhookDeliveries} WHERE ${webhookDeliveries.id} = ${delivery.id} AND ${webhookDeliveries.attempts} = ${msg.attempt} AND ${webhookDeliveries.status} = 'pending'`,
      )
      .onConflictDoNothing(),
    db
      .update(webhookDeliveries)
      .set({
        attempts,
        status,
        payload: sql`coalesce(${webhookDeliveries.payload}, ${payload})`,
        next_attempt_at: retryIn === null ? endedAt : endedAt + retryIn * 1000,
        last_error: null,
      })
      .where(and(eq(webhookDeliveries.id, delivery.id), mine))
      .returning({ id: webhookDeliveries.id }),
    endpointAfterAttempt(db, endpoint.id, mine, ok, status === 'failed', describe(result), endedAt),
  ] as const);
  if (updated.length === 0) return report; // a copy of this message recorded this attempt
  report.outcome = ok ? 'delivered' : status === 'failed' ? 'failed' : 'retrying';
  const disabledNow = (endpointAfter as Pick<EndpointRow, 'disabled' | 'disabled_reason'>[])[0];
  log(delivery, endpoint, { outcome: report.outcome, attempt: attempts, ...result, endpoint_disabled: disabledNow?.disabled && !endpoint.disabled ? disabledNow.disabled_reason : undefined }, report);
  // The payload is stored now: a retry reads no record.
  if (retryIn !== null) await enqueueDeliveries(env, [{ id: delivery.id, attempts, render: null }], retryIn);
  return report;
}

/**
 * How an attempt moves its endpoint's health: a success clears it; a failure starts
 * (or continues) its failing period, a delivery that ran out of retries counts, and
 * past either limit the endpoint is disabled, saying why and when.
 */
function endpointAfterAttempt(db: Db, endpointId: string, mine: SQL, ok: boolean, deliveryFailed: boolean, lastOutcome: string, now: number) {
  const e = webhookEndpoints;
  const where = and(eq(e.id, endpointId), mine);
  const returning = { disabled: e.disabled, disabled_reason: e.disabled_reason };
  if (ok) return db.update(e).set({ failed_deliveries: 0, failing_since: null }).where(where).returning(returning);
  const failedDeliveries = sql`(${e.failed_deliveries} + ${deliveryFailed ? 1 : 0})`;
  const tooMany = sql`${failedDeliveries} >= ${DISABLE_AFTER_FAILED_DELIVERIES}`;
  const tooLong = sql`(${e.failing_since} IS NOT NULL AND ${now} - ${e.failing_since} >= ${DISABLE_AFTER_FAILING_MS})`;
  const disabling = sql`(NOT ${e.disabled} AND (${tooMany} OR ${tooLong}))`;
  const at = isoNow(now);
  const reason = sql`CASE WHEN ${tooMany}
      THEN ${`Disabled automatically at ${at}: ${DISABLE_AFTER_FAILED_DELIVERIES} deliveries in a row failed after every retry; the last attempt: ${lastOutcome}`}
      ELSE ${`Disabled automatically at ${at}: every delivery attempt since `} || strftime('%Y-%m-%dT%H:%M:%SZ', ${e.failing_since} / 1000, 'unixepoch') || ${` failed (${DISABLE_AFTER_FAILING_MS / 3600_000} hours or more); the last attempt: ${lastOutcome}`} END`;
  return db
    .update(e)
    .set({
      failing_since: sql`coalesce(${e.failing_since}, ${now})`,
      failed_deliveries: failedDeliveries,
      disabled: sql`${e.disabled} OR ${disabling}`,
      disabled_at: sql`CASE WHEN ${disabling} THEN ${at} ELSE ${e.disabled_at} END`,
      disabled_reason: sql`CASE WHEN ${disabling} THEN ${reason} ELSE ${e.disabled_reason} END`,
    })
    .where(where)
    .returning(returning);
}

function log(delivery: DeliveryRow, endpoint: EndpointRow | undefined, fields: Record<string, unknown>, report: DeliveryReport) {
  console.log(
    JSON.stringify({
      level: 'info',
      msg: 'webhook attempt',
      delivery_id: delivery.id,
      event: delivery.event_type,
      endpoint_id: delivery.endpoint_id,
      org_id: endpoint?.org_id,
      ...fields,
      d1_statements: report.statements,
      d1_round_trips: report.roundTrips,
    }),
  );
}

/** The queue() handler's part for WEBHOOKS: each message's attempt, all of a batch at once; a message whose attempt could not be recorded is retried. */
export async function runWebhookDeliveries(messages: readonly Message<unknown>[], env: Env): Promise<void> {
  await Promise.all(
    messages.map(async (m) => {
      try {
        await deliverWebhook(env, m.body as WebhookMessage);
        m.ack();
      } catch (err) {
        console.error(JSON.stringify({ level: 'error', msg: 'webhook attempt not recorded; retrying the message', body: m.body, error: String(err) }));
        m.retry({ delaySeconds: 5 });
      }
    }),
  );
}

// ---------------------------------------------------------------------------
// The sweep's part

/** Deliveries looked at per sweep, at most. */
const SWEEP_DELIVERIES = 500;

/**
 * Sends a fresh message for every pending delivery whose attempt has been due for
 * WEBHOOK_REQUEUE_AFTER_SECONDS without being made (its message was lost, or never
 * sent), moving its due time to now so that the next sweep leaves it to this message;
 * and deletes finished deliveries (with their attempts) older than WEBHOOK_RETENTION_DAYS.
 */
export async function sweepWebhooks(db: Db, env: Env, now = Date.now()): Promise<{ webhooksRequeued: number; webhooksDeleted: number }> {
  const lostAfterMs = num(env.WEBHOOK_REQUEUE_AFTER_SECONDS, WEBHOOK_DEFAULTS.WEBHOOK_REQUEUE_AFTER_SECONDS) * 1000;
  const retentionMs = num(env.WEBHOOK_RETENTION_DAYS, WEBHOOK_DEFAULTS.WEBHOOK_RETENTION_DAYS) * 86400_000;
  const d = webhookDeliveries;
  const pending = sql.raw(`"webhook_deliveries"."status" = 'pending'`);
  const overdue = db
    .select({ id: d.id })
    .from(d)
    .where(and(pending, lt(d.next_attempt_at, now - lostAfterMs)))
    .orderBy(asc(d.next_attempt_at))
    .limit(SWEEP_DELIVERIES);
  const old = db
    .select({ id: d.id })
    .from(d)
    .where(and(lt(d.created_at, isoNow(now - retentionMs)), sql`${d.status} <> 'pending'`))
    .orderBy(asc(d.created_at))
    .limit(SWEEP_DELIVERIES);
  const [requeued, , deleted] = await db.batch([
    db.update(d).set({ next_attempt_at: now }).where(and(inArray(d.id, overdue), pending)).returning({ id: d.id, attempts: d.attempts, render: renderSql }),
    db.delete(webhookAttempts).where(inArray(webhookAttempts.delivery_id, old)),
    db.delete(d).where(inArray(d.id, old)).returning({ id: d.id }),
  ]);
  await enqueueDeliveries(env, requeued);
  return { webhooksRequeued: requeued.length, webhooksDeleted: deleted.length };
}
