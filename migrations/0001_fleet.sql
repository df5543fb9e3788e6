CREATE TABLE `agent_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`token_hash` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`revoked_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `agent_tokens_hash` ON `agent_tokens` (`token_hash`);--> statement-breakpoint
CREATE TABLE `agents` (
	`id` text PRIMARY KEY NOT NULL,
	`token_id` text NOT NULL,
	`name` text NOT NULL,
	`machine_type` text NOT NULL,
	`gpus` integer NOT NULL,
	`engines` text NOT NULL,
	`configs` text NOT NULL,
	`last_seen_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `emulated_queue_messages` (
	`id` text PRIMARY KEY NOT NULL,
	`body` text NOT NULL,
	`content_type` text NOT NULL,
	`timestamp_ms` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`visible_at` integer NOT NULL,
	`lease_id` text,
	`dead_lettered_at` integer
);
--> statement-breakpoint
CREATE INDEX `emulated_queue_visible` ON `emulated_queue_messages` (`visible_at`);--> statement-breakpoint
CREATE TABLE `leases` (
	`id` text PRIMARY KEY NOT NULL,
	`job_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`agent_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`gpus` integer NOT NULL,
	`machine_type` text NOT NULL,
	`claimed_at` integer NOT NULL,
	`ended_at` integer,
	`outcome` text,
	`response` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `leases_token` ON `leases` (`token_hash`);--> statement-breakpoint
CREATE INDEX `leases_job` ON `leases` (`job_id`);--> statement-breakpoint
ALTER TABLE `jobs` ADD `retries` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `log_seq` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `jobs` ADD `log_bytes` integer DEFAULT 0 NOT NULL;