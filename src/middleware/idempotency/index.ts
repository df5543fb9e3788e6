// Idempotent submissions (docs/callers.md "Idempotent submissions"): a route that creates
// something opts in with one line, `idempotent` among its middleware. Then a request
// with an `Idempotency-Key` header goes through these steps, without a round trip of
// its own when it succeeds:
//
// 1. Here, before the route: the key is checked (400 when malformed, header.ts) and the
//    body is wrapped so it is fingerprinted as the route reads it (fingerprint.ts).
// 2. The request's first D1 batch (asCaller, src/middleware/auth.ts) claims the key
//    with a conditional insert (store.ts), beside the API key's lookup: it goes to the primary
//    (it writes) instead of a replica, and costs no extra round trip. If the key is
//    someone else's (in flight, or answered), the route stops there (IdempotencyHit).
// 3. The batch that creates the record also stores the answer (answerStatements(),
//    used by submitJob and POST /v1/projects), all or nothing with the record and
//    only while the request still holds its claim.
// 4. Here, after the route: a request that found the key answered gets that answer
//    (`Idempotent-Replayed: true`) once its own body has the same fingerprint, else
//    422; a key in flight is 409. A request that holds the key stores an answer that
//    its route did not store itself, or releases the key when the answer must not be
//    replayed (5xx, 401, 409, 413, 429; answers given before the whole body was read).
import type { BatchItem } from 'drizzle-orm/batch';
import type { SQL } from 'drizzle-orm';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../../app-env.ts';
import type { Db } from '../../db/client.ts';
import { ApiError } from '../../lib/errors.ts';
import { openSecret, SEALED_PREFIX, sealSecret } from '../../lib/sealing.ts';
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER, parseIdempotencyKey } from './header.ts';
import { IdempotentRequest, MAX_STORED_ANSWER_BYTES, releaseKey, requireClaim, storeAnswer } from './store.ts';

/**
 * Thrown by the first D1 batch of a request whose key another request holds: the
 * route stops, and the middleware answers (replay, 409 or 422). A 409 to onError, so
 * nothing is logged as unexpected.
 */
export class IdempotencyHit extends ApiError {
  constructor() {
    super(409, 'A request with this Idempotency-Key is in progress');
  }
}

/**
 * Middleware of every route that creates something: makes the `Idempotency-Key`
 * header work on it (requests without the header are untouched). For the strongest
 * guarantee the route also stores its answer in its creating batch (answerStatements()).
 */
export const idempotent = createMiddleware<AppEnv>(async (c, next) => {
  const header = c.req.header(IDEMPOTENCY_KEY_HEADER);
  if (header === undefined) return next();
  const idem = new IdempotentRequest(parseIdempotencyKey(header), c.req.raw);
  c.req.raw = idem.fingerprint.wrap(c.req.raw);
  c.set('idempotency', idem);
  await next();
  if (idem.state === 'taken') return replace(c, await answerForTakenKey(c, idem));
  if (idem.state === 'claimed') await settle(c, idem);
});

/**
 * The statements that store a creating route's answer under the request's key, for
 * the batch that creates its record ([] without a key). They fail the whole batch
 * when the request no longer holds its claim, so a record is never created without
 * its stored answer, nor an answer stored without its record. The body must have been
 * read by now; what is left of it (a multipart epilogue) is read here.
 */
export async function answerStatements(
  c: Context<AppEnv>,
  status: number,
  body: unknown,
): Promise<(db: Db, org: SQL<string> | string) => BatchItem<'sqlite'>[]> {
  const idem = c.get('idempotency');
  if (!idem) return () => [];
  if (!(await idem.fingerprint.readRest(Number(c.env.MAX_UPLOAD_BYTES))))
    throw new Error('answerStatements: the request body was not read whole before its record was created');
  const answer = { status, body: JSON.stringify(body), fingerprint: await idem.fingerprint.value(), bodyBytes: idem.fingerprint.bytes };
  return (db, org) => {
    idem.answerInBatch = true;
    return [requireClaim(db, org, idem.claim), storeAnswer(db, org, idem.claim, answer)];
  };
}

/**
 * For a route whose answer carries a secret it shows only once (POST /v1/webhooks): the
 * stored answer is encrypted at rest (AES-GCM under WEBHOOK_ENCRYPTION_KEY, bound to the
 * key and its claim), and a replay decrypts it, so a retry still gets the first answer.
 */
