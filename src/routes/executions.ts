// /v1/executions: execution-only runs of a program (no proof), recorded and
// dispatched like proofs.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import { and, count, desc, eq } from 'drizzle-orm';
import type { AppEnv } from '../app-env.ts';
import type { Db } from '../db/client.ts';
import { executions } from '../db/schema.ts';
import { DEFAULT_PRIORITY, submitJob } from '../jobs/dispatch.ts';
import { artifactKey } from '../lib/artifacts.ts';
import { ApiError, notFound, validationHook } from '../lib/errors.ts';
import { readProofInputBody } from '../lib/body.ts';
import { ExecutionRecord, executionRecord } from '../lib/records.ts';
import { errorResponses, IdResponse, PaginationQuery, pageOf, paginate, Uuid } from '../lib/schemas.ts';
import { findProgram } from '../lib/lookups.ts';
import { MAX_INPUT_BYTES } from '../lib/limits.ts';
import { subjectLogs } from '../jobs/logs.ts';

export const executionsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** The zkVM tool's execution modes (`cargo openvm run --mode`). */
export const EXECUTION_MODES = ['pure', 'meter', 'segment'] as const;

async function findExecution(db: Db, orgId: string, id: string) {
  const row = await db
    .select()
    .from(executions)
    .where(and(eq(executions.id, id), eq(executions.org_id, orgId)))
    .get();
  if (!row) throw notFound('Execution');
  return row;
}

const SubmitQuery = z.object({ program_id: z.uuid(), mode: z.enum(EXECUTION_MODES).default('pure') });

const submitRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['executions'],
  summary: 'Execute a program on an input without proving',
  request: {
    query: SubmitQuery,
    body: {
      required: true,
      content: { 'application/json': { schema: z.object({ input: z.array(z.string()) }).openapi('ExecutionInput') } },
    },
  },
  responses: {
    200: { description: 'Queued', content: { 'application/json': { schema: IdResponse } } },
    ...errorResponses(404, 409, 413, 422),
  },
});
// Document only: the input is checked entry by entry as it is scanned (readProofInputBody).
executionsApi.openAPIRegistry.registerPath(submitRoute);

executionsApi.post('/', zValidator('query', SubmitQuery, validationHook), async (c) => {
  const q = c.req.valid('query');
  const { db, caller } = c.var;
  // Validate the request before looking at the program, as the reference (FastAPI) does.
  const input = await readProofInputBody(c.req.raw, MAX_INPUT_BYTES);
  const { program, config } = await findProgram(db, caller.orgId, q.program_id);
  if (program.status !== 'ready') throw new ApiError(409, `Program ${program.id} is not ready to execute (status: ${program.status})`);
  const id = crypto.randomUUID();
  await submitJob(
    c.env,
    db,
    caller.orgId,
    (artifacts) => artifacts.put(artifactKey.executionInput(id), input),
    () => ({
      rows: [
        db.insert(executions).values({ id, org_id: caller.orgId, program_id: program.id, mode: q.mode, created_by: caller.owner, input_key: artifactKey.executionInput(id) }),
      ],
      job: { kind: 'execute', subjectId: id, orgId: caller.orgId, configId: config.id, engine: config.engine, priority: DEFAULT_PRIORITY, numGpus: 1 },
    }),
  );
  return c.json({ id }, 200);
});

executionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/',
    tags: ['executions'],
    summary: 'List the executions of a program',
    request: { query: PaginationQuery.extend({ program_id: z.uuid() }) },
    responses: {
      200: { description: 'A page of executions, newest first', content: { 'application/json': { schema: pageOf(ExecutionRecord, 'ExecutionPage') } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { program_id, page, page_size } = c.req.valid('query');
    const { db, caller } = c.var;
    await findProgram(db, caller.orgId, program_id);
    const where = and(eq(executions.program_id, program_id), eq(executions.org_id, caller.orgId));
    const [rows, [{ total }]] = await Promise.all([
      db.select().from(executions).where(where).orderBy(desc(executions.created_at), desc(executions.id)).limit(page_size).offset((page - 1) * page_size),
      db.select({ total: count() }).from(executions).where(where) as Promise<{ total: number }[]>,
    ]);
    return c.json(paginate(rows.map(executionRecord), total, page, page_size), 200);
  },
);

const ExecutionParams = z.object({ execution_id: Uuid('execution_id') });

executionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{execution_id}',
    tags: ['executions'],
    summary: 'Get an execution',
    request: { params: ExecutionParams },
    responses: {
      200: { description: 'The execution', content: { 'application/json': { schema: ExecutionRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => c.json(executionRecord(await findExecution(c.var.db, c.var.caller.orgId, c.req.valid('param').execution_id)), 200),
);

executionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{execution_id}/logs',
    tags: ['executions'],
    summary: 'The execution’s logs (plain text, possibly empty)',
    request: { params: ExecutionParams },
    responses: {
      200: { description: 'Log text', content: { 'text/plain': { schema: z.string() } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const execution = await findExecution(c.var.db, c.var.caller.orgId, c.req.valid('param').execution_id);
    return (await subjectLogs(c.var.db, c.env.ARTIFACTS, 'execute', execution.id)) as never;
  },
);
