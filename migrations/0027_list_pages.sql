-- Hand-written (issue 30): a page of a program's proofs or executions, newest first, is
-- read from the program's index in the page's order. The lists order by (created_at DESC,
-- id DESC), the id breaking ties. With (program_id, created_at) alone SQLite chose the
-- organization's index as readily (equality on either, the same partial order), so a
-- program's page walked every run of its organization, and it computed each row whole (a
-- queued run's estimate among its columns) for the sorter before keeping one page. With
-- the id in the program's index its order is the page's, nothing is sorted, and the
-- planner takes it over the organization's.
DROP INDEX `proofs_program`;
--> statement-breakpoint
CREATE INDEX `proofs_program` ON `proofs` (`program_id`,`created_at`,`id`);
--> statement-breakpoint
DROP INDEX `executions_program`;
--> statement-breakpoint
CREATE INDEX `executions_program` ON `executions` (`program_id`,`created_at`,`id`);
