-- Key publication (SECURITY.md "key publication"; README "Key downloads"):
-- the publisher credential, the append-only versions of every config's key files,
-- and the service-level audit of their publication.
--
-- Keys published before this migration were written to configs/{id}/keys/{name} by
-- any agent token and recorded nowhere, so nothing says who wrote them or which
-- bytes they were. They are deliberately NOT carried over: after this migration a
-- config's keys are "not published" until the operator publishes them again with a
-- publisher token (prover-agent setup-config --publish). The old objects stay in R2,
-- unserved.
CREATE TABLE `publisher_tokens` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`token_hash` text NOT NULL,
	`config_ids` text,
	`expires_at` integer NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`revoked_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `publisher_tokens_hash` ON `publisher_tokens` (`token_hash`);
--> statement-breakpoint
CREATE TABLE `config_keys` (
	`config_id` text NOT NULL,
	`name` text NOT NULL,
	`version` integer NOT NULL,
	`sha256` text NOT NULL,
	`size` integer NOT NULL,
	`r2_key` text NOT NULL,
	`verified` integer NOT NULL,
	`published_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`published_by` text NOT NULL,
	`upload_id` text NOT NULL,
	PRIMARY KEY(`config_id`, `name`, `version`),
	FOREIGN KEY (`config_id`) REFERENCES `configs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `config_keys_upload` ON `config_keys` (`upload_id`);
--> statement-breakpoint
CREATE TABLE `key_audit` (
	`id` text PRIMARY KEY NOT NULL,
	`config_id` text NOT NULL,
	`name` text NOT NULL,
	`action` text NOT NULL,
	`upload_id` text,
	`actor` text NOT NULL,
	`sha256` text,
	`version` integer,
	`detail` text DEFAULT '{}' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `key_audit_config` ON `key_audit` (`config_id`,`id`);
--> statement-breakpoint
CREATE INDEX `key_audit_upload` ON `key_audit` (`upload_id`);
--> statement-breakpoint
-- A published version is history: nothing rewrites or removes it, whatever the statement.
CREATE TRIGGER `config_keys_append_only_update` BEFORE UPDATE ON `config_keys`
BEGIN SELECT RAISE(ABORT, 'config_keys is append-only: publish a new version'); END;
--> statement-breakpoint
CREATE TRIGGER `config_keys_append_only_delete` BEFORE DELETE ON `config_keys`
BEGIN SELECT RAISE(ABORT, 'config_keys is append-only: publish a new version'); END;
--> statement-breakpoint
-- A version is the next one of its key: no gaps, no reuse (the primary key refuses a
-- second row of a version, so two racing completions cannot both become current).
CREATE TRIGGER `config_keys_next_version` BEFORE INSERT ON `config_keys`
WHEN NEW.`version` <> 1 + coalesce((SELECT max(`version`) FROM `config_keys` WHERE `config_id` = NEW.`config_id` AND `name` = NEW.`name`), 0)
BEGIN SELECT RAISE(ABORT, 'config_keys: a version must follow the current one'); END;
--> statement-breakpoint
CREATE TRIGGER `key_audit_append_only_update` BEFORE UPDATE ON `key_audit`
BEGIN SELECT RAISE(ABORT, 'key_audit is append-only'); END;
--> statement-breakpoint
CREATE TRIGGER `key_audit_append_only_delete` BEFORE DELETE ON `key_audit`
BEGIN SELECT RAISE(ABORT, 'key_audit is append-only'); END;
