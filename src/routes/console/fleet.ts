// /console/v1/fleet: for service operators, the agents in the fleet and the queue by
// engine and config, and the live agent tokens with their scopes. Not organization-scoped: operators see the whole service. Read
// from counters and indexes (queue lanes, organizations' running counts, the oldest
// queued job per engine and config by jobs_queued_age), never by counting the backlog.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { and, desc, gt, isNull, sql, sum } from 'drizzle-orm';
import { agents, agentTokens, jobs, organizations, queueLanes } from '../../db/schema.ts';
import { fleetSettings } from '../../jobs/settings.ts';
import { FleetResponse } from '../../features/fleet/schemas.ts';
import { CONSOLE_SECURITY, consoleErrors } from '../../lib/schemas.ts';
import { validationHook } from '../../lib/errors.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { permit } from '../../middleware/permit.ts';

export const fleetApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

/** Most live agent tokens listed (an operator makes a handful). */
const MAX_TOKENS = 500;

/** Agents seen within this long are listed. */
const AGENTS_WINDOW_MS = 24 * 3600_000;

fleetApi.openapi(
  createRoute({
    method: 'get',
    path: '/fleet',
    middleware: [permit('operator')],
    tags: ['console fleet'],
    security: CONSOLE_SECURITY,
    summary: 'Agents seen in the last day that have not left, queued jobs by engine and config (operators only)',
    responses: { 200: { description: 'The fleet', content: { 'application/json': { schema: FleetResponse } } }, ...consoleErrors(403) },
  }),
  async (c) => {
    const db = c.var.db;
    const now = Date.now();
    const stale = fleetSettings(c.env).agentStaleMs;
    const oldest = sql<number | null>`(SELECT min(${jobs.queued_at}) FROM ${jobs} WHERE ${jobs.status} = 'queued' AND ${jobs.engine} = ${queueLanes.engine} AND ${jobs.config_id} = ${queueLanes.config_id})`;
    const [agentRows, queued, [total], tokens] = await db.batch([
      // An agent that stopped gracefully left the fleet at once (left_at).
      db.select().from(agents).where(and(gt(agents.last_seen_at, now - AGENTS_WINDOW_MS), isNull(agents.left_at))).orderBy(desc(agents.last_seen_at)),
      db
        .select({ engine: queueLanes.engine, config_id: queueLanes.config_id, jobs: sum(queueLanes.queued).mapWith(Number), oldest: oldest.as('oldest') })
        .from(queueLanes)
        .where(gt(queueLanes.queued, 0))
        .groupBy(queueLanes.engine, queueLanes.config_id)
        .orderBy(sql`oldest`),
      db.select({ running: sum(organizations.running_jobs).mapWith(Number) }).from(organizations),
      // Each live token's scope: what its agents can claim, whatever they declare.
      db
        .select({ id: agentTokens.id, name: agentTokens.name, engines: agentTokens.engines, configs: agentTokens.configs, created_at: agentTokens.created_at })
        .from(agentTokens)
        .where(isNull(agentTokens.revoked_at))
        .orderBy(agentTokens.created_at, agentTokens.id)
        .limit(MAX_TOKENS),
    ]);
    const running = total?.running ?? 0;
    return c.json(
      {
        agents: agentRows.map((a) => ({
          id: a.id,
          name: a.name,
          machine_type: a.machine_type,
          gpus: a.gpus,
          engines: a.engines,
          configs: a.configs,
          last_seen_at: new Date(a.last_seen_at).toISOString(),
          stale: now - a.last_seen_at > stale,
        })),
        queued: queued.map((q) => ({
          engine: q.engine,
          config_id: q.config_id,
          jobs: q.jobs,
          oldest_queued_at: new Date(q.oldest ?? now).toISOString(),
          oldest_age_seconds: Math.max(0, Math.round((now - (q.oldest ?? now)) / 1000)),
        })),
        running,
        tokens,
      },
      200,
    );
  },
);
