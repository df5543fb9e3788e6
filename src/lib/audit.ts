// The audit log of key, member and webhook endpoint changes, one row per change, per organization.
import { ulid } from 'ulid';
import type { Db } from '../db/client.ts';
import { auditLog } from '../db/schema.ts';

export interface Actor {
  userId: string | null;
  email: string;
}

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
  | 'budget.update';

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
