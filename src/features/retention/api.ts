// DELETE /v1/proofs/{id}, /v1/executions/{id}, /v1/programs/{id}, /v1/verify/{id}
// (docs/callers.md "Deleting records"): every copy of the record's data goes
// (copies.ts), the record stays as a tombstone (`deleted_at`, `deleted_by`: the key's
// owner, with the key) with its billing figures, and the audit log says who. One batch
// on the primary with the key's lookup (src/features/retention/data.ts), the objects
// after the response.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import type { AppEnv } from '../../app-env.ts';
import { validationHook } from '../../lib/errors.ts';
import { programQuery, requireProgram, toRecord } from '../programs/data.ts';
import { ProgramRecord } from '../programs/schemas.ts';
import { ProofRecord, proofRecord } from '../proofs/schemas.ts';
import { ExecutionRecord, executionRecord } from '../executions/schemas.ts';
import { errorResponses, Uuid } from '../../lib/schemas.ts';
import { asCaller } from '../../middleware/auth.ts';
import { door } from '../../middleware/door.ts';
import { deletedRow, deletedRun } from './answers.ts';
import {
  deleteExecutionStatements,
  deleteProgramStatements,
  deleteProofStatements,
  deleteVerificationStatements,
  deletionOutcome,
} from './data.ts';
import { keyActor } from '../accounts/audit.ts';
import { VerificationRecord, verificationRecord } from '../verifications/schemas.ts';
import { purgeAfterResponse } from './purge.ts';
import { archivedQuery } from './archive.ts';

export const retentionApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

const DESCRIPTION =
  'Deletes its files in storage (input, child proofs, proofs of every attempt, logs), its public values, the stored payloads of webhook deliveries about it (pending ones end unsent) and its archive line’s copy of them, and keeps the record as a tombstone: `deleted_at` and `deleted_by` set, its billing figures (cost, cycles, instructions) kept, its downloads 404, its event stream ends. Audited. Idempotent: a second DELETE answers the same tombstone. A job still queued or running is refused (409): cancel it first. An archived record (docs/operators.md "The archive") is deleted the same way.';

retentionApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'deleteProof',
    path: '/proofs/{proof_id}',
    middleware: [door.apiKey('records.delete', { rate: 'submissions' })],
    tags: ['proofs'],
    summary: 'Delete a proof’s files; the record stays as a tombstone',
    description: DESCRIPTION,
    request: { params: z.object({ proof_id: Uuid('proof_id') }) },
    responses: {
      200: { description: 'The tombstone', content: { 'application/json': { schema: ProofRecord } } },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').proof_id;
    const by = keyActor(c);
    const read = await asCaller(c, (org) => ({
      ...deleteProofStatements(c.get('db'), org, id, by),
      archived: archivedQuery(c.get('db'), org, 'proof', id),
    }));
    const { row, purge } = await deletedRun(c.get('db'), c.env.ARTIFACTS, 'proof', id, by, read);
    purgeAfterResponse(c, c.get('sessions').primary(), c.env.ARTIFACTS, 'proof', purge);
    return c.json(proofRecord(row), 200);
  },
);

retentionApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'deleteExecution',
    path: '/executions/{execution_id}',
    middleware: [door.apiKey('records.delete', { rate: 'submissions' })],
    tags: ['executions'],
    summary: 'Delete an execution’s files; the record stays as a tombstone',
    description: DESCRIPTION,
    request: { params: z.object({ execution_id: Uuid('execution_id') }) },
    responses: {
      200: { description: 'The tombstone', content: { 'application/json': { schema: ExecutionRecord } } },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').execution_id;
    const by = keyActor(c);
    const read = await asCaller(c, (org) => ({
      ...deleteExecutionStatements(c.get('db'), org, id, by),
      archived: archivedQuery(c.get('db'), org, 'execution', id),
    }));
    const { row, purge } = await deletedRun(c.get('db'), c.env.ARTIFACTS, 'execution', id, by, read);
    purgeAfterResponse(c, c.get('sessions').primary(), c.env.ARTIFACTS, 'execution', purge);
    return c.json(executionRecord(row), 200);
  },
);

retentionApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'deleteProgram',
    path: '/programs/{program_id}',
    middleware: [door.apiKey('records.delete', { rate: 'submissions' })],
    tags: ['programs'],
    summary: 'Delete a program’s ELF, VMEXE and commit logs; the record stays as a tombstone',
    description:
      'Deletes the program’s files in storage and keeps its record as a tombstone (`deleted_at`, `deleted_by`); its downloads 404 and nothing more can be submitted against it (409). Its verifications are deleted with it (their uploaded proofs were checked against the baseline this deletes). Refused (409) while any job of it (its commit, a proof, execution or verification of it) is queued or running. Its proofs and executions are records of their own and stay: delete them on their own. Audited. Idempotent.',
    request: { params: z.object({ program_id: Uuid('program_id') }) },
    responses: {
      200: { description: 'The tombstone', content: { 'application/json': { schema: ProgramRecord } } },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').program_id;
    const { tombstone, ...read } = await asCaller(c, (org) => {
      return { ...deleteProgramStatements(c.get('db'), org, id, keyActor(c)), ...programQuery(c.get('db'), org, id) };
    });
    const found = requireProgram(read);
    deletedRow('program', id, deletionOutcome(found.program));
    purgeAfterResponse(
      c,
      c.get('sessions').primary(),
      c.env.ARTIFACTS,
      'program',
      tombstone.map((t) => t.id),
    );
    purgeAfterResponse(
      c,
      c.get('sessions').primary(),
      c.env.ARTIFACTS,
      'verification',
      read.verificationTombstones.map((t) => t.id),
    );
    return c.json(toRecord(found), 200);
  },
);

retentionApi.openapi(
  createRoute({
    method: 'delete',
    operationId: 'deleteVerification',
    path: '/verify/{verify_id}',
    middleware: [door.apiKey('records.delete', { rate: 'submissions' })],
    tags: ['verify'],
    summary: 'Delete a verification’s uploaded proof; the record stays as a tombstone',
    description:
      'Deletes the proof file the verification was given (and its job’s log) and keeps the record as a tombstone (`deleted_at`, `deleted_by`) with its result. Refused (409) while it is processing. Deleting its program deletes it too. Idempotent: a second DELETE answers the same tombstone.',
    request: { params: z.object({ verify_id: Uuid('verify_id') }) },
    responses: {
      200: { description: 'The tombstone', content: { 'application/json': { schema: VerificationRecord } } },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').verify_id;
    const { tombstone, record } = await asCaller(c, (org) => deleteVerificationStatements(c.get('db'), org, id, keyActor(c)));
    const row = deletedRow('verification', id, deletionOutcome(record[0]));
    purgeAfterResponse(
      c,
      c.get('sessions').primary(),
      c.env.ARTIFACTS,
      'verification',
      tombstone.map((t) => t.id),
    );
    return c.json(verificationRecord(row), 200);
  },
);
