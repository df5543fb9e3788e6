// The fleet's statements: an agent's presence and leave (each checks the agent token
// in the same batch), and what the operators' fleet view reads. Batches answer by name
// (batchByName).
import { and, desc, eq, gt, isNull, sql, sum } from 'drizzle-orm';
import type { PresenceRequest } from 'prover-agent/protocol';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { agents, agentTokens, jobs, organizations, queueLanes } from '../../db/schema.ts';

/** The live agent token with this hash. */
export const liveToken = (hash: string) => and(eq(agentTokens.token_hash, hash), isNull(agentTokens.revoked_at));

/**
 * One batch: the live agent token `hash` names, and the agent's row written from it
 * (nothing for a dead token, or for a host declaring another machine type than the
 * token's; its GPUs no more than the token's max_gpus: ./declaration.ts). Answers the
 * token's id and machine type, or undefined for a dead token.
 */
export async function recordPresence(
  db: Db,
  hash: string,
  req: PresenceRequest,
  now: number,
): Promise<{ id: string; machine_type: string } | undefined> {
  const { token } = await batchByName(db, {
    token: db.select({ id: agentTokens.id, machine_type: agentTokens.machine_type }).from(agentTokens).where(liveToken(hash)),
    agent: db
      .insert(agents)
      .select(
        db
          .select({
            id: sql`${req.agent_id}`.as('id'),
            token_id: agentTokens.id,
            name: sql`${req.name}`.as('name'),
            machine_type: agentTokens.machine_type,
            gpus: sql`min(${req.gpus}, ${agentTokens.max_gpus})`.as('gpus'),
            engines: sql`${sql.param(req.engines, agents.engines)}`.as('engines'),
            configs: sql`${sql.param(req.configs, agents.configs)}`.as('configs'),
            last_seen_at: sql`${now}`.as('last_seen_at'),
            left_at: sql`NULL`.as('left_at'),
          })
          .from(agentTokens)
          .where(and(liveToken(hash), eq(agentTokens.machine_type, req.machine_type))),
      )
      .onConflictDoUpdate({
        target: agents.id,
        set: {
          token_id: sql`excluded.token_id`,
          name: sql`excluded.name`,
          machine_type: sql`excluded.machine_type`,
          gpus: sql`excluded.gpus`,
          engines: sql`excluded.engines`,
          configs: sql`excluded.configs`,
          last_seen_at: sql`excluded.last_seen_at`,
          left_at: null,
        },
      }),
  });
  return token[0];
}

/** One batch: the agent leaves the fleet if the live agent token `hash` is the one it reported with. Answers whether the token is live. */
export async function recordLeave(db: Db, hash: string, agentId: string, now: number): Promise<boolean> {
  const { token } = await batchByName(db, {
    token: db.select({ id: agentTokens.id }).from(agentTokens).where(liveToken(hash)),
    agent: db
      .update(agents)
      .set({ left_at: now })
      .where(
        and(eq(agents.id, agentId), sql`${agents.token_id} IN (SELECT ${agentTokens.id} FROM ${agentTokens} WHERE ${liveToken(hash)})`),
      ),
  });
  return token.length > 0;
}

/** Most live agent tokens listed (an operator makes a handful). */
const MAX_TOKENS = 500;

/** Agents seen within this long are listed. */
const AGENTS_WINDOW_MS = 24 * 3600_000;

/**
 * The fleet view's one batch: agents seen in the last day that have not left, the
 * queue by engine and config with its oldest job, the running count, and the live
 * agent tokens. From counters and indexes (queue lanes, organizations' running counts,
 * the oldest queued job per engine and config by jobs_queued_age), never by counting
 * the backlog.
 */
export function fleetOverview(db: Db, now: number) {
  const oldest = sql<
    number | null
  >`(SELECT min(${jobs.queued_at}) FROM ${jobs} WHERE ${jobs.status} = 'queued' AND ${jobs.engine} = ${queueLanes.engine} AND ${jobs.config_id} = ${queueLanes.config_id})`;
  return batchByName(db, {
    // An agent that stopped gracefully left the fleet at once (left_at).
    agents: db
      .select()
      .from(agents)
      .where(and(gt(agents.last_seen_at, now - AGENTS_WINDOW_MS), isNull(agents.left_at)))
      .orderBy(desc(agents.last_seen_at)),
    queued: db
      .select({
        engine: queueLanes.engine,
        config_id: queueLanes.config_id,
        jobs: sum(queueLanes.queued).mapWith(Number),
        oldest: oldest.as('oldest'),
      })
      .from(queueLanes)
      .where(gt(queueLanes.queued, 0))
      .groupBy(queueLanes.engine, queueLanes.config_id)
      .orderBy(sql`oldest`),
    running: db.select({ running: sum(organizations.running_jobs).mapWith(Number) }).from(organizations),
    // Each live token's scope and limits: what its agents can claim and hold, whatever they declare.
    tokens: db
      .select({
        id: agentTokens.id,
        name: agentTokens.name,
        engines: agentTokens.engines,
        configs: agentTokens.configs,
        machine_type: agentTokens.machine_type,
        max_gpus: agentTokens.max_gpus,
        max_leases: agentTokens.max_leases,
        created_at: agentTokens.created_at,
      })
      .from(agentTokens)
      .where(isNull(agentTokens.revoked_at))
      .orderBy(agentTokens.created_at, agentTokens.id)
      .limit(MAX_TOKENS),
  });
}
