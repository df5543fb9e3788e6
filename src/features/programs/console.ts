// /console/v1/orgs/{org_id}/programs: the organization's programs with search and
// filters, and one program with its artifacts and proof counts.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, count, eq, gte, lte, sql } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import { organizations, programs, proofs } from '../../db/schema.ts';
import { validationHook } from '../../lib/errors.ts';
import { cappedCount, orgCounter } from '../../lib/pages.ts';
import { CONSOLE_SECURITY, consoleErrors, DateParam, dateRange, OrgParams, PaginationQuery, pageOf, Uuid } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { door } from '../../middleware/door.ts';
import { projectProgramCount } from '../projects/data.ts';
import { findProgram, programPage, programPageQuery, toRecord } from './data.ts';
import { ProgramDetail, ProgramRecord } from './schemas.ts';

export const consoleProgramsApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

consoleProgramsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgPrograms',
    description: "A page of the organization's programs, newest first, searched by name or hash and filtered by project, status or date.",
    path: '/orgs/{org_id}/programs',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'Search the organization’s programs, newest first',
    request: {
      params: OrgParams,
      query: PaginationQuery.extend({
        search: z.string().max(256).optional().openapi({ description: 'Text in the program name or hash' }),
        project_id: z.uuid().optional(),
        status: z.enum(['not_ready', 'processing', 'ready', 'error', 'failed']).optional(),
        from: DateParam.optional(),
        to: DateParam.optional(),
      }),
    },
    responses: {
      200: { description: 'A page of programs', content: { 'application/json': { schema: pageOf(ProgramRecord, 'ConsoleProgramPage') } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const range = dateRange(q.from, q.to);
    const filter = and(
      q.project_id ? eq(programs.project_id, q.project_id) : undefined,
      q.status ? eq(programs.status, q.status) : undefined,
      range.from ? gte(programs.created_at, range.from) : undefined,
      range.to ? lte(programs.created_at, range.to) : undefined,
      q.search
        ? sql`(instr(lower(${programs.name}), lower(${q.search})) > 0 OR instr(${programs.program_hash}, lower(${q.search})) > 0)`
        : undefined,
    );
    const db = c.get('db');
    const orgId = c.get('membership').orgId;
    // The total: a counter (the organization's, or the project's), or a capped count of a search.
    const total =
      q.status || range.from || range.to || q.search
        ? cappedCount(
            db
              .select({ one: sql`1` })
              .from(programs)
              .where(and(eq(programs.org_id, orgId), filter)),
          )
        : q.project_id
          ? projectProgramCount(db, orgId, q.project_id)
          : orgCounter(db, orgId, sql`${organizations.program_count}`);
    return c.json(
      programPage(await batchByName(db, programPageQuery(db, orgId, filter, q.page, q.page_size, total)), q.page, q.page_size),
      200,
    );
  },
);

consoleProgramsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgProgram',
    description: "The program's status, hashes, config and artifacts, and how many of its proofs are in each state.",
    path: '/orgs/{org_id}/programs/{program_id}',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'A program: status, hashes, artifacts and its proofs by state',
    request: { params: OrgParams.extend({ program_id: Uuid('program_id') }) },
    responses: {
      200: { description: 'The program', content: { 'application/json': { schema: ProgramDetail } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const db = c.get('db');
    const row = await findProgram(db, c.get('membership').orgId, c.req.valid('param').program_id);
    // Bounded by this program's proofs (proofs_program index), shown to a person on its page.
    const states = await db
      .select({ state: proofs.state, n: count() })
      .from(proofs)
      .where(eq(proofs.program_id, row.program.id))
      .groupBy(proofs.state);
    return c.json(
      {
        ...toRecord(row),
        artifacts: {
          elf_size: row.program.elf_size,
          vmexe_size: row.program.vmexe_size,
          app_exe_commit: row.program.app_exe_commit,
          app_vm_commit: row.config.app_vm_commit,
          engine: row.config.engine,
        },
        proof_states: Object.fromEntries(states.map((s) => [s.state, s.n])),
      },
      200,
    );
  },
);
