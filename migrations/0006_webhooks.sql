CREATE TABLE `webhook_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`attempted_at` text NOT NULL,
	`status_code` integer,
	`error` text,
	`latency_ms` integer NOT NULL,
	`response_excerpt` text DEFAULT '' NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_attempts_delivery` ON `webhook_attempts` (`delivery_id`,`attempt`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`event_type` text NOT NULL,
	`subject_kind` text NOT NULL,
	`subject_id` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`payload` text,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`round_start` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer NOT NULL,
	`last_error` text
);
--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint` ON `webhook_deliveries` (`endpoint_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_due` ON `webhook_deliveries` (`next_attempt_at`) WHERE "webhook_deliveries"."status" = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_unsent` ON `webhook_deliveries` (`subject_id`) WHERE "webhook_deliveries"."attempts" = 0 AND "webhook_deliveries"."status" = 'pending';--> statement-breakpoint
CREATE INDEX `webhook_deliveries_age` ON `webhook_deliveries` (`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`url` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`events` text,
	`secret` text NOT NULL,
	`previous_secret` text,
	`previous_secret_expires_at` integer,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`created_by` text NOT NULL,
	`updated_at` text,
	`disabled` integer DEFAULT false NOT NULL,
	`disabled_at` text,
	`disabled_reason` text,
	`failed_deliveries` integer DEFAULT 0 NOT NULL,
	`failing_since` integer,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_org` ON `webhook_endpoints` (`org_id`,`created_at`);--> statement-breakpoint
-- ---------------------------------------------------------------------------
-- Hand-written below this line (drizzle-kit generates only what is above it).
--
-- Webhook events, emitted by triggers in the same transaction as the change that
-- causes them (README "Webhooks"): when a program, proof, execution or verification
-- reaches a state an event names, one delivery row is inserted per enabled endpoint
-- of its organization subscribed to that event (`events` NULL = all). A change whose
-- batch rolls back leaves no delivery; a committed one always has its deliveries, which
-- the Worker then sends (src/jobs/webhooks.ts: the transition's own batch reads them
-- back for an immediate queue message, and the cron sweep sends whatever a lost message
-- leaves due). The payload is not rendered here: the Worker renders the record as GET
-- returns it at the first attempt and stores it with the delivery.
-- Delivery ids (the webhook-id header) are `msg_` + 128 random bits; next_attempt_at is
-- now in epoch ms. An endpoint lookup is one seek of webhook_endpoints_org.
-- A later migration that rebuilds programs, proofs, executions or verifications
-- (drizzle-kit copies such a table to __new_<table>) drops these triggers: recreate them there.
CREATE TRIGGER `programs_webhooks` AFTER UPDATE OF `status` ON `programs`
WHEN NEW.`status` IN ('ready', 'failed', 'error') AND OLD.`status` NOT IN ('ready', 'failed', 'error') BEGIN
  INSERT INTO `webhook_deliveries` (`id`, `org_id`, `endpoint_id`, `event_type`, `subject_kind`, `subject_id`, `next_attempt_at`)
    SELECT 'msg_' || lower(hex(randomblob(16))), e.`org_id`, e.`id`, t.`type`, 'program', NEW.`id`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM (SELECT CASE NEW.`status` WHEN 'ready' THEN 'program.ready' ELSE 'program.failed' END AS `type`) t
    JOIN `webhook_endpoints` e ON e.`org_id` = NEW.`org_id` AND NOT e.`disabled`
      AND (e.`events` IS NULL OR EXISTS (SELECT 1 FROM json_each(e.`events`) j WHERE j.`value` = t.`type`));
END;
--> statement-breakpoint
CREATE TRIGGER `proofs_webhooks` AFTER UPDATE OF `state` ON `proofs`
WHEN NEW.`state` IN ('Succeeded', 'Failed', 'Canceled') AND OLD.`state` NOT IN ('Succeeded', 'Failed', 'Canceled') BEGIN
  INSERT INTO `webhook_deliveries` (`id`, `org_id`, `endpoint_id`, `event_type`, `subject_kind`, `subject_id`, `next_attempt_at`)
    SELECT 'msg_' || lower(hex(randomblob(16))), e.`org_id`, e.`id`, t.`type`, 'proof', NEW.`id`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM (SELECT CASE NEW.`state` WHEN 'Succeeded' THEN 'proof.succeeded' WHEN 'Failed' THEN 'proof.failed' ELSE 'proof.canceled' END AS `type`) t
    JOIN `webhook_endpoints` e ON e.`org_id` = NEW.`org_id` AND NOT e.`disabled`
      AND (e.`events` IS NULL OR EXISTS (SELECT 1 FROM json_each(e.`events`) j WHERE j.`value` = t.`type`));
END;
--> statement-breakpoint
-- A canceled execution reads `Failed` (src/lib/records.ts: the published client has no
-- canceled state), so it is an execution.failed event.
CREATE TRIGGER `executions_webhooks` AFTER UPDATE OF `status` ON `executions`
WHEN NEW.`status` IN ('succeeded', 'failed', 'canceled') AND OLD.`status` NOT IN ('succeeded', 'failed', 'canceled') BEGIN
  INSERT INTO `webhook_deliveries` (`id`, `org_id`, `endpoint_id`, `event_type`, `subject_kind`, `subject_id`, `next_attempt_at`)
    SELECT 'msg_' || lower(hex(randomblob(16))), e.`org_id`, e.`id`, t.`type`, 'execution', NEW.`id`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM (SELECT CASE NEW.`status` WHEN 'succeeded' THEN 'execution.succeeded' ELSE 'execution.failed' END AS `type`) t
    JOIN `webhook_endpoints` e ON e.`org_id` = NEW.`org_id` AND NOT e.`disabled`
      AND (e.`events` IS NULL OR EXISTS (SELECT 1 FROM json_each(e.`events`) j WHERE j.`value` = t.`type`));
END;
--> statement-breakpoint
CREATE TRIGGER `verifications_webhooks` AFTER UPDATE OF `result` ON `verifications`
WHEN NEW.`result` IN ('verified', 'failed') AND OLD.`result` NOT IN ('verified', 'failed') BEGIN
  INSERT INTO `webhook_deliveries` (`id`, `org_id`, `endpoint_id`, `event_type`, `subject_kind`, `subject_id`, `next_attempt_at`)
    SELECT 'msg_' || lower(hex(randomblob(16))), e.`org_id`, e.`id`, t.`type`, 'verification', NEW.`id`, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM (SELECT CASE NEW.`result` WHEN 'verified' THEN 'verification.verified' ELSE 'verification.failed' END AS `type`) t
    JOIN `webhook_endpoints` e ON e.`org_id` = NEW.`org_id` AND NOT e.`disabled`
      AND (e.`events` IS NULL OR EXISTS (SELECT 1 FROM json_each(e.`events`) j WHERE j.`value` = t.`type`));
END;
