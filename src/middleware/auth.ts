// API keys: the `Service-API-Key` header names the caller's organization. The key is
// checked inside the request's first D1 round trip, not before it: a read runs the
// key's lookup and the route's statements as one batch (asCaller), the route's
// statements naming the organization as orgOfKey() (SQL), so a GET costs one round
// trip to the nearest replica. A refusal a replica gives (unknown key, missing record)
// is checked again on the primary before the caller is told no: a key or record made a
// moment ago may not have reached the replica yet (src/db/sessions.ts).
// The same lookup says what the key may do (src/auth/permissions.ts): its scope bounded
// by its creator's role in the organization as it is now, a key whose creator is no
// longer a member being dead; the route's declared action (its door) is checked against
// it, and the organization the route's statements read is null unless the key may take
// that action, so a write refused here writes nothing.
import { and, eq, getTableName, isNull, lt, or, sql, type SQL } from 'drizzle-orm';
import type { SQLiteColumn } from 'drizzle-orm/sqlite-core';
import type { Context } from 'hono';
import { createMiddleware } from 'hono/factory';
import type { AppEnv, Caller } from '../app-env.ts';
import { batchByName, type BatchResults, type Steps } from '../db/batch.ts';
import type { Db } from '../db/client.ts';
import { prepared, type Placeholders } from '../db/prepared.ts';
import { KEY_SCOPE_NAMES, KEY_SCOPES, PERMISSIONS, rankOf, type Action, type Role } from '../auth/permissions.ts';
import { rankSql } from './role-rank.ts';
import { apiKeys, memberships } from '../db/schema.ts';
import { isBookmarkError } from '../db/sessions.ts';
import { sha256Hex } from '../lib/crypto.ts';
import { ApiError } from '../lib/errors.ts';
import { IdempotencyHit } from './idempotency/index.ts';
import { claimKey, isLostClaim, keyRow, requireClaim } from './idempotency/store.ts';
import { limitOrganization } from './rate-limit.ts';

export const API_KEY_HEADER = 'Service-API-Key';
/**
 * The headers an API key is taken from, in order: the interface's name, then the
 * published client's (axiom-api-cli v2.0.0 crates/sdk/src/lib.rs:25 sends `Axiom-API-Key`),
 * so the client works unmodified. The API_KEY_HEADERS var (a comma list) replaces it.
 */
export const DEFAULT_API_KEY_HEADERS = [API_KEY_HEADER, 'Axiom-API-Key'] as const;
/** `last_used_at` is written at most this often per key, after the response. */
const LAST_USED_RESOLUTION_MS = 60_000;

/** The last API_KEY_HEADERS value read, and the headers it names: it is read at every /v1 request, and changes only with a deploy. */
let keyHeaders: { from: string | undefined; headers: readonly string[] } | undefined;

/** The accepted API key headers of this deployment. */
export function apiKeyHeaders(env: Pick<AppEnv['Bindings'], 'API_KEY_HEADERS'>): readonly string[] {
  if (!keyHeaders || keyHeaders.from !== env.API_KEY_HEADERS) {
    const configured = (env.API_KEY_HEADERS ?? '')
      .split(',')
      .map((h) => h.trim())
      .filter(Boolean);
    keyHeaders = { from: env.API_KEY_HEADERS, headers: configured.length ? configured : [...DEFAULT_API_KEY_HEADERS] };
  }
  return keyHeaders.headers;
}

/** Takes the key from the request (401 when there is none); checking it is the first read's job. */
export const requireApiKey = createMiddleware<AppEnv>(async (c, next) => {
  const headers = apiKeyHeaders(c.env);
  const key = headers.map((h) => c.req.header(h)).find((v) => v);
  if (!key) throw new ApiError(401, `Missing API key: send it in the ${headers.join(' (or ')}${headers.length > 1 ? ')' : ''} header`);
  c.set('apiKeyHash', await sha256Hex(key));
  c.set('authGate', async () => void (await authenticate(c)));
  await next();
});

