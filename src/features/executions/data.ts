// The statements executions own, scoped to the caller's organization (`org`: its id,
// or SQL for the API key's organization, src/middleware/auth.ts asCaller).
import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { executions } from '../../db/schema.ts';
import type { Org } from '../../lib/pages.ts';

/** The caller's execution by id (no row: 404). */
export const executionQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(executions)
    .where(and(eq(executions.id, id), eq(executions.org_id, org)));
