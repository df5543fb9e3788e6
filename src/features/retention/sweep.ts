// Retention (docs/callers.md "Deleting records"): an organization that sets
// `retention_days` keeps its proofs', executions' and verifications' files (inputs, logs,
// proofs, uploaded proofs) that many days after they finish; the cron sweep then deletes
// them exactly as a caller's DELETE would, every copy (src/features/retention/copies.ts:
// a tombstone that keeps the billing figures and says `retention` deleted it, an audit
// entry, a purge row, the objects after).
//
// Bounded work per run: at most RETENTION_SWEEP_BATCH proofs and as many executions and verifications are
// tombstoned (one D1 batch), then purged in the same run (a list and a bulk delete each),
// while the run's budget lasts (src/jobs/invocations.ts cron.parts.retention), and
// PURGE_SWEEP_BATCH older pending purges finished within it too. A backlog (a retention just
// lowered) drains over the following runs, oldest first within each organization. The
// candidates are found by index seeks only: the organizations with a retention
// (organizations_retention, in turn: the least recently served first) and, per organization, its finished undeleted records in
// order of their end (proofs_retention, executions_retention, partial: deleted records
// are not in them), so a run's cost follows the organizations that set a retention and
// the rows it takes, not the size of the tables.
//
// The same run deletes what only a running job needed once it cannot be needed again:
// ended leases past LEASE_KEEP_MS (the largest rows a finished job kept: a token hash,
// its artifacts map, the callback's answer), LEASE_SWEEP_BATCH per run.
import { and, asc, eq, inArray, isNotNull, isNull, lt, ne, sql } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { batchByName, type Steps } from '../../db/batch.ts';
import { archived, archiveObjects, executions, jobs, leases, organizations, proofs, verifications } from '../../db/schema.ts';
import { archiveStubColumns, deleteArchived } from './archive.ts';
import { auditEntry, RETENTION_ACTOR, type Actor } from '../accounts/audit.ts';
import { deleteExecutionStatements, deleteProofStatements, deleteVerificationStatements } from './data.ts';
import { PURGE_CALLS, PURGE_SETTLE_MS, PURGE_SWEEP_BATCH, purgeSubjectsWithin, sweepPurges } from './purge.ts';
import { meteredPart, type Metered } from '../../lib/metered.ts';

/**
 * Records of each kind (proofs, executions, verifications) the sweep deletes per run, at
 * most: each deletion is six statements of the run's one batch (copies.ts: its audit
 * entry, purge row, log, deliveries, tombstone, read), 540 at most, well under D1's
 * 1,000 queries per invocation with the rest of the run.
 */
export const RETENTION_SWEEP_BATCH = 30;
/** The most days a retention may be set to (ten years); past it, keep for good (null). */
export const MAX_RETENTION_DAYS = 3650;

/** `now` less the organization's retention, as an ISO timestamp in SQL (terminated_at's form). */
const cutoff = (now: number) =>
  sql`strftime('%Y-%m-%dT%H:%M:%fZ', ${new Date(now).toISOString()}, '-' || ${organizations.retention_days} || ' days')`;

/**
 * Up to `limit` finished, undeleted records of `table` past their organization's
 * retention. A CROSS JOIN, which SQLite never reorders: the organizations with a
 * retention drive the loop, each one seeking its own range of the records' index (left
 * to itself, the planner would rather scan that whole index: every live record). The
 * organizations come in turn, the one served least recently first (organizations_retention
 * is in that order, so no sort): one organization's backlog (a retention just lowered,
 * or more records ending per minute than a run takes) fills a run, and the next run
 * starts with the others, whose files are never kept past their retention for its sake.
 */
export function pastRetention(db: Db, table: typeof proofs | typeof executions, now: number, limit: number) {
  return db
    .select({ id: table.id, org_id: table.org_id })
    .from(organizations)
    .crossJoin(table)
    .where(
      and(
        isNotNull(organizations.retention_days),
        eq(table.org_id, organizations.id),
        isNull(table.deleted_at),
        isNotNull(table.terminated_at),
        lt(table.terminated_at, cutoff(now)),
      ),
    )
    .orderBy(asc(organizations.retention_swept_at), asc(organizations.id))
    .limit(limit);
}

