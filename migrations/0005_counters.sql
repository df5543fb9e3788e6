CREATE TABLE `queue_lanes` (
	`org_id` text NOT NULL,
	`engine` text NOT NULL,
	`config_id` text NOT NULL,
	`gpus_used` integer NOT NULL,
	`queued` integer DEFAULT 0 NOT NULL,
	`share_key` real DEFAULT 0 NOT NULL,
	`last_claimed_at` integer DEFAULT 0 NOT NULL,
	`head_job_id` text,
	`head_priority` integer,
	`head_queued_at` integer,
	`waiting_reason` text,
	PRIMARY KEY(`org_id`, `engine`, `config_id`, `gpus_used`)
);
--> statement-breakpoint
CREATE INDEX `queue_lanes_by_engine` ON `queue_lanes` (`engine`,`share_key`,`last_claimed_at`,"head_priority" DESC,`head_queued_at`,`head_job_id`) WHERE "queue_lanes"."head_job_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `queue_lanes_by_config` ON `queue_lanes` (`config_id`,`share_key`,`last_claimed_at`,"head_priority" DESC,`head_queued_at`,`head_job_id`) WHERE "queue_lanes"."head_job_id" IS NOT NULL;--> statement-breakpoint
CREATE TABLE `usage_daily` (
	`org_id` text NOT NULL,
	`day` text NOT NULL,
	`program_id` text NOT NULL,
	`proofs` integer DEFAULT 0 NOT NULL,
	`instructions` integer DEFAULT 0 NOT NULL,
	`gpu_ms` integer DEFAULT 0 NOT NULL,
	`cost` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`org_id`, `day`, `program_id`)
);
--> statement-breakpoint
DROP INDEX `jobs_claim`;--> statement-breakpoint
DROP INDEX `jobs_org`;--> statement-breakpoint
ALTER TABLE `jobs` ADD `gpus_used` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
CREATE INDEX `jobs_lane` ON `jobs` (`org_id`,`engine`,`config_id`,`gpus_used`,"priority" DESC,`queued_at`,`id`) WHERE "jobs"."status" = 'queued';--> statement-breakpoint
CREATE INDEX `jobs_lease_expiry` ON `jobs` (`lease_expires_at`) WHERE "jobs"."status" = 'leased';--> statement-breakpoint
CREATE UNIQUE INDEX `jobs_lease` ON `jobs` (`lease_id`) WHERE "jobs"."lease_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `jobs_stale_notice` ON `jobs` (`notified_at`) WHERE "jobs"."status" = 'queued';--> statement-breakpoint
CREATE INDEX `jobs_queued_age` ON `jobs` (`engine`,`config_id`,`queued_at`) WHERE "jobs"."status" = 'queued';--> statement-breakpoint
ALTER TABLE `agents` ADD `left_at` integer;--> statement-breakpoint
ALTER TABLE `leases` ADD `artifacts` text DEFAULT '{}' NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `running_jobs` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `active_jobs` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `held_gpus` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `project_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `program_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `proof_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `execution_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `organizations` ADD `verification_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `programs` ADD `proof_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `programs` ADD `execution_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `projects` ADD `program_count` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `projects` ADD `total_proofs_run` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `projects` ADD `last_active_at` text;--> statement-breakpoint
CREATE INDEX `executions_org` ON `executions` (`org_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `proofs_org` ON `proofs` (`org_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `verifications_org` ON `verifications` (`org_id`,`created_at`);--> statement-breakpoint
-- ---------------------------------------------------------------------------
-- Hand-written below this line (drizzle-kit generates only what is above it).
--
-- Counters and the scheduler's queue lanes, kept by triggers in the same
-- transaction as every change they count: a claim, a quota check, a list total or
-- the console's usage reads a row or a few instead of counting the backlog
-- (README "What a claim costs"). test/worker/scheduler.test.ts checks, after a long
-- random sequence of operations, that every counter equals what it counts.
-- A later migration that rebuilds one of these tables (drizzle-kit copies it to
-- __new_<table>) drops its triggers: recreate them there (the test above fails if not).
--
-- Existing rows first: jobs' GPUs as src/jobs/state.ts gpusUsed() decides them.
UPDATE `jobs` SET `gpus_used` = CASE WHEN `engine` = 'dev' THEN 0 WHEN `engine` = 'openvm' THEN min(`num_gpus`, 1) ELSE `num_gpus` END;
--> statement-breakpoint
-- Each count in one pass over its table (UPDATE ... FROM a grouped scan), never a scan per row.
UPDATE `organizations` SET `running_jobs` = t.`running`, `active_jobs` = t.`active`, `held_gpus` = t.`held`
FROM (SELECT `org_id`, sum(`status` = 'leased') AS `running`, sum(`status` IN ('queued', 'leased')) AS `active`,
        sum(CASE WHEN `status` IN ('queued', 'leased') THEN `gpus_used` ELSE 0 END) AS `held`
      FROM `jobs` GROUP BY `org_id`) AS t
WHERE t.`org_id` = `organizations`.`id`;
--> statement-breakpoint
UPDATE `organizations` SET `project_count` = t.`n` FROM (SELECT `org_id`, count(*) AS `n` FROM `projects` GROUP BY `org_id`) AS t WHERE t.`org_id` = `organizations`.`id`;
--> statement-breakpoint
UPDATE `organizations` SET `program_count` = t.`n` FROM (SELECT `org_id`, count(*) AS `n` FROM `programs` GROUP BY `org_id`) AS t WHERE t.`org_id` = `organizations`.`id`;
--> statement-breakpoint
UPDATE `organizations` SET `proof_count` = t.`n` FROM (SELECT `org_id`, count(*) AS `n` FROM `proofs` GROUP BY `org_id`) AS t WHERE t.`org_id` = `organizations`.`id`;
--> statement-breakpoint
UPDATE `organizations` SET `execution_count` = t.`n` FROM (SELECT `org_id`, count(*) AS `n` FROM `executions` GROUP BY `org_id`) AS t WHERE t.`org_id` = `organizations`.`id`;
--> statement-breakpoint
UPDATE `organizations` SET `verification_count` = t.`n` FROM (SELECT `org_id`, count(*) AS `n` FROM `verifications` GROUP BY `org_id`) AS t WHERE t.`org_id` = `organizations`.`id`;
--> statement-breakpoint
UPDATE `programs` SET `proof_count` = t.`n` FROM (SELECT `program_id`, count(*) AS `n` FROM `proofs` GROUP BY `program_id`) AS t WHERE t.`program_id` = `programs`.`id`;
--> statement-breakpoint
UPDATE `programs` SET `execution_count` = t.`n` FROM (SELECT `program_id`, count(*) AS `n` FROM `executions` GROUP BY `program_id`) AS t WHERE t.`program_id` = `programs`.`id`;
--> statement-breakpoint
UPDATE `projects` SET `program_count` = t.`n`, `total_proofs_run` = t.`runs`, `last_active_at` = t.`active`
FROM (SELECT `project_id`, count(*) AS `n`, sum(`proofs_run`) AS `runs`, max(`last_active_at`) AS `active` FROM `programs` GROUP BY `project_id`) AS t
WHERE t.`project_id` = `projects`.`id`;
--> statement-breakpoint
INSERT INTO `queue_lanes` (`org_id`, `engine`, `config_id`, `gpus_used`, `queued`)
  SELECT `org_id`, `engine`, `config_id`, `gpus_used`, count(*) FROM `jobs` WHERE `status` = 'queued' GROUP BY `org_id`, `engine`, `config_id`, `gpus_used`;
--> statement-breakpoint
UPDATE `queue_lanes` SET `share_key` = o.`running_jobs` * 1.0 / max(1, o.`share_weight`), `last_claimed_at` = coalesce(o.`last_claimed_at`, 0)
FROM `organizations` o WHERE o.`id` = `queue_lanes`.`org_id`;
--> statement-breakpoint
-- Each lane's next job: one seek of jobs_lane per lane.
UPDATE `queue_lanes` SET (`head_job_id`, `head_priority`, `head_queued_at`) = (
    SELECT j.`id`, j.`priority`, j.`queued_at` FROM `jobs` j
    WHERE j.`status` = 'queued' AND j.`org_id` = `queue_lanes`.`org_id` AND j.`engine` = `queue_lanes`.`engine`
      AND j.`config_id` = `queue_lanes`.`config_id` AND j.`gpus_used` = `queue_lanes`.`gpus_used`
    ORDER BY j.`priority` DESC, j.`queued_at`, j.`id` LIMIT 1);
--> statement-breakpoint
INSERT INTO `usage_daily` (`org_id`, `day`, `program_id`, `proofs`, `instructions`, `cost`)
  SELECT `org_id`, substr(`created_at`, 1, 10), `program_id`, count(*),
    coalesce(sum(CASE WHEN `state` IN ('Succeeded', 'Failed', 'Canceled') THEN `num_instructions` END), 0),
    coalesce(sum(CASE WHEN `state` IN ('Succeeded', 'Failed', 'Canceled') THEN `cost` END), 0)
  FROM `proofs` GROUP BY `org_id`, substr(`created_at`, 1, 10), `program_id`;
--> statement-breakpoint
UPDATE `usage_daily` SET `gpu_ms` = t.`gpu_ms`
FROM (SELECT p.`org_id`, substr(p.`created_at`, 1, 10) AS `day`, p.`program_id`, sum((l.`ended_at` - l.`claimed_at`) * l.`gpus`) AS `gpu_ms`
      FROM `leases` l JOIN `jobs` j ON j.`id` = l.`job_id` AND j.`kind` = 'proof' JOIN `proofs` p ON p.`id` = j.`subject_id`
      WHERE l.`ended_at` IS NOT NULL GROUP BY 1, 2, 3) AS t
WHERE t.`org_id` = `usage_daily`.`org_id` AND t.`day` = `usage_daily`.`day` AND t.`program_id` = `usage_daily`.`program_id`;
--> statement-breakpoint
-- Jobs: the organization's load and quotas.
CREATE TRIGGER `jobs_insert_counters` AFTER INSERT ON `jobs` BEGIN
  UPDATE `organizations` SET
    `running_jobs` = `running_jobs` + (NEW.`status` = 'leased'),
    `active_jobs` = `active_jobs` + (NEW.`status` <> 'done'),
    `held_gpus` = `held_gpus` + (NEW.`status` <> 'done') * NEW.`gpus_used`
  WHERE `id` = NEW.`org_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_status_counters` AFTER UPDATE OF `status` ON `jobs` WHEN OLD.`status` <> NEW.`status` BEGIN
  UPDATE `organizations` SET
    `running_jobs` = `running_jobs` + (NEW.`status` = 'leased') - (OLD.`status` = 'leased'),
    `active_jobs` = `active_jobs` + (NEW.`status` <> 'done') - (OLD.`status` <> 'done'),
    `held_gpus` = `held_gpus` + ((NEW.`status` <> 'done') - (OLD.`status` <> 'done')) * NEW.`gpus_used`
  WHERE `id` = NEW.`org_id`;
END;
--> statement-breakpoint
-- Jobs entering the queue (submitted, or back after a lost lease, a retry or a release):
-- their lane counts them, and a job that comes before the lane's head becomes its head.
-- Written once, as the INSTEAD OF trigger of an empty view that both triggers below
-- insert into (SQLite's way to share a trigger body).
CREATE VIEW `job_enqueued` AS SELECT `org_id`, `engine`, `config_id`, `gpus_used`, `id`, `priority`, `queued_at` FROM `jobs` WHERE 0;
--> statement-breakpoint
CREATE TRIGGER `job_enqueued_lane` INSTEAD OF INSERT ON `job_enqueued` BEGIN
  INSERT INTO `queue_lanes` (`org_id`, `engine`, `config_id`, `gpus_used`, `queued`, `share_key`, `last_claimed_at`)
    SELECT NEW.`org_id`, NEW.`engine`, NEW.`config_id`, NEW.`gpus_used`, 1,
      coalesce(o.`running_jobs` * 1.0 / max(1, o.`share_weight`), 0), coalesce(o.`last_claimed_at`, 0)
    FROM (SELECT 1) LEFT JOIN `organizations` o ON o.`id` = NEW.`org_id` WHERE true
  ON CONFLICT (`org_id`, `engine`, `config_id`, `gpus_used`) DO UPDATE SET `queued` = `queued` + 1;
  UPDATE `queue_lanes` SET `head_job_id` = NEW.`id`, `head_priority` = NEW.`priority`, `head_queued_at` = NEW.`queued_at`
  WHERE `org_id` = NEW.`org_id` AND `engine` = NEW.`engine` AND `config_id` = NEW.`config_id` AND `gpus_used` = NEW.`gpus_used`
    AND (`head_job_id` IS NULL OR NEW.`priority` > `head_priority` OR (NEW.`priority` = `head_priority` AND (NEW.`queued_at` < `head_queued_at`
      OR (NEW.`queued_at` = `head_queued_at` AND NEW.`id` < `head_job_id`))));
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_insert_enqueue` AFTER INSERT ON `jobs` WHEN NEW.`status` = 'queued' BEGIN
  INSERT INTO `job_enqueued` VALUES (NEW.`org_id`, NEW.`engine`, NEW.`config_id`, NEW.`gpus_used`, NEW.`id`, NEW.`priority`, NEW.`queued_at`);
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_requeue` AFTER UPDATE OF `status` ON `jobs` WHEN OLD.`status` <> 'queued' AND NEW.`status` = 'queued' BEGIN
  INSERT INTO `job_enqueued` VALUES (NEW.`org_id`, NEW.`engine`, NEW.`config_id`, NEW.`gpus_used`, NEW.`id`, NEW.`priority`, NEW.`queued_at`);
END;
--> statement-breakpoint
-- A job leaving the queue (claimed, or canceled while queued): one less in its lane, and
-- if it was the head, the lane's next job (one seek of the jobs_lane index) takes over.
CREATE TRIGGER `jobs_dequeue` AFTER UPDATE OF `status` ON `jobs` WHEN OLD.`status` = 'queued' AND NEW.`status` <> 'queued' BEGIN
  UPDATE `queue_lanes` SET `queued` = `queued` - 1
  WHERE `org_id` = OLD.`org_id` AND `engine` = OLD.`engine` AND `config_id` = OLD.`config_id` AND `gpus_used` = OLD.`gpus_used`;
  UPDATE `queue_lanes` SET (`head_job_id`, `head_priority`, `head_queued_at`) = (
      SELECT j.`id`, j.`priority`, j.`queued_at` FROM `jobs` j
      WHERE j.`status` = 'queued' AND j.`org_id` = OLD.`org_id` AND j.`engine` = OLD.`engine`
        AND j.`config_id` = OLD.`config_id` AND j.`gpus_used` = OLD.`gpus_used`
      ORDER BY j.`priority` DESC, j.`queued_at`, j.`id` LIMIT 1)
  WHERE `org_id` = OLD.`org_id` AND `engine` = OLD.`engine` AND `config_id` = OLD.`config_id` AND `gpus_used` = OLD.`gpus_used`
    AND `head_job_id` = OLD.`id`;
END;
--> statement-breakpoint
-- An organization's fair-share standing, copied onto its lanes (the claim's index order).
CREATE TRIGGER `organizations_lane_standing` AFTER UPDATE OF `running_jobs`, `share_weight`, `last_claimed_at` ON `organizations`
WHEN OLD.`running_jobs` <> NEW.`running_jobs` OR OLD.`share_weight` <> NEW.`share_weight` OR coalesce(OLD.`last_claimed_at`, 0) <> coalesce(NEW.`last_claimed_at`, 0) BEGIN
  UPDATE `queue_lanes` SET `share_key` = NEW.`running_jobs` * 1.0 / max(1, NEW.`share_weight`), `last_claimed_at` = coalesce(NEW.`last_claimed_at`, 0)
  WHERE `org_id` = NEW.`id`;
END;
--> statement-breakpoint
-- List totals and project records.
CREATE TRIGGER `projects_insert_counters` AFTER INSERT ON `projects` BEGIN
  UPDATE `organizations` SET `project_count` = `project_count` + 1 WHERE `id` = NEW.`org_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `programs_insert_counters` AFTER INSERT ON `programs` BEGIN
  UPDATE `organizations` SET `program_count` = `program_count` + 1 WHERE `id` = NEW.`org_id`;
  UPDATE `projects` SET `program_count` = `program_count` + 1, `total_proofs_run` = `total_proofs_run` + NEW.`proofs_run`,
    `last_active_at` = max(coalesce(`last_active_at`, ''), NEW.`last_active_at`)
  WHERE `id` = NEW.`project_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `programs_move_counters` AFTER UPDATE OF `project_id` ON `programs` WHEN OLD.`project_id` <> NEW.`project_id` BEGIN
  UPDATE `projects` SET `program_count` = `program_count` - 1, `total_proofs_run` = `total_proofs_run` - OLD.`proofs_run`,
    `last_active_at` = (SELECT max(x.`last_active_at`) FROM `programs` x WHERE x.`project_id` = OLD.`project_id`)
  WHERE `id` = OLD.`project_id`;
  UPDATE `projects` SET `program_count` = `program_count` + 1, `total_proofs_run` = `total_proofs_run` + NEW.`proofs_run`,
    `last_active_at` = max(coalesce(`last_active_at`, ''), NEW.`last_active_at`)
  WHERE `id` = NEW.`project_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `programs_activity_counters` AFTER UPDATE OF `proofs_run`, `last_active_at` ON `programs` WHEN OLD.`project_id` = NEW.`project_id` BEGIN
  UPDATE `projects` SET `total_proofs_run` = `total_proofs_run` + NEW.`proofs_run` - OLD.`proofs_run`,
    `last_active_at` = max(coalesce(`last_active_at`, ''), NEW.`last_active_at`)
  WHERE `id` = NEW.`project_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `proofs_insert_counters` AFTER INSERT ON `proofs` BEGIN
  UPDATE `programs` SET `proof_count` = `proof_count` + 1 WHERE `id` = NEW.`program_id`;
  UPDATE `organizations` SET `proof_count` = `proof_count` + 1 WHERE `id` = NEW.`org_id`;
  INSERT INTO `usage_daily` (`org_id`, `day`, `program_id`, `proofs`) VALUES (NEW.`org_id`, substr(NEW.`created_at`, 1, 10), NEW.`program_id`, 1)
  ON CONFLICT (`org_id`, `day`, `program_id`) DO UPDATE SET `proofs` = `proofs` + 1;
END;
--> statement-breakpoint
-- Usage: a proof's instructions and cost once it ends, its GPU time as each lease ends.
CREATE TRIGGER `proofs_end_usage` AFTER UPDATE OF `state` ON `proofs`
WHEN NEW.`state` IN ('Succeeded', 'Failed', 'Canceled') AND OLD.`state` NOT IN ('Succeeded', 'Failed', 'Canceled') BEGIN
  INSERT INTO `usage_daily` (`org_id`, `day`, `program_id`, `instructions`, `cost`)
    VALUES (NEW.`org_id`, substr(NEW.`created_at`, 1, 10), NEW.`program_id`, coalesce(NEW.`num_instructions`, 0), NEW.`cost`)
  ON CONFLICT (`org_id`, `day`, `program_id`) DO UPDATE SET `instructions` = `instructions` + excluded.`instructions`, `cost` = `cost` + excluded.`cost`;
END;
--> statement-breakpoint
CREATE TRIGGER `leases_end_usage` AFTER UPDATE OF `ended_at` ON `leases` WHEN OLD.`ended_at` IS NULL AND NEW.`ended_at` IS NOT NULL BEGIN
  INSERT INTO `usage_daily` (`org_id`, `day`, `program_id`, `gpu_ms`)
    SELECT p.`org_id`, substr(p.`created_at`, 1, 10), p.`program_id`, max(0, NEW.`ended_at` - NEW.`claimed_at`) * NEW.`gpus`
    FROM `jobs` j JOIN `proofs` p ON p.`id` = j.`subject_id` WHERE j.`id` = NEW.`job_id` AND j.`kind` = 'proof'
  ON CONFLICT (`org_id`, `day`, `program_id`) DO UPDATE SET `gpu_ms` = `gpu_ms` + excluded.`gpu_ms`;
END;
--> statement-breakpoint
CREATE TRIGGER `executions_insert_counters` AFTER INSERT ON `executions` BEGIN
  UPDATE `programs` SET `execution_count` = `execution_count` + 1 WHERE `id` = NEW.`program_id`;
  UPDATE `organizations` SET `execution_count` = `execution_count` + 1 WHERE `id` = NEW.`org_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `verifications_insert_counters` AFTER INSERT ON `verifications` BEGIN
  UPDATE `organizations` SET `verification_count` = `verification_count` + 1 WHERE `id` = NEW.`org_id`;
END;
