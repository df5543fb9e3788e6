// /console/v1/orgs/{org_id}/usage: proofs, instructions, GPU-hours and cost per day and
// per project over a date range. GPU-hours are the leases' GPUs × wall time, the same
// measure cost is billed on (README "Cost").
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { sql } from 'drizzle-orm';
import { CONSOLE_SECURITY, consoleErrors, OrgParams } from '../../lib/console-schemas.ts';
import { ValidationError, validationHook } from '../../lib/errors.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';

export const usageApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

/** Longest range one request may ask for. */
export const MAX_USAGE_DAYS = 366;
const DAY_MS = 86_400_000;

const Totals = z.object({
  proofs: z.number().int(),
  instructions: z.number().int(),
  gpu_hours: z.number(),
  cost: z.number().int().openapi({ description: 'micro-USD' }),
});
const UsageResponse = z
  .object({
    from: z.string(),
    to: z.string(),
    totals: Totals,
    days: z.array(Totals.extend({ date: z.string() })),
    projects: z.array(Totals.extend({ project_id: z.string(), project_name: z.string() })),
  })
  .openapi('ConsoleUsage');

const Day = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, 'Value error, expected a date YYYY-MM-DD');

interface Row {
  key: string;
  name?: string;
  proofs: number;
  instructions: number | null;
  gpu_ms: number | null;
  cost: number | null;
}
const totals = (r: Row) => ({ proofs: r.proofs, instructions: r.instructions ?? 0, gpu_hours: Math.round(((r.gpu_ms ?? 0) / 3_600_000) * 1000) / 1000, cost: r.cost ?? 0 });

usageApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs/{org_id}/usage',
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Usage per day and per project (proofs by their creation day, UTC)',
    request: { params: OrgParams, query: z.object({ from: Day.optional(), to: Day.optional() }) },
    responses: { 200: { description: 'Usage', content: { 'application/json': { schema: UsageResponse } } }, ...consoleErrors(404, 422) },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const to = q.to ?? new Date().toISOString().slice(0, 10);
    const from = q.from ?? new Date(Date.parse(to) - 29 * DAY_MS).toISOString().slice(0, 10);
    const days = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
    if (!(days >= 1)) throw new ValidationError([{ loc: ['query', 'from'], msg: 'Value error, from must not be after to', type: 'value_error' }]);
    if (days > MAX_USAGE_DAYS) throw new ValidationError([{ loc: ['query', 'from'], msg: `Value error, at most ${MAX_USAGE_DAYS} days at once`, type: 'value_error' }]);
    const orgId = c.var.membership.orgId;
    const now = Date.now();
    // One row per proof in range with its GPU-milliseconds over all of its leases.
    const perProof = sql`
      SELECT p.id, substr(p.created_at, 1, 10) AS day, pr.project_id, p.num_instructions, p.cost,
        (SELECT sum((coalesce(l.ended_at, ${now}) - l.claimed_at) * l.gpus) FROM jobs j JOIN leases l ON l.job_id = j.id
          WHERE j.kind = 'proof' AND j.subject_id = p.id) AS gpu_ms
      FROM proofs p JOIN programs pr ON pr.id = p.program_id
      WHERE p.org_id = ${orgId} AND p.created_at >= ${from} AND p.created_at <= ${to + 'T23:59:59.999Z'}`;
    const db = c.var.db;
    const [byDay, byProject] = await Promise.all([
      db.all<Row>(sql`SELECT day AS key, count(*) AS proofs, sum(num_instructions) AS instructions, sum(gpu_ms) AS gpu_ms, sum(cost) AS cost FROM (${perProof}) GROUP BY day ORDER BY day`),
      db.all<Row>(
        sql`SELECT u.project_id AS key, pj.name AS name, count(*) AS proofs, sum(num_instructions) AS instructions, sum(gpu_ms) AS gpu_ms, sum(u.cost) AS cost
            FROM (${perProof}) u JOIN projects pj ON pj.id = u.project_id GROUP BY u.project_id ORDER BY cost DESC, proofs DESC`,
      ),
    ]);
    // Every day of the range, zeros included, so a chart has an even x axis.
    const found = new Map(byDay.map((r) => [r.key, r]));
    const dayRows = Array.from({ length: days }, (_, i) => {
      const date = new Date(Date.parse(from) + i * DAY_MS).toISOString().slice(0, 10);
      return { date, ...totals(found.get(date) ?? { key: date, proofs: 0, instructions: 0, gpu_ms: 0, cost: 0 }) };
    });
    const sum = (k: 'proofs' | 'instructions' | 'gpu_hours' | 'cost') => dayRows.reduce((a, d) => a + d[k], 0);
    return c.json(
      {
        from,
        to,
        totals: { proofs: sum('proofs'), instructions: sum('instructions'), gpu_hours: Math.round(sum('gpu_hours') * 1000) / 1000, cost: sum('cost') },
        days: dayRows,
        projects: byProject.map((r) => ({ project_id: r.key, project_name: r.name ?? '', ...totals(r) })),
      },
      200,
    );
  },
);
