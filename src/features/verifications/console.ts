// /console/v1/orgs/{org_id}/verifications: the organization's proof verifications, filtered.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, desc, eq, gte, lte, sql } from 'drizzle-orm';
import { organizations, verifications } from '../../db/schema.ts';
import { cappedCount, orgCounter, pageAnswer, pageQuery } from '../../lib/pages.ts';
import { validationHook } from '../../lib/errors.ts';
import { VerificationRecord, verificationRecord } from './schemas.ts';
import { CONSOLE_SECURITY, consoleErrors, DateParam, dateRange, OrgParams, pageOf, PaginationQuery } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';
import { door } from '../../middleware/door.ts';
import { batchByName } from '../../db/batch.ts';

export const consoleVerificationsApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

consoleVerificationsApi.openapi(
  createRoute({
    method: 'get',
    operationId: 'listOrgVerifications',
    description: "A page of the organization's verifications, newest first, with their results (`processing`, `verified`, `failed`).",
    path: '/orgs/{org_id}/verifications',
    middleware: [door.console('records.read')],
    tags: ['console records'],
    security: CONSOLE_SECURITY,
    summary: 'The organization’s verifications, newest first',
    request: {
      params: OrgParams,
      query: PaginationQuery.extend({
        program_id: z.uuid().optional(),
        result: z.enum(['processing', 'verified', 'failed']).optional(),
        from: DateParam.optional(),
        to: DateParam.optional(),
      }),
    },
    responses: {
      200: {
        description: 'A page of verifications',
        content: { 'application/json': { schema: pageOf(VerificationRecord, 'ConsoleVerificationPage') } },
      },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const range = dateRange(q.from, q.to);
    const where = and(
      eq(verifications.org_id, c.get('membership').orgId),
      q.program_id ? eq(verifications.program_id, q.program_id) : undefined,
      q.result ? eq(verifications.result, q.result) : undefined,
      range.from ? gte(verifications.created_at, range.from) : undefined,
      range.to ? lte(verifications.created_at, range.to) : undefined,
    );
    const db = c.get('db');
    const filtered = q.program_id || q.result || range.from || range.to;
    const total = filtered
      ? cappedCount(
          db
            .select({ one: sql`1` })
            .from(verifications)
            .where(where),
        )
      : orgCounter(db, c.get('membership').orgId, sql`${organizations.verification_count}`);
    const rows = db.select().from(verifications).where(where).orderBy(desc(verifications.created_at), desc(verifications.id)).$dynamic();
    return c.json(
      pageAnswer(await batchByName(db, pageQuery(db, rows, total, q.page, q.page_size)), verificationRecord, q.page, q.page_size),
      200,
    );
  },
);