export function sealAnswer(c: Context<AppEnv>): void {
  const idem = c.get('idempotency');
  if (idem) idem.sealed = true;
}

const sealContext = (key: string, claimId: string) => `idempotency/${key}/${claimId}`;

/** The refusal of a request whose creating batch failed because its claim was taken over (a retry, after its lock ran out). */
export const claimLost = () =>
  new ApiError(
    409,
    `This request took longer than its ${IDEMPOTENCY_KEY_HEADER} is held and a retry with the same key took it over: nothing was created by this one`,
  );

// ---------------------------------------------------------------------------

/** Replaces the route's answer entirely (Hono would otherwise carry its headers over). */
function replace(c: Context<AppEnv>, res: Response) {
  c.res = undefined;
  c.res = res;
}

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

/** Someone else's key: the stored answer when this request is the same one, else 422; 409 while it is in flight. */
async function answerForTakenKey(c: Context<AppEnv>, idem: IdempotentRequest): Promise<Response> {
  const row = idem.found;
  if (!row || row.state === 'in_flight')
    return json(
      409,
      {
        detail: `A request with this ${IDEMPOTENCY_KEY_HEADER} is still being processed: retry once it has finished, and you will get its answer`,
      },
      { 'Retry-After': '1' },
    );
  const fp = idem.fingerprint;
  // Read (and hash) no more of the body than the stored request had: longer is different.
  const declared = Number(c.req.header('content-length') ?? NaN);
  const multipart = /^multipart\//i.test(c.req.header('content-type') ?? '');
  const same =
    !(Number.isInteger(declared) && !multipart && declared !== row.body_bytes) &&
    (await fp.readRest(row.body_bytes ?? 0)) &&
    fp.bytes === row.body_bytes &&
    (await fp.value()) === row.fingerprint;
  if (!same)
    return json(422, {
      detail: [
        {
          loc: ['header', IDEMPOTENCY_KEY_HEADER],
          msg: `This ${IDEMPOTENCY_KEY_HEADER} was already used for a different request (method, path, query or body differ) in the last 24 hours; use a new key for a new request`,
          type: 'idempotency_key_reused',
        },
      ],
    });
  const body =
    row.response !== null && row.response.startsWith(SEALED_PREFIX)
      ? await openSecret(c.env.WEBHOOK_ENCRYPTION_KEY, sealContext(row.key, row.claim_id), row.response)
      : row.response;
  return new Response(body, { status: row.status!, headers: { 'content-type': 'application/json', [IDEMPOTENT_REPLAYED_HEADER]: 'true' } });
}

/** Whether an answer is stored for replay: successes, and refusals that depend only on the request (once its whole body was read). */
function replayable(status: number, wholeBody: boolean): boolean {
  if (status >= 200 && status < 300) return true;
  return wholeBody && (status === 400 || status === 404 || status === 422);
}

/** After the route, for the key's holder: store the answer unless the route did, or release the key. */
async function settle(c: Context<AppEnv>, idem: IdempotentRequest): Promise<void> {
  const res = c.res;
  const success = res.status >= 200 && res.status < 300;
  if (success && idem.answerInBatch) return;
  const db = c.get('db');
  const orgId = c.get('caller').orgId;
  try {
    // A success whose route did not store it (answerStatements) is stored now, after the
    // fact: a crash in between would leave the record with its key still in flight.
    const whole = success ? await idem.fingerprint.readRest(Number(c.env.MAX_UPLOAD_BYTES)) : idem.fingerprint.complete;
    if (replayable(res.status, whole) && /json/i.test(res.headers.get('content-type') ?? '')) {
      const text = await res.clone().text();
      if (text.length <= MAX_STORED_ANSWER_BYTES) {
        const body = idem.sealed
          ? await sealSecret(c.env.WEBHOOK_ENCRYPTION_KEY, sealContext(idem.claim.key, idem.claim.claimId), text)
          : text;
        const answer = { status: res.status, body, fingerprint: await idem.fingerprint.value(), bodyBytes: idem.fingerprint.bytes };
        await storeAnswer(db, orgId, idem.claim, answer).run();
        return;
      }
    }
    await releaseKey(db, orgId, idem.claim).run();
  } catch (err) {
    // The answer stands; the key stays in flight until its lock runs out (IDEMPOTENCY_LOCK_MS).
    console.error(JSON.stringify({ level: 'error', msg: 'idempotency key not settled', status: res.status, error: String(err) }));
  }
}
