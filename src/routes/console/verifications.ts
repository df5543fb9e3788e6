// /console/v1/orgs/{org_id}/verifications: the organization's proof verifications, filtered.
import { createRoute, OpenAPIHono, z } from '@hono/zod-openapi';
import { and, count, desc, eq, gte, lte } from 'drizzle-orm';
import { verifications } from '../../db/schema.ts';
import { CONSOLE_SECURITY, consoleErrors, DateParam, dateRange, OrgParams } from '../../lib/console-schemas.ts';
import { validationHook } from '../../lib/errors.ts';
import { VerificationRecord, verificationRecord } from '../../lib/records.ts';
import { PaginationQuery, pageOf, paginate } from '../../lib/schemas.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';

export const consoleVerificationsApi = new OpenAPIHono<ConsoleEnv>({ defaultHook: validationHook });

consoleVerificationsApi.openapi(
  createRoute({
    method: 'get',
    path: '/orgs/{org_id}/verifications',
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
      200: { description: 'A page of verifications', content: { 'application/json': { schema: pageOf(VerificationRecord, 'ConsoleVerificationPage') } } },
      ...consoleErrors(404, 422),
    },
  }),
  async (c) => {
    const q = c.req.valid('query');
    const range = dateRange(q.from, q.to);
    const where = and(
      eq(verifications.org_id, c.var.membership.orgId),
      q.program_id ? eq(verifications.program_id, q.program_id) : undefined,
      q.result ? eq(verifications.result, q.result) : undefined,
      range.from ? gte(verifications.created_at, range.from) : undefined,
      range.to ? lte(verifications.created_at, range.to) : undefined,
    );
    const db = c.var.db;
    const [rows, [{ total }]] = await Promise.all([
      db.select().from(verifications).where(where).orderBy(desc(verifications.created_at), desc(verifications.id)).limit(q.page_size).offset((q.page - 1) * q.page_size),
      db.select({ total: count() }).from(verifications).where(where) as Promise<{ total: number }[]>,
    ]);
    return c.json(paginate(rows.map(verificationRecord), total, q.page, q.page_size), 200);
  },
);
