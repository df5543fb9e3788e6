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
