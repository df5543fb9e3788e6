-- The archive (issue 23 item 5; README "What a finished job keeps in D1, and past one
-- database"; src/features/retention/archive.ts). Hand-written (README "Schema");
-- applies to a database that already has rows: it only adds tables and an index.

-- One archive object (R2, NDJSON): its records' ids while it is being written, and
-- when its records' rows were deleted.
CREATE TABLE `archive_objects` (
	`id` integer PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`kind` text NOT NULL,
	`day` text NOT NULL,
	`pending_ids` text,
	`created_at` integer NOT NULL,
	`written_at` integer
);
--> statement-breakpoint
-- The objects still to write (a crash, a record changed while written): only they are in it.
CREATE INDEX `archive_objects_pending` ON `archive_objects` (`id`) WHERE "archive_objects"."written_at" IS NULL;
--> statement-breakpoint
-- An archived record's stub, read in the request's batch by id: WITHOUT ROWID, so it is
-- one b-tree of (id, object) and no rowid table beside its primary key's index. A
-- deleted archived record's tombstone is its stub's `deleted_at`.
CREATE TABLE `archived` (
	`id` text PRIMARY KEY NOT NULL,
	`object_id` integer NOT NULL,
	`deleted_at` text
) WITHOUT ROWID;
--> statement-breakpoint
-- What a finished record keeps (README "What a finished job keeps in D1"): a proof's and
-- an execution's objects are at their own keys (src/lib/artifact-keys.ts), so the rows
-- stop storing them (about 120 bytes a proof): the input's key goes, and a proof's map
-- of file keys becomes the list of its file kinds. Every existing row's keys are the
-- layout's (the only keys the service ever wrote), so the list is the map's keys.
-- SQLite's DROP COLUMN rewrites the rows (no index, trigger or view names these columns).
ALTER TABLE `proofs` ADD `proof_files` text DEFAULT '[]' NOT NULL;
--> statement-breakpoint
UPDATE `proofs` SET `proof_files` = (SELECT json_group_array(`key`) FROM json_each(`proofs`.`proof_keys`)) WHERE `proof_keys` <> '{}';
--> statement-breakpoint
ALTER TABLE `proofs` DROP COLUMN `proof_keys`;
--> statement-breakpoint
ALTER TABLE `proofs` DROP COLUMN `input_key`;
--> statement-breakpoint
ALTER TABLE `executions` DROP COLUMN `input_key`;
