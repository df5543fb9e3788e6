// /console/v1/fleet: for service operators, the agents seen and the queue by engine
// and config. Not organization-scoped: operators see the whole service.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, asc, count, desc, eq, gt, min } from 'drizzle-orm';
import { agents, jobs } from '../../db/schema.ts';
import { fleetSettings } from '../../jobs/settings.ts';
import { CONSOLE_SECURITY, consoleErrors } from '../../lib/console-schemas.ts';
import { validationHook } from '../../lib/errors.ts';
import { requireOperator, type ConsoleEnv } from '../../middleware/console-auth.ts';

export const fleetApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

/** Agents seen within this long are listed. */
const AGENTS_WINDOW_MS = 24 * 3600_000;

const FleetResponse = z
  .object({
    agents: z.array(
      z.object({
        id: z.string(),
        name: z.string(),
        machine_type: z.string(),
        gpus: z.number().int(),
        engines: z.array(z.string()),
        configs: z.array(z.string()),
        last_seen_at: z.string(),
        stale: z.boolean(),
      }),
    ),
    queued: z.array(z.object({ engine: z.string(), config_id: z.string(), jobs: z.number().int(), oldest_queued_at: z.string(), oldest_age_seconds: z.number().int() })),
    running: z.number().int(),
  })
  .openapi('ConsoleFleet');

fleetApi.openapi(
  createRoute({
    method: 'get',
    path: '/fleet',
    tags: ['console fleet'],
    security: CONSOLE_SECURITY,
    summary: 'Agents seen in the last day, queued jobs by engine and config (operators only)',
    responses: { 200: { description: 'The fleet', content: { 'application/json': { schema: FleetResponse } } }, ...consoleErrors(403) },
  }),
  async (c) => {
    requireOperator(c);
    const db = c.var.db;
    const now = Date.now();
    const stale = fleetSettings(c.env).agentStaleMs;
    const [agentRows, queued, [{ running }]] = await Promise.all([
      db.select().from(agents).where(gt(agents.last_seen_at, now - AGENTS_WINDOW_MS)).orderBy(desc(agents.last_seen_at)),
      db
        .select({ engine: jobs.engine, config_id: jobs.config_id, jobs: count(), oldest: min(jobs.queued_at) })
        .from(jobs)
        .where(eq(jobs.status, 'queued'))
        .groupBy(jobs.engine, jobs.config_id)
        .orderBy(asc(min(jobs.queued_at))),
      db.select({ running: count() }).from(jobs).where(and(eq(jobs.status, 'leased'))) as Promise<{ running: number }[]>,
    ]);
    return c.json(
      {
        agents: agentRows.map((a) => ({
          id: a.id,
          name: a.name,
          machine_type: a.machine_type,
          gpus: a.gpus,
          engines: JSON.parse(a.engines) as string[],
          configs: JSON.parse(a.configs) as string[],
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
      },
      200,
    );
  },
);
