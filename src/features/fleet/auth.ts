// Authentication of the internal API: agents present an agent token (made by the
// operator command); callbacks on a claimed job present that job's lease token.
// Neither is an API key: a caller's key opens nothing here.
import { and, eq, isNull, sql } from 'drizzle-orm';
import { createMiddleware } from 'hono/factory';
import type { AppEnv } from '../../app-env.ts';
import { agentTokens, jobs, leases } from '../../db/schema.ts';
import { bearer } from '../../lib/bearer.ts';
import { sha256Hex } from '../../lib/crypto.ts';
import { ApiError } from '../../lib/errors.ts';
import type { JobRow, LeaseRow } from '../../jobs/state.ts';

// The fleet's routes read their tokens with it from here.
export { bearer };

export interface InternalEnv extends AppEnv {
  Variables: AppEnv['Variables'] & {
    agentTokenId: string;
    lease: LeaseRow;
    job: JobRow;
    /** Whether the queue token's agent token was revoked: a read started by the queue routes' middleware (src/features/fleet/queue.ts). */
    queueTokenRevoked: Promise<boolean>;
  };
}

/** Resolves an agent token; throws 401 for unknown or revoked ones. */
export async function agentTokenId(c: { var: AppEnv['Variables'] }, header: string | undefined): Promise<string> {
  const hash = await sha256Hex(bearer(header));
  const row = await c.var.db
    .select({ id: agentTokens.id })
    .from(agentTokens)
    .where(and(eq(agentTokens.token_hash, hash), isNull(agentTokens.revoked_at)))
    .get();
  if (!row) throw new ApiError(401, 'Invalid or revoked agent token');
  return row.id;
}

export const requireAgentToken = createMiddleware<InternalEnv>(async (c, next) => {
  c.set('agentTokenId', await agentTokenId(c, c.req.header('authorization')));
  await next();
});

/**
 * For routes that check the agent token inside their own batch (claims, presence):
 * the token must be there, and a body refused for its shape is answered 401 first if
 * the token is no good (the check runs only then: src/lib/errors.ts credentialsFirst).
 */
export const agentTokenInBatch = createMiddleware<InternalEnv>(async (c, next) => {
  const header = c.req.header('authorization');
  bearer(header);
  c.set('authGate', async () => void (await agentTokenId(c, header)));
  await next();
});

/**
 * A job token lives only while the agent token that claimed its lease does: revoking
 * that token ends the lease (migrations/0010_fleet_scope.sql), and this refuses the job
 * token in the same read that resolves it, whatever the lease's state.
 */
export const leaseTokenLive = sql`EXISTS (SELECT 1 FROM ${agentTokens} WHERE ${agentTokens.id} = ${leases.agent_token_id} AND ${agentTokens.revoked_at} IS NULL)`;

/** The lease and job of a job token whose agent token is live; 401 otherwise. */
async function leaseOfJobToken(c: { var: AppEnv['Variables'] }, header: string | undefined) {
  const hash = await sha256Hex(bearer(header));
  const row = await c.var.db
    .select()
    .from(leases)
    .leftJoin(jobs, eq(jobs.id, leases.job_id))
    .where(and(eq(leases.token_hash, hash), leaseTokenLive))
    .get();
  if (!row || !row.jobs) throw new ApiError(401, 'Invalid job token, or its agent token was revoked');
  return { lease: row.leases, job: row.jobs };
}

/**
 * For the heartbeat, which resolves its job token inside its own batch: the token must
 * be there, and a body refused for its shape is answered 401 first if the token is no good.
 */
export const jobTokenInBatch = createMiddleware<InternalEnv>(async (c, next) => {
  const header = c.req.header('authorization');
  bearer(header);
  c.set('authGate', async () => void (await leaseOfJobToken(c, header)));
  await next();
});

/** Resolves a job token to its lease and job. Whether the lease is still current is the route's call. */
export const requireJobToken = createMiddleware<InternalEnv>(async (c, next) => {
  const { lease, job } = await leaseOfJobToken(c, c.req.header('authorization'));
  c.set('lease', lease);
  c.set('job', job);
  await next();
});
