// /v1/executions: execution-only runs of a program (no proof), recorded and
// dispatched like proofs.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import type { AppEnv } from '../../app-env.ts';
import { executions } from '../../db/schema.ts';
import { DEFAULT_PRIORITY, refuseOverQuota, refusalOf } from '../../jobs/dispatch.ts';
import { programToRunRead, submitJob } from '../runs/submit.ts';
import { artifactKey } from '../../lib/artifacts.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { readProofInputBody } from '../../lib/body.ts';
import { ExecutionRecord, executionRecord } from './schemas.ts';
import { IdempotencyHeaders, idempotentResponses } from '../../lib/schemas.ts';
import { idempotent } from '../../middleware/idempotency/index.ts';
import { requireProgramToRun } from '../programs/data.ts';
import { executionEvents, executionQuery, programExecutions } from './data.ts';
import { runRoutes } from '../runs/routes.ts';
import { BODY_CAPS, MAX_INPUT_BYTES } from '../../lib/limits.ts';
import { asCaller } from '../../middleware/auth.ts';
import { door, json } from '../../middleware/door.ts';
import { LimitsQuery, limitsOf } from '../limits/schemas.ts';
import { asksEstimate, estimateBasisQuery, estimateOf, ratesQuery } from '../estimates/data.ts';
import { EstimateQuery, ProvingEstimate } from '../estimates/schemas.ts';
import { one } from '../../lib/pages.ts';
import { errorResponses } from '../../lib/schemas.ts';

export const executionsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** The zkVM tool's execution modes (`cargo openvm run --mode`). */
export const EXECUTION_MODES = ['pure', 'meter', 'segment'] as const;

const SubmitQuery = z.object({ program_id: z.uuid(), mode: z.enum(EXECUTION_MODES).default('pure') }).extend(LimitsQuery.shape);

const submitRoute = createRoute({
  method: 'post',
  operationId: 'submitExecution',
  description:
    'Runs the program on the input (`{"input": [...]}`, as for a proof) without proving, to learn its public values, cycle counts and cost. `mode` is `pure` (the default), `meter` or `segment`, as the zkVM tool\'s `run --mode`. Follow it at GET /v1/executions/{execution_id}.',
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

/** An execution: an API key that may submit, and a JSON input. */
const submitDoor = door.apiKey('jobs.submit', { rate: 'submissions', body: json(BODY_CAPS.input) });
executionsApi.post('/', submitDoor, idempotent, zValidator('query', SubmitQuery, validationHook), async (c) => {
  const q = c.req.valid('query');
  const db = c.get('db');
  const read = await asCaller(
    c,
    programToRunRead(c, q.program_id),
    ({ program: [p], usage: [u] }) => p?.status === 'ready' && !!u && !refusalOf(u, 0, 'execute', limitsOf(q)),
  );
  const caller = c.get('caller');
  // Validate the request before looking at the program, as the reference (FastAPI) does.
  const input = await readProofInputBody(c.req.raw, MAX_INPUT_BYTES);
  const { program, config } = requireProgramToRun(read);
  if (program.status !== 'ready') throw new ApiError(409, `Program ${program.id} is not ready to execute (status: ${program.status})`);
  if (program.deleted_at) throw new ApiError(409, `Program ${program.id} was deleted at ${program.deleted_at}`);
  refuseOverQuota(read.usage[0], 'execute', limitsOf(q));
  const id = crypto.randomUUID();
  const answer = { status: 200, body: { id } } as const;
  await submitJob(
    c,
    (artifacts) => artifacts.put(artifactKey.executionInput(id), input),
    () => ({
      rows: [
        db.insert(executions).values({
          id,
          org_id: caller.orgId,
          program_id: program.id,
          mode: q.mode,
          created_by: caller.owner,
        }),
      ],
      job: {
        kind: 'execute',
        subjectId: id,
        orgId: caller.orgId,
        configId: config.id,
        engine: config.engine,
        priority: DEFAULT_PRIORITY,
        numGpus: 1,
        limits: limitsOf(q),
      },
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
  archive: 'execution',
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

// GET /v1/executions/{execution_id}: the shared route's record, and with any of
// num_gpus, proof_type, machine_type also an estimate of proving the run (docs/callers.md "Estimates").
const ExecutionWithEstimate = ExecutionRecord.extend({ estimate: ProvingEstimate.optional() }).openapi('ExecutionWithEstimate');
executionsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getExecution',
    path: '/{execution_id}',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['executions'],
    summary: 'Get an execution, with an estimate of proving its run',
    description:
      'The record; with any of `num_gpus`, `proof_type`, `machine_type`, also `estimate`: the proving time and cost of such a proof of this run, from what the fleet measured for the program’s config (docs/callers.md "Estimates").',
    request: { params: executionRuns.Params, query: EstimateQuery },
    responses: {
      200: { description: 'The execution', content: { 'application/json': { schema: ExecutionWithEstimate } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').execution_id;
    const q = c.req.valid('query');
    if (!asksEstimate(q)) return c.json(executionRecord(await executionRuns.read(c, id)), 200);
    // One round trip: the key, the execution, its config and the config's proving rates.
    const { execution, basis, rates } = await asCaller(
      c,
      (org) => ({
        execution: executionQuery(c.get('db'), org, id),
        basis: estimateBasisQuery(c.get('db'), org, id),
        rates: ratesQuery(c.get('db'), org, id),
      }),
      ({ execution }) => execution.length > 0,
    );
    const run = one(execution, 'Execution');
    const cycles = run.status === 'succeeded' ? (run.num_instructions ?? run.total_cycle) : null;
    return c.json({ ...executionRecord(run), estimate: estimateOf(basis[0], rates, cycles, q) }, 200);
  },
);
executionRuns.logs();
executionRuns.events();
