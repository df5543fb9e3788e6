// Authentication of the internal API: agents present an agent token (made by the
// operator command) or the queue token their presence report got; callbacks on a
// claimed job present that job's lease token. None is an API key: a caller's key opens
// nothing here. Each route declares which at its door (fleetDoor, src/middleware/door.ts):
// the token is checked there, before one byte of the body is read, and an unknown one
// costs at most one D1 read, never a write.
import { and, eq, isNull, sql } from 'drizzle-orm';
import type { Context } from 'hono';
import type { AppEnv, VariablesOf } from '../../app-env.ts';
import { agentTokens, jobs, leases } from '../../db/schema.ts';
import type { Db } from '../../db/client.ts';
import { prepared, type Placeholders } from '../../db/prepared.ts';
import { bearer } from '../../lib/bearer.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';
import type { JobRow, LeaseRow } from '../../jobs/state.ts';
import { door, SeenLive } from '../../middleware/door.ts';
import type { Body } from '../../middleware/door-kinds.ts';
import { PRESENCE_INTERVAL_MS, queueTokenLive, verifyQueueToken } from './queue-token.ts';

// The fleet's routes read their tokens with it from here.
export { bearer };

export interface InternalEnv extends AppEnv {
  Variables: AppEnv['Variables'] & {
    lease: LeaseRow;
    job: JobRow;
  };
}

/** The id of a live agent token, by its hash; 401 for unknown or revoked ones. */
async function agentTokenIdOf(c: VariablesOf<AppEnv['Variables']>, hash: string): Promise<string> {
  const row = await c
    .get('db')
    .select({ id: agentTokens.id })
    .from(agentTokens)
    .where(and(eq(agentTokens.token_hash, hash), isNull(agentTokens.revoked_at)))
    .get();
  if (!row) throw new ApiError(401, 'Invalid or revoked agent token');
  return row.id;
}

/** Resolves an agent token; throws 401 for unknown or revoked ones. */
export async function agentTokenId(c: VariablesOf<AppEnv['Variables']>, header: string | undefined): Promise<string> {
  return agentTokenIdOf(c, await sha256Hex(bearer(header)));
}

/**
 * A job token lives only while the agent token that claimed its lease does: revoking
 * that token ends the lease (migrations/0010_fleet_scope.sql), and this refuses the job
 * token in the same read that resolves it, whatever the lease's state.
 */
export const leaseTokenLive = sql`EXISTS (SELECT 1 FROM ${agentTokens} WHERE ${agentTokens.id} = ${leases.agent_token_id} AND ${agentTokens.revoked_at} IS NULL)`;

/**
 * A job token's lease (its agent token live) and its job, as two statements of a
 * callback's own first batch (their rows share column names, which a batch's rows, keyed
 * by name, would mix up in one join), with what else the batch finds by the token
 * (`byToken`: src/jobs/kinds/contract.ts CompletionOpening).
 */
const leaseByToken = prepared((db, p: Placeholders<{ hash: string }>) =>
  db
    .select()
    .from(leases)
    .where(and(eq(leases.token_hash, p.hash), leaseTokenLive)),
);
const jobByToken = prepared((db, p: Placeholders<{ hash: string }>) =>
  db
    .select()
    .from(jobs)
    .where(sql`${jobs.id} = (SELECT ${leases.job_id} FROM ${leases} WHERE ${leases.token_hash} = ${p.hash} AND ${leaseTokenLive})`),
);

/** The statements that find a job token's lease and its job (leaseByToken, jobByToken), for a batch. */
export const jobTokenSteps = (db: Db, hash: string) => ({ lease: leaseByToken(db, { hash }), job: jobByToken(db, { hash }) });

/**
 * The agent token that claimed a job token's lease, if it is live: its hash, which a
 * completion's next claim is made for (src/features/fleet/claim.ts claimWithCompletion).
 */
const agentTokenOfLease = prepared((db, p: Placeholders<{ hash: string }>) =>
  db
    .select({ token_hash: agentTokens.token_hash })
    .from(agentTokens)
    .where(
      and(
        eq(agentTokens.id, sql`(SELECT ${leases.agent_token_id} FROM ${leases} WHERE ${leases.token_hash} = ${p.hash})`),
        isNull(agentTokens.revoked_at),
      ),
    ),
);

/** The statement that finds the agent token of a job token's lease (agentTokenOfLease), for a batch. */
export const leaseAgentTokenStep = (db: Db, hash: string) => agentTokenOfLease(db, { hash });

/** The lease and job jobTokenSteps found; 401 when the token is unknown or its agent token revoked. */
export function tokenLease({ lease, job }: { lease: LeaseRow[]; job: JobRow[] }): { lease: LeaseRow; job: JobRow } {
  if (!lease[0] || !job[0]) throw new ApiError(401, 'Invalid job token, or its agent token was revoked');
  return { lease: lease[0], job: job[0] };
}

