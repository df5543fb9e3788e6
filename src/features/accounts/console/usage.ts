// /console/v1/orgs/{org_id}/usage: proofs, instructions, GPU-hours and cost per day and
// per project over a date range (../usage.ts reads them from the daily rollup).
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { ValidationError, validationHook } from '../../../lib/errors.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams } from '../../../lib/schemas.ts';
import type { ConsoleEnv } from '../../../middleware/console-auth.ts';
import { door } from '../../../middleware/door.ts';
import { UsageQuery, UsageResponse } from '../schemas.ts';
import { DAY_MS, MAX_USAGE_DAYS, usageOf } from '../usage.ts';

export const usageApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

usageApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgUsage',
    description:
      "Proofs (by their creation day, UTC), instructions, GPU-hours and cost (micro-USD) per day and per project from `from` to `to` (YYYY-MM-DD), with totals: what the console's usage chart draws.",
    path: '/orgs/{org_id}/usage',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Usage per day and per project (proofs by their creation day, UTC)',
    request: { params: OrgParams, query: UsageQuery },
    responses: { 200: { description: 'Usage', content: { 'application/json': { schema: UsageResponse } } }, ...consoleErrors(404, 422) },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const to = q.to ?? new Date().toISOString().slice(0, 10);
    const from = q.from ?? new Date(Date.parse(to) - 29 * DAY_MS).toISOString().slice(0, 10);
    const days = (Date.parse(to) - Date.parse(from)) / DAY_MS + 1;
    if (!(days >= 1))
      throw new ValidationError([{ loc: ['query', 'from'], msg: 'Value error, from must not be after to', type: 'value_error' }]);
    if (days > MAX_USAGE_DAYS)
      throw new ValidationError([
        { loc: ['query', 'from'], msg: `Value error, at most ${MAX_USAGE_DAYS} days at once`, type: 'value_error' },
      ]);
    return c.json(await usageOf(c.get('db'), c.get('membership').orgId, from, to, days), 200);
  },
);
