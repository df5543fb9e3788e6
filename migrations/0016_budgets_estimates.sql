CREATE TABLE `budgets` (
	`org_id` text PRIMARY KEY NOT NULL,
	`monthly_cost` integer,
	`monthly_gpu_hours` real,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	`updated_by` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `budget_usage` (
	`org_id` text NOT NULL,
	`month` text NOT NULL,
	`cost` integer DEFAULT 0 NOT NULL,
	`gpu_ms` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`org_id`, `month`)
);
--> statement-breakpoint
CREATE TABLE `budget_notices` (
	`org_id` text NOT NULL,
	`month` text NOT NULL,
	`metric` text NOT NULL,
	`threshold` integer NOT NULL,
	`used` real NOT NULL,
	`budget` real NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')) NOT NULL,
	PRIMARY KEY(`org_id`, `month`, `metric`, `threshold`)
);
--> statement-breakpoint
CREATE TABLE `proving_rates` (
	`config_id` text NOT NULL,
	`machine_type` text NOT NULL,
	`gpus` integer NOT NULL,
	`proof_type` text NOT NULL,
	`jobs` integer DEFAULT 0 NOT NULL,
	`cycles` real DEFAULT 0 NOT NULL,
	`proving_ms` real DEFAULT 0 NOT NULL,
	`cost` real DEFAULT 0 NOT NULL,
	`cycles_sq` real DEFAULT 0 NOT NULL,
	`cycles_ms` real DEFAULT 0 NOT NULL,
	`cycles_cost` real DEFAULT 0 NOT NULL,
	PRIMARY KEY(`config_id`, `machine_type`, `gpus`, `proof_type`)
);
--> statement-breakpoint
-- ---------------------------------------------------------------------------
-- Hand-written below this line (drizzle-kit generates only what is above it).
--
-- Budgets (README "Budgets") and estimates (README "Estimates"): counters kept by
-- triggers in the same transaction as what they count, like migrations/0005_counters.sql,
-- never a sum over the jobs table, and nothing per job: one budget_usage row per
-- organization and month (UTC), at most six budget_notices rows per organization and
-- month, one proving_rates row per config, machine type, GPUs and proof type.
-- test/worker/budgets.test.ts checks, after a random run, that they equal what they count.
-- A later migration that rebuilds proofs, executions, leases, budgets or budget_usage
-- drops these triggers: recreate them there.
--
-- Existing rows first: what finished this month and before, by month, in one grouped
-- pass per table (the same figures the triggers below add from now on).
INSERT INTO `budget_usage` (`org_id`, `month`, `cost`)
  SELECT `org_id`, substr(`terminated_at`, 1, 7), sum(`cost`) FROM (
    SELECT `org_id`, `terminated_at`, `cost` FROM `proofs` WHERE `state` IN ('Succeeded', 'Failed', 'Canceled') AND `terminated_at` IS NOT NULL
    UNION ALL
    SELECT `org_id`, `terminated_at`, coalesce(`cost`, 0) FROM `executions` WHERE `status` IN ('succeeded', 'failed', 'canceled') AND `terminated_at` IS NOT NULL)
  GROUP BY 1, 2;
--> statement-breakpoint
INSERT INTO `budget_usage` (`org_id`, `month`, `gpu_ms`)
  SELECT j.`org_id`, strftime('%Y-%m', l.`ended_at` / 1000, 'unixepoch'), sum(max(0, l.`ended_at` - l.`claimed_at`) * l.`gpus`)
  FROM `leases` l JOIN `jobs` j ON j.`id` = l.`job_id` WHERE l.`ended_at` IS NOT NULL GROUP BY 1, 2
  ON CONFLICT (`org_id`, `month`) DO UPDATE SET `gpu_ms` = `gpu_ms` + excluded.`gpu_ms`;
--> statement-breakpoint
INSERT INTO `proving_rates` (`config_id`, `machine_type`, `gpus`, `proof_type`, `jobs`, `cycles`, `proving_ms`, `cost`, `cycles_sq`, `cycles_ms`, `cycles_cost`)
  SELECT `config_id`, `machine_type`, `gpus`, `proof_type`, count(*), sum(x), sum(ms), sum(c), sum(x * x), sum(x * ms), sum(x * c) FROM (
    SELECT j.`config_id`, p.`machine_type`, j.`gpus_used` AS `gpus`, p.`proof_type`, 1.0 * p.`num_instructions` AS x, 1.0 * p.`cost` AS c,
      max(0, l.`ended_at` - l.`claimed_at`) AS ms
    FROM `proofs` p JOIN `jobs` j ON j.`kind` = 'proof' AND j.`subject_id` = p.`id` JOIN `leases` l ON l.`id` = j.`lease_id`
    WHERE p.`state` = 'Succeeded' AND p.`num_instructions` IS NOT NULL AND l.`ended_at` IS NOT NULL)
  GROUP BY 1, 2, 3, 4;
