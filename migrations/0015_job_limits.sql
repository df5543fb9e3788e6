-- Job limits and a queue that explains itself (README "Job limits", "Why a job waits").
-- Hand-written (README "Schema"); applies to a database that already has rows: every
-- column added is nullable, so existing jobs have no limits and existing lanes no reason.

-- A job's limits (src/jobs/limits.ts): what it may run (cycles), cost (micro-USD, the
-- unit of the record's `cost`) and until when (epoch ms: its submission plus the deadline
-- in seconds, queue time included). Null: no limit. Kept on the jobs row: only a queued
-- or running job needs them, the record shows them from there.
ALTER TABLE `jobs` ADD `cycle_limit` integer;
--> statement-breakpoint
ALTER TABLE `jobs` ADD `cost_limit` integer;
--> statement-breakpoint
ALTER TABLE `jobs` ADD `deadline_at` integer;
--> statement-breakpoint
-- Why the service stopped a running job (a limit it reached): set with cancel_requested,
-- so every way its lease ends ends it Failed with this message instead of Canceled.
ALTER TABLE `jobs` ADD `stop_reason` text;
--> statement-breakpoint
-- The sweep's queued jobs past their deadline: a seek, never the backlog.
CREATE INDEX `jobs_deadline` ON `jobs` (`deadline_at`) WHERE "jobs"."status" = 'queued' AND "jobs"."deadline_at" IS NOT NULL;
--> statement-breakpoint
-- An organization's defaults for its jobs' limits (a request's own limit wins); null: none.
ALTER TABLE `organizations` ADD `default_cycle_limit` integer;
--> statement-breakpoint
ALTER TABLE `organizations` ADD `default_cost_limit` integer;
--> statement-breakpoint
ALTER TABLE `organizations` ADD `default_deadline_seconds` integer;
--> statement-breakpoint
-- Why a lane waits, as a code (src/jobs/waiting.ts WAITING_REASONS), next to the sweep's
-- sentence (waiting_reason); since when no online agent could take it (epoch ms); and up
-- to which queued_at its jobs were announced unservable (the job.unservable event, once per job).
ALTER TABLE `queue_lanes` ADD `waiting_code` text;
--> statement-breakpoint
ALTER TABLE `queue_lanes` ADD `unservable_since` integer;
--> statement-breakpoint
ALTER TABLE `queue_lanes` ADD `unservable_announced_to` integer;
