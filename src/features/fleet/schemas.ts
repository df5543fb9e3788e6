// The fleet's schemas. The console's fleet record lives here (it came out of
// lib/console-records.ts, which was accounts' and the console's alike); free of Worker
// APIs, as the console's browser client takes its types from it (src/console/ui/api-types.ts).
import { z } from '@hono/zod-openapi';

export const FleetResponse = z
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
    /** Live agent tokens and what each lets its agents claim (configs null: every config of its engines). */
    tokens: z.array(z.object({ id: z.string(), name: z.string(), engines: z.array(z.string()), configs: z.array(z.string()).nullable(), created_at: z.string() })),
    running: z.number().int(),
  })
  .openapi('ConsoleFleet');
