// /console/v1/fleet: for service operators, the agents in the fleet and the queue by
// engine and config, and the live agent tokens with their scopes. Not organization-scoped: operators see the whole service. Read
// in one batch (./data.ts fleetOverview), never by counting the backlog.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { fleetSettings } from '../../jobs/settings.ts';
import { FleetResponse } from '../../features/fleet/schemas.ts';
import { CONSOLE_SECURITY, consoleErrors } from '../../lib/schemas.ts';
import { validationHook } from '../../lib/errors.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { door } from '../../middleware/door.ts';
import { fleetOverview } from './data.ts';

export const fleetApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

fleetApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getFleet',
    description:
      "For the service's operators: the prover agents seen in the last day that have not left, and the queued jobs by engine and config.",
    path: '/fleet',
    middleware: [door.console('operator')],
    tags: ['console fleet'],
    security: CONSOLE_SECURITY,
    summary: 'Agents seen in the last day that have not left, queued jobs by engine and config (operators only)',
    responses: { 200: { description: 'The fleet', content: { 'application/json': { schema: FleetResponse } } }, ...consoleErrors(403) },
  }),
  async (c) => {
    const db = c.get('db');
    const now = Date.now();
    const stale = fleetSettings(c.env).agentStaleMs;
    const {
      agents: agentRows,
      queued,
      running: [total],
      tokens,
    } = await fleetOverview(db, now);
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