/**
 * A request is authenticated before its body costs anything (docs/callers.md "Limits"): the
 * body is handed on gated, and its first read waits for the key's check (one D1 read,
 * 401 for a dead key) unless the route's first batch has made it already. So a route
 * that reads before its body (a submission's lookups) still makes one round trip, and
 * nothing downstream (the idempotency fingerprint, a JSON or multipart parser) ever
 * sees a byte of an unauthenticated body. The check's refusal is kept on the request:
 * a reader that turns a failed read into its own error is overruled by onError.
 * Run by the route's door (src/middleware/door.ts), once it has bounded the body.
 */
export function gateBodyOnKey(c: Context<AppEnv>): void {
  const body = c.req.raw.body;
  if (!body) return;
  // The client's body is not even locked until the key passed: a refused one is left
  // as it came, for the runtime to discard (wrangler dev drains it after the answer).
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
  const gated = new ReadableStream<Uint8Array>(
    {
      pull: async (controller) => {
        if (!reader) {
          if (!c.get('caller')) {
            try {
              // The key alone: an Idempotency-Key is still claimed by the route's first
              // batch, after the body (whose fingerprint a replay compares) was read.
              await asCaller(c, () => ({}), undefined, { claim: false });
            } catch (err) {
              c.set('bodyRefusal', err as Error);
              throw err;
            }
          }
          reader = body.getReader();
        }
        const { done, value } = await reader.read();
        if (done) controller.close();
        else controller.enqueue(value);
      },
      cancel: (reason) => reader?.cancel(reason),
    },
    // Pull-driven: nothing is read from the client before a reader asks.
    { highWaterMark: 0 },
  );
  const gatedRequest = new Request(c.req.raw, { body: gated, duplex: 'half' } as RequestInit);
  c.req.raw = gatedRequest;
  // Once the route's first batch has accepted the key (asCaller), a gate nothing has
  // read yet has nothing left to guard: the reader gets the body behind it (the client's
  // stream, or the door's bound of it) with no JS of the gate's per chunk (a pull per
  // chunk was most of a large upload's cost, `npm run bench:api`). A gate already read,
  // or wrapped since (the idempotency fingerprint), stays in place.
  c.set('openBody', () => {
    if (reader || gated.locked || c.req.raw !== gatedRequest) return;
    c.req.raw = new Request(gatedRequest, { body, duplex: 'half' } as RequestInit);
  });
}

/**
 * A column named with its table, always: drizzle leaves columns unqualified in a
 * single-table select's fields, where inside the subquery below `org_id = org_id`
 * would compare memberships with itself.
 */
const col = (column: SQLiteColumn) => sql`${sql.identifier(getTableName(column.table))}.${sql.identifier(column.name)}`;

/** The key's creator's role in the key's organization now: null for an operator-made key, or a creator who left. */
const creatorRole = sql<Role | null>`(SELECT ${col(memberships.role)} FROM ${memberships} WHERE ${col(memberships.org_id)} = ${col(apiKeys.org_id)} AND ${col(memberships.user_id)} = ${col(apiKeys.user_id)})`;

/**
 * What the key (the api_keys row in scope) may do, as a role's rank: min(its scope's
 * cap, its creator's current role); null, a dead key, when its creator is no longer a
 * member. An operator-made key (no creator) is bounded by its scope alone.
 */
const keyRights = sql<number | null>`min(${sql`(CASE ${col(apiKeys.scope)} ${sql.join(
  Object.entries(KEY_SCOPES).map(([s, { cap }]) => sql`WHEN ${s} THEN ${rankOf(cap)}`),
  sql` `,
)} END)`}, CASE WHEN ${col(apiKeys.user_id)} IS NULL THEN ${rankOf('owner')} ELSE ${rankSql(creatorRole)} END)`;

/**
 * What a key's work is recorded as (`created_by` on what it makes): the person who made
 * it (its owner: their email, or the label an operator gave it), the key's name beside
 * it, quoted, so a name never reads as part of the person (names hold no control or
 * bidirectional characters either: lib/schemas.ts safeName). Never the name alone.
 */
