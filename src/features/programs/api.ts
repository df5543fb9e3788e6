// /v1/programs: registering pre-built programs, reading them, moving them between
// projects, downloading their artifacts.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import { eq, sql } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import type { Context } from 'hono';
import type { AppEnv } from '../../app-env.ts';
import { organizations, programs } from '../../db/schema.ts';
import { refuseOverQuota } from '../../jobs/dispatch.ts';
import { submitJob, usageQuery } from '../runs/submit.ts';
import { asCaller } from '../../middleware/auth.ts';
import { streamObject } from '../../lib/artifacts.ts';
import { ApiError, notFound, refuseDeleted, validationHook } from '../../lib/errors.ts';
import { multipartForm } from '../../lib/multipart.ts';
import { errorResponses, IdempotencyHeaders, idempotentResponses, PaginationQuery, pageOf } from '../../lib/schemas.ts';
import { idempotent } from '../../middleware/idempotency/index.ts';
import { configQuery } from '../configs/data.ts';
import { one, orgCounter } from '../../lib/pages.ts';
import { jsonBody } from '../../lib/body.ts';
import { BODY_CAPS, MAX_JSON_BODY_BYTES } from '../../lib/limits.ts';
import { declaredForm, door, json, multipart } from '../../middleware/door.ts';
import { projectProgramCount, projectQuery } from '../projects/data.ts';
import { programPage, programPageQuery, programQuery, registration, requireProgram, toRecord, updateProgram } from './data.ts';
import { receiveProgramFiles } from './files.ts';
import { ProgramParams, ProgramRecord, RegisterQuery, UpdateProgramBody } from './schemas.ts';

export const programsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** The caller's program with its project and config, in the request's one read (404, confirmed on the primary, when there is none). */
async function readProgram(c: Context<AppEnv>, id: string) {
  return requireProgram(
    await asCaller(
      c,
      (org) => programQuery(c.get('db'), org, id),
      ({ program }) => program.length > 0,
    ),
  );
}

// ---------------------------------------------------------------------------
// POST /v1/programs

const registerRoute = createRoute({
  method: 'post',
  operationId: 'registerProgram',
  path: '/',
  tags: ['programs'],
  summary: 'Register a pre-built program (ELF + VMEXE)',
  description:
    'Streams both files to storage, records the program as `not_ready` and queues the background job that computes its exe commit and verification baseline; the status becomes `processing`, then `ready` (or `failed`). The body limit is the deployment’s MAX_UPLOAD_BYTES (413 beyond it).',
  request: {
    query: RegisterQuery,
    headers: IdempotencyHeaders,
    body: {
      required: true,
      content: {
        'multipart/form-data': {
          schema: z.object({
            elf: z.string().openapi({ format: 'binary', description: '32-bit little-endian RISC-V ELF executable' }),
            vmexe: z.string().openapi({ format: 'binary', description: 'Transpiled VMEXE' }),
            project_name: z.string().optional().openapi({ description: 'Alternative to the query parameter' }),
          }),
        },
      },
    },
  },
  responses: idempotentResponses(201, 'Registered', 400, 404, 413, 422),
});
// Registered for the document only: the handler below streams the body itself,
// which the generated validator (formData()) would buffer whole.
programsApi.openAPIRegistry.registerPath(registerRoute);

/** A registration: an API key that may submit, a form of the ELF and VMEXE within the deployment's upload cap. */
const registerDoor = door.apiKey('jobs.submit', { rate: 'uploads', body: multipart({ maxBytes: (env) => Number(env.MAX_UPLOAD_BYTES) }) });
programsApi.post('/', registerDoor, idempotent, zValidator('query', RegisterQuery, validationHook), async (c) => {
  const q = c.req.valid('query');
  const db = c.get('db');
  // Everything that can be refused without the body is refused before reading it, from
  // the request's one read (a replica's refusal is confirmed on the primary).
  const read = await asCaller(
    c,
    (org) => ({ config: configQuery(db, q.config_id), project: projectQuery(db, org, q.project_id ?? ''), usage: usageQuery(c, org) }),
    ({ config, project, usage: [u] }) =>
      config.length > 0 && (!q.project_id || project.length > 0) && !!u && u.activeJobs < u.maxActiveJobs,
  );
  const form = multipartForm(c.req.raw, declaredForm(c));
  if (!form) throw new ApiError(400, 'Expected a multipart/form-data body with file parts "elf" and "vmexe"');

  const config = one(read.config, 'Config');
  if (!config.active) throw new ApiError(400, `Config ${config.id} is not active`);
  if (q.project_id && !read.project[0]) throw notFound('Project');
  refuseOverQuota(read.usage[0]);

  const programId = crypto.randomUUID();
  const answer = { status: 201, body: { id: programId } } as const;
  const asked = {
    programId,
    config,
    projectId: q.project_id,
    programName: q.program_name,
    projectName: q.project_name,
    commitSha: q.commit_sha,
    defaultNumGpus: q.default_num_gpus,
  };
  // The files go to R2 first, then the rows and the job commit in one batch (or the files are deleted).
  await submitJob(
    c,
    (artifacts) => receiveProgramFiles(form, programId, artifacts),
    (stored) => registration(db, c.get('caller'), asked, stored),
    answer,
  );
  return c.json(answer.body, answer.status);
});

// ---------------------------------------------------------------------------
// GET /v1/programs (deprecated)

