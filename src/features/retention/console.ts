// The console's side of deletion and retention: DELETE of a proof, an execution, a
// program or a verification of the organization (the record pages' Delete buttons), and the
// organization's retention (read by its members, set by owners and admins). The same
// statements and answers as /v1 (src/features/retention/data.ts, answers.ts).
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { eq } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import { actorOf, memberActor } from '../accounts/audit.ts';
import { VerificationRecord, verificationRecord } from '../verifications/schemas.ts';
import { organizations } from '../../db/schema.ts';
import { validationHook } from '../../lib/errors.ts';
import { programQuery, requireProgram, toRecord } from '../programs/data.ts';
import { ProgramRecord } from '../programs/schemas.ts';
import { ProofRecord, proofRecord } from '../proofs/schemas.ts';
import { ExecutionRecord, executionRecord } from '../executions/schemas.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams, Uuid } from '../../lib/schemas.ts';
import { asMember, type ConsoleEnv } from '../../middleware/console-auth.ts';
import { BODY_CAPS } from '../../lib/limits.ts';
import { door, json } from '../../middleware/door.ts';
import { deletedRow, deletedRun } from './answers.ts';
import { archivedQuery } from './archive.ts';
import {
  deleteExecutionStatements,
  deleteProgramStatements,
  deleteProofStatements,
  deleteVerificationStatements,
  deletionOutcome,
} from './data.ts';
import { purgeAfterResponse } from './purge.ts';
import { MAX_RETENTION_DAYS, setRetention } from './sweep.ts';

export const consoleRetentionApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

