-- Invariants held by the database itself, whatever the concurrency (issue 20).
--
-- An organization always keeps an owner. A statement that changes an owner's role, or
-- removes an owner, is aborted (its whole batch rolled back) when no other owner of that
-- organization would remain. The check runs inside the writing statement, so two owners
-- demoting or removing each other at the same moment cannot both succeed: D1 runs one
-- statement at a time, and the second one sees the first's change. The routes map the
-- message (LAST_OWNER_REFUSAL in src/db/schema.ts) to 409; an operator's statement fails
-- with it. An organization that has no owner already (possible before this migration)
-- is left as it is: only changes that remove the last owner are refused. The last owner
-- goes with the organization: once its row is deleted (foreign keys deferred to the end of
-- that transaction, PRAGMA defer_foreign_keys), its memberships may be deleted too.
CREATE TRIGGER `memberships_keep_owner_on_role_change`
BEFORE UPDATE OF `role`, `org_id` ON `memberships`
FOR EACH ROW
WHEN OLD.`role` = 'owner' AND (NEW.`role` <> 'owner' OR NEW.`org_id` <> OLD.`org_id`)
  AND NOT EXISTS (SELECT 1 FROM `memberships` WHERE `org_id` = OLD.`org_id` AND `role` = 'owner' AND `user_id` <> OLD.`user_id`)
BEGIN
  SELECT RAISE(ABORT, 'memberships: an organization keeps at least one owner');
END;
--> statement-breakpoint
CREATE TRIGGER `memberships_keep_owner_on_delete`
BEFORE DELETE ON `memberships`
FOR EACH ROW
WHEN OLD.`role` = 'owner'
  AND EXISTS (SELECT 1 FROM `organizations` WHERE `id` = OLD.`org_id`)
  AND NOT EXISTS (SELECT 1 FROM `memberships` WHERE `org_id` = OLD.`org_id` AND `role` = 'owner' AND `user_id` <> OLD.`user_id`)
BEGIN
  SELECT RAISE(ABORT, 'memberships: an organization keeps at least one owner');
END;
