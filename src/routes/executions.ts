// /v1/executions: execution-only runs of a program (no proof), recorded and
// dispatched like proofs.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { executions } from '../db/schema.ts';
import { DEFAULT_PRIORITY, refuseOverQuota, submitJob, usageQuery } from '../jobs/dispatch.ts';
import { artifactKey } from '../lib/artifacts.ts';
import { ApiError, refuseDeleted, validationHook } from '../lib/errors.ts';
import { readProofInputBody } from '../lib/body.ts';
import { ExecutionRecord, executionRecord } from '../lib/records.ts';
import { errorResponses, IdempotencyHeaders, idempotentResponses, PaginationQuery, pageOf, Uuid } from '../lib/schemas.ts';
import { idempotent } from '../middleware/idempotency.ts';
import { executionQuery, jobOfSubject, one, programQuery, programRunsQuery, requireProgram, runsPage } from '../lib/lookups.ts';
import { MAX_INPUT_BYTES } from '../lib/limits.ts';
import { jobIdOfSubject, logPageQuery, logPageResponse, logRouteDoc, LogPageQuerySchema, type LogIndexRow } from '../jobs/logs.ts';
import { eventStream, eventStreamDoc, EventStreamHeaders, executionEvents } from '../jobs/events.ts';
import { asCaller } from '../middleware/auth.ts';
import { permit } from '../middleware/permit.ts';

export const executionsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** The zkVM tool's execution modes (`cargo openvm run --mode`). */
export const EXECUTION_MODES = ['pure', 'meter', 'segment'] as const;

/** The caller's execution, in the request's one read (404, confirmed on the primary, when there is none). */
async function readExecution(c: Context<AppEnv>, id: string) {
  const [rows] = await asCaller(c, (org) => [executionQuery(c.var.db, org, id)], ([e]) => e.length > 0);
  return one(rows, 'Execution');
}

const SubmitQuery = z.object({ program_id: z.uuid(), mode: z.enum(EXECUTION_MODES).default('pure') });

const submitRoute = createRoute({
  method: 'post',
  path: '/',
  tags: ['executions'],
  summary: 'Execute a program on an input without proving',
  request: {
    query: SubmitQuery,
    headers: IdempotencyHeaders,
    body: {
      required: true,
      content: { 'application/json': { schema: z.object({ input: z.array(z.string()) }).openapi('ExecutionInput') } },
    },
  },
  responses: idempotentResponses(200, 'Queued', 404, 409, 413, 422),
});
// Document only: the input is checked entry by entry as it is scanned (readProofInputBody).
executionsApi.openAPIRegistry.registerPath(submitRoute);

executionsApi.post('/', permit('jobs.submit'), idempotent, zValidator('query', SubmitQuery, validationHook), async (c) => {
  const q = c.req.valid('query');
  const { db } = c.var;
  const [programRows, projectRows, configRows, [usage]] = await asCaller(
    c,
    (org) => [...programQuery(db, org, q.program_id), usageQuery(c, org)],
    ([p, , , [u]]) => p[0]?.status === 'ready' && !!u && u.activeJobs < u.maxActiveJobs,
  );
  const caller = c.var.caller;
  // Validate the request before looking at the program, as the reference (FastAPI) does.
  const input = await readProofInputBody(c.req.raw, MAX_INPUT_BYTES);
  const { program, config } = requireProgram([programRows, projectRows, configRows]);
  if (program.status !== 'ready') throw new ApiError(409, `Program ${program.id} is not ready to execute (status: ${program.status})`);
  if (program.deleted_at) throw new ApiError(409, `Program ${program.id} was deleted at ${program.deleted_at}`);
  refuseOverQuota(usage);
  const id = crypto.randomUUID();
  const answer = { status: 200, body: { id } } as const;
  await submitJob(
    c,
    (artifacts) => artifacts.put(artifactKey.executionInput(id), input),
    () => ({
      rows: [
        db.insert(executions).values({ id, org_id: caller.orgId, program_id: program.id, mode: q.mode, created_by: caller.owner, input_key: artifactKey.executionInput(id) }),
      ],
      job: { kind: 'execute', subjectId: id, orgId: caller.orgId, configId: config.id, engine: config.engine, priority: DEFAULT_PRIORITY, numGpus: 1 },
    }),
    answer,
  );
  return c.json(answer.body, answer.status);
});

executionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/',
    middleware: [permit('records.read')],
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
    const read = await asCaller(c, (org) => programRunsQuery(c.var.db, org, program_id, executions, page, page_size), ([p]) => p.length > 0);
    return c.json(runsPage(read, executionRecord, page, page_size), 200);
  },
);

const ExecutionParams = z.object({ execution_id: Uuid('execution_id') });

executionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{execution_id}',
    middleware: [permit('records.read')],
    tags: ['executions'],
    summary: 'Get an execution',
    request: { params: ExecutionParams },
    responses: {
      200: { description: 'The execution', content: { 'application/json': { schema: ExecutionRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => c.json(executionRecord(await readExecution(c, c.req.valid('param').execution_id)), 200),
);

executionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{execution_id}/logs',
    middleware: [permit('records.read')],
    tags: ['executions'],
    summary: 'The execution’s logs (plain text, possibly empty)',
    ...logRouteDoc('execution'),
    request: { params: ExecutionParams, query: LogPageQuerySchema },
    responses: { ...logRouteDoc('execution').responses, ...errorResponses(404, 422) },
  }),
  async (c) => {
    const id = c.req.valid('param').execution_id;
    const { offset } = c.req.valid('query');
    // One round trip: the key, the execution, its job's log length and the index rows of the page.
    const [execution, job, rows] = await asCaller(
      c,
      (org) => [executionQuery(c.var.db, org, id), jobOfSubject(c.var.db, 'execute', id), logPageQuery(c.var.db, jobIdOfSubject('execute', id), offset)],
      ([r]) => r.length > 0,
    );
    refuseDeleted(one(execution, 'Execution'), `Execution ${id}`);
    return (await logPageResponse(c.env.ARTIFACTS, c.req.url, job[0], rows as LogIndexRow[], offset)) as never;
  },
);

const executionEventsDoc = eventStreamDoc('execution', 'Succeeded or Failed');
executionsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{execution_id}/events',
    middleware: [permit('records.read')],
    tags: ['executions'],
    summary: 'Follow an execution live: its status and logs as Server-Sent Events',
    description: executionEventsDoc.description,
    request: { params: ExecutionParams, headers: EventStreamHeaders },
    responses: { ...executionEventsDoc.responses, ...errorResponses(400, 404, 422) },
  }),
  async (c) => (await eventStream(c, executionEvents, c.req.valid('param').execution_id)) as never,
);
