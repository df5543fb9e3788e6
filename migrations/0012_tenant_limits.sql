-- Bounded tenants (issue 21): capped and indexed job logs, counted event streams.
-- Hand-written (README "Schema"); applies to a database that already has rows.

-- A job's log that reached its cap ends with the service's truncation marker.
ALTER TABLE `jobs` ADD `log_truncated` integer DEFAULT false NOT NULL;
--> statement-breakpoint
-- One row per log chunk, written with the update that moves jobs.log_seq. Logs written
-- before this migration have no rows: their readers fall back to listing R2
-- (src/jobs/logs.ts legacyLogFrom), as before.
CREATE TABLE `job_log_chunks` (
	`job_id` text NOT NULL,
	`seq` integer NOT NULL,
	`offset` integer NOT NULL,
	`bytes` integer NOT NULL,
	`source` text NOT NULL,
	PRIMARY KEY(`job_id`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `job_log_chunks_offset` ON `job_log_chunks` (`job_id`,`offset`);
--> statement-breakpoint
-- Open event streams, counted per API key and per organization when one opens.
CREATE TABLE `event_streams` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`expires_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `event_streams_key` ON `event_streams` (`key_hash`,`expires_at`);
--> statement-breakpoint
CREATE INDEX `event_streams_org` ON `event_streams` (`org_id`,`expires_at`);
