// The statements proofs own. Each is scoped to the caller's organization (`org`: its
// id, or SQL for the API key's organization, src/middleware/auth.ts asCaller): another
// organization's proof is found exactly as much as one that does not exist (404).
import { and, eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { proofs } from '../../db/schema.ts';
import { one, type Org } from '../../lib/pages.ts';

/** The caller's proof by id (no row: 404). */
export const proofQuery = (db: Db, org: Org, id: string) =>
  db
    .select()
    .from(proofs)
    .where(and(eq(proofs.id, id), eq(proofs.org_id, org)));

/** The organization's proof, or 404: for routes whose caller is checked already (the console's), the lookup runs alone. */
export async function findProof(db: Db, org: Org, id: string) {
  return one(await proofQuery(db, org, id), 'Proof');
}
