// /v1/programs: registering pre-built programs, reading them, moving them between
// projects, downloading their artifacts.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { zValidator } from '@hono/zod-validator';
import { and, eq, sql } from 'drizzle-orm';
import type { Context } from 'hono';
import type { AppEnv } from '../app-env.ts';
import { organizations, programs, projects } from '../db/schema.ts';
import { INTERACTIVE_PRIORITY, refuseOverQuota, submitJob, usageQuery } from '../jobs/dispatch.ts';
import { asCaller } from '../middleware/auth.ts';
import { artifactKey, streamObject, type ArtifactBatch } from '../lib/artifacts.ts';
import { ApiError, notFound, refuseDeleted, validationHook } from '../lib/errors.ts';
import { toHex } from '../lib/crypto.ts';
import { ELF_HEAD_BYTES, validateElf } from '../lib/elf.ts';
import { MemorySink, multipartForm, type MultipartForm } from '../lib/multipart.ts';
import { ProgramRecord } from '../lib/records.ts';
import { ConfigId, errorResponses, IdempotencyHeaders, idempotentResponses, PaginationQuery, pageOf, queryInt, Uuid } from '../lib/schemas.ts';
import { idempotent } from '../middleware/idempotency.ts';
import { configQuery, one, orgCounter, programPage, programPageQuery, programQuery, projectQuery, requireProgram, toRecord } from '../lib/lookups.ts';
import { highlightIfNone, rehighlightAfterMove } from '../lib/project-highlight.ts';
import { jsonBody } from '../lib/body.ts';
import { MAX_JSON_BODY_BYTES } from '../lib/limits.ts';
import { permit } from '../middleware/permit.ts';

export const programsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

/** The caller's program with its project and config, in the request's one read (404, confirmed on the primary, when there is none). */
async function readProgram(c: Context<AppEnv>, id: string) {
  return requireProgram(await asCaller(c, (org) => programQuery(c.var.db, org, id), ([p]) => p.length > 0));
}

// ---------------------------------------------------------------------------
// POST /v1/programs

const RegisterQuery = z.object({
  config_id: ConfigId,
  program_name: z.string().max(256).optional(),
  commit_sha: z.string().max(256).optional(),
  project_id: z.uuid().optional(),
  project_name: z.string().max(256).optional(),
  default_num_gpus: queryInt(1, 10000, 8, 'Default GPU count for proofs of this program'),
});

