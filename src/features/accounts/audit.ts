// The audit log of key, member and webhook endpoint changes, one row per change, per
// organization: the insert each change batches with itself, and the log's pages.
import { desc, eq, sql, type SQL } from 'drizzle-orm';
import type { Context } from 'hono';
import { ulid } from 'ulid';
import type { AppEnv } from '../../app-env.ts';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { apiKeys, auditLog } from '../../db/schema.ts';
import { failedWith } from '../../lib/errors.ts';
import { cappedCount, pageAnswer, pageQuery } from '../../lib/pages.ts';
import { keyAuditActor } from '../../middleware/auth.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';

export interface Actor {
  userId: string | null;
  email: string;
  /**
   * The organization as the actor stands in it when the entry is written (a console
   * member: orgOfMember, src/middleware/console-auth.ts): NULL when they no longer do, and
   * then the entry, and the whole batch of the change it records, is refused.
   */
  standing?: SQL<string>;
}

/** The signed-in user as the audit log records them; `standing` (asMember's) guards the change with them. */
export const actorOf = (c: Context<ConsoleEnv>, standing?: SQL<string>): Actor => ({
  userId: c.get('user').id,
  email: c.get('user').email,
  standing,
});

/**
 * Who an audit entry names when it is written from the row of the change it records (an
 * insert from a select, so the entry exists exactly when the change does): a person's id
 * and name, as values or as SQL over the request's API key (keyActor), or a label with no
 * user (the retention sweep, an operator).
 */
export interface NamedActor {
  userId: string | SQL<string | null> | null;
  name: string | SQL<string>;
}

/** The signed-in console user, as a NamedActor. */
export const memberActor = (c: Context<ConsoleEnv>): NamedActor => ({ userId: c.get('user').id, name: c.get('user').email });

/** The request's API key's column, as SQL, for statements batched with its lookup (a revoked key names no one). */
export const keyColumn = (hash: string, column: SQL) =>
  sql<string>`(SELECT ${column} FROM ${apiKeys} WHERE ${apiKeys.key_hash} = ${hash} AND ${apiKeys.revoked_at} IS NULL)`;

/** Who the audit log names for a change made with the request's API key: the person who made the key, the key beside them. */
export const keyActor = (c: Context<AppEnv>): NamedActor => ({
  userId: keyColumn(c.get('apiKeyHash'), sql`${apiKeys.user_id}`),
  name: keyColumn(c.get('apiKeyHash'), keyAuditActor),
});

/** The cron sweep deleting what an organization's retention let go (src/features/retention/sweep.ts). */
export const RETENTION_ACTOR: NamedActor = { userId: null, name: 'retention' };

export type AuditAction =
  | 'api_key.create'
  | 'api_key.revoke'
  | 'invite.create'
  | 'invite.revoke'
  | 'invite.accept'
  | 'member.role_change'
  | 'member.remove'
  | 'webhook.create'
  | 'webhook.update'
  | 'webhook.delete'
  | 'webhook.rotate_secret'
  | 'budget.update'
  | 'org_limits.update'
  | 'retention.update'
  | 'proof.delete'
  | 'execution.delete'
  | 'program.delete'
  | 'verification.delete';

/**
 * The actor, their standing narrowed to while `condition` holds as the entry is written
 * (the member's role is still the one a change was decided on; an invitation is still
 * live): the audited change is written only then, else its batch is refused (auditRefused).
 */
export const actorWhile = (orgId: string, actor: Actor, condition: SQL): Actor => ({
  ...actor,
  standing: sql<string>`(CASE WHEN ${condition} THEN ${actor.standing ?? orgId} END)`,
});

/** Whether a batch was refused by its audit entry's guard (the actor no longer stands, or actorWhile's condition failed). */
export const auditRefused = (err: unknown): boolean => failedWith(err, 'NOT NULL constraint failed: audit_log.org_id');

/**
 * The insert for one audit entry, to batch with the change it records. An actor with a
 * `standing` writes it only while they stand: no audited change without its actor.
 */
export function auditEntry(db: Db, orgId: string, actor: Actor, action: AuditAction, target: string, detail: Record<string, unknown> = {}) {
  return db.insert(auditLog).values({
    id: ulid(),
    org_id: actor.standing ?? orgId,
    actor_user_id: actor.userId,
    actor: actor.email,
    action,
    target,
    detail,
  });
}

/** One page of an organization's audit log, newest first, with its total. */
export async function auditPage(db: Db, orgId: string, page: number, pageSize: number) {
  const where = eq(auditLog.org_id, orgId);
  // An organization's audit log only grows and has no counter: its total is counted up to COUNT_CAP.
  const read = await batchByName(
    db,
    pageQuery(
      db,
      db.select().from(auditLog).where(where).orderBy(desc(auditLog.id)).$dynamic(),
      cappedCount(
        db
          .select({ one: sql`1` })
          .from(auditLog)
          .where(where),
      ),
      page,
      pageSize,
    ),
  );
  return pageAnswer(
    read,
    (r) => ({ id: r.id, created_at: r.created_at, actor: r.actor, action: r.action, target: r.target, detail: r.detail }),
    page,
    pageSize,
  );
}
