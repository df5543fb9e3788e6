// Idempotency keys' storage: the D1 statements that claim a key, store its answer and
// release it, and the sweep of expired keys. The header's syntax is header.ts, the
// request fingerprint fingerprint.ts, the request's side of it (a middleware creating
// routes opt into) index.ts; docs/callers.md "Idempotent submissions" says what callers get.
import { and, eq, lte, sql, type SQL } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { idempotencyKeys } from '../../db/schema.ts';
import { RequestFingerprint } from './fingerprint.ts';

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
/** Largest answer stored; creating routes answer a few hundred bytes, error lists a few KB. */
export const MAX_STORED_ANSWER_BYTES = 64 * 1024;
/** Expired keys deleted per statement, and statements per sweep (docs/callers.md "Idempotent submissions"). */
export const IDEMPOTENCY_SWEEP_BATCH = 500;
export const IDEMPOTENCY_SWEEP_BATCHES = 20;

/** What a stored answer replays: the first request's status and JSON body. */
export interface StoredAnswer {
  status: number;
  body: string;
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
  return db.insert(t).select(
    sql`SELECT NULL, ${claim.key}, NULL, 'in_flight', NULL, NULL, NULL, NULL, 0, 0, 0
          WHERE NOT EXISTS (SELECT 1 FROM ${t} WHERE ${t.org_id} = ${org} AND ${t.key} = ${claim.key} AND ${t.claim_id} = ${claim.claimId} AND ${t.state} = 'in_flight')`,
  );
}

/** Whether a batch failed on requireClaim(): the request does not hold its key. */
export function isLostClaim(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause)
    if (e.message.includes('NOT NULL constraint failed: idempotency_keys.')) return true;
  return false;
}

/** Stores the answer under the key (conditional on the request's in-flight claim: a later takeover is never overwritten). */
export function storeAnswer(
  db: Db,
  org: SQL<string> | string,
  claim: Pick<Claim, 'key' | 'claimId'>,
  answer: StoredAnswer & { fingerprint: string; bodyBytes: number },
) {
  return db
    .update(idempotencyKeys)
    .set({ state: 'done', status: answer.status, response: answer.body, fingerprint: answer.fingerprint, body_bytes: answer.bodyBytes })
    .where(
      and(
        eq(idempotencyKeys.org_id, org),
        eq(idempotencyKeys.key, claim.key),
        eq(idempotencyKeys.claim_id, claim.claimId),
        eq(idempotencyKeys.state, 'in_flight'),
      ),
    );
}

/** Frees the key of a request whose answer is not replayed (conditional on its in-flight claim: a stored answer is never released). */
export function releaseKey(db: Db, orgId: string, claim: Pick<Claim, 'key' | 'claimId'>) {
  return db
    .delete(idempotencyKeys)
    .where(
      and(
        eq(idempotencyKeys.org_id, orgId),
        eq(idempotencyKeys.key, claim.key),
        eq(idempotencyKeys.claim_id, claim.claimId),
        eq(idempotencyKeys.state, 'in_flight'),
      ),
    );
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
    const batch = db
      .select({ rowid: sql`rowid` })
      .from(idempotencyKeys)
      .where(lte(idempotencyKeys.expires_at, now))
      .limit(IDEMPOTENCY_SWEEP_BATCH);
    const result = await db.run(sql`DELETE FROM ${idempotencyKeys} WHERE rowid IN (${batch})`);
    const n = Number((result as { meta?: { changes?: number } }).meta?.changes ?? 0);
    deleted += n;
    if (n < IDEMPOTENCY_SWEEP_BATCH) break;
  }
  return deleted;
}
