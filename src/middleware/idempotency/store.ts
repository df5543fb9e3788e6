// Idempotency keys (IETF draft-ietf-httpapi-idempotency-key-header): the header's
// syntax, the request fingerprint (hashed while the body streams through, never
// buffered), and the D1 statements that claim a key, store its answer and release it.
// The request's side of it, a middleware creating routes opt into, is
// src/middleware/idempotency/; README "Idempotent submissions" says what callers get.
import { and, eq, lte, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { idempotencyKeys } from '../../db/schema.ts';
import { sha256Hex, toHex } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';
import { StreamSearch } from '../../lib/bytes.ts';

export const IDEMPOTENCY_KEY_HEADER = 'Idempotency-Key';
export const IDEMPOTENT_REPLAYED_HEADER = 'Idempotent-Replayed';
/** How long a key holds its answer (from its first request); then it is free again. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;
/**
 * How long an unfinished request holds its key. Requests that fail release their key
 * at once; this only bounds how long a key stays 409 after its request died with its
 * Worker (no answer, no release). A request still running past it (a very slow
 * upload) loses the key to a retry and creates nothing: its creating batch checks
 * that it still holds the key.
 */
export const IDEMPOTENCY_LOCK_MS = 5 * 60 * 1000;
/** Longest key accepted (the header's value, unquoted). */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
/** Largest answer stored; creating routes answer a few hundred bytes, error lists a few KB. */
export const MAX_STORED_ANSWER_BYTES = 64 * 1024;
/** Expired keys deleted per statement, and statements per sweep (README "Idempotent submissions"). */
export const IDEMPOTENCY_SWEEP_BATCH = 500;
export const IDEMPOTENCY_SWEEP_BATCHES = 20;

/**
 * The key an `Idempotency-Key` header names, or 400 saying what is wrong with it. The
 * draft makes the value a Structured Field string (`"..."`); the bare form most
 * clients send (Stripe's) is accepted too and names the same key, and a value that
 * starts with a quote is read as the quoted form. Keys are 1-255 printable ASCII
 * characters.
 */
export function parseIdempotencyKey(header: string): string {
  let key = header.trim();
  if (key.startsWith('"')) {
    if (key.length < 2 || !key.endsWith('"')) throw malformed('a quoted key must end with a quote');
    key = unquote(key.slice(1, -1));
  }
  if (key.length === 0) throw malformed('it is empty');
  if (key.length > MAX_IDEMPOTENCY_KEY_LENGTH) throw malformed(`it is longer than ${MAX_IDEMPOTENCY_KEY_LENGTH} characters`);
  if (!/^[\x20-\x7e]+$/.test(key)) throw malformed('only printable ASCII characters (space to ~) are allowed');
  return key;
}

/** The content of a Structured Field string (RFC 8941 3.3.3): backslash-quote and backslash-backslash are its only escapes; a bare quote cannot occur. */
function unquote(inner: string): string {
  let out = '';
  for (let i = 0; i < inner.length; i++) {
    const ch = inner[i]!;
    if (ch === '"') throw malformed('a quoted key may hold " only escaped as \\"');
    if (ch === '\\') {
      const next = inner[++i];
      if (next !== '"' && next !== '\\') throw malformed('a quoted key may escape only " and \\');
      out += next;
    } else out += ch;
  }
  return out;
}

const malformed = (why: string) =>
  new ApiError(400, `Malformed ${IDEMPOTENCY_KEY_HEADER} header: ${why}. Send 1-${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters, such as a UUID.`);

/** What a stored answer replays: the first request's status and JSON body. */
export interface StoredAnswer {
  status: number;
  body: string;
}

// ---------------------------------------------------------------------------
// The fingerprint: what makes "the same request".

/** Stands in for a multipart body's boundary in the fingerprint. */
const FINGERPRINT_BOUNDARY = new TextEncoder().encode('--idempotency-fingerprint-boundary');

/**
 * A request's fingerprint, computed while its body streams to the route: SHA-256 over
 * the method, path, query (sorted), media type and body bytes. A multipart body is
 * hashed with its boundary replaced by a fixed one: clients pick a new random boundary
 * for every attempt (curl -F, fetch's FormData, reqwest), so the raw bytes of two tries
 * of one upload differ only there. The body is never held: each chunk is hashed and
 * passed on.
 */
export class RequestFingerprint {
  /** Body bytes hashed so far (after boundary normalization). */
  bytes = 0;
  /** Whether the body was read to its end (a fingerprint of a part of it means nothing). */
  complete = false;
  private readonly target: string;
  private readonly mediaType: string;
  private readonly digest = new crypto.DigestStream('SHA-256');
  private readonly writer = this.digest.getWriter();
  /** The boundary's search (linear in the body, whatever the boundary: a KMP matcher). */
  private readonly delimiter: StreamSearch | null;
  private stream: ReadableStream<Uint8Array> | null = null;

  constructor(req: Request) {
    const url = new URL(req.url);
    const query = [...url.searchParams].sort(([a, x], [b, y]) => (a < b ? -1 : a > b ? 1 : x < y ? -1 : x > y ? 1 : 0));
    this.target = `${req.method} ${url.pathname}?${new URLSearchParams(query).toString()}`;
    const contentType = req.headers.get('content-type') ?? '';
    this.mediaType = contentType.split(';')[0]!.trim().toLowerCase();
    const boundary = /^multipart\//i.test(this.mediaType) ? /;\s*boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType) : null;
    this.delimiter = boundary ? new StreamSearch(new TextEncoder().encode(`--${boundary[1] ?? boundary[2]}`)) : null;
  }

  /** The request with its body passing through the hash (the route reads it as before). */
  wrap(req: Request): Request {
    if (!req.body) {
      this.finish();
      return req;
    }
    const reader = req.body.getReader();
    this.stream = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          const { done, value } = await reader.read();
          if (done) {
            this.finish();
            controller.close();
          } else {
            this.write(value);
            controller.enqueue(value);
          }
        },
        cancel: (reason) => reader.cancel(reason),
      },
      // Pull-driven: a chunk is read from the client only when the route asks for one.
      { highWaterMark: 0 },
    );
    return new Request(req, { body: this.stream, duplex: 'half' } as RequestInit);
  }

  /**
   * Reads what the route left of the body, hashing it, as long as it stays within
   * `maxBytes` (counted over the whole body); false when it is longer, or when the
   * body cannot be read (a route still holds it).
   */
  async readRest(maxBytes: number): Promise<boolean> {
    if (this.complete) return this.bytes <= maxBytes;
    if (!this.stream || this.stream.locked) return false;
    const reader = this.stream.getReader();
    try {
      while (!this.complete) {
        if (this.bytes > maxBytes) {
          await reader.cancel().catch(() => {});
          return false;
        }
        await reader.read();
      }
    } catch {
      return false;
    } finally {
      reader.releaseLock();
    }
    return this.bytes <= maxBytes;
  }

  /** The fingerprint, once the body was read whole. */
  async value(): Promise<string> {
    if (!this.complete) throw new Error('fingerprint of a body not read to its end');
    await this.writer.close().catch(() => {});
    const body = toHex(await this.digest.digest);
    return sha256Hex(`${this.target}\n${this.mediaType}\n${body}`);
  }

  private write(chunk: Uint8Array) {
    if (!this.delimiter) return this.hash(chunk);
    this.delimiter.write(
      chunk,
      (bytes) => this.hash(bytes),
      () => this.hash(FINGERPRINT_BOUNDARY),
    );
  }

  private finish() {
    if (this.complete) return;
    this.delimiter?.end((bytes) => this.hash(bytes));
    this.complete = true;
  }

  private hash(bytes: Uint8Array) {
    if (bytes.length === 0) return;
    this.bytes += bytes.length;
    // Copied: the route may hold (and its sinks reuse) the chunk it was handed.
    void this.writer.write(bytes.slice()).catch(() => {});
  }
}



