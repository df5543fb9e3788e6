-- Compacted job logs: a finished job's log becomes one R2 object (src/jobs/logs.ts
-- compactJobLog). Hand-written (README "Schema"); applies to a database that already has rows.

-- Where a log is read from: its chunks (default: every log that exists now), its
-- compacted object, or its chunks for good.
ALTER TABLE `jobs` ADD `log_store` text DEFAULT 'chunks' NOT NULL;
--> statement-breakpoint
-- A finished job with an empty log has nothing to compact.
UPDATE `jobs` SET `log_store` = 'clean' WHERE `status` = 'done' AND `log_bytes` = 0;
--> statement-breakpoint
-- The sweep's pending compactions (finished jobs that already have logs are among them:
-- it compacts them in bounded batches).
CREATE INDEX `jobs_log_pending` ON `jobs` (`id`) WHERE "jobs"."status" = 'done' AND "jobs"."log_store" IN ('chunks', 'compacted');
