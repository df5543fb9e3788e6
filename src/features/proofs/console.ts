// /console/v1/orgs/{org_id}/proofs: the organization's proofs with search, filters and
// pagination; one proof with its job's progress; its logs from an offset (followed
// while it runs); its files; cancel.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, desc, eq, gte, lte, sql } from 'drizzle-orm';
import { jobs, organizations, PROOF_STATES, programs, projects, proofs } from '../../db/schema.ts';
import { cancelDeliveries, cancelOutcome, cancelProofStatements } from '../../jobs/state.ts';
import { enqueueAfterResponse } from '../../jobs/webhooks.ts';
import { jobIdOfSubject, logPageQuery, readLogPage } from '../../jobs/logs.ts';
import { refuseDeleted, validationHook } from '../../lib/errors.ts';
import { cappedCount, orgCounter, pageAnswer, pageQuery } from '../../lib/pages.ts';
import { findProof } from './data.ts';
import { jobOfSubject } from '../runs/data.ts';
import { cancelAnswer, proofFileResponse } from './actions.ts';
import { CancelAnswer, ConsoleProof, PROOF_FILE_DESCRIPTION, PROOF_FILE_EXAMPLE, ProofDetail, ProofFile, proofRecord } from './schemas.ts';
import {
  CONSOLE_SECURITY,
  consoleErrors,
  DateParam,
  dateRange,
  OrgParams,
  pageOf,
  PaginationQuery,
  queryInt,
  Uuid,
} from '../../lib/schemas.ts';
import { asMember, type ConsoleEnv } from '../../middleware/console-auth.ts';
import { door } from '../../middleware/door.ts';
import { batchByName } from '../../db/batch.ts';
import { zValidator } from '@hono/zod-validator';
import { documented } from '../runs/routes.ts';
import { utf8Text } from '../../lib/bytes.ts';

export const consoleProofsApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

/** Most log bytes one read returns; a follower asks again from `X-Log-Next-Offset`. */
export const LOG_READ_MAX_BYTES = 256 * 1024;

const listColumns = { proof: proofs, program_name: programs.name, project_id: projects.id, project_name: projects.name };
const withNames = (r: { proof: typeof proofs.$inferSelect; program_name: string; project_id: string; project_name: string }) => ({
  ...proofRecord(r.proof),
  program_name: r.program_name,
  project_id: r.project_id,
  project_name: r.project_name,
});

consoleProofsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgProofs',
    description:
      "A page of the organization's proofs across its programs, newest first, searched by id prefix, program name or creator and filtered by state, program, project or date.",
    path: '/orgs/{org_id}/proofs',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Search the organization’s proofs, newest first',
    request: {
      params: OrgParams,
      query: PaginationQuery.extend({
        search: z.string().max(100).optional().openapi({ description: 'Proof id prefix, or text in the program name or creator' }),
        state: z.enum(PROOF_STATES).optional(),
        program_id: z.uuid().optional(),
        project_id: z.uuid().optional(),
        from: DateParam.optional(),
        to: DateParam.optional(),
      }),
    },
    responses: {
      200: { description: 'A page of proofs', content: { 'application/json': { schema: pageOf(ConsoleProof, 'ConsoleProofPage') } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const range = dateRange(q.from, q.to);
    const where = and(
      eq(proofs.org_id, c.get('membership').orgId),
      q.state ? eq(proofs.state, q.state) : undefined,
      q.program_id ? eq(proofs.program_id, q.program_id) : undefined,
      q.project_id ? eq(programs.project_id, q.project_id) : undefined,
      range.from ? gte(proofs.created_at, range.from) : undefined,
      range.to ? lte(proofs.created_at, range.to) : undefined,
      // instr(): the text is matched literally, % and _ included.
      q.search
        ? sql`(${proofs.id} LIKE ${q.search.replace(/[%_\\]/g, '') + '%'} OR instr(lower(${programs.name}), lower(${q.search})) > 0 OR instr(lower(${proofs.created_by}), lower(${q.search})) > 0)`
        : undefined,
    );
    const db = c.get('db');
    const filtered = q.state || q.program_id || q.project_id || range.from || range.to || q.search;
    // Unfiltered, the total is the organization's counter; a search counts at most COUNT_CAP matches.
    const total = filtered
      ? cappedCount(
          db
            .select({ one: sql`1` })
            .from(proofs)
            .innerJoin(programs, eq(programs.id, proofs.program_id))
            .where(where),
        )
      : orgCounter(db, c.get('membership').orgId, sql`${organizations.proof_count}`);
    const rows = db
      .select(listColumns)
      .from(proofs)
      .innerJoin(programs, eq(programs.id, proofs.program_id))
      .innerJoin(projects, eq(projects.id, programs.project_id))
      .where(where)
      .orderBy(desc(proofs.created_at), desc(proofs.id))
      .$dynamic();
    // Not one batch: D1 returns a batch's rows keyed by column name, and the joined tables share names.
    const read = pageQuery(db, rows, total, q.page, q.page_size);
    const [pageRows, counted] = await Promise.all([read.rows, read.total]);
    return c.json(pageAnswer({ rows: pageRows, total: counted }, withNames, q.page, q.page_size), 200);
  },
);

const ProofParams = OrgParams.extend({ proof_id: Uuid('proof_id') });

consoleProofsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgProof',
    description: "The proof's record, its job's progress (phase, attempts, agent) and the files that can be downloaded.",
    path: '/orgs/{org_id}/proofs/{proof_id}',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'A proof with its job’s progress and its downloadable files',
    request: { params: ProofParams },
    responses: { 200: { description: 'The proof', content: { 'application/json': { schema: ProofDetail } } }, ...consoleErrors(404, 422) },
  }),
  async (c) => {
    const db = c.get('db');
    const proof = await findProof(db, c.get('membership').orgId, c.req.valid('param').proof_id);
    const [names, job] = await Promise.all([
      db
        .select({ program_name: programs.name, project_id: projects.id, project_name: projects.name })
        .from(programs)
        .innerJoin(projects, eq(projects.id, programs.project_id))
        .where(eq(programs.id, proof.program_id))
        .get(),
      db
        .select({
          status: jobs.status,
          attempt: jobs.attempt,
          waiting_reason: jobs.waiting_reason,
          log_bytes: jobs.log_bytes,
          cancel_requested: jobs.cancel_requested,
        })
        .from(jobs)
        .where(and(eq(jobs.kind, 'proof'), eq(jobs.subject_id, proof.id)))
        .get(),
    ]);
    return c.json({ ...withNames({ proof, ...names! }), job: job ?? null, files: proof.proof_files }, 200);
  },
);

