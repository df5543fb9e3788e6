// Delivering webhooks (docs/callers.md "Webhooks"): the Worker's consumer of its own WEBHOOKS
// queue, one attempt per message. The state machine records and emits the deliveries
// (src/jobs/webhooks.ts); here each message's attempt goes through four steps, each a
// function that answers the delivery's next state:
//
//   load    the delivery, its endpoint and (before the first attempt) the record it is
//           about, in one read; a message whose attempt was made already is `stale`,
//           and a delivery whose endpoint is gone or disabled is `not-sent`.
//   render  the body: the record exactly as GET returns it, stored with the delivery at
//           its first attempt, so every later attempt sends the same bytes under the
//           same `webhook-id` (`not-sent` when the record is gone).
//   send    the signed POST, once the URL passes the policy again (it may have changed
//           since the endpoint was saved): a 2xx delivers; anything else (a timeout, a
//           redirect, a refused URL, a secret that cannot be opened) is a failed attempt.
//   record  the attempt, the delivery's new state (delivered, retrying on
//           RETRY_DELAYS_SECONDS, or failed once they are spent) and the endpoint's health
//           (disabled after too many failures), in one batch that goes on only if its own
//           attempt row went in: two copies of one message racing each other record one
//           attempt, move the endpoint's failure count once and schedule one retry.
import { and, eq, sql, type SQL } from 'drizzle-orm';
import { Webhook } from 'standardwebhooks';
import { batchByName, type BatchResults, type Step } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { RequestSessions } from '../../db/sessions.ts';
import {
  configs,
  executions,
  programs,
  projects,
  proofs,
  verifications,
  webhookAttempts,
  webhookDeliveries,
  webhookEndpoints,
} from '../../db/schema.ts';
import type { Env, WebhookMessage } from '../../env.ts';
import { enqueueDeliveries, type SubjectKind } from '../../jobs/webhooks.ts';
import { programRecord } from '../programs/schemas.ts';
import { executionRecord } from '../executions/schemas.ts';
import { proofRecord } from '../proofs/schemas.ts';
import { proofColumns } from '../proofs/data.ts';
import { executionColumns } from '../executions/data.ts';
import { verificationRecord } from '../verifications/schemas.ts';
import { renderPayload } from './data.ts';
import { signingSecrets } from './secrets.ts';
import { urlPolicy, webhookUrlProblem } from './url-policy.ts';
import { meteredPart, type CallBudget, type Metered } from '../../lib/metered.ts';
import { utf8Bytes } from '../../lib/bytes.ts';

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

const isoNow = (ms: number) => new Date(ms).toISOString();

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

// ---------------------------------------------------------------------------
// Sending one attempt

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
  while (utf8Bytes(text).length > max) text = text.slice(0, -1);
  return text;
}

