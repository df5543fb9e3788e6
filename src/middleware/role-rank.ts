// A role's rank in SQL, for the statements that check a role where they write: an API
// key's rights (./auth.ts) and a console member's standing (./console-auth.ts). The ranks
// are the permissions table's (src/auth/permissions.ts), which stays free of SQL so the
// console's browser client can bundle it.
import { sql, type SQL } from 'drizzle-orm';
import { rankOf, ROLE_ORDER } from '../auth/permissions.ts';

/** A role's rank (src/auth/permissions.ts rankOf) in SQL; null for no role. */
export const rankSql = (role: SQL): SQL<number | null> =>
  sql<number | null>`(CASE ${role} ${sql.join(
    ROLE_ORDER.map((r) => sql`WHEN ${r} THEN ${rankOf(r)}`),
    sql` `,
  )} END)`;