export const keyCreatedBy = sql<string>`(${col(apiKeys.owner)} || coalesce(' (key "' || ${col(apiKeys.name)} || '")', ''))`;

/** Who the audit log names for a change made with a key: its owner, with the key's prefix and name beside it. */
export const keyAuditActor = sql<string>`(${col(apiKeys.owner)} || ' (API key ' || coalesce(${col(apiKeys.prefix)} || '…', ${col(apiKeys.id)}) || coalesce(' "' || ${col(apiKeys.name)} || '"', '') || ')')`;

/**
 * Per action, what the api_keys row of a key that may take it satisfies besides its hash:
 * live (not revoked, its creator, if any, still a member) and rights enough. Built once
 * per action and isolate: keyRights is a large tree of SQL, and orgOfKey() is asked at
 * every /v1 request.
 */
const keyMayTake = new Map<Action, SQL>();
const mayTake = (action: Action): SQL => {
  let condition = keyMayTake.get(action);
  if (!condition) {
    // A dead key's rights are null, and `null >= n` is not true: no `IS NOT NULL` (a second copy of keyRights) is needed.
    condition = sql`${apiKeys.revoked_at} IS NULL AND ${keyRights} >= ${rankOf(PERMISSIONS[action].least)}`;
    keyMayTake.set(action, condition);
  }
  return condition;
};

/**
 * The key's row, live or not, with what it may do: the statement every first read of a
 * /v1 request starts with. A row that is not live (deadKey) says why to the holder of
 * its secret alone: the lookup is by the secret's hash.
 */
function keyLookup(db: Db, hash: string) {
  return db
    .select({
      key_id: apiKeys.id,
      org_id: apiKeys.org_id,
      owner: keyCreatedBy.as('owner'),
      last_used_at: apiKeys.last_used_at,
      revoked_at: apiKeys.revoked_at,
      scope: apiKeys.scope,
      creator_role: creatorRole.as('creator_role'),
      rights: keyRights.as('rights'),
    })
    .from(apiKeys)
    .where(eq(apiKeys.key_hash, hash));
}

/** keyLookup() prepared once (src/db/prepared.ts): the first statement of every /v1 request's first batch. */
const preparedKeyLookup = prepared((db, p: Placeholders<{ hash: string }>) => keyLookup(db, p.hash));

/**
 * The caller's organization id as SQL, for statements batched with the key's lookup:
 * null for a dead key, or one whose rights do not allow `action` (the route's). Writes
 * scoped by it re-check the key's right inside their own batch: a revoke or a demotion
 * landing in between leaves them nothing to write.
 */
export function orgOfKey(hash: string, action: Action): SQL<string> {
  return sql<string>`(SELECT ${apiKeys.org_id} FROM ${apiKeys} WHERE ${apiKeys.key_hash} = ${hash} AND ${mayTake(action)})`;
}

/** The action the route declared (its door); a route that declares none is refused, never served. */
export function declaredAction(c: Context<AppEnv>): Action {
  const action = c.get('action');
  if (!action) throw new Error(`${c.req.method} ${c.req.path} declares no action (door.apiKey())`);
  return action;
}

type KeyRow = Awaited<ReturnType<ReturnType<typeof keyLookup>['all']>>[number];

/** Whether the secret's key is live: not revoked, its creator (if any) still a member. */
const isLive = (row: KeyRow | undefined): row is KeyRow => row !== undefined && row.revoked_at === null && row.rights !== null;

/**
 * The 401 of a key that is not live. Only a caller who sent the key's own secret learns
 * that it was revoked (or died with its creator's membership): to anyone else, no key
 * has that secret.
 */
