// Every counter the triggers of migrations/0005_counters.sql (and 0023) keep, recounted the slow
// way: each check selects rows with the counter and its recount, and `wrong` says which
// disagree. Used on the Worker's D1 after a long random run (test/worker/scheduler.test.ts)
// and on a database upgraded by the migration (test/tools/migrations.test.ts).
type Row = Record<string, unknown>;

export interface CounterCheck {
  name: string;
  sql: string;
  wrong: (row: Row) => boolean;
}

export const COUNTER_CHECKS: CounterCheck[] = [
  {
    // migrations/0023_fleet_authority.sql: what each agent token's live leases hold.
    name: 'agent tokens',
    sql: `SELECT 'agent token' AS what, t.id,
        t.held_leases, (SELECT count(*) FROM leases l WHERE l.agent_token_id = t.id AND l.outcome IS NULL) AS leases_,
        t.held_gpus, (SELECT coalesce(sum(l.gpus), 0) FROM leases l WHERE l.agent_token_id = t.id AND l.outcome IS NULL) AS gpus_
      FROM agent_tokens t`,
    wrong: (r) => r.held_leases !== r.leases_ || r.held_gpus !== r.gpus_,
  },
  {
    name: 'organizations',
    sql: `SELECT 'org' AS what, o.id,
        o.running_jobs, (SELECT count(*) FROM jobs j WHERE j.org_id = o.id AND j.status = 'leased') AS running,
        o.active_jobs, (SELECT count(*) FROM jobs j WHERE j.org_id = o.id AND j.status IN ('queued','leased')) AS active,
        o.held_gpus, (SELECT coalesce(sum(j.gpus_used), 0) FROM jobs j WHERE j.org_id = o.id AND j.status IN ('queued','leased')) AS held,
        o.program_count, (SELECT count(*) FROM programs x WHERE x.org_id = o.id) AS programs_,
        o.project_count, (SELECT count(*) FROM projects x WHERE x.org_id = o.id) AS projects_,
        o.proof_count, (SELECT count(*) FROM proofs x WHERE x.org_id = o.id) AS proofs_,
        o.execution_count, (SELECT count(*) FROM executions x WHERE x.org_id = o.id) AS executions_,
        o.verification_count, (SELECT count(*) FROM verifications x WHERE x.org_id = o.id) AS verifications_
      FROM organizations o`,
    wrong: (r) =>
      r.running_jobs !== r.running ||
      r.active_jobs !== r.active ||
      r.held_gpus !== r.held ||
      r.program_count !== r.programs_ ||
      r.project_count !== r.projects_ ||
      r.proof_count !== r.proofs_ ||
      r.execution_count !== r.executions_ ||
      r.verification_count !== r.verifications_,
  },
  {
    name: 'queue lanes',
    sql: `SELECT 'lane' AS what, l.*,
        (SELECT count(*) FROM jobs j WHERE j.status = 'queued' AND j.org_id = l.org_id AND j.engine = l.engine AND j.config_id = l.config_id AND j.gpus_used = l.gpus_used) AS counted,
        (SELECT j.id FROM jobs j WHERE j.status = 'queued' AND j.org_id = l.org_id AND j.engine = l.engine AND j.config_id = l.config_id AND j.gpus_used = l.gpus_used
          ORDER BY j.priority DESC, j.queued_at, j.id LIMIT 1) AS head,
        (SELECT o.running_jobs * 1.0 / max(1, o.share_weight) FROM organizations o WHERE o.id = l.org_id) AS share,
        (SELECT coalesce(o.last_claimed_at, 0) FROM organizations o WHERE o.id = l.org_id) AS served
      FROM queue_lanes l`,
    wrong: (r) =>
      r.queued !== r.counted || (r.head_job_id ?? null) !== (r.head ?? null) || r.share_key !== r.share || r.last_claimed_at !== r.served,
  },
  {
    name: 'jobs without a lane',
    sql: `SELECT 'missing lane' AS what, j.id FROM jobs j WHERE j.status = 'queued'
      AND NOT EXISTS (SELECT 1 FROM queue_lanes l WHERE l.org_id = j.org_id AND l.engine = j.engine AND l.config_id = j.config_id AND l.gpus_used = j.gpus_used)`,
    wrong: () => true,
  },
  {
    name: 'programs',
    sql: `SELECT 'program' AS what, p.id, p.proof_count, (SELECT count(*) FROM proofs x WHERE x.program_id = p.id) AS proofs_,
        p.execution_count, (SELECT count(*) FROM executions x WHERE x.program_id = p.id) AS executions_ FROM programs p`,
    wrong: (r) => r.proof_count !== r.proofs_ || r.execution_count !== r.executions_,
  },
  {
    name: 'projects',
    sql: `SELECT 'project' AS what, pj.id, pj.program_count, (SELECT count(*) FROM programs x WHERE x.project_id = pj.id) AS programs_,
        pj.total_proofs_run, (SELECT coalesce(sum(x.proofs_run), 0) FROM programs x WHERE x.project_id = pj.id) AS runs,
        pj.last_active_at, (SELECT max(x.last_active_at) FROM programs x WHERE x.project_id = pj.id) AS active
      FROM projects pj`,
    wrong: (r) => r.program_count !== r.programs_ || r.total_proofs_run !== r.runs || (r.last_active_at ?? null) !== (r.active ?? null),
  },
  {
    name: 'usage rollup',
    sql: `SELECT 'usage' AS what, u.*,
        (SELECT count(*) FROM proofs p WHERE p.org_id = u.org_id AND substr(p.created_at, 1, 10) = u.day AND p.program_id = u.program_id) AS proofs_,
        (SELECT coalesce(sum(p.cost), 0) FROM proofs p WHERE p.org_id = u.org_id AND substr(p.created_at, 1, 10) = u.day AND p.program_id = u.program_id
          AND p.state IN ('Succeeded','Failed','Canceled')) AS cost_,
        (SELECT coalesce(sum(p.num_instructions), 0) FROM proofs p WHERE p.org_id = u.org_id AND substr(p.created_at, 1, 10) = u.day AND p.program_id = u.program_id
          AND p.state IN ('Succeeded','Failed','Canceled')) AS instructions_,
        (SELECT coalesce(sum((l.ended_at - l.claimed_at) * l.gpus), 0) FROM proofs p JOIN jobs j ON j.kind = 'proof' AND j.subject_id = p.id
          JOIN leases l ON l.job_id = j.id AND l.ended_at IS NOT NULL
          WHERE p.org_id = u.org_id AND substr(p.created_at, 1, 10) = u.day AND p.program_id = u.program_id) AS gpu_
      FROM usage_daily u`,
    wrong: (r) => r.proofs !== r.proofs_ || r.cost !== r.cost_ || r.instructions !== r.instructions_ || r.gpu_ms !== r.gpu_,
  },
  {
    name: 'proofs without usage',
    sql: `SELECT 'missing usage' AS what, p.id FROM proofs p
      WHERE NOT EXISTS (SELECT 1 FROM usage_daily u WHERE u.org_id = p.org_id AND u.day = substr(p.created_at, 1, 10) AND u.program_id = p.program_id)`,
    wrong: () => true,
  },
];
