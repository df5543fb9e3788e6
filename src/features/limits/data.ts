// The organization's limits as the console shows and sets them (docs/callers.md "Job limits",
// "Quotas and fair share"): its jobs' default limits (owners and admins set them, or the
// operator with `npm run admin -- set-org-limits`), its quotas (the operator's) and the
// counters they are read against. One row read; the update, its audit entry and the
// read-back in one batch.
import { eq, sql } from 'drizzle-orm';
import type { z } from '@hono/zod-openapi';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { organizations } from '../../db/schema.ts';
import type { QuotaDefaults } from '../../jobs/quotas.ts';
import { notFound } from '../../lib/errors.ts';
import { auditEntry, type Actor } from '../accounts/audit.ts';
import type { OrgLimitsBody, OrgLimitsRecord } from './schemas.ts';

const limitsQuery = (db: Db, orgId: string, quotas: QuotaDefaults) =>
  db
    .select({
      default_cycle_limit: organizations.default_cycle_limit,
      default_cost_limit: organizations.default_cost_limit,
      default_deadline_seconds: organizations.default_deadline_seconds,
      max_active_jobs: sql<number>`coalesce(${organizations.max_active_jobs}, ${quotas.maxActiveJobs})`,
      max_gpus: sql<number>`coalesce(${organizations.max_gpus}, ${quotas.maxGpus})`,
      active_jobs: organizations.active_jobs,
      held_gpus: organizations.held_gpus,
      running_jobs: organizations.running_jobs,
      running_gpus: organizations.running_gpus,
    })
    .from(organizations)
    .where(eq(organizations.id, orgId));

const one = ([row]: z.infer<typeof OrgLimitsRecord>[]) => {
  if (!row) throw notFound('Organization');
  return row;
};

export async function readOrgLimits(db: Db, orgId: string, quotas: QuotaDefaults) {
  return one(await limitsQuery(db, orgId, quotas));
}

/** Sets all three default limits (absent: none), audited, and reads them back, in one batch. */
export async function setOrgLimits(db: Db, orgId: string, body: z.infer<typeof OrgLimitsBody>, actor: Actor, quotas: QuotaDefaults) {
  const set = {
    default_cycle_limit: body.default_cycle_limit ?? null,
    default_cost_limit: body.default_cost_limit ?? null,
    default_deadline_seconds: body.default_deadline_seconds ?? null,
  };
  const { limits } = await batchByName(db, {
    set: db.update(organizations).set(set).where(eq(organizations.id, orgId)),
    audit: auditEntry(db, orgId, actor, 'org_limits.update', orgId, set),
    limits: limitsQuery(db, orgId, quotas),
  });
  return one(limits);
}