/** Sends one attempt: POST, 10 s, redirects not followed (a redirect is a failure). */
export async function sendAttempt(
  url: string,
  headers: Record<string, string>,
  body: string,
  timeoutMs = ATTEMPT_TIMEOUT_MS,
): Promise<AttemptResult> {
  const started = Date.now();
  const signal = AbortSignal.timeout(timeoutMs);
  try {
    const res = await fetch(url, { method: 'POST', headers, body, redirect: 'manual', signal });
    const text = await excerpt(res.body);
    const latency_ms = Date.now() - started;
    if (res.status >= 300 && res.status < 400) {
      const to = res.headers.get('location');
      return {
        status_code: res.status,
        error: `redirect${to ? ` to ${to.slice(0, 200)}` : ''} not followed: give the endpoint's final URL`,
        latency_ms,
        response_excerpt: text,
      };
    }
    return { status_code: res.status, error: res.ok ? null : `HTTP ${res.status}`, latency_ms, response_excerpt: text };
  } catch (err) {
    const latency_ms = Date.now() - started;
    const timedOut = signal.aborted || (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'));
    return {
      status_code: null,
      error: timedOut
        ? `no answer within ${timeoutMs / 1000} s`
        : `request failed: ${String(err instanceof Error ? err.message : err).slice(0, 300)}`,
      latency_ms,
      response_excerpt: '',
    };
  }
}

/** The short form of an attempt's result, for reasons and logs. */
const describe = (r: AttemptResult) =>
  r.status_code !== null && !r.error ? `HTTP ${r.status_code}` : (r.error ?? `HTTP ${r.status_code}`);

// ---------------------------------------------------------------------------
// A message's attempt: its states, and the steps between them

export type DeliveryOutcome = 'delivered' | 'retrying' | 'failed' | 'not-sent' | 'stale';

export interface DeliveryReport {
  outcome: DeliveryOutcome;
  /** D1 statements and round trips this message cost (logged; the benchmark sums them). */
  statements: number;
  roundTrips: number;
}

/** The message's attempt was made already (a duplicate, or one the sweep replaced), or the delivery is gone with its endpoint's retention. */
interface Stale {
  state: 'stale';
}
/** The delivery ends without an attempt: `why` is its last_error. */
interface NotSent {
  state: 'not-sent';
  delivery: DeliveryRow;
  endpoint: EndpointRow | undefined;
  why: string;
}
/** Due, to an endpoint that takes it; `subject` holds the record to render (nothing once the payload is stored). */
interface Loaded {
  state: 'loaded';
  delivery: DeliveryRow;
  endpoint: EndpointRow;
  subject: SubjectRows;
}
/** The body to send, as every attempt of this delivery sends it. */
interface Rendered {
  state: 'rendered';
  delivery: DeliveryRow;
  endpoint: EndpointRow;
  payload: string;
}
/** The attempt made (or refused before it left: a URL the policy refuses, a secret that does not open). */
interface Sent {
  state: 'sent';
  delivery: DeliveryRow;
  endpoint: EndpointRow;
  payload: string;
  attemptedAt: number;
  result: AttemptResult;
}
/** The attempt recorded by this message: the delivery's new state. */
interface Recorded {
  state: 'recorded';
  outcome: 'delivered' | 'retrying' | 'failed';
  attempt: number;
  /** Seconds until the retry (outcome `retrying`). */
  retryIn: number | null;
  /** Why the endpoint was disabled by this attempt, when it was. */
  endpointDisabled: string | null | undefined;
}

/** Runs a record of statements as one batch on `db`, counting them into the report. */
async function run<T extends Record<string, Step>>(db: Db, report: DeliveryReport, steps: T): Promise<BatchResults<T>> {
  const statements = Object.values(steps).reduce<number>((n, s) => n + (s === undefined ? 0 : Array.isArray(s) ? s.length : 1), 0);
  report.statements += statements;
  if (statements > 0) report.roundTrips++;
  return batchByName(db, steps);
}

/**
 * The statements reading the record a delivery is about, while its payload is still to
 * render, by name: the proof, execution or verification; a program with its project and
 * config. Nothing for another kind, or none (the message asked for no render).
 */
function subjectStatements(db: Db, deliveryId: string, kind: SubjectKind | undefined) {
  const subject = sql`(SELECT ${webhookDeliveries.subject_id} FROM ${webhookDeliveries} WHERE ${webhookDeliveries.id} = ${deliveryId} AND ${webhookDeliveries.payload} IS NULL)`;
  const ofProgram = (c: typeof programs.project_id | typeof programs.config_id) =>
    sql`(SELECT ${c} FROM ${programs} WHERE ${programs.id} = ${subject})`;
  const program = kind === 'program';
  return {
    proof: kind === 'proof' ? db.select(proofColumns()).from(proofs).where(eq(proofs.id, subject)) : undefined,
    execution: kind === 'execution' ? db.select(executionColumns()).from(executions).where(eq(executions.id, subject)) : undefined,
    verification: kind === 'verification' ? db.select().from(verifications).where(eq(verifications.id, subject)) : undefined,
    program: program ? db.select().from(programs).where(eq(programs.id, subject)) : undefined,
    project: program
      ? db
          .select()
          .from(projects)
          .where(eq(projects.id, ofProgram(programs.project_id)))
      : undefined,
    config: program
      ? db
          .select()
          .from(configs)
          .where(eq(configs.id, ofProgram(programs.config_id)))
      : undefined,
  };
}

type SubjectRows = BatchResults<ReturnType<typeof subjectStatements>>;

/** The record subjectStatements() read, as GET returns it; undefined when it is gone. */
function subjectRecord(kind: SubjectKind, rows: SubjectRows): unknown {
  switch (kind) {
    case 'proof':
      return rows.proof?.[0] && proofRecord(rows.proof[0]);
    case 'execution':
      return rows.execution?.[0] && executionRecord(rows.execution[0]);
    case 'verification':
      return rows.verification?.[0] && verificationRecord(rows.verification[0]);
    case 'program': {
      const [program, project, config] = [rows.program?.[0], rows.project?.[0], rows.config?.[0]];
      return program && project && config ? programRecord(program, project, config) : undefined;
    }
    case 'test':
    case 'budget': // its payload is stored when the notice is made (migrations/0016_budgets_estimates.sql)
      return undefined;
  }
}

/**
 * Load: the delivery and its endpoint (and, before the first attempt, the record to
 * send) in one read from the nearest replica; anything that would stop the attempt (no
 * such delivery, its attempt made) is confirmed on the primary, as a replica may be
 * behind the commit that sent this message.
 */
async function loadDelivery(sessions: RequestSessions, msg: WebhookMessage, report: DeliveryReport): Promise<Stale | NotSent | Loaded> {
  const read = (db: Db) =>
    run(db, report, {
      delivery: db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, msg.delivery_id)),
      endpoint: db
        .select()
        .from(webhookEndpoints)
        .where(
          eq(
            webhookEndpoints.id,
            sql`(SELECT ${webhookDeliveries.endpoint_id} FROM ${webhookDeliveries} WHERE ${webhookDeliveries.id} = ${msg.delivery_id})`,
          ),
        ),
      ...subjectStatements(db, msg.delivery_id, msg.render),
    });
  const due = (d: DeliveryRow | undefined): d is DeliveryRow => !!d && d.status === 'pending' && d.attempts === msg.attempt;
  let found = await read(sessions.db);
  if (!due(found.delivery[0])) found = await read(sessions.primary());
  const {
    delivery: [delivery],
    endpoint: [endpoint],
    ...subject
  } = found;
  if (!due(delivery)) return { state: 'stale' };
  if (!endpoint) return { state: 'not-sent', delivery, endpoint, why: 'Not sent: the endpoint was deleted' };
  if (endpoint.disabled)
    return {
      state: 'not-sent',
      delivery,
      endpoint,
      why: `Not sent: the endpoint is disabled (${endpoint.disabled_reason ?? 'no reason recorded'})`,
    };
  return { state: 'loaded', delivery, endpoint, subject };
}

