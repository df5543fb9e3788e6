-- What a finished job keeps in D1 (issue 23 item 5; README "What a finished job keeps
-- in D1"). Hand-written (README "Schema"); applies to a database that already has rows.

-- Delivered webhook deliveries are kept WEBHOOK_DELIVERED_KEEP_DAYS (3), failed ones
-- WEBHOOK_RETENTION_DAYS (30): the sweep's age index splits in two partial ones, one per
-- ended status, so neither sweep steps over the other's rows and pending deliveries (the
-- ones still being sent) are in neither.
DROP INDEX IF EXISTS `webhook_deliveries_age`;
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_delivered_age` ON `webhook_deliveries` (`created_at`) WHERE "webhook_deliveries"."status" = 'delivered';
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_failed_age` ON `webhook_deliveries` (`created_at`) WHERE "webhook_deliveries"."status" = 'failed';
--> statement-breakpoint
-- A webhook attempt is keyed by (delivery_id, attempt), and the message that recorded it
-- recognised by a random integer `claim`, instead of a random text id with an index of
-- its own (about 80 bytes less per attempt: most of what a failing endpoint's deliveries
-- keep). Rebuilt, its rows copied (claim 0: no message is recording them any more).
CREATE TABLE `__new_webhook_attempts` (
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`claim` integer NOT NULL,
	`attempted_at` text NOT NULL,
	`status_code` integer,
	`error` text,
	`latency_ms` integer NOT NULL,
	`response_excerpt` text DEFAULT '' NOT NULL,
	PRIMARY KEY(`delivery_id`, `attempt`)
);
--> statement-breakpoint
INSERT INTO `__new_webhook_attempts` (`delivery_id`, `attempt`, `claim`, `attempted_at`, `status_code`, `error`, `latency_ms`, `response_excerpt`)
SELECT `delivery_id`, `attempt`, 0, `attempted_at`, `status_code`, `error`, `latency_ms`, `response_excerpt` FROM `webhook_attempts`;
--> statement-breakpoint
DROP TABLE `webhook_attempts`;
--> statement-breakpoint
ALTER TABLE `__new_webhook_attempts` RENAME TO `webhook_attempts`;
