-- Attacks on the "callers in control" features (branch h24-attack), hand-written
-- (README "Schema"); each statement applies to a database that already has rows.

-- A deleted program's baseline is gone: no verification may be submitted against it
-- (as proofs and executions may not: 0017_retention.sql). The submission's read
-- refuses it (409); this closes the race of one whose read came before the deletion
-- and whose insert after, with the RAISE src/features/runs/submit.ts answers 409 to.
CREATE TRIGGER `verifications_program_deleted` BEFORE INSERT ON `verifications`
WHEN NEW.`program_id` IS NOT NULL AND (SELECT `deleted_at` FROM `programs` WHERE `id` = NEW.`program_id`) IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'retention: the program was deleted'); END;