// ---------------------------------------------------------------------------
// Statements. `org` is the caller's organization: its id, or SQL naming the API key's
// organization (null for a dead key) when the statement runs in the batch that checks the key.

export interface Claim {
  key: string;
  claimId: string;
  now: number;
}

/** An idempotent request's key and where it stands with it. */
export class IdempotentRequest {
  readonly claim: Claim;
  readonly fingerprint: RequestFingerprint;
  /**
   * `pending`: no D1 batch ran yet (the first one claims); `claimed`: this request
   * holds the key; `taken`: another request's row holds it (`found`).
   */
  state: 'pending' | 'claimed' | 'taken' = 'pending';
  found: IdempotencyRow | undefined;
  /** The route put the answer in its creating batch (answerStatements()): nothing is left to store. */
  answerInBatch = false;
  /** The answer holds a secret shown once (a webhook's signing secret): it is stored encrypted (sealAnswer()). */
  sealed = false;

  constructor(key: string, req: Request) {
    this.claim = { key, claimId: crypto.randomUUID(), now: Date.now() };
    this.fingerprint = new RequestFingerprint(req);
  }
}

/**
 * Claims the key for this request: inserts the in-flight row, or takes over a row that
 * expired or whose holder died (its lock ran out). Against a live row it changes
 * nothing; the primary key makes two claims of one key exclusive. Nothing is inserted
 * for a dead API key (its organization is null).
 */