const registerRoute = createRoute({
  method: 'post',
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

programsApi.post('/', permit('jobs.submit'), idempotent, zValidator('query', RegisterQuery, validationHook), async (c) => {
  const q = c.req.valid('query');
  const { db } = c.var;
  // Everything that can be refused without the body is refused before reading it, from
  // the request's one read (a replica's refusal is confirmed on the primary).
  const [configRows, projectRows, [usage]] = await asCaller(
    c,
    (org) => [configQuery(db, q.config_id), projectQuery(db, org, q.project_id ?? ''), usageQuery(c, org)],
    ([cfg, project, [u]]) => cfg.length > 0 && (!q.project_id || project.length > 0) && !!u && u.activeJobs < u.maxActiveJobs,
  );
  const caller = c.var.caller;
  const form = multipartForm(c.req.raw, Number(c.env.MAX_UPLOAD_BYTES));
  if (!form) throw new ApiError(400, 'Expected a multipart/form-data body with file parts "elf" and "vmexe"');

  const config = one(configRows, 'Config');
  if (!config.active) throw new ApiError(400, `Config ${config.id} is not active`);
  if (q.project_id && !projectRows[0]) throw notFound('Project');
  refuseOverQuota(usage);

  const programId = crypto.randomUUID();
  const answer = { status: 201, body: { id: programId } } as const;
  await submitJob(
    c,
    (artifacts) => receiveProgramFiles(form, programId, artifacts),
    (upload) => {
      const now = new Date().toISOString();
      const projectId = q.project_id ?? crypto.randomUUID();
      const name = q.program_name || upload.elfFilename || `program-${programId.slice(0, 8)}`;
      const newProject = db.insert(projects).values({
        id: projectId,
        org_id: caller.orgId,
        name: q.project_name || upload.projectName || name,
        created_by: caller.owner,
        highlighted_program_id: programId,
        created_at: now,
      });
      const program = db.insert(programs).values({
        id: programId,
        org_id: caller.orgId,
        project_id: projectId,
        config_id: config.id,
        name,
        created_at: now,
        created_by: caller.owner,
        last_active_at: now,
        program_hash: upload.elfSha256,
        commit_sha: q.commit_sha ?? '',
        default_num_gpus: q.default_num_gpus,
        elf_key: artifactKey.programElf(programId),
        elf_size: upload.elfSize,
        vmexe_key: artifactKey.programVmexe(programId),
        vmexe_size: upload.vmexeSize,
      });
      return {
        rows: q.project_id ? [program, highlightIfNone(db, projectId, programId)] : [newProject, program],
        job: { kind: 'commit', subjectId: programId, orgId: caller.orgId, configId: config.id, engine: config.engine, priority: INTERACTIVE_PRIORITY, numGpus: 1 },
      };
    },
    answer,
  );
  return c.json(answer.body, answer.status);
});

interface ReceivedProgram {
  elfSize: number;
  elfSha256: string;
  elfFilename: string | undefined;
  vmexeSize: number;
  projectName: string | undefined;
}

/** Streams the `elf` and `vmexe` parts into R2, checking the ELF on the way. */
async function receiveProgramFiles(form: MultipartForm, programId: string, artifacts: ArtifactBatch): Promise<ReceivedProgram> {
  const hash = new crypto.DigestStream('SHA-256');
  const hashWriter = hash.getWriter();
  const head = new MemorySink(ELF_HEAD_BYTES, () => new Error('unreachable'));
  let elfFilename: string | undefined;
  const fieldTooLong = () => new ApiError(400, 'Form field project_name is longer than 256 bytes');

  const parts = await form.read({
    elf: {
      required: true,
      max: 1,
      // Into R2, hashed and its head kept for the checks below on the way.
      sink(part) {
        elfFilename = part.filename;
        const r2 = artifacts.stream(artifactKey.programElf(programId));
        return {
          get size() {
            return r2.size;
          },
          write(chunk: Uint8Array) {
            void hashWriter.write(chunk);
            if (head.size < ELF_HEAD_BYTES) head.write(chunk.subarray(0, ELF_HEAD_BYTES - head.size));
            return r2.write(chunk);
          },
          end: () => r2.end(),
        };
      },
    },
    vmexe: { required: true, max: 1, sink: () => artifacts.stream(artifactKey.programVmexe(programId)) },
    // Given more than once, the last one counts.
    project_name: { fieldOnly: true, sink: () => new MemorySink(256, fieldTooLong) },
  });

  await hashWriter.close();
  const elfSize = parts.elf[0]!.size;
  const vmexe = parts.vmexe[0]!;
  const problem = validateElf(head.bytes(), elfSize);
  if (problem) throw new ApiError(400, `Invalid ELF: ${problem}`);
  if (vmexe.size === 0) throw new ApiError(400, 'vmexe is empty');
  return {
    elfSize,
    elfSha256: toHex(await hash.digest),
    elfFilename: elfFilename?.replace(/\.elf$/i, '') || undefined,
    vmexeSize: vmexe.size,
    projectName: parts.project_name.at(-1)?.text().trim() || undefined,
  };
}

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
    path: '/',
    middleware: [permit('records.read')],
    tags: ['programs'],
    summary: 'List programs (deprecated: use /v1/projects and /v1/projects/{project_id}/programs)',
    deprecated: true,
    request: { query: PaginationQuery.extend({ project_id: z.uuid().optional() }) },
    responses: {
      200: { description: 'A page of programs, newest first', content: { 'application/json': { schema: pageOf(ProgramRecord, 'ProgramPage') } } },
      ...errorResponses(422),
    },
  }),
  async (c) => {
    const { page, page_size, project_id } = c.req.valid('query');
    const db = c.var.db;
    const rows = await asCaller(c, (org) =>
      programPageQuery(
        db,
        org,
        project_id ? eq(programs.project_id, project_id) : undefined,
        page,
        page_size,
        // The total is a counter: the project's, or the organization's.
        project_id
          ? sql<number>`coalesce((${db.select({ n: projects.program_count }).from(projects).where(and(eq(projects.id, project_id), eq(projects.org_id, org)))}), 0)`
          : orgCounter(db, org, sql`${organizations.program_count}`),
      ),
    );
    return c.json(programPage(rows, page, page_size), 200, DEPRECATION_HEADERS);
  },
);

