-- Their data, their call (issue 23 item 5; README "Deleting records and retention").
-- Hand-written (README "Schema"); applies to a database that already has rows: every
-- column added is nullable, so every existing record reads as not deleted and every
-- organization as keeping its files forever.

-- A deleted record stays as a tombstone: its billing figures, and when it was deleted.
ALTER TABLE `programs` ADD `deleted_at` text;
--> statement-breakpoint
ALTER TABLE `proofs` ADD `deleted_at` text;
--> statement-breakpoint
ALTER TABLE `executions` ADD `deleted_at` text;
--> statement-breakpoint
-- How long an organization keeps its proofs' and executions' files (inputs, logs,
-- proofs) after they finish, in days; null: for good.
ALTER TABLE `organizations` ADD `retention_days` integer;
--> statement-breakpoint
-- The R2 objects of deleted records, still to delete: written in the batch that
-- tombstones the record, deleted by src/features/retention/purge.ts once its objects
-- are gone (right after the request, else by the cron sweep).
CREATE TABLE `purges` (
	`subject_kind` text NOT NULL,
	`subject_id` text NOT NULL,
	`org_id` text NOT NULL,
	`keys` text NOT NULL,
	`log_job_id` text,
	`created_at` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`subject_kind`, `subject_id`)
);
--> statement-breakpoint
CREATE INDEX `purges_age` ON `purges` (`created_at`);
--> statement-breakpoint
-- The retention sweep's seeks: the organizations that set a retention, and per
-- organization its finished records not yet deleted, oldest first. Partial, so the
-- deleted ones (most of an old table) cost the sweep nothing.
CREATE INDEX `organizations_retention` ON `organizations` (`id`) WHERE "organizations"."retention_days" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `proofs_retention` ON `proofs` (`org_id`,`terminated_at`) WHERE "proofs"."deleted_at" IS NULL AND "proofs"."terminated_at" IS NOT NULL;
--> statement-breakpoint
CREATE INDEX `executions_retention` ON `executions` (`org_id`,`terminated_at`) WHERE "executions"."deleted_at" IS NULL AND "executions"."terminated_at" IS NOT NULL;
--> statement-breakpoint
-- A deleted program's ELF and VMEXE are gone: nothing may be submitted against it. The
-- submission's read refuses it (409); these close the race of a submission whose read
-- came before the deletion and whose insert after.
CREATE TRIGGER `proofs_program_deleted` BEFORE INSERT ON `proofs`
WHEN (SELECT `deleted_at` FROM `programs` WHERE `id` = NEW.`program_id`) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'retention: the program was deleted'); END;
--> statement-breakpoint
CREATE TRIGGER `executions_program_deleted` BEFORE INSERT ON `executions`
WHEN (SELECT `deleted_at` FROM `programs` WHERE `id` = NEW.`program_id`) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'retention: the program was deleted'); END;
--> statement-breakpoint
-- What a finished job keeps in D1 (README "How much a finished job keeps"): its ended
-- leases are deleted by the sweep once no retried callback can need them, through this
-- index (only ended leases, and only until they go, are in it).
CREATE INDEX `leases_ended` ON `leases` (`ended_at`) WHERE "leases"."ended_at" IS NOT NULL;