--> statement-breakpoint
-- Spend: a proof's or execution's cost once it ends (the figure its record shows), in
-- the month it ended.
CREATE TRIGGER `proofs_budget_usage` AFTER UPDATE OF `state` ON `proofs`
WHEN NEW.`state` IN ('Succeeded', 'Failed', 'Canceled') AND OLD.`state` NOT IN ('Succeeded', 'Failed', 'Canceled') AND NEW.`cost` > 0 BEGIN
  INSERT INTO `budget_usage` (`org_id`, `month`, `cost`) VALUES (NEW.`org_id`, substr(coalesce(NEW.`terminated_at`, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), 1, 7), NEW.`cost`)
  ON CONFLICT (`org_id`, `month`) DO UPDATE SET `cost` = `cost` + excluded.`cost`;
END;
--> statement-breakpoint
CREATE TRIGGER `executions_budget_usage` AFTER UPDATE OF `status` ON `executions`
WHEN NEW.`status` IN ('succeeded', 'failed', 'canceled') AND OLD.`status` NOT IN ('succeeded', 'failed', 'canceled') AND coalesce(NEW.`cost`, 0) > 0 BEGIN
  INSERT INTO `budget_usage` (`org_id`, `month`, `cost`) VALUES (NEW.`org_id`, substr(coalesce(NEW.`terminated_at`, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')), 1, 7), NEW.`cost`)
  ON CONFLICT (`org_id`, `month`) DO UPDATE SET `cost` = `cost` + excluded.`cost`;
END;
--> statement-breakpoint
-- GPU time: every lease's GPUs × wall time as it ends, whatever its kind, in the month it ended.
CREATE TRIGGER `leases_budget_usage` AFTER UPDATE OF `ended_at` ON `leases`
WHEN OLD.`ended_at` IS NULL AND NEW.`ended_at` IS NOT NULL AND NEW.`gpus` > 0 AND NEW.`ended_at` > NEW.`claimed_at` BEGIN
  INSERT INTO `budget_usage` (`org_id`, `month`, `gpu_ms`)
    SELECT j.`org_id`, strftime('%Y-%m', NEW.`ended_at` / 1000, 'unixepoch'), (NEW.`ended_at` - NEW.`claimed_at`) * NEW.`gpus`
    FROM `jobs` j WHERE j.`id` = NEW.`job_id`
  ON CONFLICT (`org_id`, `month`) DO UPDATE SET `gpu_ms` = `gpu_ms` + excluded.`gpu_ms`;
END;
--> statement-breakpoint
-- Thresholds: each of 50, 80 and 100 % of each limit is noticed once per organization,
-- month and limit, by the primary key of budget_notices (an upsert that does nothing on
-- conflict: a second crossing, or two completions at once, insert nothing; not INSERT OR
-- IGNORE, which the upsert that fires this trigger would override), and only an inserted notice
-- raises its webhook event (the AFTER INSERT trigger below). Evaluated when the usage
-- moves and when a budget is set (a budget lowered below this month's usage notices
-- at once). Written once, as the INSTEAD OF trigger of an empty view (see 0005's job_enqueued).
CREATE VIEW `budget_evaluation` AS SELECT `org_id`, `month` FROM `budget_usage` WHERE 0;
--> statement-breakpoint
CREATE TRIGGER `budget_evaluation_notices` INSTEAD OF INSERT ON `budget_evaluation` BEGIN
  INSERT INTO `budget_notices` (`org_id`, `month`, `metric`, `threshold`, `used`, `budget`)
    SELECT u.`org_id`, u.`month`, 'cost', t.`value`, u.`cost`, b.`monthly_cost`
    FROM `budget_usage` u JOIN `budgets` b ON b.`org_id` = u.`org_id` JOIN json_each('[50,80,100]') t
    WHERE u.`org_id` = NEW.`org_id` AND u.`month` = NEW.`month` AND b.`monthly_cost` > 0 AND u.`cost` * 100 >= t.`value` * b.`monthly_cost`
  ON CONFLICT DO NOTHING;
  INSERT INTO `budget_notices` (`org_id`, `month`, `metric`, `threshold`, `used`, `budget`)
    SELECT u.`org_id`, u.`month`, 'gpu_hours', t.`value`, round(u.`gpu_ms` / 3600000.0, 6), b.`monthly_gpu_hours`
    FROM `budget_usage` u JOIN `budgets` b ON b.`org_id` = u.`org_id` JOIN json_each('[50,80,100]') t
    WHERE u.`org_id` = NEW.`org_id` AND u.`month` = NEW.`month` AND b.`monthly_gpu_hours` > 0 AND u.`gpu_ms` * 100.0 >= t.`value` * b.`monthly_gpu_hours` * 3600000.0
  ON CONFLICT DO NOTHING;
END;
--> statement-breakpoint
CREATE TRIGGER `budget_usage_insert_evaluation` AFTER INSERT ON `budget_usage` BEGIN
  INSERT INTO `budget_evaluation` VALUES (NEW.`org_id`, NEW.`month`);
END;
--> statement-breakpoint
CREATE TRIGGER `budget_usage_update_evaluation` AFTER UPDATE ON `budget_usage` BEGIN
  INSERT INTO `budget_evaluation` VALUES (NEW.`org_id`, NEW.`month`);
END;
--> statement-breakpoint
CREATE TRIGGER `budgets_insert_evaluation` AFTER INSERT ON `budgets` BEGIN
  INSERT INTO `budget_evaluation` VALUES (NEW.`org_id`, strftime('%Y-%m', 'now'));
END;
--> statement-breakpoint
CREATE TRIGGER `budgets_update_evaluation` AFTER UPDATE ON `budgets` BEGIN
  INSERT INTO `budget_evaluation` VALUES (NEW.`org_id`, strftime('%Y-%m', 'now'));
END;
--> statement-breakpoint
-- The budget.threshold event (README "Webhooks"), one delivery per enabled endpoint of
-- the organization subscribed to it, with its payload rendered here (the event's data
-- is the notice itself; there is no record to render later). Its subject is the
-- organization: the completing batch reads back its organization's unsent deliveries
-- with its subject's (src/jobs/state.ts deliveriesOf) and sends them at once.
CREATE TRIGGER `budget_notices_webhooks` AFTER INSERT ON `budget_notices` BEGIN
  INSERT INTO `webhook_deliveries` (`id`, `org_id`, `endpoint_id`, `event_type`, `subject_kind`, `subject_id`, `created_at`, `payload`, `next_attempt_at`)
    SELECT 'msg_' || lower(hex(randomblob(16))), e.`org_id`, e.`id`, 'budget.threshold', 'budget', NEW.`org_id`, NEW.`created_at`,
      json_object('type', 'budget.threshold', 'timestamp', NEW.`created_at`, 'data', json_object(
        'org_id', NEW.`org_id`, 'month', NEW.`month`, 'metric', NEW.`metric`, 'threshold', NEW.`threshold`,
        'used', CASE NEW.`metric` WHEN 'cost' THEN CAST(NEW.`used` AS INTEGER) ELSE NEW.`used` END,
        'budget', CASE NEW.`metric` WHEN 'cost' THEN CAST(NEW.`budget` AS INTEGER) ELSE NEW.`budget` END,
        'submissions_refused', json(CASE WHEN NEW.`threshold` >= 100 THEN 'true' ELSE 'false' END))),
      CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER)
    FROM `webhook_endpoints` e
    WHERE e.`org_id` = NEW.`org_id` AND NOT e.`disabled`
      AND (e.`events` IS NULL OR EXISTS (SELECT 1 FROM json_each(e.`events`) j WHERE j.`value` = 'budget.threshold'));
END;
--> statement-breakpoint
-- Estimates: a proof that succeeds adds its cycles, proving time (its last lease's claim
-- to its end: the attempt it was charged for) and cost to the rates of its config,
-- machine type, GPUs held and proof type, with the cross sums a least-squares line needs
-- (src/features/estimates/estimate.ts).
CREATE TRIGGER `proofs_proving_rates` AFTER UPDATE OF `state` ON `proofs`
WHEN NEW.`state` = 'Succeeded' AND OLD.`state` <> 'Succeeded' AND NEW.`num_instructions` IS NOT NULL AND NEW.`terminated_at` IS NOT NULL BEGIN
  INSERT INTO `proving_rates` (`config_id`, `machine_type`, `gpus`, `proof_type`, `jobs`, `cycles`, `proving_ms`, `cost`, `cycles_sq`, `cycles_ms`, `cycles_cost`)
    SELECT `config_id`, `machine_type`, `gpus`, `proof_type`, 1, x, ms, c, x * x, x * ms, x * c FROM (
      SELECT j.`config_id`, NEW.`machine_type` AS `machine_type`, j.`gpus_used` AS `gpus`, NEW.`proof_type` AS `proof_type`,
        1.0 * NEW.`num_instructions` AS x, 1.0 * NEW.`cost` AS c,
        max(0.0, round((julianday(NEW.`terminated_at`) - 2440587.5) * 86400000.0) - l.`claimed_at`) AS ms
      FROM `jobs` j JOIN `leases` l ON l.`id` = j.`lease_id`
      WHERE j.`kind` = 'proof' AND j.`subject_id` = NEW.`id`)
    WHERE true
  ON CONFLICT (`config_id`, `machine_type`, `gpus`, `proof_type`) DO UPDATE SET
    `jobs` = `jobs` + 1, `cycles` = `cycles` + excluded.`cycles`, `proving_ms` = `proving_ms` + excluded.`proving_ms`,
    `cost` = `cost` + excluded.`cost`, `cycles_sq` = `cycles_sq` + excluded.`cycles_sq`,
    `cycles_ms` = `cycles_ms` + excluded.`cycles_ms`, `cycles_cost` = `cycles_cost` + excluded.`cycles_cost`;
END;
