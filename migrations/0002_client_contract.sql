PRAGMA foreign_keys=OFF;--> statement-breakpoint
CREATE TABLE `__new_verifications` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`program_id` text,
	`config_id` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`created_by` text NOT NULL,
	`result` text DEFAULT 'processing' NOT NULL,
	`proof_type` text DEFAULT 'stark' NOT NULL,
	`error_message` text DEFAULT '' NOT NULL,
	`proof_key` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`program_id`) REFERENCES `programs`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`config_id`) REFERENCES `configs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
-- Edited: config_id is new; existing (STARK) verifications take their program's config.
INSERT INTO `__new_verifications`("id", "org_id", "program_id", "config_id", "created_at", "created_by", "result", "proof_type", "error_message", "proof_key") SELECT "id", "org_id", "program_id", (SELECT "config_id" FROM `programs` WHERE `programs`."id" = `verifications`."program_id"), "created_at", "created_by", "result", "proof_type", "error_message", "proof_key" FROM `verifications`;--> statement-breakpoint
DROP TABLE `verifications`;--> statement-breakpoint
ALTER TABLE `__new_verifications` RENAME TO `verifications`;--> statement-breakpoint
PRAGMA foreign_keys=ON;--> statement-breakpoint
ALTER TABLE `configs` ADD `openvm_toml` text;--> statement-breakpoint
-- Hand-written: every project with programs highlights one of them (its oldest), the
-- value all its programs report as project_highlighted_program_id.
UPDATE `projects` SET `highlighted_program_id` = (SELECT `id` FROM `programs` WHERE `programs`.`project_id` = `projects`.`id` ORDER BY `created_at`, `id` LIMIT 1)
WHERE `highlighted_program_id` IS NULL OR `highlighted_program_id` NOT IN (SELECT `id` FROM `programs` WHERE `programs`.`project_id` = `projects`.`id`);
