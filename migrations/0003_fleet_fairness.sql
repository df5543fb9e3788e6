ALTER TABLE `jobs` ADD `cancel_requested_at` integer;--> statement-breakpoint
CREATE INDEX `jobs_org` ON `jobs` (`org_id`,`status`);--> statement-breakpoint
ALTER TABLE `organizations` ADD `max_active_jobs` integer;--> statement-breakpoint
ALTER TABLE `organizations` ADD `max_gpus` integer;--> statement-breakpoint
ALTER TABLE `organizations` ADD `share_weight` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `last_claimed_at` integer;