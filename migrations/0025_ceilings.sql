ALTER TABLE `organizations` ADD `reserved_cost` integer DEFAULT 0 NOT NULL;
--> statement-breakpoint
-- ---------------------------------------------------------------------------
-- Hand-written below this line (issue 29 item 3, findings 7 and 8; README "Job limits",
-- "Budgets"); each statement applies to a database that already has rows.
--
-- Reservations. A proof or execution reserves its cost limit against its organization's
-- monthly budget from its insert until it ends: `reserved_cost` is the sum of the cost
-- limits of its live (queued or running) jobs, kept here in the transaction of every job
-- change as migrations/0005_counters.sql keeps `active_jobs`. The job row's insert admits
-- it only while this month's spend + reserved_cost + its own limit stays within the budget
-- (src/jobs/budgets.ts withinBudget), so concurrent submissions cannot overspend; when the
-- job ends its reservation is released in the batch whose triggers
-- (0016_budgets_estimates.sql) add its cost, at most its limit, to the month's spend.
-- Only proofs' and executions' jobs carry a cost limit (src/jobs/dispatch.ts insertJob).
UPDATE `organizations` SET `reserved_cost` = coalesce((
  SELECT sum(j.`cost_limit`) FROM `jobs` j WHERE j.`org_id` = `organizations`.`id` AND j.`status` <> 'done' AND j.`cost_limit` IS NOT NULL), 0);
--> statement-breakpoint
CREATE TRIGGER `jobs_insert_reserved_cost` AFTER INSERT ON `jobs`
WHEN NEW.`status` <> 'done' AND NEW.`cost_limit` IS NOT NULL BEGIN
  UPDATE `organizations` SET `reserved_cost` = `reserved_cost` + NEW.`cost_limit` WHERE `id` = NEW.`org_id`;
END;
--> statement-breakpoint
-- Only when the job ends (or comes back), or its limit or organization changes: a claim
-- (queued to leased) or a retry (leased to queued) leaves the reservation as it is, at no cost.
CREATE TRIGGER `jobs_update_reserved_cost` AFTER UPDATE OF `status`, `cost_limit`, `org_id` ON `jobs`
WHEN ((OLD.`status` = 'done') <> (NEW.`status` = 'done') OR OLD.`cost_limit` IS NOT NEW.`cost_limit` OR OLD.`org_id` <> NEW.`org_id`)
  AND ((OLD.`status` <> 'done' AND OLD.`cost_limit` IS NOT NULL) OR (NEW.`status` <> 'done' AND NEW.`cost_limit` IS NOT NULL)) BEGIN
  UPDATE `organizations` SET `reserved_cost` = `reserved_cost` - OLD.`cost_limit`
  WHERE `id` = OLD.`org_id` AND OLD.`status` <> 'done' AND OLD.`cost_limit` IS NOT NULL;
  UPDATE `organizations` SET `reserved_cost` = `reserved_cost` + NEW.`cost_limit`
  WHERE `id` = NEW.`org_id` AND NEW.`status` <> 'done' AND NEW.`cost_limit` IS NOT NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `jobs_delete_reserved_cost` AFTER DELETE ON `jobs`
WHEN OLD.`status` <> 'done' AND OLD.`cost_limit` IS NOT NULL BEGIN
  UPDATE `organizations` SET `reserved_cost` = `reserved_cost` - OLD.`cost_limit` WHERE `id` = OLD.`org_id`;
END;
--> statement-breakpoint
-- The charge cap. Every statement that writes a proof's or execution's cost caps it at its
-- job's cost limit (src/jobs/limits.ts chargedCost); these refuse, in the statement that
-- writes, a cost raised past it by any other (a new ending path that forgot the cap fails
-- its test instead of overcharging). Only a raise is checked: costs written before this
-- migration stay as they were charged.
CREATE TRIGGER `proofs_cost_within_limit` BEFORE UPDATE OF `cost` ON `proofs`
WHEN NEW.`cost` > OLD.`cost`
  AND NEW.`cost` > (SELECT j.`cost_limit` FROM `jobs` j WHERE j.`kind` = 'proof' AND j.`subject_id` = NEW.`id`)
BEGIN SELECT RAISE(ABORT, 'proofs: a proof is never charged past its cost_limit'); END;
--> statement-breakpoint
CREATE TRIGGER `executions_cost_within_limit` BEFORE UPDATE OF `cost` ON `executions`
WHEN coalesce(NEW.`cost`, 0) > coalesce(OLD.`cost`, 0)
  AND NEW.`cost` > (SELECT j.`cost_limit` FROM `jobs` j WHERE j.`kind` = 'execute' AND j.`subject_id` = NEW.`id`)
BEGIN SELECT RAISE(ABORT, 'executions: an execution is never charged past its cost_limit'); END;
