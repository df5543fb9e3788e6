// /console/v1/orgs/{org_id}/executions: the organization's execution runs, filtered, and
// one execution with the estimate of proving its run (its console page).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, desc, eq, gte, lte, sql } from 'drizzle-orm';
import { EXECUTION_STATUSES, executions, organizations } from '../../db/schema.ts';
import { cappedCount, orgCounter, pageAnswer, pageQuery } from '../../lib/pages.ts';
import { validationHook } from '../../lib/errors.ts';
import { ConsoleExecution, ExecutionRecord, executionRecord } from './schemas.ts';
import { executionColumns, executionQuery } from './data.ts';
import { estimateBasisQuery, estimateOf, ratesQuery } from '../estimates/data.ts';
import { EstimateQuery } from '../estimates/schemas.ts';
import { notFound } from '../../lib/errors.ts';
import { CONSOLE_SECURITY, consoleErrors, DateParam, dateRange, OrgParams, pageOf, PaginationQuery, Uuid } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { door } from '../../middleware/door.ts';
import { batchByName } from '../../db/batch.ts';

export const consoleExecutionsApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

consoleExecutionsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgExecutions',
    description: "A page of the organization's executions across its programs, newest first, filtered by program, status or date.",
    path: '/orgs/{org_id}/executions',
    middleware: [door.console('records.read')],
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
      eq(executions.org_id, c.get('membership').orgId),
      q.program_id ? eq(executions.program_id, q.program_id) : undefined,
      q.status ? eq(executions.status, q.status) : undefined,
      range.from ? gte(executions.created_at, range.from) : undefined,
      range.to ? lte(executions.created_at, range.to) : undefined,
    );
    const db = c.get('db');
    const filtered = q.program_id || q.status || range.from || range.to;
    const total = filtered
      ? cappedCount(
          db
            .select({ one: sql`1` })
            .from(executions)
            .where(where),
        )
      : orgCounter(db, c.get('membership').orgId, sql`${organizations.execution_count}`);
    // With their run state: the console shows their limits and why a queued one waits.
    const rows = db
      .select(executionColumns())
      .from(executions)
      .where(where)
      .orderBy(desc(executions.created_at), desc(executions.id))
      .$dynamic();
    return c.json(
      pageAnswer(await batchByName(db, pageQuery(db, rows, total, q.page, q.page_size)), executionRecord, q.page, q.page_size),
      200,
    );
  },
);

consoleExecutionsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgExecution',
    path: '/orgs/{org_id}/executions/{execution_id}',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'An execution, with the estimate of proving its run',
    description:
      'The record (its cycles, segments, limits and, while queued, why it waits) and `estimate`, for the proof named by the optional parameters (as GET /v1/executions/{execution_id} takes them).',
    request: { params: OrgParams.extend({ execution_id: Uuid('execution_id') }), query: EstimateQuery },
    responses: {
      200: { description: 'The execution', content: { 'application/json': { schema: ConsoleExecution } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const { execution_id: id } = c.req.valid('param');
    const org = c.get('membership').orgId;
    const db = c.get('db');
    const { execution, basis, rates } = await batchByName(db, {
      execution: executionQuery(db, org, id),
      basis: estimateBasisQuery(db, org, id),
      rates: ratesQuery(db, org, id),
    });
    const run = execution[0];
    if (!run || !basis[0]) throw notFound('Execution');
    const cycles = run.status === 'succeeded' ? (run.num_instructions ?? run.total_cycle) : null;
    return c.json({ ...executionRecord(run), estimate: estimateOf(basis[0], rates, cycles, c.req.valid('query')) }, 200);
  },
);