const LogQuery = z.object({ offset: queryInt(0, undefined, 0, 'Byte offset to read from') });
// Plain text with headers of its own, not a JSON body: documented, then mounted by hand
// with openapi()'s order of middleware and validators (src/features/runs/routes.ts documented()).
const logsPath = documented(consoleProofsApi, {
  method: 'get',
  operationId: 'getOrgProofLogs',
  path: '/orgs/{org_id}/proofs/{proof_id}/logs',
  tags: ['console records'],
  security: CONSOLE_SECURITY,
  summary: 'The proof job’s log from a byte offset',
  description: `Plain text, at most ${LOG_READ_MAX_BYTES} bytes. To follow a running job, ask again from X-Log-Next-Offset while X-Proof-State is not final.`,
  request: { params: ProofParams, query: LogQuery },
  responses: {
    200: {
      description: 'Log text',
      headers: { 'X-Log-Next-Offset': { schema: { type: 'integer' } }, 'X-Proof-State': { schema: { type: 'string' } } },
      content: { 'text/plain': { schema: z.string() } },
    },
    ...consoleErrors(404, 422),
  },
});
consoleProofsApi.get(
  logsPath,
  door.console('records.read'),
  zValidator('query', LogQuery, validationHook),
  zValidator('param', ProofParams, validationHook),
  async (c) => {
    const db = c.get('db');
    const proof = await findProof(db, c.get('membership').orgId, c.req.valid('param').proof_id);
    refuseDeleted(proof, `Proof ${proof.id}`);
    const { offset } = c.req.valid('query');
    // The job and its log's index rows from `offset`: one round trip, then the page's R2 reads.
    const {
      job: [job],
      rows,
    } = await batchByName(db, {
      job: jobOfSubject(db, 'proof', proof.id),
      rows: logPageQuery(db, jobIdOfSubject('proof', proof.id), offset),
    });
    const page = await readLogPage(c.env.ARTIFACTS, job?.id, rows, offset, LOG_READ_MAX_BYTES, job?.log_bytes, job?.log_store);
    return c.text(utf8Text(page.bytes), 200, {
      'X-Log-Next-Offset': String(page.next),
      'X-Proof-State': proof.state,
      'Cache-Control': 'no-store',
    });
  },
);

const ProofFileParams = ProofParams.extend({ kind: z.enum(['stark', 'evm', 'app']).openapi({ param: { name: 'kind', in: 'path' } }) });
// The file as stored (streamed), not a JSON body the route makes: documented, then mounted by hand.
const proofFilePath = documented(consoleProofsApi, {
  method: 'get',
  operationId: 'downloadOrgProof',
  path: '/orgs/{org_id}/proofs/{proof_id}/proof/{kind}',
  tags: ['console records'],
  security: CONSOLE_SECURITY,
  summary: 'Download a proof file (404 until it exists)',
  description: PROOF_FILE_DESCRIPTION,
  request: { params: ProofFileParams },
  responses: {
    200: { description: 'The proof JSON', content: { 'application/json': { schema: ProofFile, example: PROOF_FILE_EXAMPLE } } },
    ...consoleErrors(404, 422),
  },
});
consoleProofsApi.get(proofFilePath, door.console('records.read'), zValidator('param', ProofFileParams, validationHook), async (c) => {
  const { proof_id, kind } = c.req.valid('param');
  return proofFileResponse(c.env.ARTIFACTS, await findProof(c.get('db'), c.get('membership').orgId, proof_id), kind);
});

consoleProofsApi.openapi(
  createRoute({
    method: 'post',
    operationId: 'cancelOrgProof',
    description: 'A queued proof is canceled at once; a running one within one heartbeat of its agent; a finished one is 409.',
    path: '/orgs/{org_id}/proofs/{proof_id}/cancel',
    middleware: [door.console('jobs.cancel')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Cancel a proof (queued: at once; running: within one heartbeat; finished: 409)',
    request: { params: ProofParams },
    responses: {
      200: { description: 'Canceled or canceling', content: { 'application/json': { schema: CancelAnswer } } },
      ...consoleErrors(404, 409, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').proof_id;
    // Scoped to the member as they stand when it runs (asMember): one removed or demoted meanwhile cancels nothing.
    const { results, answer } = await asMember(c, async (org) => {
      const results = await batchByName(c.get('db'), cancelProofStatements(c.get('db'), id, org));
      return { results, answer: cancelAnswer(id, cancelOutcome(results)) };
    });
    enqueueAfterResponse(c, cancelDeliveries(results));
    return c.json(answer, 200);
  },
);
