// The configs' statements: a config by id (configs are service-wide, not an
// organization's). Their key files' statements are ./keys.ts.
import { eq } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { configs } from '../../db/schema.ts';

/** A config by id. */
export const configQuery = (db: Db, id: string) => db.select().from(configs).where(eq(configs.id, id));