const deleteDoc = (path: string, param: string, summary: string, schema: z.ZodTypeAny, operationId: string) =>
  createRoute({
    method: 'delete',
    operationId,
    description:
      'Owners and admins only. Its files in storage go for good; the record stays as a tombstone: `deleted_at` set, its billing figures kept, its downloads 404. A second delete answers the same tombstone; a job still queued or running is refused (409).',
    path,
    middleware: [door.console('records.delete')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary,
    request: { params: OrgParams.extend({ [param]: Uuid(param) }) },
    responses: { 200: { description: 'The tombstone', content: { 'application/json': { schema } } }, ...consoleErrors(403, 404, 409, 422) },
  });

consoleRetentionApi.openapi(
  deleteDoc(
    '/orgs/{org_id}/proofs/{proof_id}',
    'proof_id',
    'Delete a proof’s files (the record stays as a tombstone)',
    ProofRecord,
    'deleteOrgProof',
  ),
  async (c) => {
    const id = c.req.param('proof_id')!;
    const db = c.get('db');
    // Scoped to the member as they stand when it runs (asMember): one removed or demoted meanwhile deletes nothing.
    // An archived proof is deleted as through /v1 (deletedRun).
    const by = memberActor(c);
    const { row, purge } = await asMember(c, async (org) =>
      deletedRun(
        db,
        c.env.ARTIFACTS,
        'proof',
        id,
        by,
        await batchByName(db, { ...deleteProofStatements(db, org, id, by), archived: archivedQuery(db, org, 'proof', id) }),
      ),
    );
    purgeAfterResponse(c, db, c.env.ARTIFACTS, 'proof', purge);
    return c.json(proofRecord(row), 200);
  },
);

consoleRetentionApi.openapi(
  deleteDoc(
    '/orgs/{org_id}/executions/{execution_id}',
    'execution_id',
    'Delete an execution’s files (the record stays as a tombstone)',
    ExecutionRecord,
    'deleteOrgExecution',
  ),
  async (c) => {
    const id = c.req.param('execution_id')!;
    const db = c.get('db');
    // Scoped to the member as they stand when it runs (asMember): one removed or demoted meanwhile deletes nothing.
    // An archived execution is deleted as through /v1 (deletedRun).
    const by = memberActor(c);
    const { row, purge } = await asMember(c, async (org) =>
      deletedRun(
        db,
        c.env.ARTIFACTS,
        'execution',
        id,
        by,
        await batchByName(db, { ...deleteExecutionStatements(db, org, id, by), archived: archivedQuery(db, org, 'execution', id) }),
      ),
    );
    purgeAfterResponse(c, db, c.env.ARTIFACTS, 'execution', purge);
    return c.json(executionRecord(row), 200);
  },
);

consoleRetentionApi.openapi(
  deleteDoc(
    '/orgs/{org_id}/programs/{program_id}',
    'program_id',
    'Delete a program’s files (refused while any job of it is queued or running)',
    ProgramRecord,
    'deleteOrgProgram',
  ),
  async (c) => {
    const id = c.req.param('program_id')!;
    const db = c.get('db');
    const { read, found } = await asMember(c, async (org) => {
      const read = await batchByName(db, { ...deleteProgramStatements(db, org, id, memberActor(c)), ...programQuery(db, org, id) });
      const found = requireProgram(read);
      deletedRow('program', id, deletionOutcome(found.program));
      return { read, found };
    });
    purgeAfterResponse(
      c,
      db,
      c.env.ARTIFACTS,
      'program',
      read.tombstone.map((t) => t.id),
    );
    purgeAfterResponse(
      c,
      db,
      c.env.ARTIFACTS,
      'verification',
      read.verificationTombstones.map((t) => t.id),
    );
    return c.json(toRecord(found), 200);
  },
);

consoleRetentionApi.openapi(
  deleteDoc(
    '/orgs/{org_id}/verifications/{verify_id}',
    'verify_id',
    'Delete a verification’s uploaded proof (the record stays as a tombstone)',
    VerificationRecord,
    'deleteOrgVerification',
  ),
  async (c) => {
    const id = c.req.param('verify_id')!;
    const db = c.get('db');
    // Scoped to the member as they stand when it runs (asMember): one removed or demoted meanwhile deletes nothing.
    const { tombstone, row } = await asMember(c, async (org) => {
      const { tombstone, record } = await batchByName(db, deleteVerificationStatements(db, org, id, memberActor(c)));
      return { tombstone, row: deletedRow('verification', id, deletionOutcome(record[0])) };
    });
    purgeAfterResponse(
      c,
      db,
      c.env.ARTIFACTS,
      'verification',
      tombstone.map((t) => t.id),
    );
    return c.json(verificationRecord(row), 200);
  },
);

const Retention = z
  .object({
    retention_days: z
      .number()
      .int()
      .min(1)
      .max(MAX_RETENTION_DAYS)
      .nullable()
      .openapi({
        description: `Days the files of finished proofs and executions (inputs, logs, proofs) are kept, 1..${MAX_RETENTION_DAYS}; null: for good. Past it the sweep deletes them as DELETE does (the record stays as a tombstone).`,
      }),
  })
  .openapi('Retention');

consoleRetentionApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgRetention',
    description:
      "How many days the organization's finished proofs and executions keep their files before the sweep deletes them (their records stay as tombstones); null: kept.",
    path: '/orgs/{org_id}/retention',
    middleware: [door.console('records.read')],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'The organization’s retention',
    request: { params: OrgParams },
    responses: {
      200: { description: 'Its retention', content: { 'application/json': { schema: Retention } } },
      ...consoleErrors(403, 404),
    },
  }),
  async (c) => {
    const [row] = await c
      .get('db')
      .select({ retention_days: organizations.retention_days })
      .from(organizations)
      .where(eq(organizations.id, c.get('membership').orgId));
    return c.json({ retention_days: row?.retention_days ?? null }, 200);
  },
);

consoleRetentionApi.openapi(
  createRoute({
    method: 'put',
    operationId: 'setOrgRetention',
    description:
      'Sets the days finished proofs and executions keep their files (null: kept); files older than that are deleted by the next sweep, records kept as tombstones. Owners and admins only.',
    path: '/orgs/{org_id}/retention',
    middleware: [door.console('records.delete', { body: json(BODY_CAPS.small) })],
    tags: ['console'],
    security: CONSOLE_SECURITY,
    summary: 'Set the organization’s retention (owners and admins)',
    request: { params: OrgParams, body: { required: true, content: { 'application/json': { schema: Retention } } } },
    responses: {
      200: { description: 'Its retention now', content: { 'application/json': { schema: Retention } } },
      ...consoleErrors(403, 404, 422),
    },
  }),
  async (c) => {
    const { retention_days } = c.req.valid('json');
    await asMember(c, (org) => setRetention(c.get('db'), c.get('membership').orgId, retention_days, actorOf(c, org)));
    return c.json({ retention_days }, 200);
  },
);
