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
-- one b-tree of (id, object) and no rowid table beside its primary key's index.
CREATE TABLE `archived` (
	`id` text PRIMARY KEY NOT NULL,
	`object_id` integer NOT NULL
) WITHOUT ROWID;
