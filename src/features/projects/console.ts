// /console/v1/orgs/{org_id}/projects: the organization's projects with search and sort.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { validationHook } from '../../lib/errors.ts';
import { batchByName } from '../../db/batch.ts';
import { one } from '../../lib/pages.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams, PaginationQuery, pageOf, Uuid } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { door } from '../../middleware/door.ts';
import { projectPage, projectPageQuery, projectQuery } from './data.ts';
import { ProjectRecord, projectRecord } from './schemas.ts';

export const consoleProjectsApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

consoleProjectsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgProjects',
    description: "A page of the organization's projects, searched by name and sorted, with their program counts and last activity.",
    path: '/orgs/{org_id}/projects',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Search and sort the organization’s projects',
    request: {
      params: OrgParams,
      query: PaginationQuery.extend({
        search: z.string().max(256).optional(),
        sort_by: z.enum(['created_at', 'name', 'last_active_at']).default('last_active_at'),
        sort_order: z.enum(['asc', 'desc']).default('desc'),
      }),
    },
    responses: {
      200: { description: 'A page of projects', content: { 'application/json': { schema: pageOf(ProjectRecord, 'ConsoleProjectPage') } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const query = { page: q.page, pageSize: q.page_size, search: q.search, sortBy: q.sort_by, sortOrder: q.sort_order };
    return c.json(projectPage(await batchByName(c.get('db'), projectPageQuery(c.get('db'), c.get('membership').orgId, query)), query), 200);
  },
);

consoleProjectsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgProject',
    description: 'The project with its program count, total proofs run and last activity.',
    path: '/orgs/{org_id}/projects/{project_id}',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'A project',
    request: { params: OrgParams.extend({ project_id: Uuid('project_id') }) },
    responses: {
      200: { description: 'The project', content: { 'application/json': { schema: ProjectRecord } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    return c.json(
      projectRecord(one(await projectQuery(c.get('db'), c.get('membership').orgId, c.req.valid('param').project_id), 'Project')),
      200,
    );
  },
);
