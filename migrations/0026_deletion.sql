-- Deletion reaches every copy (issue 29 item 4; README "Deleting records and retention").
-- Hand-written (README "Schema"); applies to a database that already has rows: every
-- column added is nullable (existing tombstones read as deleted by someone not recorded,
-- existing verifications as not deleted), and the indexes are new.

-- A tombstone says who deleted it (the audit log says the rest): a console user's
-- email, an API key's owner with the key, or the retention sweep.
ALTER TABLE `programs` ADD `deleted_by` text;
--> statement-breakpoint
ALTER TABLE `proofs` ADD `deleted_by` text;
--> statement-breakpoint
ALTER TABLE `executions` ADD `deleted_by` text;
--> statement-breakpoint
ALTER TABLE `archived` ADD `deleted_by` text;
--> statement-breakpoint
-- Verifications are deleted as proofs are: their uploaded proof goes, the row stays as a tombstone.
ALTER TABLE `verifications` ADD `deleted_at` text;
--> statement-breakpoint
ALTER TABLE `verifications` ADD `deleted_by` text;
--> statement-breakpoint
-- The archive object whose line of the deleted record the purge rewrites as its tombstone.
ALTER TABLE `purges` ADD `archive_key` text;
--> statement-breakpoint
-- The retention sweep's finished, undeleted verifications per organization, oldest first.
CREATE INDEX `verifications_retention` ON `verifications` (`org_id`,`created_at`) WHERE "verifications"."deleted_at" IS NULL AND "verifications"."result" <> 'processing';
--> statement-breakpoint
-- A program's deletion takes its verifications with it: found by this index, not a scan.
CREATE INDEX `verifications_program` ON `verifications` (`program_id`) WHERE "verifications"."program_id" IS NOT NULL;
--> statement-breakpoint
-- A record's deletion ends its stored webhook deliveries (their payloads are copies of it).
CREATE INDEX `webhook_deliveries_subject` ON `webhook_deliveries` (`subject_id`);
--> statement-breakpoint
-- The retention sweep reaches records already in the archive (a retention set after they
-- were archived): per organization, its archive objects by day, then their undeleted stubs.
CREATE INDEX `archive_objects_org_day` ON `archive_objects` (`org_id`,`day`);
--> statement-breakpoint
CREATE INDEX `archived_live` ON `archived` (`object_id`) WHERE "archived"."deleted_at" IS NULL;