/**
 * Render: the stored payload, or (before the first attempt) the record as GET returns
 * it now. The message's hint may have named another kind (or none): the record is then
 * read here.
 */
async function renderDelivery(db: Db, msg: WebhookMessage, loaded: Loaded, report: DeliveryReport): Promise<NotSent | Rendered> {
  const { delivery, endpoint } = loaded;
  if (delivery.payload !== null) return { state: 'rendered', delivery, endpoint, payload: delivery.payload };
  const subject =
    delivery.subject_kind === msg.render
      ? loaded.subject
      : await run(db, report, subjectStatements(db, delivery.id, delivery.subject_kind));
  const record = subjectRecord(delivery.subject_kind, subject);
  if (record === undefined)
    return { state: 'not-sent', delivery, endpoint, why: `Not sent: the ${delivery.subject_kind} ${delivery.subject_id} no longer exists` };
  return { state: 'rendered', delivery, endpoint, payload: renderPayload(delivery.event_type, delivery.created_at, record) };
}

/** Send: the URL checked against the policy again, the payload signed with the endpoint's secrets, one POST (charged to `budget`). */
async function sendDelivery(env: Env, rendered: Rendered, now: number, budget?: CallBudget): Promise<Sent> {
  const { delivery, endpoint, payload } = rendered;
  const attemptedAt = Date.now();
  const sent = (result: AttemptResult): Sent => ({ ...rendered, state: 'sent', attemptedAt, result });
  const refused = (why: string) => sent({ status_code: null, error: `not sent: ${why}`, latency_ms: 0, response_excerpt: '' });
  const problem = webhookUrlProblem(endpoint.url, urlPolicy(env));
  if (problem) return refused(problem);
  const secrets = await signingSecrets(env, endpoint, now);
  if (!secrets)
    return refused(
      "the endpoint's signing secret cannot be decrypted: WEBHOOK_ENCRYPTION_KEY is unset or not the key it was stored under; rotate the endpoint's secret",
    );
  const timestamp = Math.floor(attemptedAt / 1000);
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'zk-proving-webhooks/1',
    'webhook-id': delivery.id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signatureHeader(secrets, delivery.id, timestamp, payload),
  };
  budget?.charge();
  return sent(await sendAttempt(endpoint.url, headers, payload));
}

