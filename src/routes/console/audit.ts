// /console/v1/orgs/{org_id}/audit: who changed which keys, members and webhook endpoints, newest first.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { desc, eq, sql } from 'drizzle-orm';
import { auditLog } from '../../db/schema.ts';
import { batchByName } from '../../db/batch.ts';
import { AuditEntry } from '../../lib/console-records.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams } from '../../lib/console-schemas.ts';
import { validationHook } from '../../lib/errors.ts';
import { cappedCount, pageAnswer, pageQuery } from '../../lib/pages.ts';
import { PaginationQuery, pageOf } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { permit } from '../../middleware/permit.ts';

export const auditApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

auditApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs/{org_id}/audit',
    middleware: [permit('audit.read')],
    tags: ['console members'],
    security: CONSOLE_SECURITY,
    summary: 'The audit log of key, member and webhook endpoint changes (owners and admins)',
    request: { params: OrgParams, query: PaginationQuery },
    responses: { 200: { description: 'A page of entries, newest first', content: { 'application/json': { schema: pageOf(AuditEntry, 'ConsoleAuditPage') } } }, ...consoleErrors(403, 404, 422) },
  }),
  async (c) => {
    const { page, page_size } = c.req.valid('query');
    const where = eq(auditLog.org_id, c.var.membership.orgId);
    const db = c.var.db;
    const rows = db.select().from(auditLog).where(where).orderBy(desc(auditLog.id)).$dynamic();
    // An organization's audit log only grows and has no counter: its total is counted up to COUNT_CAP.
    const total = cappedCount(db.select({ one: sql`1` }).from(auditLog).where(where));
    const read = await batchByName(db, pageQuery(db, rows, total, page, page_size));
    return c.json(pageAnswer(read, (r) => ({ id: r.id, created_at: r.created_at, actor: r.actor, action: r.action, target: r.target, detail: r.detail }), page, page_size), 200);
  },
);
