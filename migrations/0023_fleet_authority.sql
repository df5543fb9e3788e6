ALTER TABLE `agent_tokens` ADD `machine_type` text DEFAULT 'unknown' NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `max_gpus` integer DEFAULT 8 NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `max_leases` integer DEFAULT 8 NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `held_leases` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `held_gpus` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- ---------------------------------------------------------------------------
-- Hand-written below this line (issue 28, items 3 and 6; README "Schema"); each
-- statement applies to a database that already has rows.
--
-- What a host may hold is the operator's word (SECURITY.md "Agent tokens, job tokens and
-- queue tokens"): an agent token now says the machine type its hosts are billed as, the
-- most GPUs its live leases hold together and the most leases live at once; a host's
-- declaration can only be narrower (src/jobs/state.ts nextJobFor).
--
-- What each token's live leases hold (a lease is live until its outcome is set), counted
-- once here, then kept by the triggers below in the transaction that starts, ends or
-- deletes a lease: every claim reads them (src/jobs/state.ts nextJobFor), at the same
-- cost whatever the token holds.
UPDATE `agent_tokens` SET
  `held_leases` = (SELECT count(*) FROM `leases` l WHERE l.`agent_token_id` = `agent_tokens`.`id` AND l.`outcome` IS NULL),
  `held_gpus` = (SELECT coalesce(sum(l.`gpus`), 0) FROM `leases` l WHERE l.`agent_token_id` = `agent_tokens`.`id` AND l.`outcome` IS NULL);
--> statement-breakpoint
CREATE TRIGGER `leases_held_insert` AFTER INSERT ON `leases` WHEN NEW.`outcome` IS NULL BEGIN
  UPDATE `agent_tokens` SET `held_leases` = `held_leases` + 1, `held_gpus` = `held_gpus` + NEW.`gpus` WHERE `id` = NEW.`agent_token_id`;
END;
--> statement-breakpoint
CREATE TRIGGER `leases_held_update` AFTER UPDATE OF `outcome`, `agent_token_id`, `gpus` ON `leases` BEGIN
  UPDATE `agent_tokens` SET `held_leases` = `held_leases` - 1, `held_gpus` = `held_gpus` - OLD.`gpus` WHERE `id` = OLD.`agent_token_id` AND OLD.`outcome` IS NULL;
  UPDATE `agent_tokens` SET `held_leases` = `held_leases` + 1, `held_gpus` = `held_gpus` + NEW.`gpus` WHERE `id` = NEW.`agent_token_id` AND NEW.`outcome` IS NULL;
END;
--> statement-breakpoint
CREATE TRIGGER `leases_held_delete` AFTER DELETE ON `leases` WHEN OLD.`outcome` IS NULL BEGIN
  UPDATE `agent_tokens` SET `held_leases` = `held_leases` - 1, `held_gpus` = `held_gpus` - OLD.`gpus` WHERE `id` = OLD.`agent_token_id`;