// ---------------------------------------------------------------------------
// GET / PUT /v1/programs/{program_id}

const ProgramParams = z.object({ program_id: Uuid('program_id') });

programsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{program_id}',
    middleware: [permit('records.read')],
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

const UpdateProgramBody = z
  .object({
    project_id: z.uuid().optional().openapi({ description: 'Move the program to this project (one of yours)' }),
    name: z.string().min(1).max(256).optional().openapi({ description: 'Rename the program' }),
    program_name: z.string().min(1).max(256).optional().openapi({ description: 'Alias of name' }),
  })
  .openapi('UpdateProgram');

programsApi.openapi(
  createRoute({
    method: 'put',
    path: '/{program_id}',
    tags: ['programs'],
    summary: 'Move a program to another project and/or rename it',
    middleware: [permit('projects.manage'), jsonBody(MAX_JSON_BODY_BYTES)],
    request: { params: ProgramParams, body: { required: true, content: { 'application/json': { schema: UpdateProgramBody } } } },
    responses: {
      200: { description: 'The updated program', content: { 'application/json': { schema: ProgramRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { db } = c.var;
    const { program_id } = c.req.valid('param');
    const body = c.req.valid('json');
    const [programRows, projectRows, configRows, target] = await asCaller(
      c,
      (org) => [...programQuery(db, org, program_id), projectQuery(db, org, body.project_id ?? '')],
      ([p, , , t]) => p.length > 0 && (!body.project_id || t.length > 0),
    );
    const caller = c.var.caller;
    const { program } = requireProgram([programRows, projectRows, configRows]);
    if (body.project_id && !target[0]) throw notFound('Project');
    const name = body.name ?? body.program_name;
    if (!body.project_id && !name) return c.json(toRecord(requireProgram([programRows, projectRows, configRows])), 200);
    const update = db
      .update(programs)
      .set({ ...(body.project_id ? { project_id: body.project_id } : {}), ...(name ? { name } : {}) })
      .where(and(eq(programs.id, program_id), eq(programs.org_id, caller.orgId)));
    const moved = body.project_id !== undefined && body.project_id !== program.project_id;
    // The change and the record as it now stands, in one batch.
    const [, , , ...after] = await db.batch([
      update,
      moved ? rehighlightAfterMove(db, program.project_id, program_id) : db.select({ one: sql`1` }).from(sql`(SELECT 1)`),
      moved ? highlightIfNone(db, body.project_id!, program_id) : db.select({ one: sql`1` }).from(sql`(SELECT 1)`),
      ...programQuery(db, caller.orgId, program_id),
    ]);
    return c.json(toRecord(requireProgram(after)), 200);
  },
);

// ---------------------------------------------------------------------------
// GET /v1/programs/{program_id}/download/{artifact}

programsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{program_id}/download/{artifact}',
    middleware: [permit('records.read')],
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
    if (artifact === 'source') throw new ApiError(404, 'This program was registered pre-built (ELF and VMEXE): it has no source to download');
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

