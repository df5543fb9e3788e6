ALTER TABLE `agent_tokens` ADD `engines` text DEFAULT '[]' NOT NULL;--> statement-breakpoint
ALTER TABLE `agent_tokens` ADD `configs` text;--> statement-breakpoint
ALTER TABLE `leases` ADD `agent_token_id` text;--> statement-breakpoint
CREATE INDEX `leases_live_by_agent_token` ON `leases` (`agent_token_id`) WHERE "leases"."outcome" IS NULL;--> statement-breakpoint
-- ---------------------------------------------------------------------------
-- Hand-written below this line (drizzle-kit generates only what is above it).
--
-- Fleet credentials with a scope and an end (SECURITY.md "Agent tokens, job tokens and
-- queue tokens").
--
-- Existing tokens were unscoped: each keeps the engines its agents reported serving (its
-- agents' presence rows), every config of them. A token no agent ever used gets no
-- engine and claims nothing: issue a scoped one (npm run admin -- create-agent-token).
UPDATE `agent_tokens` SET `engines` = coalesce(
  (SELECT json_group_array(DISTINCT e.`value`) FROM `agents` a, json_each(a.`engines`) e WHERE a.`token_id` = `agent_tokens`.`id`), '[]');
--> statement-breakpoint
-- Live leases get the token of the agent that holds them; one no token can be found for
-- is refused at its next callback and expires (its job goes back to the queue).
UPDATE `leases` SET `agent_token_id` = (SELECT a.`token_id` FROM `agents` a WHERE a.`id` = `leases`.`agent_id`) WHERE `outcome` IS NULL;
--> statement-breakpoint
-- Revoking an agent token ends its leases in the same transaction, whatever revoked it
-- (the operator's statement, src/admin/statements.ts, or any other path). Its jobs go
-- back to the queue at once as a release does (src/jobs/state.ts releaseJob): the
-- subject back in its queued state (each kind's `subject.queued`, src/jobs/kinds/), the
-- job row `queued` (the counters and lanes of 0005_counters.sql follow by their own
-- triggers), and the attempt not charged (attempt - 1: a revocation is the operator's
-- doing, not the job's). notified_at = 0 makes the cron sweep send the job a fresh queue
-- notice at its next run. A job whose cancel was recorded is not requeued: its lease is
-- made overdue, and the expiry (lease check or sweep) ends it Canceled, charged until
-- the cancel, as for any agent that stops answering. Every lease of the token ends
-- `revoked` last, so nothing its job tokens report is accepted afterwards
-- (src/internal/auth.ts, src/jobs/state.ts heartbeat: both also require the token live).
CREATE TRIGGER `agent_tokens_revoke_leases` AFTER UPDATE OF `revoked_at` ON `agent_tokens`
WHEN OLD.`revoked_at` IS NULL AND NEW.`revoked_at` IS NOT NULL BEGIN
  UPDATE `proofs` SET `state` = 'Queued'
  WHERE `id` IN (SELECT j.`subject_id` FROM `jobs` j JOIN `leases` l ON l.`id` = j.`lease_id`
      WHERE l.`agent_token_id` = NEW.`id` AND l.`outcome` IS NULL AND j.`status` = 'leased' AND j.`kind` = 'proof' AND j.`cancel_requested` = 0)
    AND `state` IN ('Queued', 'Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing', 'Canceling');
  UPDATE `executions` SET `status` = 'queued'
  WHERE `id` IN (SELECT j.`subject_id` FROM `jobs` j JOIN `leases` l ON l.`id` = j.`lease_id`
      WHERE l.`agent_token_id` = NEW.`id` AND l.`outcome` IS NULL AND j.`status` = 'leased' AND j.`kind` = 'execute' AND j.`cancel_requested` = 0)
    AND `status` IN ('queued', 'running');
  UPDATE `programs` SET `status` = 'not_ready'
  WHERE `id` IN (SELECT j.`subject_id` FROM `jobs` j JOIN `leases` l ON l.`id` = j.`lease_id`
      WHERE l.`agent_token_id` = NEW.`id` AND l.`outcome` IS NULL AND j.`status` = 'leased' AND j.`kind` = 'commit' AND j.`cancel_requested` = 0)
    AND `status` IN ('not_ready', 'processing');
  UPDATE `verifications` SET `result` = 'processing'
  WHERE `id` IN (SELECT j.`subject_id` FROM `jobs` j JOIN `leases` l ON l.`id` = j.`lease_id`
      WHERE l.`agent_token_id` = NEW.`id` AND l.`outcome` IS NULL AND j.`status` = 'leased' AND j.`kind` = 'verify' AND j.`cancel_requested` = 0)
    AND `result` = 'processing';
  UPDATE `jobs` SET `status` = 'queued', `lease_id` = NULL, `lease_expires_at` = NULL, `agent_id` = NULL, `attempt` = max(0, `attempt` - 1), `notified_at` = 0
  WHERE `status` = 'leased' AND `cancel_requested` = 0
    AND `lease_id` IN (SELECT l.`id` FROM `leases` l WHERE l.`agent_token_id` = NEW.`id` AND l.`outcome` IS NULL);
  UPDATE `jobs` SET `lease_expires_at` = 0
  WHERE `status` = 'leased' AND `cancel_requested` = 1
    AND `lease_id` IN (SELECT l.`id` FROM `leases` l WHERE l.`agent_token_id` = NEW.`id` AND l.`outcome` IS NULL);
  UPDATE `leases` SET `outcome` = 'revoked', `ended_at` = CAST(round((julianday('now') - 2440587.5) * 86400000) AS INTEGER),
    `response` = '{"status":"revoked"}'
  WHERE `agent_token_id` = NEW.`id` AND `outcome` IS NULL;
END;
