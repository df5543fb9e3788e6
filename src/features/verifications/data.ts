// The statements verifications own, scoped to the caller's organization (`org`: its id,
// or SQL for the API key's organization, src/middleware/auth.ts asCaller).
import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { verifications } from '../../db/schema.ts';
import type { Org } from '../../lib/pages.ts';

/** The caller's verification by id (no row: 404). */
export const verificationQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(verifications)
    .where(and(eq(verifications.id, id), eq(verifications.org_id, org)));