/** A job token's lease and its job as one statement (a join, run alone): the door's, whose refusal of an unknown token is one read of one statement. */
const leaseAndJobOf = prepared((db, p: Placeholders<{ hash: string }>) =>
  db
    .select()
    .from(leases)
    .leftJoin(jobs, eq(jobs.id, leases.job_id))
    .where(and(eq(leases.token_hash, p.hash), leaseTokenLive)),
);

/** The lease and job of a job token (by its hash) whose agent token is live; 401 otherwise. */
async function leaseOfJobToken(c: VariablesOf<AppEnv['Variables']>, hash: string) {
  const [row] = await leaseAndJobOf(c.get('db'), { hash }).all();
  return tokenLease({ lease: row ? [row.leases] : [], job: row?.jobs ? [row.jobs] : [] });
}

const bearerHashes = new WeakMap<Context, Promise<string>>();

/** The bearer token's hash: whose budget a request counts against, and what its check looks up (computed once per request). */
export function bearerHash(c: Context): Promise<string> {
  let hash = bearerHashes.get(c);
  if (!hash) bearerHashes.set(c, (hash = sha256Hex(bearer(c.req.header('authorization')))));
  return hash;
}

/**
 * How long a door takes a token it found live for live again without a read, on routes
 * whose own batch checks the token once more (heartbeats; a config's record, read by
 * agents, which has no batch of its own: a revoked token reads it for at most this long):
 * a revoked token's request meanwhile is read (within its cap) and refused by that batch.
 */
export const SEEN_LIVE_MS = 60_000;
const liveAgentTokens = new SeenLive(SEEN_LIVE_MS);
const liveJobTokens = new SeenLive(SEEN_LIVE_MS);

/**
 * The agent door's own (claims, presence, leaves: each checks the token again in the
 * statement that writes): two presence intervals, renewed by each presence that found
 * the token live, so an agent's presence, once a minute, is its one statement.
 */
const liveAgentDoorTokens = new SeenLive(2 * PRESENCE_INTERVAL_MS);

/** A job token this isolate just issued (a claim): live, as its lease was made with it. */
export const seenLiveJobToken = (hash: string) => liveJobTokens.add(hash);

/** An agent token a presence statement just found live (src/features/fleet/agents.ts). */
export const seenLiveAgentToken = (hash: string) => liveAgentDoorTokens.add(hash);

/** A token a door found live a moment ago, or one read (401 when it is not live). */
const seenOrRead =
  (seen: SeenLive, read: (c: Context<InternalEnv>, hash: string) => Promise<unknown>) => async (c: Context<InternalEnv>) => {
    const key = await bearerHash(c);
    return {
      key,
      check: async () => {
        if (seen.has(key)) return;
        await read(c, key);
        seen.add(key);
      },
    };
  };

/** Checks an agent token (a live row of agent_tokens, by hash; 401 otherwise) before the request's body. */
export const agentTokenCheck = seenOrRead(liveAgentTokens, agentTokenIdOf);

/** The doors of the fleet's routes, by the token each takes. */
export const fleetDoor = {
  /** An agent token, for routes whose own batch checks it again (claims, presence, leaves). */
  agent: (body: Body) =>
    door.token<InternalEnv>({ credential: 'agent', body, rate: 'agent' }, seenOrRead(liveAgentDoorTokens, agentTokenIdOf)),

  /** A job token: its lease and job read before the body (c.get('lease'), c.get('job')); whether the lease is current is the route's call. */
  job: (body: Body) =>
    door.token<InternalEnv>({ credential: 'job', body, rate: 'job' }, async (c) => {
      const key = await bearerHash(c);
      return {
        key,
        check: async () => {
          const { lease, job } = await leaseOfJobToken(c, key);
          c.set('lease', lease);
          c.set('job', job);
        },
      };
    }),

  /** A job token, for the heartbeat, which resolves it inside its own batch (one round trip): checked before the body as the agent token's is. */
  jobInBatch: (body: Body) => door.token<InternalEnv>({ credential: 'job', body, rate: 'job' }, seenOrRead(liveJobTokens, leaseOfJobToken)),

  /**
   * A queue token: its signature and lifetime, checked with no database, and counted per
   * agent; its agent token taken for live within the revocation bound of when it was
   * last found live, read otherwise (./queue-token.ts queueTokenLive).
   */
  queue: (body: Body) =>
    door.token<InternalEnv>({ credential: 'queue', body, rate: 'queue' }, async (c) => {
      const claims = await verifyQueueToken(c.env, bearer(c.req.header('authorization')));
      return {
        key: `${claims.sub}/${claims.aid}`,
        check: async () => {
          if (!(await queueTokenLive(c.get('db'), claims))) throw new ApiError(401, 'This queue token’s agent token was revoked');
        },
      };
    }),
};
