CREATE TABLE `idempotency_keys` (
	`org_id` text NOT NULL,
	`key` text NOT NULL,
	`claim_id` text NOT NULL,
	`state` text NOT NULL,
	`fingerprint` text,
	`body_bytes` integer,
	`status` integer,
	`response` text,
	`created_at` integer NOT NULL,
	`locked_until` integer NOT NULL,
	`expires_at` integer NOT NULL,
	PRIMARY KEY(`org_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_expiry` ON `idempotency_keys` (`expires_at`);