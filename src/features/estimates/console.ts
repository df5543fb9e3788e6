// /console/v1/orgs/{org_id}/programs/{program_id}/estimate: what proving the program's
// latest succeeded execution would take and cost (docs/callers.md "Estimates"), for its page.
// One batch: the program and its config, the config's proving rates, the latest run.
import { createRoute, OpenAPIHono } from '@hono/zod-openapi';
import { batchByName } from '../../db/batch.ts';
import { CONSOLE_SECURITY, consoleErrors, OrgParams } from '../../lib/schemas.ts';
import { ApiError, validationHook } from '../../lib/errors.ts';
import { Uuid } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { door } from '../../middleware/door.ts';
import { estimateOf, latestRunQuery, programBasisQuery, programRatesQuery } from './data.ts';
import { EstimateQuery, ProgramEstimate } from './schemas.ts';

export const estimatesConsoleApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

estimatesConsoleApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'getOrgProgramEstimate',
    description:
      "The GPUs, time and cost of proving the program's latest succeeded execution, from its measured cycles and the recent proofs of the program's config on the same machine type; `execution_id` is null while there is no such execution.",
    path: '/orgs/{org_id}/programs/{program_id}/estimate',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'An estimate of proving the program’s latest succeeded execution',
    request: { params: OrgParams.extend({ program_id: Uuid('program_id') }), query: EstimateQuery },
    responses: {
      200: { description: 'The estimate', content: { 'application/json': { schema: ProgramEstimate } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const { program_id } = c.req.valid('param');
    const org = c.get('membership').orgId;
    const db = c.get('db');
    const { basis, rates, latest } = await batchByName(db, {
      basis: programBasisQuery(db, org, program_id),
      rates: programRatesQuery(db, org, program_id),
      latest: latestRunQuery(db, org, program_id),
    });
    if (!basis[0]) throw new ApiError(404, 'Program not found');
    const run = latest[0];
    const cycles = run ? (run.num_instructions ?? run.total_cycle) : null;
    return c.json({ execution_id: run?.id ?? null, cycles, estimate: estimateOf(basis[0], rates, cycles, c.req.valid('query')) }, 200);
  },
);
