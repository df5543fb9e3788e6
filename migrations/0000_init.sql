CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`key_hash` text NOT NULL,
	`owner` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`revoked_at` text,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_key_hash` ON `api_keys` (`key_hash`);--> statement-breakpoint
CREATE TABLE `configs` (
	`id` text PRIMARY KEY NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`openvm_version` text NOT NULL,
	`stark_backend_version` text NOT NULL,
	`status` text DEFAULT 'ready' NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`app_vm_commit` text NOT NULL,
	`engine` text NOT NULL,
	`deferral_enabled` integer DEFAULT false NOT NULL,
	`public_values_bytes` integer DEFAULT 32 NOT NULL
);
--> statement-breakpoint
CREATE TABLE `executions` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`program_id` text NOT NULL,
	`mode` text NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`created_by` text NOT NULL,
	`launched_at` text,
	`terminated_at` text,
	`error_message` text DEFAULT '' NOT NULL,
	`public_values` text,
	`cost` integer,
	`num_segments` integer,
	`total_cycle` integer,
	`total_tick` integer,
	`num_instructions` integer,
	`input_key` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`program_id`) REFERENCES `programs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `executions_program` ON `executions` (`program_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `jobs` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`subject_id` text NOT NULL,
	`org_id` text NOT NULL,
	`config_id` text NOT NULL,
	`engine` text NOT NULL,
	`priority` integer NOT NULL,
	`num_gpus` integer NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`attempt` integer DEFAULT 0 NOT NULL,
	`lease_id` text,
	`lease_expires_at` integer,
	`agent_id` text,
	`machine_type` text,
	`cancel_requested` integer DEFAULT false NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`queued_at` integer NOT NULL,
	`notified_at` integer NOT NULL,
	`waiting_reason` text
);
--> statement-breakpoint
CREATE INDEX `jobs_claim` ON `jobs` (`status`,`priority`,`queued_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_subject` ON `jobs` (`kind`,`subject_id`);--> statement-breakpoint
CREATE TABLE `organizations` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `programs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`project_id` text NOT NULL,
	`config_id` text NOT NULL,
	`name` text NOT NULL,
	`status` text DEFAULT 'not_ready' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`created_by` text NOT NULL,
	`last_active_at` text NOT NULL,
	`launched_at` text,
	`terminated_at` text,
	`program_hash` text NOT NULL,
	`cells_used` integer DEFAULT 0 NOT NULL,
	`proofs_run` integer DEFAULT 0 NOT NULL,
	`commit_sha` text DEFAULT '' NOT NULL,
	`default_num_gpus` integer DEFAULT 8 NOT NULL,
	`error_message` text DEFAULT '' NOT NULL,
	`elf_key` text NOT NULL,
	`elf_size` integer NOT NULL,
	`vmexe_key` text NOT NULL,
	`vmexe_size` integer NOT NULL,
	`app_exe_commit` text,
	`baseline_key` text,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`config_id`) REFERENCES `configs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `programs_org` ON `programs` (`org_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `programs_project` ON `programs` (`project_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`created_by` text NOT NULL,
	`highlighted_program_id` text,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `projects_org` ON `projects` (`org_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `proofs` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`program_id` text NOT NULL,
	`state` text DEFAULT 'Queued' NOT NULL,
	`proof_type` text NOT NULL,
	`priority` integer NOT NULL,
	`num_gpus` integer NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`created_by` text NOT NULL,
	`launched_at` text,
	`terminated_at` text,
	`cells_used` integer DEFAULT 0 NOT NULL,
	`cost` integer DEFAULT 0 NOT NULL,
	`machine_type` text DEFAULT '' NOT NULL,
	`error_message` text DEFAULT '' NOT NULL,
	`proof_size` integer DEFAULT 0 NOT NULL,
	`num_instructions` integer,
	`num_deferred_proofs` integer DEFAULT 0 NOT NULL,
	`public_values` text,
	`input_key` text NOT NULL,
	`child_proof_keys` text DEFAULT '[]' NOT NULL,
	`proof_keys` text DEFAULT '{}' NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`program_id`) REFERENCES `programs`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `proofs_program` ON `proofs` (`program_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `verifications` (
	`id` text PRIMARY KEY NOT NULL,
	`org_id` text NOT NULL,
	`program_id` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`created_by` text NOT NULL,
	`result` text DEFAULT 'processing' NOT NULL,
	`proof_type` text DEFAULT 'stark' NOT NULL,
	`error_message` text DEFAULT '' NOT NULL,
	`proof_key` text NOT NULL,
	FOREIGN KEY (`org_id`) REFERENCES `organizations`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`program_id`) REFERENCES `programs`(`id`) ON UPDATE no action ON DELETE no action
);