/**
 * Up to `limit` finished, undeleted verifications past their organization's retention
 * (by when they were made: a verification ends within minutes), as pastRetention finds
 * proofs, through verifications_retention.
 */
export function verificationsPastRetention(db: Db, now: number, limit: number) {
  return db
    .select({ id: verifications.id, org_id: verifications.org_id })
    .from(organizations)
    .crossJoin(verifications)
    .where(
      and(
        isNotNull(organizations.retention_days),
        eq(verifications.org_id, organizations.id),
        isNull(verifications.deleted_at),
        ne(verifications.result, 'processing'),
        lt(verifications.created_at, cutoff(now)),
      ),
    )
    .orderBy(asc(organizations.retention_swept_at), asc(organizations.id))
    .limit(limit);
}

/**
 * Up to `limit` undeleted archived records (src/features/retention/archive.ts) of
 * organizations with a retention, whose archive day (their creation) is more than a day
 * before the retention's cutoff (they ended after they began: a day's margin), as stubs
 * deleteArchived() takes. Only a retention set after they were archived leaves any: the
 * archive keeps an organization's live records in D1 while its retention has their files
 * to delete. Organizations in turn, then their objects by day (archive_objects_org_day),
 * then each object's undeleted stubs (archived_live).
 */
export function archivedPastRetention(db: Db, now: number, limit: number) {
  return db
    .select({ id: archived.id, ...archiveStubColumns })
    .from(organizations)
    .crossJoin(archiveObjects)
    .innerJoin(archived, eq(archived.object_id, archiveObjects.id))
    .where(
      and(
        isNotNull(organizations.retention_days),
        eq(archiveObjects.org_id, organizations.id),
        lt(archiveObjects.day, sql`date(${cutoff(now)}, '-1 day')`),
        isNull(archived.deleted_at),
      ),
    )
    .orderBy(asc(organizations.retention_swept_at), asc(organizations.id))
    .limit(limit);
}

/**
 * How long an ended lease is kept: its row answers a retry of the callback that ended it
 * (leases.response) and nothing else (a running job's usage reads its live lease). The
 * agent retries a callback 8 times, at most 15 s apart, each at most 60 s
 * (prover-agent/src/agent/http.ts DEFAULT_RETRY): ten minutes at worst; an hour is ample.
 */
export const LEASE_KEEP_MS = 60 * 60_000;
/** Ended leases deleted per run, at most. */
export const LEASE_SWEEP_BATCH = 1000;

/** Deletes up to LEASE_SWEEP_BATCH leases that ended more than LEASE_KEEP_MS ago (leases_ended, oldest first). */
export async function deleteEndedLeases(db: Db, now = Date.now(), keepMs = LEASE_KEEP_MS): Promise<number> {
  const old = db
    .select({ id: leases.id })
    .from(leases)
    .where(and(isNotNull(leases.ended_at), lt(leases.ended_at, now - keepMs)))
    .orderBy(asc(leases.ended_at))
    .limit(LEASE_SWEEP_BATCH);
  // The finished job forgets its last lease too: jobs.lease_id (and its unique index
  // entry) is only ever read while the job holds the lease.
  const { gone } = await batchByName(db, {
    unlink: db
      .update(jobs)
      .set({ lease_id: null })
      .where(and(inArray(jobs.lease_id, old), eq(jobs.status, 'done'))),
    gone: db.delete(leases).where(inArray(leases.id, old)).returning({ id: leases.id }),
  });
  return gone.length;
}

/** LEASE_KEEP_MS, or the LEASE_KEEP_SECONDS var (at least a minute). */
export const leaseKeepMs = (env: { LEASE_KEEP_SECONDS?: string }) => {
  const s = Number(env.LEASE_KEEP_SECONDS);
  return Number.isFinite(s) && s >= 60 ? s * 1000 : LEASE_KEEP_MS;
};

/** The calls of deleting one archived record: its archive object's read and one D1 batch. */
const ARCHIVED_DELETE_CALLS = 2;

