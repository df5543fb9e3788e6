// /console/v1/orgs/{org_id}/limits: the organization's job limits (each the default and
// the ceiling of its proofs' and executions' own, src/jobs/limits.ts), quotas and their
// usage (docs/callers.md "Job limits"), read by any member; the limits set by owners and admins
// (limits.manage, audited with the actor; the operator with `npm run admin --
// set-org-limits`, which also sets the quotas). API keys have no route here, as for budgets.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { quotaDefaults } from '../../jobs/quotas.ts';
import { validationHook } from '../../lib/errors.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams } from '../../lib/schemas.ts';
import { asMember, type ConsoleEnv } from '../../middleware/console-auth.ts';
import { BODY_CAPS } from '../../lib/limits.ts';
import { door, json } from '../../middleware/door.ts';
import { actorOf } from '../accounts/audit.ts';
import { readOrgLimits, setOrgLimits } from './data.ts';
import { OrgLimitsBody, OrgLimitsRecord } from './schemas.ts';

export const limitsConsoleApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

const ok = { description: 'The limits', content: { 'application/json': { schema: OrgLimitsRecord } } };

limitsConsoleApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgLimits',
    description:
      'The default cycle, cost and deadline limits new jobs get, and the organization\'s quotas with its usage of them now (docs/teams.md "Job limits").',
    path: '/orgs/{org_id}/limits',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'The organization’s job limits, its quotas and its usage of them',
    request: { params: OrgParams },
    responses: { 200: ok, ...consoleErrors(404, 422) },
  }),
  async (c) => c.json(await readOrgLimits(c.get('db'), c.get('membership').orgId, quotaDefaults(c.env)), 200),
);

limitsConsoleApi.openapi(
  createRoute({
    method: 'put',
    operationId: 'setOrgLimits',
    path: '/orgs/{org_id}/limits',
    middleware: [door.console('limits.manage', { body: json(BODY_CAPS.small) })],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Set the organization’s job limits (owners and admins)',
    description:
      'Sets all three: an absent or null one is none. Each is the default of proofs and executions submitted from now on that name none, and the most one may name (more is refused with 422); queued and running jobs keep theirs. Audited as `org_limits.update`.',
    request: { params: OrgParams, body: { required: true, content: { 'application/json': { schema: OrgLimitsBody } } } },
    responses: { 200: ok, ...consoleErrors(403, 404, 422) },
  }),
  async (c) => {
    const body = c.req.valid('json');
    return c.json(
      await asMember(c, (org) => setOrgLimits(c.get('db'), c.get('membership').orgId, body, actorOf(c, org), quotaDefaults(c.env))),
      200,
    );
  },
);