export function claimKey(db: Db, org: SQL<string>, claim: Claim) {
  const { key, claimId, now } = claim;
  const t = idempotencyKeys;
  // insert().select() names every column of the table, in the schema's order.
  return db
    .insert(t)
    .select(
      sql`SELECT org, ${key}, ${claimId}, 'in_flight', NULL, NULL, NULL, NULL, ${now}, ${now + IDEMPOTENCY_LOCK_MS}, ${now + IDEMPOTENCY_KEY_TTL_MS}
          FROM (SELECT ${org} AS org) WHERE org IS NOT NULL`,
    )
    .onConflictDoUpdate({
      target: [t.org_id, t.key],
      set: {
        claim_id: sql`excluded.claim_id`,
        state: 'in_flight',
        fingerprint: null,
        body_bytes: null,
        status: null,
        response: null,
        created_at: sql`excluded.created_at`,
        locked_until: sql`excluded.locked_until`,
        expires_at: sql`excluded.expires_at`,
      },
      setWhere: sql`${t.expires_at} <= ${now} OR (${t.state} = 'in_flight' AND ${t.locked_until} <= ${now})`,
    });
}

/**
 * Fails the batch it is in (a NOT NULL violation, told apart by isLostClaim) unless
 * this request holds the key's in-flight claim: in a batch with writes, it makes them
 * all-or-nothing on still holding the key (a batch is one transaction), so a request
 * whose claim was never won, or was taken over, creates nothing.
 */
export function requireClaim(db: Db, org: SQL<string> | string, claim: Pick<Claim, 'key' | 'claimId'>) {
  const t = idempotencyKeys;
  return db
    .insert(t)
    .select(
      sql`SELECT NULL, ${claim.key}, NULL, 'in_flight', NULL, NULL, NULL, NULL, 0, 0, 0
          WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE ${t.org_id} = ${org} AND ${t.key} = ${claim.key} AND ${t.claim_id} = ${claim.claimId} AND ${t.state} = 'in_flight')`,
    );
}

/** Whether a batch failed on requireClaim(): the request does not hold its key. */
export function isLostClaim(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) if (e.message.includes('NOT NULL constraint failed: idempotency_keys.')) return true;
  return false;
}

/** Stores the answer under the key (conditional on the request's in-flight claim: a later takeover is never overwritten). */
export function storeAnswer(db: Db, org: SQL<string> | string, claim: Pick<Claim, 'key' | 'claimId'>, answer: StoredAnswer & { fingerprint: string; bodyBytes: number }) {
  return db
    .update(idempotencyKeys)
    .set({ state: 'done', status: answer.status, response: answer.body, fingerprint: answer.fingerprint, body_bytes: answer.bodyBytes })
    .where(and(eq(idempotencyKeys.org_id, org), eq(idempotencyKeys.key, claim.key), eq(idempotencyKeys.claim_id, claim.claimId), eq(idempotencyKeys.state, 'in_flight')));
}

/** Frees the key of a request whose answer is not replayed (conditional on its in-flight claim: a stored answer is never released). */
export function releaseKey(db: Db, orgId: string, claim: Pick<Claim, 'key' | 'claimId'>) {
  return db
    .delete(idempotencyKeys)
    .where(and(eq(idempotencyKeys.org_id, orgId), eq(idempotencyKeys.key, claim.key), eq(idempotencyKeys.claim_id, claim.claimId), eq(idempotencyKeys.state, 'in_flight')));
}

/** The key's row as it stands (after a claim that did not take it). */
export function keyRow(db: Db, org: SQL<string> | string, key: string) {
  return db
    .select()
    .from(idempotencyKeys)
    .where(and(eq(idempotencyKeys.org_id, org), eq(idempotencyKeys.key, key)));
}

export type IdempotencyRow = typeof idempotencyKeys.$inferSelect;

/**
 * Deletes expired keys for the cron sweep, IDEMPOTENCY_SWEEP_BATCH rows per statement
 * (an index seek on expires_at) and at most IDEMPOTENCY_SWEEP_BATCHES statements per
 * run: a backlog drains over a few runs instead of one long write.
 */
export async function deleteExpiredKeys(db: Db, now: number): Promise<number> {
  let deleted = 0;
  for (let i = 0; i < IDEMPOTENCY_SWEEP_BATCHES; i++) {
    const batch = db.select({ rowid: sql`rowid` }).from(idempotencyKeys).where(lte(idempotencyKeys.expires_at, now)).limit(IDEMPOTENCY_SWEEP_BATCH);
    const result = await db.run(sql`DELETE FROM ${idempotencyKeys} WHERE rowid IN (${batch})`);
    const n = Number((result as { meta?: { changes?: number } }).meta?.changes ?? 0);
    deleted += n;
    if (n < IDEMPOTENCY_SWEEP_BATCH) break;
  }
  return deleted;
}
