// /v1/verify: proof verification (STARK against a program, EVM against a config),
// submitted as a file and read back by id.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import type { Context } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { verifications } from '../../db/schema.ts';
import { INTERACTIVE_PRIORITY, refuseOverQuota } from '../../jobs/dispatch.ts';
import { submitJob, usageQuery } from '../runs/submit.ts';
import { asCaller } from '../../middleware/auth.ts';
import { artifactKey } from '../../lib/artifacts.ts';
import { ApiError, notFound, ValidationError, validationHook } from '../../lib/errors.ts';
import { MemorySink, multipartForm, tooLarge, type FormLimits } from '../../lib/multipart.ts';
import { evmProofShapeError, starkProofValueError } from '../proofs/format.ts';
import { VerificationRecord, verificationRecord } from './schemas.ts';
import { ConfigId, errorResponses, IdempotencyHeaders, idempotentResponses, Uuid } from '../../lib/schemas.ts';
import { idempotent } from '../../middleware/idempotency/index.ts';
import { MAX_VERIFY_PROOF_BYTES } from '../../lib/limits.ts';
import { configQuery } from '../configs/data.ts';
import { programOf, programQuery } from '../programs/data.ts';
import { one } from '../../lib/pages.ts';
import { verificationQuery } from './data.ts';
import { declaredForm, door, multipart } from '../../middleware/door.ts';

export const verifyApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** What a verification takes: a form of one `proof` file and a few small fields. */
const VERIFY_FORM = multipart({ maxBytes: MAX_VERIFY_PROOF_BYTES + 64 * 1024, parts: { proof: MAX_VERIFY_PROOF_BYTES } });

const StarkQuery = z.object({ program_id: z.uuid() });
const UnifiedQuery = z.object({
  config_id: ConfigId.optional().openapi({
    description: 'The config whose keys verify an EVM proof (the published client’s `verify evm`)',
  }),
  program_id: z.uuid().optional().openapi({
    description: 'The program a STARK proof is checked against (its baseline); for an EVM proof, also checks its app_exe_commit',
  }),
});

const proofFileBody = (description: string) => ({
  required: true,
  content: { 'multipart/form-data': { schema: z.object({ proof: z.string().openapi({ format: 'binary', description }) }) } },
});

// Document only: the handlers stream the multipart body themselves.
verifyApi.openAPIRegistry.registerPath(
  createRoute({
    method: 'post',
    operationId: 'submitVerification',
    path: '/',
    tags: ['verify'],
    summary: 'Submit a proof for verification (unified: EVM or STARK, told apart by its shape)',
    description:
      'An EVM proof is checked with the keys of `config_id` (or of the program’s config); a STARK proof needs `program_id`, whose verification baseline it is checked against. Hex fields may come with or without `0x`. The result starts as `processing` and becomes `verified` or `failed`.',
    request: {
      query: UnifiedQuery,
      headers: IdempotencyHeaders,
      body: proofFileBody('EVM proof JSON, or STARK proof JSON (VersionedVmStarkProof)'),
    },
    responses: idempotentResponses(200, 'Verification queued', 400, 404, 409, 413, 422),
  }),
);
verifyApi.openAPIRegistry.registerPath(
  createRoute({
    method: 'post',
    operationId: 'submitStarkVerification',
    path: '/stark',
    tags: ['verify'],
    summary: 'Submit a STARK proof for verification against a program',
    description: 'The configuration is the program’s. The result starts as `processing` and becomes `verified` or `failed`.',
    request: { query: StarkQuery, headers: IdempotencyHeaders, body: proofFileBody('STARK proof JSON (VersionedVmStarkProof)') },
    responses: idempotentResponses(200, 'Verification queued', 400, 404, 409, 413, 422),
  }),
);

/** A verification: an API key that may submit, and a form of one proof file (VERIFY_FORM). */
const verifyDoor = door.apiKey('jobs.submit', { rate: 'uploads', body: VERIFY_FORM });
verifyApi.post('/', verifyDoor, idempotent, zValidator('query', UnifiedQuery, validationHook), async (c) => {
  const q = c.req.valid('query');
  const looked = await lookUp(c, q.program_id, q.config_id);
  const text = await readProofPart(c.req.raw, declaredForm(c));
  const doc = parseProofJson(text);
  // The two proof files differ in shape: only the EVM proof has `proof_data`.
  const kind = doc !== null && typeof doc === 'object' && 'proof_data' in doc ? 'evm' : 'stark';
  if (kind === 'stark' && !q.program_id)
    throw new ValidationError([
      {
        loc: ['query', 'program_id'],
        msg: 'Field required: a STARK proof is checked against a program’s verification baseline',
        type: 'missing',
      },
    ]);
  if (kind === 'evm' && !q.config_id && !q.program_id)
    throw new ValidationError([
      { loc: ['query', 'config_id'], msg: 'Field required: the config whose keys verify the EVM proof', type: 'missing' },
    ]);
  return c.json({ id: await submitVerification(c, looked, { kind, text, doc, programId: q.program_id, configId: q.config_id }) }, 200);
});

verifyApi.post('/stark', verifyDoor, idempotent, zValidator('query', StarkQuery, validationHook), async (c) => {
  const programId = c.req.valid('query').program_id;
  const looked = await lookUp(c, programId, undefined);
  const text = await readProofPart(c.req.raw, declaredForm(c));
  return c.json({ id: await submitVerification(c, looked, { kind: 'stark', text, doc: parseProofJson(text), programId }) }, 200);
});

