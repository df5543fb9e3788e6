-- Attacks on the "callers in control" features (branch h24-attack), hand-written
-- (README "Schema"); each statement applies to a database that already has rows.

-- A deleted program's baseline is gone: no verification may be submitted against it
-- (as proofs and executions may not: 0017_retention.sql). The submission's read
-- refuses it (409); this closes the race of one whose read came before the deletion
-- and whose insert after, with the RAISE src/features/runs/submit.ts answers 409 to.
CREATE TRIGGER `verifications_program_deleted` BEFORE INSERT ON `verifications`
WHEN NEW.`program_id` IS NOT NULL AND (SELECT `deleted_at` FROM `programs` WHERE `id` = NEW.`program_id`) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'retention: the program was deleted'); END;
--> statement-breakpoint
-- Job limits are a proof's or an execution's (README "Job limits"): an organization's
-- defaults were copied onto its program commits and verifications too, where the
-- deadline sweep ended the job but not its subject (a program left `processing` for
-- good). src/jobs/dispatch.ts no longer writes them; the jobs still waiting or running
-- lose them here.
UPDATE `jobs` SET `cycle_limit` = NULL, `cost_limit` = NULL, `deadline_at` = NULL
WHERE `kind` NOT IN ('proof', 'execute') AND `status` IN ('queued', 'leased')
  AND (`cycle_limit` IS NOT NULL OR `cost_limit` IS NOT NULL OR `deadline_at` IS NOT NULL);
--> statement-breakpoint
-- The subjects it already stranded (their job done, themselves never ended) end failed.
UPDATE `programs` SET `status` = 'failed', `terminated_at` = strftime('%Y-%m-%dT%H:%M:%fZ', 'now'),
  `error_message` = 'Stopped by a job limit of the organization, which does not apply to program registrations: register the program again'
WHERE `status` IN ('not_ready', 'processing')
  AND EXISTS (SELECT 1 FROM `jobs` j WHERE j.`kind` = 'commit' AND j.`subject_id` = `programs`.`id` AND j.`status` = 'done');
--> statement-breakpoint
UPDATE `verifications` SET `result` = 'failed',
  `error_message` = 'Stopped by a job limit of the organization, which does not apply to verifications: submit it again'
WHERE `result` = 'processing'
  AND EXISTS (SELECT 1 FROM `jobs` j WHERE j.`kind` = 'verify' AND j.`subject_id` = `verifications`.`id` AND j.`status` = 'done');
--> statement-breakpoint
-- The retention sweep serves organizations in turn (src/features/retention/sweep.ts
-- pastRetention): when it last deleted something of each, and its index in that order
-- (still only the organizations that set a retention). Existing rows read as never
-- swept, first in the turn.
ALTER TABLE `organizations` ADD `retention_swept_at` integer;
--> statement-breakpoint
DROP INDEX `organizations_retention`;
--> statement-breakpoint
CREATE INDEX `organizations_retention` ON `organizations` (`retention_swept_at`,`id`) WHERE "organizations"."retention_days" IS NOT NULL;