export async function sweepRetention(
  m: Metered,
  now = Date.now(),
  limit = RETENTION_SWEEP_BATCH,
  keepMs = LEASE_KEEP_MS,
  settleMs = PURGE_SETTLE_MS,
): Promise<{ retentionDeleted: number; purged: number; leasesDeleted: number }> {
  const { db, bucket, budget } = m;
  // The ended leases' batch first: one call, whatever the rest costs.
  const leasesDeleted = budget.fits(1) ? await deleteEndedLeases(db, now, keepMs) : 0;
  if (!budget.fits(2)) return { retentionDeleted: 0, purged: 0, leasesDeleted };
  const { proofRows, executionRows, verificationRows } = await batchByName(db, {
    proofRows: pastRetention(db, proofs, now, limit),
    executionRows: pastRetention(db, executions, now, limit),
    verificationRows: verificationsPastRetention(db, now, limit),
  });
  // The same conditional statements as a caller's DELETE (every copy: copies.ts), by the
  // retention (the audit log and the tombstones say so): a record that changed in
  // between (deleted by its owner meanwhile) is left as it is. Each deletion's statements
  // in their order, one deletion after another, all in one batch.
  // The organizations served go to the back of the turn (pastRetention), in the same batch.
  const served = [...new Set([...proofRows, ...executionRows, ...verificationRows].map((r) => r.org_id))];
  const each = <S extends Steps>(rows: { id: string; org_id: string }[], statements: (orgId: string, id: string) => S) =>
    Object.fromEntries(rows.map((r) => [r.id, statements(r.org_id, r.id)])) as Record<string, S>;
  const done = await batchByName(db, {
    proofs: each(proofRows, (org, id) => deleteProofStatements(db, org, id, RETENTION_ACTOR, now)),
    executions: each(executionRows, (org, id) => deleteExecutionStatements(db, org, id, RETENTION_ACTOR, now)),
    verifications: each(verificationRows, (org, id) => deleteVerificationStatements(db, org, id, RETENTION_ACTOR, now)),
    turn: served.length ? db.update(organizations).set({ retention_swept_at: now }).where(inArray(organizations.id, served)) : undefined,
  });
  const deleted = (results: Record<string, { tombstone: { id: string }[] }>) =>
    Object.values(results).flatMap((r) => r.tombstone.map((t) => t.id));
  const proofIds = deleted(done.proofs);
  const executionIds = deleted(done.executions);
  const verificationIds = deleted(done.verifications);
  // Archived records as DELETE deletes them (one R2 read and one batch each), bounded alike
  // and while the budget holds them.
  if (budget.fits(1 + ARCHIVED_DELETE_CALLS))
    for (const stub of await archivedPastRetention(db, now, limit)) {
      if (!budget.fits(ARCHIVED_DELETE_CALLS)) break;
      const gone = await deleteArchived(db, bucket, stub, stub.id, RETENTION_ACTOR, now);
      if (gone?.deleted) (stub.kind === 'proof' ? proofIds : executionIds).push(stub.id);
    }
  // Their first pass now, as far as the budget goes (the sweep takes the rest a run later,
  // with their second pass: purge.ts), leaving room for the older ones' second pass.
  const older = Math.min(budget.left / 2, 1 + PURGE_SWEEP_BATCH * PURGE_CALLS);
  const firsts = meteredPart(m, Math.max(0, budget.left - older), 'first purges');
  await purgeSubjectsWithin(firsts, 'proof', proofIds, settleMs);
  await purgeSubjectsWithin(firsts, 'execution', executionIds, settleMs);
  await purgeSubjectsWithin(firsts, 'verification', verificationIds, settleMs);
  const purged = await sweepPurges(m, now, settleMs);
  return { retentionDeleted: proofIds.length + executionIds.length + verificationIds.length, purged, leasesDeleted };
}

/**
 * Sets an organization's retention (days, or null: for good) and audits it, in one
 * batch: shortening it deletes files every member reads (at the next sweep, for good),
 * so who did it, and to what, is kept (the audit log, as budgets and keys are).
 * False when there is no such organization.
 */
export async function setRetention(db: Db, orgId: string, days: number | null, actor: Actor): Promise<boolean> {
  const { set } = await batchByName(db, {
    set: db.update(organizations).set({ retention_days: days }).where(eq(organizations.id, orgId)).returning({ id: organizations.id }),
    audit: auditEntry(db, orgId, actor, 'retention.update', orgId, { retention_days: days }),
  });
  return set.length === 1;
}
