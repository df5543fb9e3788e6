-- A queue that explains itself (issue 23 item 4; README "Why a job waits"). Hand-written
-- (README "Schema"); applies to a database that already has rows.

-- The jobs running on a config, for a queued record's estimated start: its one read
-- counts them and the time left to them (src/features/runs/data.ts runStateSql) by a
-- seek of this index, whatever the backlog. Partial: finished and queued jobs are not in it.
CREATE INDEX `jobs_leased_config` ON `jobs` (`engine`,`config_id`) WHERE "jobs"."status" = 'leased';