function deadKey(row: KeyRow | undefined): ApiError {
  if (row?.revoked_at) return new ApiError(401, `This API key was revoked at ${row.revoked_at}: use another, or create one in the console`);
  if (row)
    return new ApiError(
      401,
      'This API key no longer works: its creator is no longer a member of the organization. Create a new one in the console',
    );
  return new ApiError(401, 'Invalid API key: no key has this secret (check that it was copied whole)');
}

/** Whether the key's row may take `action`. */
const allows = (row: KeyRow, action: Action) => row.rights !== null && row.rights >= rankOf(PERMISSIONS[action].least);

/** "a viewer", "an admin": a role with its article. */
const aRole = (role: Role) => `${/^[aeiou]/.test(role) ? 'an' : 'a'} ${role}`;

/**
 * 403: the key is good but may not take the route's action (docs/callers.md "API keys
 * and scopes"): what the action needs, and what limits the key, its scope or its creator's
 * role as it is now.
 */
function refused(row: KeyRow, action: Action): ApiError {
  const { least, covers } = PERMISSIONS[action];
  const scope = KEY_SCOPES[row.scope];
  const why =
    rankOf(scope.cap) < rankOf(least)
      ? `its scope is ${row.scope} (${scope.covers.toLowerCase()}): a key of scope ${KEY_SCOPE_NAMES.filter((s) => rankOf(KEY_SCOPES[s].cap) >= rankOf(least)).join(' or ')} may`
      : `a ${row.scope}-scope key has no more rights than its creator, who is now ${aRole(row.creator_role ?? 'viewer')} of the organization`;
  return new ApiError(403, `This API key may not ${covers.toLowerCase()}: that needs ${aRole(least)}'s rights or more, and ${why}`);
}

/** Accepts the key's row: the caller, and "last used" for the console, refreshed at most once a minute and off the response path. */
function accept(c: Context<AppEnv>, row: KeyRow): Caller {
  const action = declaredAction(c);
  if (!allows(row, action)) throw refused(row, action);
  const caller: Caller = { orgId: row.org_id, owner: row.owner, keyId: row.key_id, keyHash: c.get('apiKeyHash') };
  c.set('caller', caller);
  const now = Date.now();
  if (!row.last_used_at || Date.parse(row.last_used_at) < now - LAST_USED_RESOLUTION_MS) {
    const touch = c
      .get('db')
      .update(apiKeys)
      .set({ last_used_at: new Date(now).toISOString() })
      .where(
        and(
          eq(apiKeys.id, row.key_id),
          or(isNull(apiKeys.last_used_at), lt(apiKeys.last_used_at, new Date(now - LAST_USED_RESOLUTION_MS).toISOString())),
        ),
      )
      .run()
      .catch((err: unknown) => console.error(JSON.stringify({ level: 'warn', msg: 'last_used_at not updated', error: String(err) })));
    try {
      c.executionCtx.waitUntil(touch);
    } catch {
      // No execution context (a test calling app.fetch directly): let it run on its own.
    }
  }
  return caller;
}

/**
 * Runs the route's statements, built with the caller's organization as SQL, in one
 * batch with the key's lookup: one round trip, on a replica for reads unless the
 * request's session says otherwise (a batch that writes goes to the primary). 401 for
 * a dead key, whatever the statements did: a write must itself be scoped to orgOfKey(). `fresh(results)` says whether what a
 * replica answered may stand; when it says no (say, the record asked for is missing),
 * the batch is repeated on the primary, whose answer is final. The route's statements
 * are a record (src/db/batch.ts), answered by the same names. `build` is told whether
 * its attempt is the final one (on the primary, or a claiming batch, whose answers no
 * retry follows): a statement that only explains a missing record (where an archived
 * run went) waits for it, and a found record's batch goes without.
 */