END;
--> statement-breakpoint
-- Existing tokens keep working as their hosts used them. Each gets the machine type its
-- most recently seen agent declared, when that is a plain name (letters, digits, `.`,
-- `_`, `-`, starting with a letter or digit, not a name every JavaScript object has),
-- else `unknown` (the agent's own default). Its GPUs: those its hosts (agents by name)
-- declared in the last day, at most 16 a host (no more than a real machine has: a host
-- that declared 10,000 gets no such room), added up, and at least 8 and what its live
-- leases hold now; its leases: one per such GPU (the agent's default concurrency, at least
-- one per host), and at least 8 and its live leases now. Operators review them with
-- `npm run admin -- list-agent-tokens` and set them with `set-agent-token-limits`
-- (src/tools/ADMIN.md).
UPDATE `agent_tokens` SET `machine_type` = coalesce((
  SELECT a.`machine_type` FROM `agents` a
  WHERE a.`token_id` = `agent_tokens`.`id` AND length(a.`machine_type`) <= 100
    AND a.`machine_type` GLOB '[A-Za-z0-9]*' AND a.`machine_type` NOT GLOB '*[^A-Za-z0-9._-]*'
    AND a.`machine_type` NOT IN ('constructor', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', 'toLocaleString', 'toString', 'valueOf')
  ORDER BY a.`last_seen_at` DESC LIMIT 1), 'unknown');
--> statement-breakpoint
UPDATE `agent_tokens` SET
  `max_gpus` = min(10000, max(8,
    coalesce((SELECT sum(h.`gpus`) FROM (SELECT min(16, max(a.`gpus`)) AS `gpus` FROM `agents` a
      WHERE a.`token_id` = `agent_tokens`.`id` AND a.`last_seen_at` > (julianday('now') - 2440587.5 - 1) * 86400000 GROUP BY a.`name`) h), 0),
    `held_gpus`)),
  `max_leases` = min(10000, max(8,
    coalesce((SELECT sum(max(1, h.`gpus`)) FROM (SELECT min(16, max(a.`gpus`)) AS `gpus` FROM `agents` a
      WHERE a.`token_id` = `agent_tokens`.`id` AND a.`last_seen_at` > (julianday('now') - 2440587.5 - 1) * 86400000 GROUP BY a.`name`) h), 0),
    `held_leases`));
--> statement-breakpoint
-- A finished execution's cost is never NULL (a proof's column is NOT NULL already): 0 when
-- nothing was charged (a failure, a run that never started). A NULL cost is how a rate read
-- as NaN (a host declaring the machine type "constructor") let a job run free and past its
-- cost_limit; the statement that would store one now fails instead. Finished rows that have
-- one get 0, what was charged for them.
UPDATE `executions` SET `cost` = 0 WHERE `status` IN ('succeeded', 'failed', 'canceled') AND `cost` IS NULL;
--> statement-breakpoint
CREATE TRIGGER `executions_finished_cost` BEFORE UPDATE OF `status`, `cost` ON `executions`
WHEN NEW.`status` IN ('succeeded', 'failed', 'canceled') AND NEW.`cost` IS NULL
BEGIN SELECT RAISE(ABORT, 'executions: a finished execution has a cost'); END;
--> statement-breakpoint
CREATE TRIGGER `executions_finished_cost_insert` BEFORE INSERT ON `executions`
WHEN NEW.`status` IN ('succeeded', 'failed', 'canceled') AND NEW.`cost` IS NULL
BEGIN SELECT RAISE(ABORT, 'executions: a finished execution has a cost'); END;
--> statement-breakpoint
-- Dead credentials stay dead. A key or token value is stored once, live or revoked (the
-- unique indexes on the hashes: an import of a value that exists anywhere fails, in the
-- statement that writes it: src/admin/statements.ts); and no statement brings a revoked
-- one back (the operator's import used to, reviving a revoked key in its own organization).
CREATE TRIGGER `api_keys_stay_revoked` BEFORE UPDATE OF `revoked_at` ON `api_keys`
WHEN OLD.`revoked_at` IS NOT NULL AND NEW.`revoked_at` IS NULL
BEGIN SELECT RAISE(ABORT, 'api_keys: a revoked key stays revoked'); END;
--> statement-breakpoint
CREATE TRIGGER `agent_tokens_stay_revoked` BEFORE UPDATE OF `revoked_at` ON `agent_tokens`
WHEN OLD.`revoked_at` IS NOT NULL AND NEW.`revoked_at` IS NULL
BEGIN SELECT RAISE(ABORT, 'agent_tokens: a revoked token stays revoked'); END;
--> statement-breakpoint
CREATE TRIGGER `publisher_tokens_stay_revoked` BEFORE UPDATE OF `revoked_at` ON `publisher_tokens`
WHEN OLD.`revoked_at` IS NOT NULL AND NEW.`revoked_at` IS NULL
BEGIN SELECT RAISE(ABORT, 'publisher_tokens: a revoked token stays revoked'); END;
