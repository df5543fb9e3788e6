// /v1/projects: the groups programs belong to.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { eq } from 'drizzle-orm';
import type { AppEnv } from '../../app-env.ts';
import { programs } from '../../db/schema.ts';
import { asCaller, keyRefusal } from '../../middleware/auth.ts';
import { ApiError, isRefusedInsert, ValidationError, validationHook } from '../../lib/errors.ts';
import { readJsonBody } from '../../lib/body.ts';
import { BODY_CAPS, MAX_JSON_BODY_BYTES } from '../../lib/limits.ts';
import { errorResponses, IdempotencyHeaders, idempotentResponses, PaginationQuery, pageOf, unsafeNameIssue } from '../../lib/schemas.ts';
import { isLostClaim } from '../../middleware/idempotency/store.ts';
import { answerStatements, claimLost, idempotent } from '../../middleware/idempotency/index.ts';
import { one } from '../../lib/pages.ts';
import { door, json } from '../../middleware/door.ts';
import { programPage, programPageQuery } from '../programs/data.ts';
import { ProgramRecord } from '../programs/schemas.ts';
import { insertProject, projectPage, projectPageQuery, projectProgramCount, projectQuery } from './data.ts';
import { CreateProjectBody, ProjectParams, ProjectRecord, projectRecord } from './schemas.ts';

export const projectsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });

projectsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listProjects',
    description:
      "A page of the organization's projects with their program counts and last activity; `search` matches names and `sort_by`/`sort_order` order them (newest first by default).",
    path: '/',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['projects'],
    summary: 'List projects (the dashboard listing: search and sort across projects)',
    request: {
      query: PaginationQuery.extend({
        search: z.string().max(256).optional().openapi({ description: 'Only projects whose name contains this text (case-insensitive)' }),
        sort_by: z.enum(['created_at', 'name', 'last_active_at']).default('created_at'),
        sort_order: z.enum(['asc', 'desc']).default('desc'),
      }),
    },
    responses: {
      200: { description: 'A page of projects', content: { 'application/json': { schema: pageOf(ProjectRecord, 'ProjectPage') } } },
      ...errorResponses(422),
    },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const query = { page: q.page, pageSize: q.page_size, search: q.search, sortBy: q.sort_by, sortOrder: q.sort_order };
    return c.json(projectPage(await asCaller(c, (org) => projectPageQuery(c.get('db'), org, query)), query), 200);
  },
);

const createRoute_ = createRoute({
  method: 'post',
  operationId: 'createProject',
  description:
    'The body is the project\'s name as a JSON string (`"my project"`), as the published client sends it; answers the new project\'s id. An Idempotency-Key makes it safe to retry.',
  path: '/',
  tags: ['projects'],
  summary: 'Create a project',
  request: { headers: IdempotencyHeaders, body: { required: true, content: { 'application/json': { schema: CreateProjectBody } } } },
  responses: idempotentResponses(201, 'Created', 413, 422),
});
// The body may be a bare JSON string, which the generated validator would read as
// text; it is parsed here instead.
projectsApi.openAPIRegistry.registerPath(createRoute_);
projectsApi.post('/', door.apiKey('projects.manage', { rate: 'submissions', body: json(BODY_CAPS.small) }), idempotent, async (c) => {
  const body = await readJsonBody(c.req.raw, MAX_JSON_BODY_BYTES);
  const name = typeof body === 'string' ? body : (body as { name?: unknown } | null)?.name;
  if (typeof name !== 'string' || !name.trim())
    throw new ValidationError([
      { loc: ['body'], msg: 'Value error, the body must be the project name as a non-empty JSON string', type: 'value_error' },
    ]);
  if (name.length > 256)
    throw new ValidationError([{ loc: ['body'], msg: 'String should have at most 256 characters', type: 'string_too_long' }]);
  const unsafe = unsafeNameIssue(['body'], name);
  if (unsafe) throw new ValidationError([unsafe]);
  const id = crypto.randomUUID();
  const answer = { status: 201, body: { id } } as const;
  const answerRows = await answerStatements(c, answer.status, answer.body);
  // One batch on the primary: the key's lookup and the insert, whose organization and
  // owner are the key's own (a dead key, or one that may not manage projects, leaves
  // org_id NULL: the batch fails, nothing is stored); with an Idempotency-Key, also its
  // claim and the stored answer.
  try {
    await asCaller(c, (org) => ({
      project: insertProject(c.get('db'), org, c.get('apiKeyHash'), id, name.trim()),
      answer: answerRows(c.get('db'), org),
    }));
  } catch (err) {
    if (isRefusedInsert(err, 'projects')) throw (await keyRefusal(c)) ?? new ApiError(401, 'Invalid or revoked API key');
    if (isLostClaim(err)) throw claimLost();
    throw err;
  }
  return c.json(answer.body, answer.status);
});

projectsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getProject',
    description: "The project's name, who created it, its program count, total proofs run and last activity.",
    path: '/{project_id}',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['projects'],
    summary: 'Get a project',
    request: { params: ProjectParams },
    responses: {
      200: { description: 'The project', content: { 'application/json': { schema: ProjectRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const id = c.req.valid('param').project_id;
    const { project } = await asCaller(
      c,
      (org) => ({ project: projectQuery(c.get('db'), org, id) }),
      ({ project }) => project.length > 0,
    );
    return c.json(projectRecord(one(project, 'Project')), 200);
  },
);

projectsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listProjectPrograms',
    description: "A page of the project's programs, newest first.",
    path: '/{project_id}/programs',
    middleware: [door.apiKey('records.read', { rate: 'reads' })],
    tags: ['projects'],
    summary: 'List the programs of a project',
    request: { params: ProjectParams, query: PaginationQuery },
    responses: {
      200: {
        description: 'A page of programs, newest first',
        content: { 'application/json': { schema: pageOf(ProgramRecord, 'ProjectProgramPage') } },
      },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { project_id } = c.req.valid('param');
    const { page, page_size } = c.req.valid('query');
    const db = c.get('db');
    const read = await asCaller(
      c,
      (org) => ({
        project: projectQuery(db, org, project_id),
        ...programPageQuery(db, org, eq(programs.project_id, project_id), page, page_size, projectProgramCount(db, org, project_id)),
      }),
      ({ project }) => project.length > 0,
    );
    one(read.project, 'Project');
    return c.json(programPage(read, page, page_size), 200);
  },
);
