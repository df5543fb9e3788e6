// /console/v1/orgs/{org_id}/budget: the organization's monthly budget (docs/teams.md
// "Budgets"): its limits, this month's usage and the threshold notices, read by any
// member; set by owners and admins (budgets.manage). The operator sets it too
// (`npm run admin -- set-budget`). API keys have no route here: a budget is the
// organization's, not a tool's, to change.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { monthOf } from '../../jobs/budgets.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams } from '../../lib/schemas.ts';
import { validationHook } from '../../lib/errors.ts';
import { asMember, type ConsoleEnv } from '../../middleware/console-auth.ts';
import { BODY_CAPS } from '../../lib/limits.ts';
import { door, json } from '../../middleware/door.ts';
import { actorOf } from '../accounts/audit.ts';
import { readBudget, setBudget } from './data.ts';
import { BudgetBody, BudgetRecord } from './schemas.ts';

export const budgetsConsoleApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

const ok = { description: 'The budget, this month’s usage and notices', content: { 'application/json': { schema: BudgetRecord } } };

budgetsConsoleApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgBudget',
    description:
      "The spending and GPU-hour limits per calendar month (UTC), this month's usage against them, and the 50, 80 and 100 % thresholds crossed. At 100 % new proofs and executions are refused.",
    path: '/orgs/{org_id}/budget',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'The organization’s monthly budget, this month’s usage and the thresholds crossed',
    request: { params: OrgParams },
    responses: { 200: ok, ...consoleErrors(404, 422) },
  }),
  async (c) => c.json(await readBudget(c.get('db'), c.get('membership').orgId, monthOf(Date.now())), 200),
);

budgetsConsoleApi.openapi(
  createRoute({
    method: 'put',
    operationId: 'setOrgBudget',
    path: '/orgs/{org_id}/budget',
    middleware: [door.console('budgets.manage', { body: json(BODY_CAPS.small) })],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Set the organization’s monthly budget (owners and admins)',
    description:
      'Sets both limits: an absent or null one is no limit. A limit set at or below this month’s usage takes effect at once: its threshold notices are made and new proofs and executions are refused.',
    request: { params: OrgParams, body: { required: true, content: { 'application/json': { schema: BudgetBody } } } },
    responses: { 200: ok, ...consoleErrors(403, 404, 422) },
  }),
  async (c) => {
    const body = c.req.valid('json');
    const limits = { monthly_cost: body.monthly_cost ?? null, monthly_gpu_hours: body.monthly_gpu_hours ?? null };
    const month = monthOf(Date.now());
    return c.json(await asMember(c, (org) => setBudget(c.get('db'), c.get('membership').orgId, limits, actorOf(c, org), month)), 200);
  },
);
