-- A queue that explains itself (issue 23 item 4; README "Why a job waits"). Hand-written
-- (README "Schema"); applies to a database that already has rows.

-- The jobs running on a config, for a queued record's estimated start: its one read
-- counts them and the time left to them (src/features/runs/data.ts runStateSql) by a
-- seek of this index, whatever the backlog. Partial: finished and queued jobs are not in it.
CREATE INDEX `jobs_leased_config` ON `jobs` (`engine`,`config_id`) WHERE "jobs"."status" = 'leased';
--> statement-breakpoint
-- Quotas hold queued jobs (README "Why a job waits", `org_quota`): a claim takes an
-- organization's job only while its running jobs are under max_active_jobs and its
-- running GPUs plus the job's within max_gpus (src/jobs/state.ts nextJobFor). Submissions
-- already keep queued + running within both, so this holds jobs only once an operator
-- lowers a quota below what the organization has: they wait for its running jobs to end
-- instead of running past the new quota. The GPUs its leased jobs hold, a counter kept
-- like running_jobs (migrations/0005_counters.sql), by triggers of their own.
ALTER TABLE `organizations` ADD `running_gpus` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
UPDATE `organizations` SET `running_gpus` = t.`gpus`
FROM (SELECT `org_id`, sum(`gpus_used`) AS `gpus` FROM `jobs` WHERE `status` = 'leased' GROUP BY `org_id`) AS t
WHERE t.`org_id` = `organizations`.`id`;
--> statement-breakpoint
CREATE TRIGGER `jobs_insert_running_gpus` AFTER INSERT ON `jobs` WHEN NEW.`status` = 'leased' BEGIN
  UPDATE `organizations` SET `running_gpus` = `running_gpus` + NEW.`gpus_used` WHERE `id` = NEW.`org_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_status_running_gpus` AFTER UPDATE OF `status` ON `jobs`
WHEN (OLD.`status` = 'leased') <> (NEW.`status` = 'leased') BEGIN
  UPDATE `organizations` SET `running_gpus` = `running_gpus` + ((NEW.`status` = 'leased') - (OLD.`status` = 'leased')) * NEW.`gpus_used`
  WHERE `id` = NEW.`org_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_delete_running_gpus` AFTER DELETE ON `jobs` WHEN OLD.`status` = 'leased' BEGIN
  UPDATE `organizations` SET `running_gpus` = `running_gpus` - OLD.`gpus_used` WHERE `id` = OLD.`org_id`;
END;