/**
 * The request's one read, before its body: the key, the program and config it names,
 * the organization's usage (a replica's refusal is confirmed on the primary).
 */
async function lookUp(c: Context<AppEnv>, programId: string | undefined, configId: string | undefined) {
  const db = c.get('db');
  const read = await asCaller(
    c,
    (org) => ({ ...programQuery(db, org, programId ?? ''), named: configQuery(db, configId ?? ''), usage: usageQuery(c, org) }),
    ({ program: [p], named, usage: [u] }) =>
      (!programId || p?.status === 'ready') && (!configId || named.length > 0) && !!u && u.activeJobs < u.maxActiveJobs,
  );
  return { program: programOf(read), config: read.named[0], usage: read.usage[0] };
}

/** The `proof` file part, read whole under its cap (proofs are small next to keys). */
async function readProofPart(req: Request, limits: FormLimits): Promise<string> {
  const form = multipartForm(req, limits);
  if (!form) throw new ApiError(400, 'Expected a multipart/form-data body with a file part "proof"');
  const { proof } = await form.read(
    { proof: { required: true, max: 1, sink: () => new MemorySink(MAX_VERIFY_PROOF_BYTES, () => tooLarge(MAX_VERIFY_PROOF_BYTES)) } },
    8,
  );
  return proof[0].text();
}

function parseProofJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new ValidationError([
      { loc: ['body', 'proof'], msg: `Value error, not valid JSON (${(e as Error).message})`, type: 'value_error' },
    ]);
  }
}

/**
 * Records a verification and dispatches its job: one path for both endpoints. The
 * request is validated before anything is looked up (the reference's order), then
 * the program (404, 409 when its baseline is not computed yet) and the config.
 */
async function submitVerification(
  c: Context<AppEnv>,
  looked: Awaited<ReturnType<typeof lookUp>>,
  v: { kind: 'stark' | 'evm'; text: string; doc: unknown; programId?: string; configId?: string },
): Promise<string> {
  const db = c.get('db');
  const caller = c.get('caller');
  const problem = v.kind === 'stark' ? starkProofValueError(v.doc) : evmProofShapeError(v.doc);
  if (problem) throw new ValidationError([{ loc: ['body', 'proof'], msg: `Value error, ${problem}`, type: 'value_error' }]);
  let program: NonNullable<typeof looked.program>['program'] | null = null;
  let config: NonNullable<typeof looked.program>['config'] | undefined;
  if (v.programId) {
    if (!looked.program) throw notFound('Program');
    ({ program, config } = looked.program);
    // Its baseline is gone with it (docs/callers.md "Deleting records"); a deletion racing this
    // request is refused by the insert's trigger (migrations/0021_attack.sql), answered 409 by submitJob.
    if (program.deleted_at) throw new ApiError(409, `Program ${program.id} was deleted at ${program.deleted_at}`);
    if (program.status !== 'ready')
      throw new ApiError(
        409,
        `Program ${program.id} is not ready (status: ${program.status}); its verification baseline is not computed yet`,
      );
    if (v.configId && v.configId !== config.id)
      throw new ValidationError([
        {
          loc: ['query', 'config_id'],
          msg: `Value error, program ${program.id} uses config ${config.id}, not ${v.configId}`,
          type: 'value_error',
        },
      ]);
  } else {
    config = looked.config;
    if (!config) throw notFound('Config');
  }
  refuseOverQuota(looked.usage);
  const cfg = config;
  const id = crypto.randomUUID();
  const answer = { status: 200, body: { id } } as const;
  await submitJob(
    c,
    (artifacts) => artifacts.put(artifactKey.verificationProof(id), v.text),
    () => ({
      rows: [
        db.insert(verifications).values({
          id,
          org_id: caller.orgId,
          program_id: program?.id ?? null,
          config_id: cfg.id,
          proof_type: v.kind,
          created_by: caller.owner,
          proof_key: artifactKey.verificationProof(id),
        }),
      ],
      job: {
        kind: 'verify',
        subjectId: id,
        orgId: caller.orgId,
        configId: cfg.id,
        engine: cfg.engine,
        priority: INTERACTIVE_PRIORITY,
        numGpus: 1,
      },
    }),
    answer,
  );
  return id;
}

const VerifyParams = z.object({ verify_id: Uuid('verify_id') });

for (const [path, summary, operationId] of [
  ['/{verify_id}', 'Get a verification result', 'getVerification'],
  ['/stark/{verify_id}', 'Get a STARK verification result (legacy path of /v1/verify/{verify_id})', 'getStarkVerification'],
] as const) {
  verifyApi.openapi(
    createRoute({
      method: 'get',
      operationId,
      path,
      middleware: [door.apiKey('records.read', { rate: 'reads' })],
      tags: ['verify'],
      summary,
      description:
        'The result is `processing` until the proof has been checked, then `verified` or `failed` (`error_message` says why). The published client polls this until it is final.',
      request: { params: VerifyParams },
      responses: {
        200: { description: 'The verification', content: { 'application/json': { schema: VerificationRecord } } },
        ...errorResponses(404, 422),
      },
    }),
    async (c) => {
      const id = c.req.valid('param').verify_id;
      const { verification } = await asCaller(
        c,
        (org) => ({ verification: verificationQuery(c.get('db'), org, id) }),
        ({ verification }) => verification.length > 0,
      );
      return c.json(verificationRecord(one(verification, 'Verification')), 200);
    },
  );
}
