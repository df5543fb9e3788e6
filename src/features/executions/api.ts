// /v1/executions: execution-only runs of a program (no proof), recorded and
// dispatched like proofs.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import type { AppEnv } from '../../app-env.ts';
import { executions } from '../../db/schema.ts';
import { DEFAULT_PRIORITY, refuseOverQuota } from '../../jobs/dispatch.ts';
import { submitJob, usageQuery } from '../runs/submit.ts';
import { artifactKey } from '../../lib/artifacts.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { readProofInputBody } from '../../lib/body.ts';
import { ExecutionRecord, executionRecord } from './schemas.ts';
import { IdempotencyHeaders, idempotentResponses } from '../../lib/schemas.ts';
import { idempotent } from '../../middleware/idempotency/index.ts';
import { programQuery, requireProgram } from '../../lib/lookups.ts';
import { executionEvents, executionQuery, programExecutions } from './data.ts';
import { runRoutes } from '../runs/routes.ts';
import { MAX_INPUT_BYTES } from '../../lib/limits.ts';
import { asCaller } from '../../middleware/auth.ts';
import { permit } from '../../middleware/permit.ts';
import { LimitsQuery, limitsOf } from '../limits/schemas.ts';

export const executionsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** The zkVM tool's execution modes (`cargo openvm run --mode`). */
export const EXECUTION_MODES = ['pure', 'meter', 'segment'] as const;

const SubmitQuery = z.object({ program_id: z.uuid(), mode: z.enum(EXECUTION_MODES).default('pure') }).extend(LimitsQuery.shape);

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
      job: { kind: 'execute', subjectId: id, orgId: caller.orgId, configId: config.id, engine: config.engine, priority: DEFAULT_PRIORITY, numGpus: 1, limits: limitsOf(q) },
    }),
    answer,
  );
  return c.json(answer.body, answer.status);
});

// GET /v1/executions, /{execution_id}, /{execution_id}/logs, /{execution_id}/events:
// the routes executions share with proofs (src/features/runs/routes.ts).
const executionRuns = runRoutes(executionsApi, {
  tag: 'executions',
  noun: 'execution',
  name: 'Execution',
  param: 'execution_id',
  job: 'execute',
  schema: ExecutionRecord,
  pageName: 'ExecutionPage',
  toRecord: executionRecord,
  query: executionQuery,
  ofProgram: programExecutions,
  events: executionEvents,
  summaries: {
    get: 'Get an execution',
    got: 'The execution',
    logs: 'The execution’s logs (plain text, possibly empty)',
    events: 'Follow an execution live: its status and logs as Server-Sent Events',
  },
  terminal: 'Succeeded or Failed',
});
executionRuns.list();
executionRuns.get();
executionRuns.logs();
executionRuns.events();