export async function asCaller<T extends Steps>(
  c: Context<AppEnv>,
  build: (org: SQL<string>, attempt: { final: boolean }) => T,
  fresh: (results: BatchResults<T>) => boolean = () => true,
  { claim = true }: { claim?: boolean } = {},
): Promise<BatchResults<T>> {
  const hash = c.get('apiKeyHash');
  const sessions = c.get('sessions');
  // A request with an Idempotency-Key claims it in its first batch, before the route's
  // statements (src/middleware/idempotency/): the batch then writes, so it runs on
  // the primary, and all of it stands only if the claim is this request's.
  const idem = c.get('idempotency');
  const claiming = claim && idem?.state === 'pending';
  const action = declaredAction(c);
  const org = orgOfKey(hash, action);
  const run = async (db: Db, final: boolean) => {
    // The caller's own statements first; the route's, a part of the batch, after them.
    const { key, route } = await batchByName(db, {
      key: preparedKeyLookup(db, { hash }),
      claim: claiming ? [claimKey(db, org, idem.claim), requireClaim(db, org, idem.claim)] : undefined,
      route: build(org, { final }),
    });
    return { key: key[0], results: route as BatchResults<T> };
  };
  let answer: Awaited<ReturnType<typeof run>>;
  try {
    // No retry follows a claiming batch, nor one in a request already on the primary (below).
    answer = await run(sessions.db, claiming || !sessions.mayBeBehind);
  } catch (err) {
    if (claiming && isLostClaim(err)) throw await keyNotClaimed(c);
    // A bookmark D1 cannot serve (too old, or from elsewhere): a fresh session on the primary.
    if (!(sessions.fromBookmark && isBookmarkError(err))) throw err;
    console.error(JSON.stringify({ level: 'warn', msg: 'bookmark not served; reading from the primary', error: String(err) }));
    try {
      answer = await run(sessions.primary(), true);
    } catch (retryErr) {
      if (claiming && isLostClaim(retryErr)) throw await keyNotClaimed(c);
      throw retryErr;
    }
  }
  // A claiming batch ran on the primary: its refusals are final already. A key a
  // replica says may not take the action is asked again too (a promotion a moment ago).
  if ((!isLive(answer.key) || !allows(answer.key, action) || !fresh(answer.results)) && sessions.mayBeBehind && !claiming)
    answer = await run(sessions.primary(), true);
  if (!isLive(answer.key)) throw deadKey(answer.key);
  accept(c, answer.key);
  // The organization is known now: its rate-limit budget counts this request (no D1 read of its own).
  await limitOrganization(c, answer.key.org_id);
  if (claiming) idem.state = 'claimed';
  c.get('openBody')?.();
  return answer.results;
}

/**
 * Why a claiming batch failed, read on the primary: 401 for a dead API key (its
 * organization is null, so nothing was claimed), else the key belongs to another
 * request: the route stops and the idempotency middleware answers.
 */
async function keyNotClaimed(c: Context<AppEnv>): Promise<ApiError> {
  const db = c.get('sessions').primary();
  const idem = c.get('idempotency')!;
  const hash = c.get('apiKeyHash');
  const { keys, held } = await batchByName(db, {
    keys: preparedKeyLookup(db, { hash }),
    held: keyRow(db, orgOfKey(hash, declaredAction(c)), idem.claim.key),
  });
  if (!isLive(keys[0])) return deadKey(keys[0]);
  accept(c, keys[0]);
  await limitOrganization(c, keys[0].org_id);
  idem.state = 'taken';
  idem.found = held[0];
  return new IdempotencyHit();
}

/**
 * Why a write scoped by orgOfKey() was refused, read on the primary: 401 for a dead
 * key, 403 when its rights no longer allow the route's action; null when neither.
 */
export async function keyRefusal(c: Context<AppEnv>): Promise<ApiError | null> {
  const [row] = await keyLookup(c.get('sessions').primary(), c.get('apiKeyHash'));
  if (!isLive(row)) return deadKey(row);
  const action = declaredAction(c);
  return allows(row, action) ? null : refused(row, action);
}

/** The caller, checking the key now if no read has yet (routes whose first statement is a write or has none). */
export async function authenticate(c: Context<AppEnv>): Promise<Caller> {
  if (c.get('caller')) return c.get('caller');
  await asCaller(c, () => ({}));
  return c.get('caller');
}
