// The audit log of key, member and webhook endpoint changes, one row per change, per
// organization: the insert each change batches with itself, and the log's pages.
import { desc, eq, sql } from 'drizzle-orm';
import type { Context } from 'hono';
import { ulid } from 'ulid';
import { batchByName } from '../../db/batch.ts';
import type { Db } from '../../db/client.ts';
import { auditLog } from '../../db/schema.ts';
import { cappedCount, pageAnswer, pageQuery } from '../../lib/pages.ts';
import type { ConsoleEnv } from '../../middleware/console-auth.ts';

export interface Actor {
  userId: string | null;
  email: string;
}

/** The signed-in user as the audit log records them. */
export const actorOf = (c: Context<ConsoleEnv>): Actor => ({ userId: c.var.user.id, email: c.var.user.email });

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
  | 'retention.update';

/** The insert for one audit entry, to batch with the change it records. */
export function auditEntry(db: Db, orgId: string, actor: Actor, action: AuditAction, target: string, detail: Record<string, unknown> = {}) {
  return db.insert(auditLog).values({
    id: ulid(),
    org_id: orgId,
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