/** The deprecated list announces its successor (RFC 9745 Deprecation, RFC 8594 Sunset). */
const DEPRECATION_HEADERS = {
  Deprecation: '@1767225600', // 2026-01-01T00:00:00Z
  Sunset: 'Wed, 30 Jun 2027 00:00:00 GMT',
  Link: '</v1/projects>; rel="successor-version", </v1/projects/{project_id}/programs>; rel="alternate"',
};

programsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listPrograms',
    description:
      "Deprecated: use GET /v1/projects/{project_id}/programs. A page of the organization's programs, newest first, of one project when `project_id` is given; kept for the published client's `projects programs` command.",
    path: '/',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['programs'],
    summary: 'List programs (deprecated: use /v1/projects and /v1/projects/{project_id}/programs)',
    deprecated: true,
    request: { query: PaginationQuery.extend({ project_id: z.uuid().optional() }) },
    responses: {
      200: {
        description: 'A page of programs, newest first',
        content: { 'application/json': { schema: pageOf(ProgramRecord, 'ProgramPage') } },
      },
      ...errorResponses(422),
    },
  }),
  async (c) => {
    const { page, page_size, project_id } = c.req.valid('query');
    const db = c.get('db');
    const read = await asCaller(c, (org) =>
      programPageQuery(
        db,
        org,
        project_id ? eq(programs.project_id, project_id) : undefined,
        page,
        page_size,
        // The total is a counter: the project's, or the organization's.
        project_id ? projectProgramCount(db, org, project_id) : orgCounter(db, org, sql`${organizations.program_count}`),
      ),
    );
    return c.json(programPage(read, page, page_size), 200, DEPRECATION_HEADERS);
  },
);

// ---------------------------------------------------------------------------
// GET / PUT /v1/programs/{program_id}

programsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getProgram',
    description: "The program's record: its status (`ready` once its commit job has finished), its config, hashes, project and counters.",
    path: '/{program_id}',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['programs'],
    summary: 'Get a program',
    request: { params: ProgramParams },
    responses: {
      200: { description: 'The program', content: { 'application/json': { schema: ProgramRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => c.json(toRecord(await readProgram(c, c.req.valid('param').program_id)), 200),
);

programsApi.openapi(
  createRoute({
    method: 'put',
    operationId: 'updateProgram',
    description: 'A JSON body with `project_id` (move it to that project) and/or `name` (rename it). Answers the program as it now is.',
    path: '/{program_id}',
    tags: ['programs'],
    summary: 'Move a program to another project and/or rename it',
    middleware: [door.apiKey('projects.manage', { rate: 'submissions', body: json(BODY_CAPS.small) }), jsonBody(MAX_JSON_BODY_BYTES)],
    request: { params: ProgramParams, body: { required: true, content: { 'application/json': { schema: UpdateProgramBody } } } },
    responses: {
      200: { description: 'The updated program', content: { 'application/json': { schema: ProgramRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const db = c.get('db');
    const { program_id } = c.req.valid('param');
    const body = c.req.valid('json');
    const read = await asCaller(
      c,
      (org) => ({ ...programQuery(db, org, program_id), target: projectQuery(db, org, body.project_id ?? '') }),
      ({ program, target }) => program.length > 0 && (!body.project_id || target.length > 0),
    );
    const found = requireProgram(read);
    if (body.project_id && !read.target[0]) throw notFound('Project');
    const name = body.name ?? body.program_name;
    if (!body.project_id && !name) return c.json(toRecord(found), 200);
    // The change and the record as it now stands, in one batch.
    const after = await batchByName(db, updateProgram(db, c.get('caller').orgId, found.program, { projectId: body.project_id, name }));
    return c.json(toRecord(requireProgram(after)), 200);
  },
);

// ---------------------------------------------------------------------------
// GET /v1/programs/{program_id}/download/{artifact}

programsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'downloadProgramArtifact',
    path: '/{program_id}/download/{artifact}',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['programs'],
    summary: 'Download the ELF, the VMEXE, or the app exe commit (bare hex text, once computed)',
    description:
      '`source` is named so that the published client’s `build download --artifact all` gets a clear 404: programs here are registered pre-built and have no source.',
    request: {
      params: ProgramParams.extend({
        artifact: z.enum(['elf', 'exe', 'app_exe_commit', 'source']).openapi({ param: { name: 'artifact', in: 'path' } }),
      }),
    },
    responses: {
      200: {
        description: 'The artifact',
        content: {
          'application/octet-stream': { schema: z.string().openapi({ format: 'binary' }) },
          'text/plain': { schema: z.string() },
        },
      },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { program_id, artifact } = c.req.valid('param');
    const { program } = await readProgram(c, program_id);
    refuseDeleted(program, `Program ${program_id}`);
    if (artifact === 'source')
      throw new ApiError(404, 'This program was registered pre-built (ELF and VMEXE): it has no source to download');
    if (artifact === 'app_exe_commit') {
      if (!program.app_exe_commit) throw new ApiError(404, `app_exe_commit is not computed yet: the program is ${program.status}`);
      // Bare hex: the published client hex-decodes the trimmed body (axiom-api-cli
      // v2.0.0 crates/sdk/src/build.rs:249-258).
      return c.text(program.app_exe_commit.replace(/^0x/i, ''));
    }
    const key = artifact === 'elf' ? program.elf_key : program.vmexe_key;
    const obj = await c.env.ARTIFACTS.get(key);
    if (!obj) throw notFound(`The program's ${artifact}`);
    return streamObject(obj, 'application/octet-stream', artifact === 'elf' ? 'program.elf' : 'program.vmexe');
  },
);