/**
 * Record: the attempt, the delivery's new state and the endpoint's health, in one batch
 * that goes on only if its own attempt row went in (a copy of this message that got
 * there first made the attempt; this one then changes nothing and is stale).
 */
async function recordAttempt(db: Db, msg: WebhookMessage, sent: Sent, report: DeliveryReport): Promise<Stale | Recorded> {
  const { delivery, endpoint, payload, result } = sent;
  const ok = result.status_code !== null && result.status_code >= 200 && result.status_code < 300;
  const attempt = msg.attempt + 1;
  const retryIn = ok ? null : (RETRY_DELAYS_SECONDS[attempt - delivery.round_start - 1] ?? null);
  const status = ok ? 'delivered' : retryIn === null ? 'failed' : 'pending';
  const endedAt = Date.now();
  const claim = crypto.getRandomValues(new Uint32Array(2)).reduce((a, b) => a * 2 ** 21 + (b >>> 11)); // 53 random bits: a safe integer
  const a = webhookAttempts;
  const mine = sql`EXISTS (SELECT 1 FROM ${a} WHERE ${a.delivery_id} = ${delivery.id} AND ${a.attempt} = ${attempt} AND ${a.claim} = ${claim})`;
  const recorded = await run(db, report, {
    attempt: db
      .insert(webhookAttempts)
      .select(
        sql`SELECT ${delivery.id}, ${attempt}, ${claim}, ${isoNow(sent.attemptedAt)}, ${result.status_code}, ${result.error}, ${result.latency_ms}, ${result.response_excerpt}
          FROM ${webhookDeliveries} WHERE ${webhookDeliveries.id} = ${delivery.id} AND ${webhookDeliveries.attempts} = ${msg.attempt} AND ${webhookDeliveries.status} = 'pending'`,
      )
      .onConflictDoNothing(),
    delivery: db
      .update(webhookDeliveries)
      .set({
        attempts: attempt,
        status,
        payload: sql`coalesce(${webhookDeliveries.payload}, ${payload})`,
        next_attempt_at: retryIn === null ? endedAt : endedAt + retryIn * 1000,
        last_error: null,
      })
      .where(and(eq(webhookDeliveries.id, delivery.id), mine))
      .returning({ id: webhookDeliveries.id }),
    endpoint: endpointAfterAttempt(db, endpoint.id, mine, ok, status === 'failed', describe(result), endedAt),
  });
  if (recorded.delivery.length === 0) return { state: 'stale' };
  const after = recorded.endpoint[0];
  return {
    state: 'recorded',
    outcome: ok ? 'delivered' : status === 'failed' ? 'failed' : 'retrying',
    attempt,
    retryIn,
    endpointDisabled: after?.disabled && !endpoint.disabled ? after.disabled_reason : undefined,
  };
}

