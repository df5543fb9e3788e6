// /v1/projects: the groups programs belong to.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { eq } from 'drizzle-orm';
import type { AppEnv } from '../app-env.ts';
import { programs, projects } from '../db/schema.ts';
import { notFound, ValidationError, validationHook } from '../lib/errors.ts';
import { readJsonBody } from '../lib/body.ts';
import { MAX_JSON_BODY_BYTES } from '../lib/limits.ts';
import { ProgramRecord, ProjectRecord } from '../lib/records.ts';
import { errorResponses, IdResponse, PaginationQuery, pageOf, Uuid } from '../lib/schemas.ts';
import { findProject, listPrograms, projectPage } from '../lib/lookups.ts';

export const projectsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook });


projectsApi.openapi(
  createRoute({
    method: 'get',
    path: '/',
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
    return c.json(await projectPage(c.var.db, c.var.caller.orgId, { page: q.page, pageSize: q.page_size, search: q.search, sortBy: q.sort_by, sortOrder: q.sort_order }), 200);
  },
);

const CreateProjectBody = z
  .union([z.string(), z.object({ name: z.string() })])
  .openapi('CreateProject', { description: 'The project name as a JSON string (what the published client sends), or {"name": "..."}' });

const createRoute_ = createRoute({
  method: 'post',
  path: '/',
  tags: ['projects'],
  summary: 'Create a project',
  request: { body: { required: true, content: { 'application/json': { schema: CreateProjectBody } } } },
  responses: {
    201: { description: 'Created', content: { 'application/json': { schema: IdResponse } } },
    ...errorResponses(422),
  },
});
// The body may be a bare JSON string, which the generated validator would read as
// text; it is parsed here instead.
projectsApi.openAPIRegistry.registerPath(createRoute_);
projectsApi.post('/', async (c) => {
  const body = await readJsonBody(c.req.raw, MAX_JSON_BODY_BYTES);
  const name = typeof body === 'string' ? body : (body as { name?: unknown } | null)?.name;
  if (typeof name !== 'string' || !name.trim())
    throw new ValidationError([{ loc: ['body'], msg: 'Value error, the body must be the project name as a non-empty JSON string', type: 'value_error' }]);
  if (name.length > 256) throw new ValidationError([{ loc: ['body'], msg: 'String should have at most 256 characters', type: 'string_too_long' }]);
  const id = crypto.randomUUID();
  await c.var.db.insert(projects).values({ id, org_id: c.var.caller.orgId, name: name.trim(), created_by: c.var.caller.owner });
  return c.json({ id }, 201);
});

const ProjectParams = z.object({ project_id: Uuid('project_id') });

projectsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{project_id}',
    tags: ['projects'],
    summary: 'Get a project',
    request: { params: ProjectParams },
    responses: {
      200: { description: 'The project', content: { 'application/json': { schema: ProjectRecord } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const [record] = (await projectPage(c.var.db, c.var.caller.orgId, { page: 1, pageSize: 1 }, c.req.valid('param').project_id)).items;
    if (!record) throw notFound('Project');
    return c.json(record, 200);
  },
);

projectsApi.openapi(
  createRoute({
    method: 'get',
    path: '/{project_id}/programs',
    tags: ['projects'],
    summary: 'List the programs of a project',
    request: { params: ProjectParams, query: PaginationQuery },
    responses: {
      200: { description: 'A page of programs, newest first', content: { 'application/json': { schema: pageOf(ProgramRecord, 'ProjectProgramPage') } } },
      ...errorResponses(404, 422),
    },
  }),
  async (c) => {
    const { project_id } = c.req.valid('param');
    const { page, page_size } = c.req.valid('query');
    const { db, caller } = c.var;
    if (!(await findProject(db, caller.orgId, project_id))) throw notFound('Project');
    return c.json(await listPrograms(db, caller.orgId, eq(programs.project_id, project_id), page, page_size), 200);
  },
);
