// /console/v1/orgs/{org_id}/executions: the organization's execution runs, filtered.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, desc, eq, gte, lte, sql } from 'drizzle-orm';
import { EXECUTION_STATUSES, executions, organizations } from '../../db/schema.ts';
import { cappedCount, orgCounter, pageAnswer, pageQuery } from '../../lib/pages.ts';
import { validationHook } from '../../lib/errors.ts';
import { ExecutionRecord, executionRecord } from './schemas.ts';
import { CONSOLE_SECURITY, consoleErrors, DateParam, dateRange, OrgParams, pageOf, PaginationQuery } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { permit } from '../../middleware/permit.ts';
import { batchByName } from '../../db/batch.ts';

export const consoleExecutionsApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

consoleExecutionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs/{org_id}/executions',
    middleware: [permit('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'The organization’s executions, newest first',
    request: {
      params: OrgParams,
      query: PaginationQuery.extend({
        program_id: z.uuid().optional(),
        status: z.enum(EXECUTION_STATUSES).optional(),
        from: DateParam.optional(),
        to: DateParam.optional(),
      }),
    },
    responses: {
      200: {
        description: 'A page of executions',
        content: { 'application/json': { schema: pageOf(ExecutionRecord, 'ConsoleExecutionPage') } },
      },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const range = dateRange(q.from, q.to);
    const where = and(
      eq(executions.org_id, c.var.membership.orgId),
      q.program_id ? eq(executions.program_id, q.program_id) : undefined,
      q.status ? eq(executions.status, q.status) : undefined,
      range.from ? gte(executions.created_at, range.from) : undefined,
      range.to ? lte(executions.created_at, range.to) : undefined,
    );
    const db = c.var.db;
    const filtered = q.program_id || q.status || range.from || range.to;
    const total = filtered
      ? cappedCount(
          db
            .select({ one: sql`1` })
            .from(executions)
            .where(where),
        )
      : orgCounter(db, c.var.membership.orgId, sql`${organizations.execution_count}`);
    const rows = db.select().from(executions).where(where).orderBy(desc(executions.created_at), desc(executions.id)).$dynamic();
    return c.json(
      pageAnswer(await batchByName(db, pageQuery(db, rows, total, q.page, q.page_size)), executionRecord, q.page, q.page_size),
      200,
    );
  },
);
