// /v1/verify: STARK proof verification, submitted as a file and read back by id.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import { and, eq } from 'drizzle-orm';
import type { AppEnv } from '../app-env.ts';
import type { Db } from '../db/client.ts';
import { verifications } from '../db/schema.ts';
import { INTERACTIVE_PRIORITY, submitJob } from '../jobs/dispatch.ts';
import { artifactKey } from '../lib/artifacts.ts';
import { ApiError, notFound, ValidationError, validationHook } from '../lib/errors.ts';
import { DISCARD, MemorySink, multipartBoundary, parseMultipart, tooLarge, type PartSink } from '../lib/multipart.ts';
import { starkProofShapeError } from '../lib/proof-format.ts';
import { VerificationRecord, verificationRecord } from '../lib/records.ts';
import { errorResponses, IdResponse, Uuid } from '../lib/schemas.ts';
import { findProgram } from './programs.ts';
import { MAX_CHILD_PROOF_BYTES } from './proofs.ts';

export const verifyApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** Largest proof file accepted for verification (the same cap as a child proof). */
export const MAX_VERIFY_PROOF_BYTES = MAX_CHILD_PROOF_BYTES;

const VerifyQuery = z.object({ program_id: z.uuid() });

const submitRoute = createRoute({
  method: 'post',
  path: '/stark',
  tags: ['verify'],
  summary: 'Submit a STARK proof for verification against a program',
  description: 'The configuration is the program’s. The result starts as `processing` and becomes `verified` or `failed`.',
  request: {
    query: VerifyQuery,
    body: {
      required: true,
      content: {
        'multipart/form-data': {
          schema: z.object({ proof: z.string().openapi({ format: 'binary', description: 'STARK proof JSON (VersionedVmStarkProof)' }) }),
        },
      },
    },
  },
  responses: {
    200: { description: 'Verification queued', content: { 'application/json': { schema: IdResponse } } },
    ...errorResponses(400, 404, 409, 413, 422),
  },
});
// Document only: the handler streams the multipart body itself.
verifyApi.openAPIRegistry.registerPath(submitRoute);

verifyApi.post('/stark', zValidator('query', VerifyQuery, validationHook), async (c) => {
  const { db, caller } = c.var;
  const cap = MAX_VERIFY_PROOF_BYTES + 64 * 1024;
  if (Number(c.req.header('content-length') ?? NaN) > cap) throw tooLarge(cap);
  const { program, config } = await findProgram(db, caller.orgId, c.req.valid('query').program_id);
  const boundary = multipartBoundary(c.req.header('content-type'));
  if (!boundary || !c.req.raw.body) throw new ApiError(400, 'Expected a multipart/form-data body with a file part "proof"');

  const got: { proof?: MemorySink } = {};
  await parseMultipart(c.req.raw.body, boundary, { maxBytes: cap, maxParts: 8 }, (part): PartSink => {
    if (part.name !== 'proof') return DISCARD;
    if (got.proof) throw new ApiError(400, 'More than one "proof" part');
    return (got.proof = new MemorySink(MAX_VERIFY_PROOF_BYTES, () => tooLarge(MAX_VERIFY_PROOF_BYTES)));
  });
  if (!got.proof) throw new ValidationError([{ loc: ['body', 'proof'], msg: 'Field required', type: 'missing' }]);
  const text = got.proof.text();
  const problem = starkProofShapeError(text);
  if (problem) throw new ValidationError([{ loc: ['body', 'proof'], msg: `Value error, ${problem}`, type: 'value_error' }]);
  if (program.status !== 'ready')
    throw new ApiError(409, `Program ${program.id} is not ready (status: ${program.status}); its verification baseline is not computed yet`);

  const id = crypto.randomUUID();
  await submitJob(
    c.env,
    db,
    (artifacts) => artifacts.put(artifactKey.verificationProof(id), text),
    () => ({
      rows: [db.insert(verifications).values({ id, org_id: caller.orgId, program_id: program.id, created_by: caller.owner, proof_key: artifactKey.verificationProof(id) })],
      job: { kind: 'verify', subjectId: id, orgId: caller.orgId, configId: config.id, engine: config.engine, priority: INTERACTIVE_PRIORITY, numGpus: 1 },
    }),
  );
  return c.json({ id }, 200);
});

const VerifyParams = z.object({ verify_id: Uuid('verify_id') });

async function findVerification(db: Db, orgId: string, id: string) {
  const row = await db
    .select()
    .from(verifications)
    .where(and(eq(verifications.id, id), eq(verifications.org_id, orgId)))
    .get();
  if (!row) throw notFound('Verification');
  return row;
}

for (const [path, summary] of [
  ['/{verify_id}', 'Get a verification result'],
  ['/stark/{verify_id}', 'Get a STARK verification result (legacy path of /v1/verify/{verify_id})'],
] as const) {
  verifyApi.openapi(
    createRoute({
      method: 'get',
      path,
      tags: ['verify'],
      summary,
      request: { params: VerifyParams },
      responses: {
        200: { description: 'The verification', content: { 'application/json': { schema: VerificationRecord } } },
        ...errorResponses(404, 422),
      },
    }),
    async (c) => c.json(verificationRecord(await findVerification(c.var.db, c.var.caller.orgId, c.req.valid('param').verify_id)), 200),
  );
}
