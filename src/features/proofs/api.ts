// /v1/proofs: submitting proof jobs, reading their records, proofs and logs (the routes
// proofs share with executions: src/features/runs/routes.ts), canceling.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import type { AppEnv } from '../../app-env.ts';
import { proofs } from '../../db/schema.ts';
import { prepared, type Placeholders } from '../../db/prepared.ts';
import { DEFAULT_PRIORITY, refuseOverQuota, refusalOf } from '../../jobs/dispatch.ts';
import { programToRunRead, submitJob } from '../runs/submit.ts';
import { cancelDeliveries, cancelOutcome, cancelProofStatements } from '../../jobs/state.ts';
import { enqueueAfterResponse } from '../../jobs/webhooks.ts';
import { asCaller } from '../../middleware/auth.ts';
import { artifactKey, type ArtifactBatch } from '../../lib/artifacts.ts';
import { ApiError, ValidationError, validationHook, type ValidationIssue } from '../../lib/errors.ts';
import { ProofInputScan } from '../../lib/input-scan.ts';
import { readProofInputBody } from '../../lib/body.ts';
import { MemorySink, multipartForm, tooLarge, type MultipartForm, type PartSink } from '../../lib/multipart.ts';
import { starkProofFile } from './format.ts';
import { PROOF_FILE_DESCRIPTION, PROOF_FILE_EXAMPLE, ProofFile, ProofRecord, proofRecord } from './schemas.ts';
import {
  errorResponses,
  IdempotencyHeaders,
  idempotentResponses,
  MessageResponse,
  optionalQueryInt,
  queryInt,
  Uuid,
} from '../../lib/schemas.ts';
import { idempotent } from '../../middleware/idempotency/index.ts';
import { requireProgramToRun } from '../programs/data.ts';
import { programProofs, proofEvents, proofQuery } from './data.ts';
import { documented, runRoutes } from '../runs/routes.ts';
import { cancelAnswer, proofFileResponse } from './actions.ts';
import { BODY_CAPS, MAX_CHILD_PROOF_BYTES, MAX_CHILD_PROOFS, MAX_INPUT_BYTES } from '../../lib/limits.ts';
import { declaredForm, door, multipart } from '../../middleware/door.ts';
import { LimitsQuery, limitsOf } from '../limits/schemas.ts';

export const proofsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

// ---------------------------------------------------------------------------
// POST /v1/proofs

const SubmitQuery = z
  .object({
    program_id: z.uuid(),
    proof_type: z.enum(['stark', 'evm']).default('stark'),
    num_gpus: optionalQueryInt(1, 10000, 'GPUs to prove with; default: the program’s default_num_gpus'),
    priority: queryInt(1, 10, DEFAULT_PRIORITY, `1..10, 10 highest; default ${DEFAULT_PRIORITY}`),
  })
  .extend(LimitsQuery.shape);

const InputBody = z
  .object({
    input: z.array(z.string()).openapi({
      description: 'Hex strings (0x optional): 01‖bytes, or 02‖u32-LE field elements',
      example: ['0x0148656c6c6f'],
    }),
  })
  .openapi('ProofInput');

/**
 * What a proof submission takes: a JSON input, or a form of an `input` field and up to
 * MAX_CHILD_PROOFS child proof files (within the deployment's upload cap).
 */
const PROOF_FORM = multipart({
  maxBytes: (env) => Math.min(Number(env.MAX_UPLOAD_BYTES), MAX_INPUT_BYTES + MAX_CHILD_PROOFS * MAX_CHILD_PROOF_BYTES),
  parts: { input: MAX_INPUT_BYTES, child_proofs: MAX_CHILD_PROOF_BYTES },
  orJson: BODY_CAPS.input,
});

const submitRoute = createRoute({
  method: 'post',
  operationId: 'submitProof',
  path: '/',
  tags: ['proofs'],
  summary: 'Submit a proof job',
  description: `JSON body {"input": [...]}, or multipart/form-data with an \`input\` text field (the same JSON) and up to ${MAX_CHILD_PROOFS} \`child_proofs\` file parts (STARK proof JSON, at most ${MAX_CHILD_PROOF_BYTES} bytes each) in packing order; child proofs need a deferral-enabled config. The program must be ready.`,
  request: {
    query: SubmitQuery,
    headers: IdempotencyHeaders,
    body: {
      required: true,
      content: {
        'application/json': { schema: InputBody },
        'multipart/form-data': {
          schema: z.object({
            input: z.string().openapi({ description: 'The JSON body as a string' }),
            child_proofs: z.array(z.string().openapi({ format: 'binary' })).optional(),
          }),
        },
      },
    },
  },
  responses: idempotentResponses(200, 'Queued', 400, 404, 409, 413, 422),
});
// Document only: the handler reads JSON or streams multipart itself.
proofsApi.openAPIRegistry.registerPath(submitRoute);

