// /console/v1/orgs/{org_id}/audit: who changed which keys, members and webhook endpoints, newest first.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { validationHook } from '../../../lib/errors.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams, PaginationQuery, pageOf } from '../../../lib/schemas.ts';
import type { ConsoleEnv } from '../../../middleware/console-auth.ts';
import { door } from '../../../middleware/door.ts';
import { auditPage } from '../audit.ts';
import { AuditEntry } from '../schemas.ts';

export const auditApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

auditApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgAuditLog',
    description:
      'Who created or revoked API keys, invited, changed or removed members, and changed webhook endpoints, newest first, a page at a time.',
    path: '/orgs/{org_id}/audit',
    middleware: [door.console('audit.read')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'The audit log of key, member and webhook endpoint changes (owners and admins)',
    request: { params: OrgParams, query: PaginationQuery },
    responses: {
      200: {
        description: 'A page of entries, newest first',
        content: { 'application/json': { schema: pageOf(AuditEntry, 'ConsoleAuditPage') } },
      },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    const { page, page_size } = c.req.valid('query');
    return c.json(await auditPage(c.get('db'), c.get('membership').orgId, page, page_size), 200);
  },
);
