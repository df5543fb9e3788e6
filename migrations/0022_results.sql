-- One record of every result, and work per invocation within the platform's limits
-- (issue 28 items 2 and 4; README "Results", "Work per invocation"). Hand-written
-- (README "Schema"); each statement applies to a database that already has rows.

-- Every object an attempt writes for its job's results (src/jobs/results.ts): a PUT of a
-- result, a result sent inline with /complete, a dev proof the Worker sealed. One row per
-- object, inserted before its first byte is written, at a key of its own
-- (`results/{job}/{upload}/{name}.json`) that nothing else ever writes. The completion
-- that accepts some of them names them on the record it finishes (below) and deletes
-- their rows in its own transaction; every other row is garbage the sweep deletes (its
-- object, then the row) once its lease is no longer the job's current one and its
-- object can no longer appear (stored, or past its upload deadline).
CREATE TABLE `result_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`job_id` text NOT NULL,
	`lease_id` text NOT NULL,
	`name` text NOT NULL,
	`started_at` integer NOT NULL,
	`stored_at` integer,
	`size` integer,
	`sha256` text
);
--> statement-breakpoint
-- The completion's read of its lease's results, and a purge's of its job's.
CREATE INDEX `result_uploads_lease` ON `result_uploads` (`lease_id`, `name`);
--> statement-breakpoint
CREATE INDEX `result_uploads_job` ON `result_uploads` (`job_id`);
--> statement-breakpoint
-- What a finished proof serves: {type: {key, sha256}}. Null on proofs finished before
-- this migration: their files are at the fixed keys of src/lib/artifact-keys.ts
-- (proofOutput), which no upload writes any more.
ALTER TABLE `proofs` ADD `proof_objects` text;
--> statement-breakpoint
-- The digest of the baseline a program's `baseline_key` names; null for baselines
-- committed before this migration (at the fixed key programBaseline, written no more).
ALTER TABLE `programs` ADD `baseline_sha256` text;
--> statement-breakpoint
-- A finished log's compaction runs in stages (src/jobs/logs.ts): the stages done so far
-- for the log as it is (an append sets it back to 0).
ALTER TABLE `jobs` ADD `log_compact_step` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- The sweep's items that failed (src/jobs/sweep-items.ts): a log compaction, a purge, a
-- result upload's garbage, an archive object. Retried with a growing delay, then set
-- aside (set_aside_at) so they never starve the rest; `npm run admin -- list-sweep-failures`
-- shows them, `retry-sweep-item` puts one back in line.
CREATE TABLE `sweep_failures` (
	`kind` text NOT NULL,
	`item` text NOT NULL,
	`attempts` integer NOT NULL,
	`last_error` text NOT NULL,
	`failed_at` integer NOT NULL,
	`set_aside_at` integer,
	PRIMARY KEY(`kind`, `item`)
);
--> statement-breakpoint
-- Purges counted their failed attempts on their own row: the count moves here.
INSERT INTO `sweep_failures` (`kind`, `item`, `attempts`, `last_error`, `failed_at`, `set_aside_at`)
SELECT 'purge', `subject_kind` || ':' || `subject_id`, `attempts`, 'failed before migration 0022 (no message kept)', `created_at`, NULL
FROM `purges` WHERE `attempts` > 0;
--> statement-breakpoint
ALTER TABLE `purges` DROP COLUMN `attempts`;