/** A proof's row, as a submission inserts it (prepared: src/db/prepared.ts). */
const proofInsert = prepared(
  (
    db,
    p: Placeholders<{
      id: string;
      orgId: string;
      programId: string;
      proofType: (typeof proofs.$inferInsert)['proof_type'];
      priority: number;
      numGpus: number;
      createdBy: string;
      numDeferred: number;
      childKeys: string[];
    }>,
  ) =>
    db.insert(proofs).values({
      id: p.id,
      org_id: p.orgId,
      program_id: p.programId,
      proof_type: p.proofType,
      priority: p.priority,
      num_gpus: p.numGpus,
      created_by: p.createdBy,
      num_deferred_proofs: p.numDeferred,
      child_proof_keys: p.childKeys,
    }),
);

/** A proof submission: an API key that may submit, and a JSON input or a form (PROOF_FORM). */
const submitDoor = door.apiKey('jobs.submit', { rate: 'submissions', body: PROOF_FORM });
proofsApi.post('/', submitDoor, idempotent, zValidator('query', SubmitQuery, validationHook), async (c) => {
  const q = c.req.valid('query');
  const db = c.get('db');
  // The request's one read, before its body: the key, the program and the organization's
  // usage (a replica's "not ready" or "over quota" is confirmed on the primary).
  const read = await asCaller(
    c,
    programToRunRead(c, q.program_id),
    ({ program: [p], usage: [u] }) => p?.status === 'ready' && !!u && !refusalOf(u, 0, 'proof', limitsOf(q)),
  );
  const caller = c.get('caller');
  const form = multipartForm(c.req.raw, declaredForm(c));
  const proofId = crypto.randomUUID();
  const answer = { status: 200, body: { id: proofId } } as const;
  await submitJob(
    c,
    async (artifacts) => {
      // The request is validated whole before the program is looked at, as the
      // reference (FastAPI) does: a bad input is 422 even for a program not ready yet.
      // A form's input streams to storage as it is scanned, and its child proofs as each
      // one ends (all rolled back on any refusal), so a request holds at most one child
      // proof and a part's worth of its input.
      const body = form
        ? await readMultipartSubmission(form, proofId, artifacts)
        : { input: await readProofInputBody(c.req.raw, MAX_INPUT_BYTES), childKeys: [] };

      const { program, config } = requireProgramToRun(read);
      if (program.status !== 'ready') throw new ApiError(409, `Program ${program.id} is not ready to prove (status: ${program.status})`);
      if (program.deleted_at) throw new ApiError(409, `Program ${program.id} was deleted at ${program.deleted_at}`);

      if (body.childKeys.length > 0 && !config.deferral_enabled)
        throw new ValidationError([
          {
            loc: ['body', 'child_proofs'],
            msg: `Value error, the program's config ${config.id} is not deferral-enabled, so child proofs cannot be folded in`,
            type: 'value_error',
          },
        ]);
      refuseOverQuota(read.usage[0], 'proof', limitsOf(q));
      // The checked bytes as sent: engines read `input` as the zkVM's tool does (a
      // form's input is stored already).
      if (body.input) await artifacts.put(artifactKey.proofInput(proofId), body.input);
      return { program, config, childKeys: body.childKeys };
    },
    ({ program, config, childKeys }) => {
      const numGpus = q.num_gpus ?? program.default_num_gpus;
      return {
        rows: [
          proofInsert(db, {
            id: proofId,
            orgId: caller.orgId,
            programId: program.id,
            proofType: q.proof_type,
            priority: q.priority,
            numGpus,
            createdBy: caller.owner,
            numDeferred: childKeys.length,
            childKeys,
          }),
        ],
        job: {
          kind: 'proof',
          subjectId: proofId,
          orgId: caller.orgId,
          configId: config.id,
          engine: config.engine,
          priority: q.priority,
          numGpus,
          limits: limitsOf(q),
        },
      };
    },
    answer,
  );
  return c.json(answer.body, answer.status);
});

/**
 * A child proof part: held (under its cap) until it ends, then checked in either form
 * (JSON, or the zkVM's binary codec the published client sends) and streamed to
 * storage in its JSON form, the one form the engines read; its bytes are dropped then.
 * A bad one is noted (422 once the form is read) and not stored.
 */
class ChildProofSink implements PartSink {
  private readonly held: MemorySink;
  constructor(
    private readonly index: number,
    private readonly store: () => PartSink,
    private readonly issues: ValidationIssue[],
  ) {
    this.held = new MemorySink(
      MAX_CHILD_PROOF_BYTES,
      () => new ApiError(413, `child proof ${index + 1} is larger than ${MAX_CHILD_PROOF_BYTES} bytes`),
    );
  }
  write(chunk: Uint8Array) {
    this.held.write(chunk);
  }
  async end() {
    const file = starkProofFile(this.held.take());
    if ('error' in file) {
      this.issues.push({ loc: ['body', 'child_proofs', this.index], msg: `Value error, ${file.error}`, type: 'value_error' });
      return;
    }
    const out = this.store();
    for (const piece of file.pieces) await out.write(piece);
    await out.end();
  }
}

