// DELETE /v1/proofs/{id}, /v1/executions/{id}, /v1/programs/{id} (README "Deleting
// records and retention"): the record's R2 objects go, the record stays as a tombstone
// (`deleted_at`) with its billing figures. One batch on the primary with the key's
// lookup (src/features/retention/data.ts), the objects after the response.
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
import { deletedRow } from './answers.ts';
import { deleteExecutionStatements, deleteProgramStatements, deleteProofStatements, deletionOutcome } from './data.ts';
import { purgeAfterResponse } from './purge.ts';
import { archivedQuery, deleteArchived } from './archive.ts';

export const retentionApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

const DESCRIPTION =
  'Deletes its files in storage (input, child proofs, proofs, logs) and keeps the record as a tombstone: `deleted_at` set, its billing figures (cost, cycles, instructions) kept, its downloads 404. Idempotent: a second DELETE answers the same tombstone. A job still queued or running is refused (409): cancel it first. An archived record (README "The archive") is deleted the same way.';

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
    const {
      tombstone,
      record: rows,
      archived,
    } = await asCaller(c, (org) => ({ ...deleteProofStatements(c.var.db, org, id), archived: archivedQuery(c.var.db, org, 'proof', id) }));
    // An archived proof (src/features/retention/archive.ts): its stub is the caller's; its line says what to purge.
    const gone =
      !rows[0] && archived[0] ? await deleteArchived<(typeof rows)[number]>(c.var.db, c.env.ARTIFACTS, archived[0], id) : undefined;
    if (gone) {
      purgeAfterResponse(c, c.var.sessions.primary(), c.env.ARTIFACTS, 'proof', gone.deleted ? [id] : []);
      return c.json(proofRecord(gone.row), 200);
    }
    const row = deletedRow('proof', id, deletionOutcome(rows[0]));
    purgeAfterResponse(
      c,
      c.var.sessions.primary(),
      c.env.ARTIFACTS,
      'proof',
      tombstone.map((t) => t.id),
    );
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
    const {
      tombstone,
      record: rows,
      archived,
    } = await asCaller(c, (org) => ({
      ...deleteExecutionStatements(c.var.db, org, id),
      archived: archivedQuery(c.var.db, org, 'execution', id),
    }));
    // An archived execution (src/features/retention/archive.ts): its stub is the caller's; its line says what to purge.
    const gone =
      !rows[0] && archived[0] ? await deleteArchived<(typeof rows)[number]>(c.var.db, c.env.ARTIFACTS, archived[0], id) : undefined;
    if (gone) {
      purgeAfterResponse(c, c.var.sessions.primary(), c.env.ARTIFACTS, 'execution', gone.deleted ? [id] : []);
      return c.json(executionRecord(gone.row), 200);
    }
    const row = deletedRow('execution', id, deletionOutcome(rows[0]));
    purgeAfterResponse(
      c,
      c.var.sessions.primary(),
      c.env.ARTIFACTS,
      'execution',
      tombstone.map((t) => t.id),
    );
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
      'Deletes the program’s files in storage and keeps its record as a tombstone (`deleted_at`); its downloads 404 and nothing more can be submitted against it (409). Refused (409) while any job of it (its commit, a proof, execution or verification of it) is queued or running. Its proofs and executions are records of their own and stay: delete them on their own. Idempotent.',
    request: { params: z.object({ program_id: Uuid('program_id') }) },
    responses: {
      200: { description: 'The tombstone', content: { 'application/json': { schema: ProgramRecord } } },
      ...errorResponses(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').program_id;
    const { tombstone, ...read } = await asCaller(c, (org) => {
      const s = deleteProgramStatements(c.var.db, org, id);
      return { purge: s.purge, logStore: s.logStore, tombstone: s.tombstone, ...programQuery(c.var.db, org, id) };
    });
    const found = requireProgram(read);
    deletedRow('program', id, deletionOutcome(found.program));
    purgeAfterResponse(
      c,
      c.var.sessions.primary(),
      c.env.ARTIFACTS,
      'program',
      tombstone.map((t) => t.id),
    );
    return c.json(toRecord(found), 200);
  },
);