/** Record, for a delivery that ends without an attempt: failed, saying why. */
async function recordNotSent(db: Db, msg: WebhookMessage, notSent: NotSent, now: number, report: DeliveryReport): Promise<void> {
  const d = webhookDeliveries;
  await run(db, report, {
    ended: db
      .update(d)
      .set({ status: 'failed', last_error: notSent.why, next_attempt_at: now })
      .where(and(eq(d.id, notSent.delivery.id), eq(d.attempts, msg.attempt), eq(d.status, 'pending'))),
  });
}

/**
 * Makes the attempt a WEBHOOKS message asks for (see the top of this module): load,
 * render, send, record, and the retry's message when one is due: at most
 * WEBHOOK_MESSAGE_CALLS calls, its POST charged to `budget` (its bindings' calls are
 * charged by `env`'s, when metered). `now` is for tests; the attempt itself happens when
 * it is called.
 */
export async function deliverWebhook(env: Env, msg: WebhookMessage, now = Date.now(), budget?: CallBudget): Promise<DeliveryReport> {
  const report: DeliveryReport = { outcome: 'stale', statements: 0, roundTrips: 0 };
  const sessions = new RequestSessions(env.DB, 'first-unconstrained');
  const loaded = await loadDelivery(sessions, msg, report);
  if (loaded.state === 'stale') return report;
  const db = sessions.primary();
  const rendered = loaded.state === 'loaded' ? await renderDelivery(db, msg, loaded, report) : loaded;
  if (rendered.state === 'not-sent') {
    await recordNotSent(db, msg, rendered, now, report);
    report.outcome = 'not-sent';
    log(rendered.delivery, rendered.endpoint, { outcome: 'not-sent', error: rendered.why }, report);
    return report;
  }
  const sent = await sendDelivery(env, rendered, now, budget);
  const recorded = await recordAttempt(db, msg, sent, report);
  if (recorded.state === 'stale') return report;
  report.outcome = recorded.outcome;
  log(
    sent.delivery,
    sent.endpoint,
    { outcome: recorded.outcome, attempt: recorded.attempt, ...sent.result, endpoint_disabled: recorded.endpointDisabled },
    report,
  );
  // The payload is stored now: a retry reads no record.
  if (recorded.retryIn !== null)
    await enqueueDeliveries(env, [{ id: sent.delivery.id, attempts: recorded.attempt, render: null }], recorded.retryIn);
  return report;
}

/**
 * How an attempt moves its endpoint's health: a success clears it; a failure starts
 * (or continues) its failing period, a delivery that ran out of retries counts, and
 * past either limit the endpoint is disabled, saying why and when.
 */
function endpointAfterAttempt(
  db: Db,
  endpointId: string,
  mine: SQL,
  ok: boolean,
  deliveryFailed: boolean,
  lastOutcome: string,
  now: number,
) {
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

/** The most calls one message's attempt makes: its load (and a primary re-read), its render's read, the POST, its record, its retry's send. */
export const WEBHOOK_MESSAGE_CALLS = 6;

/**
 * The queue() handler's part for WEBHOOKS: each message's attempt, as many of a batch at
 * once as `m`'s budget fits (WEBHOOK_MESSAGE_CALLS each; the rest come back in five
 * seconds); a message whose attempt could not be recorded is retried.
 */
export async function runWebhookDeliveries(messages: readonly Message<unknown>[], m: Metered): Promise<void> {
  const fits = Math.max(0, Math.floor(m.budget.left / WEBHOOK_MESSAGE_CALLS));
  for (const later of messages.slice(fits)) later.retry({ delaySeconds: 5 });
  await Promise.all(
    messages.slice(0, fits).map(async (msg) => {
      const mine = meteredPart(m, WEBHOOK_MESSAGE_CALLS, 'webhook attempt');
      try {
        await deliverWebhook(mine.env, msg.body as WebhookMessage, Date.now(), mine.budget);
        msg.ack();
      } catch (err) {
        console.error(
          JSON.stringify({ level: 'error', msg: 'webhook attempt not recorded; retrying the message', body: msg.body, error: String(err) }),
        );
        msg.retry({ delaySeconds: 5 });
      }
    }),
  );
}