/**
 * An `input` form field: scanned as it arrives (src/lib/input-scan.ts) and streamed to
 * storage at once, never held whole. A field has no length of its own (the request's
 * Content-Length counts the whole form), so a FixedLengthStream cannot carry it; it
 * goes through the R2StreamSink every upload uses: one PUT under R2_PART_SIZE, else an
 * R2 multipart upload of R2_PART_SIZE parts, at most one part buffered. Its verdict
 * waits for the form's end, where the last `input` counts: every one is written to the
 * same key, in order, so the last written is the last sent.
 */
class InputSink implements PartSink {
  private readonly scan = new ProofInputScan(['body', 'input']);
  private size = 0;
  /** The input's 422, or null, once the part ended. */
  refusal: ValidationError | null = null;
  constructor(private readonly store: PartSink) {}
  async write(chunk: Uint8Array) {
    this.size += chunk.byteLength;
    if (this.size > MAX_INPUT_BYTES) throw tooLarge(MAX_INPUT_BYTES);
    this.scan.push(chunk);
    await this.store.write(chunk);
  }
  async end() {
    this.refusal = this.scan.end();
    await this.store.end();
  }
}

async function readMultipartSubmission(form: MultipartForm, proofId: string, artifacts: ArtifactBatch) {
  const issues: ValidationIssue[] = [];
  const parts = await form.read(
    {
      // Given more than once, the last one counts.
      input: { required: true, sink: () => new InputSink(artifacts.stream(artifactKey.proofInput(proofId), 'application/json')) },
      child_proofs: {
        max: MAX_CHILD_PROOFS,
        sink: (_, i) => new ChildProofSink(i, () => artifacts.stream(artifactKey.proofChild(proofId, i), 'application/json'), issues),
      },
    },
    MAX_CHILD_PROOFS + 8,
  );
  const refusal = parts.input.at(-1)!.refusal;
  if (refusal) throw refusal;
  if (issues.length) throw new ValidationError(issues);
  return { input: null, childKeys: parts.child_proofs.map((_, i) => artifactKey.proofChild(proofId, i)) };
}

// ---------------------------------------------------------------------------
// GET /v1/proofs, /{proof_id}, /{proof_id}/proof/{kind}, /{proof_id}/logs, /{proof_id}/events

const proofRuns = runRoutes(proofsApi, {
  tag: 'proofs',
  noun: 'proof',
  name: 'Proof',
  param: 'proof_id',
  job: 'proof',
  archive: 'proof',
  schema: ProofRecord,
  pageName: 'ProofPage',
  toRecord: proofRecord,
  query: proofQuery,
  ofProgram: programProofs,
  events: proofEvents,
  summaries: {
    get: 'Get a proof job',
    got: 'The proof job',
    logs: 'The proof job’s logs (plain text, possibly empty)',
    events: 'Follow a proof live: its state and logs as Server-Sent Events',
  },
  terminal: 'Succeeded, Failed or Canceled',
});
const ProofParams = proofRuns.Params;

proofRuns.list();
proofRuns.get();

const ProofFileParams = z.object({
  proof_id: Uuid('proof_id'),
  kind: z.enum(['stark', 'evm', 'app']).openapi({ param: { name: 'kind', in: 'path' } }),
});
const proofFilePath = documented(proofsApi, {
  method: 'get',
  operationId: 'downloadProof',
  path: '/{proof_id}/proof/{kind}',
  tags: ['proofs'],
  summary: 'Download a proof file (404 until it exists)',
  description: PROOF_FILE_DESCRIPTION,
  request: { params: ProofFileParams },
  responses: {
    200: { description: 'The proof JSON', content: { 'application/json': { schema: ProofFile, example: PROOF_FILE_EXAMPLE } } },
    ...errorResponses(404, 422),
  },
});
// Answers the file as stored (streamed), not a JSON body the route makes: mounted by hand.
proofsApi.get(
  proofFilePath,
  door.apiKey('records.read', { rate: 'reads' }),
  zValidator('param', ProofFileParams, validationHook),
  async (c) => {
    const { proof_id, kind } = c.req.valid('param');
    return proofFileResponse(c.env.ARTIFACTS, await proofRuns.read(c, proof_id), kind);
  },
);

proofRuns.logs();
proofRuns.events();

// ---------------------------------------------------------------------------
// POST /v1/proofs/{proof_id}/cancel

proofsApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'cancelProof',
    path: '/{proof_id}/cancel',
    middleware: [door.apiKey('jobs.cancel', { rate: 'submissions' })],
    tags: ['proofs'],
    summary: 'Cancel a proof job',
    description:
      'Queued → Canceled at once; running → Canceling, which always ends Canceled, charged only up to the cancel (a connected prover stops the job within about a second); finished jobs → 409.',
    request: { params: ProofParams },
    responses: {
      200: {
        description: 'Canceled or canceling',
        content: { 'application/json': { schema: MessageResponse.extend({ state: z.string() }) } },
      },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').proof_id;
    // One batch on the primary: the key, both transitions and the proof's state.
    const results = await asCaller(c, (org) => cancelProofStatements(c.get('db'), id, org));
    const answer = cancelAnswer(id, cancelOutcome(results));
    enqueueAfterResponse(c, cancelDeliveries(results));
    return c.json(answer, 200);
  },
);
