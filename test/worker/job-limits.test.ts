// Job limits (docs/callers.md "Job limits"): cycle, cost and deadline on POST /v1/proofs and
// /v1/executions, the organization's defaults, and how each one stops a job.
import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src/db/client.ts';
import { sweep } from '../../src/jobs/sweep.ts';
import { tenantLimits } from '../../src/jobs/settings.ts';
import { recordJob, refusalOf } from '../../src/jobs/dispatch.ts';
import type { JobLimits } from '../../src/jobs/limits.ts';
import { isRefusedJobInsert, orgUsageQuery, quotaDefaults } from '../../src/jobs/quotas.ts';
import { api, json, markReady, registerProgram, seedConfig, seedTenant, type Tenant, cronPart } from './helpers.ts';
import { claimJob, drainQueuedJobs, lease, seedAgent } from './fleet-helpers.ts';
import { as, consoleFetch, seedUser, send, signIn } from './console-helpers.ts';

beforeEach(async () => {
  await drainQueuedJobs();
  await env.DB.prepare('DELETE FROM agents').run();
});

const post = (t: Tenant, path: string) =>
  api(t, path, { method: 'POST', body: '{"input": []}', headers: { 'content-type': 'application/json' } });

async function readyProgram(t?: Tenant) {
  const tenant = t ?? (await seedTenant());
  const program = await registerProgram(tenant, await seedConfig());
  await markReady(program);
  await drainQueuedJobs();
  return { t: tenant, program };
}

const jobOf = async (subject: string) =>
  (await env.DB.prepare('SELECT * FROM jobs WHERE subject_id = ?').bind(subject).first<Record<string, any>>())!;

describe('job limits', () => {
  it('a proof and an execution take cycle_limit, cost_limit and deadline_seconds, and their records show them', async () => {
    const { t, program } = await readyProgram();
    const before = Date.now();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}&cycle_limit=1000&cost_limit=5000&deadline_seconds=60`), 200);
    const after = Date.now();
    const proof = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(proof).toMatchObject({ cycle_limit: 1000, cost_limit: 5000 });
    // 60 s from its submission, which happened between the two readings of the clock.
    expect(Date.parse(proof.deadline_at) - 60_000).toBeGreaterThanOrEqual(before);
    expect(Date.parse(proof.deadline_at) - 60_000).toBeLessThanOrEqual(after);
    const { id: ex } = await json(await post(t, `/v1/executions?program_id=${program}&cycle_limit=7`), 200);
    expect(await json(await api(t, `/v1/executions/${ex}`), 200)).toMatchObject({ cycle_limit: 7, cost_limit: null, deadline_at: null });
    // and the list
    const list = await json(await api(t, `/v1/proofs?program_id=${program}`), 200);
    expect(list.items[0]).toMatchObject({ id, cycle_limit: 1000 });
  });

  it('refuses a limit that is not a positive integer (422), storing nothing', async () => {
    const { t, program } = await readyProgram();
    for (const q of ['cycle_limit=0', 'cost_limit=-1', 'deadline_seconds=abc', `deadline_seconds=${31 * 86400}`]) {
      expect((await post(t, `/v1/proofs?program_id=${program}&${q}`)).status).toBe(422);
    }
    expect(await env.DB.prepare('SELECT count(*) AS n FROM proofs WHERE program_id = ?').bind(program).first('n')).toBe(0);
  });

  it("the organization's limits are defaults and ceilings: a request may ask for less, never more (issue 29 finding 7, retried as found)", async () => {
    const { t, program } = await readyProgram();
    await env.DB.prepare(
      'UPDATE organizations SET default_cycle_limit = 500, default_cost_limit = 900, default_deadline_seconds = 30 WHERE id = ?',
    )
      .bind(t.orgId)
      .run();
    // Named none: the organization's.
    const { id: a } = await json(await post(t, `/v1/proofs?program_id=${program}`), 200);
    expect(await json(await api(t, `/v1/proofs/${a}`), 200)).toMatchObject({ cycle_limit: 500, cost_limit: 900 });
    expect((await jobOf(a)).deadline_at).not.toBeNull();
    // Less, or exactly the ceiling: its own.
    const { id: b } = await json(await post(t, `/v1/proofs?program_id=${program}&cycle_limit=200&cost_limit=900&deadline_seconds=10`), 200);
    expect(await json(await api(t, `/v1/proofs/${b}`), 200)).toMatchObject({ cycle_limit: 200, cost_limit: 900 });
    // The finding: a key that may submit set each limit up to the maximum, and its value won.
    const max = `cycle_limit=${Number.MAX_SAFE_INTEGER}&cost_limit=${Number.MAX_SAFE_INTEGER}&deadline_seconds=${30 * 86400}`;
    for (const path of ['/v1/proofs', '/v1/executions']) {
      const refused = await json(await post(t, `${path}?program_id=${program}&${max}`), 422);
      expect(refused.detail).toEqual([
        {
          loc: ['query', 'cycle_limit'],
          msg: `Value error, cycle_limit ${Number.MAX_SAFE_INTEGER} is over your organization's ceiling of 500: a request may ask for less, never more (its owners and admins set the ceiling)`,
          type: 'value_error',
        },
        expect.objectContaining({ loc: ['query', 'cost_limit'], msg: expect.stringContaining('ceiling of 900') }),
        expect.objectContaining({
          loc: ['query', 'deadline_seconds'],
          msg: expect.stringContaining(`deadline_seconds ${30 * 86400} is over`),
        }),
      ]);
      // One over is over.
      expect((await json(await post(t, `${path}?program_id=${program}&cost_limit=901`), 422)).detail).toHaveLength(1);
    }
    expect(await env.DB.prepare('SELECT count(*) AS n FROM proofs WHERE program_id = ?').bind(program).first('n')).toBe(2);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM executions WHERE program_id = ?').bind(program).first('n')).toBe(0);
    // An organization with no limit of its own has no ceiling.
    const { t: free, program: freeProgram } = await readyProgram();
    await json(await post(free, `/v1/executions?program_id=${freeProgram}&${max}`), 200);
  });

  it('a ceiling lowered while a request is on its way holds: the job row’s insert refuses a limit over it, and the request answers 422', async () => {
    const { t, program } = await readyProgram();
    const [{ config_id: configId }] = (
      await env.DB.prepare('SELECT config_id FROM programs WHERE id = ?').bind(program).all<{ config_id: string }>()
    ).results;
    const caller = { orgId: t.orgId, owner: 'race', keyId: '', keyHash: '' };
    const job = (limits: JobLimits) =>
      recordJob(
        openDb(env.DB),
        { kind: 'execute', subjectId: crypto.randomUUID(), orgId: t.orgId, configId, engine: 'dev', priority: 5, numGpus: 1, limits },
        caller,
        quotaDefaults(env),
        [],
      );
    // The request's first read saw no ceiling; an owner sets one before its insert runs.
    await env.DB.prepare('UPDATE organizations SET default_cost_limit = 900, default_deadline_seconds = 60 WHERE id = ?')
      .bind(t.orgId)
      .run();
    for (const limits of [{ costLimit: 901 }, { deadlineSeconds: 61 }, { cycleLimit: 5, costLimit: 5000 }])
      await expect(job(limits)).rejects.toSatisfy(isRefusedJobInsert);
    // Within it, and naming none, the insert admits.
    const within = await job({ costLimit: 900, deadlineSeconds: 60, cycleLimit: 10 ** 12 });
    expect(
      await jobOf((await env.DB.prepare('SELECT subject_id FROM jobs WHERE id = ?').bind(within).first<string>('subject_id'))!),
    ).toMatchObject({
      cost_limit: 900,
    });
    await job({});
    // How the request answers such a refusal: it reads the organization again and finds the ceiling (src/features/runs/submit.ts).
    const [usage] = await orgUsageQuery(openDb(env.DB), t.orgId, quotaDefaults(env));
    expect(refusalOf(usage, 0, 'execute', { costLimit: 901 })).toMatchObject({
      issues: [expect.objectContaining({ loc: ['query', 'cost_limit'], msg: expect.stringContaining('cost_limit 901 is over') })],
    });
    expect((await post(t, `/v1/executions?program_id=${program}&cost_limit=901`)).status).toBe(422);
  });

  it("owners and admins set the organization's limits on the console, audited with the actor; members and viewers read them; API keys cannot", async () => {
    const { t, program } = await readyProgram();
    const path = `/console/v1/orgs/${t.orgId}/limits`;
    const sessions = Object.fromEntries(
      await Promise.all(
        (['owner', 'admin', 'member', 'viewer'] as const).map(async (role) => [role, await signIn(await seedUser(t.orgId, role))] as const),
      ),
    );
    expect(await as(sessions.viewer, path)).toMatchObject({
      default_cycle_limit: null,
      default_cost_limit: null,
      default_deadline_seconds: null,
      max_active_jobs: 1000,
      max_gpus: 256,
      running_jobs: 0,
      running_gpus: 0,
    });
    const body = { default_cycle_limit: 500, default_cost_limit: 900, default_deadline_seconds: 60 };
    expect(await send(sessions.admin, 'PUT', path, body)).toMatchObject(body);
    for (const role of ['member', 'viewer'] as const) await send(sessions[role], 'PUT', path, { default_cycle_limit: 1 }, 403);
    const byKey = await consoleFetch(path, { method: 'PUT', token: t.key, body: '{}', headers: { 'content-type': 'application/json' } });
    expect(byKey.status).toBe(401);
    await send(sessions.owner, 'PUT', path, { default_cycle_limit: 0 }, 422);
    await send(sessions.owner, 'PUT', path, { default_deadline_seconds: 31 * 24 * 3600 }, 422);
    await send(sessions.owner, 'PUT', path, { default_cycle_limit: 5, surprise: true }, 422);
    expect(await as(sessions.member, path)).toMatchObject(body);
    // They apply to the next submission that names none.
    const { id } = await json(await post(t, `/v1/executions?program_id=${program}`), 200);
    expect(await json(await api(t, `/v1/executions/${id}`), 200)).toMatchObject({ cycle_limit: 500, cost_limit: 900 });
    const audit = await env.DB.prepare(
      `SELECT actor, actor_user_id, detail FROM audit_log WHERE org_id = ? AND action = 'org_limits.update'`,
    )
      .bind(t.orgId)
      .all<{ actor: string; actor_user_id: string; detail: string }>();
    // Each change with who made it (the admin's), and what it set.
    expect(audit.results).toHaveLength(1);
    const admin = await env.DB.prepare(
      `SELECT u.id, u.email FROM users u JOIN memberships m ON m.user_id = u.id WHERE m.org_id = ? AND m.role = 'admin'`,
    )
      .bind(t.orgId)
      .first<{ id: string; email: string }>();
    expect(audit.results[0]).toMatchObject({ actor: admin!.email, actor_user_id: admin!.id });
    expect(JSON.parse(audit.results[0].detail)).toEqual(body);
    // A key cannot lift them from the request either: over a ceiling is 422 (the test above).
    expect((await post(t, `/v1/executions?program_id=${program}&cycle_limit=501`)).status).toBe(422);
    // Cleared: none.
    expect(await send(sessions.owner, 'PUT', path, {})).toMatchObject({ default_cycle_limit: null, default_cost_limit: null });
  }, 60_000);

  it("an execution's console page record: its limits, why it waits, and the estimate of proving its run", async () => {
    const { t, program } = await readyProgram();
    const session = await signIn(await seedUser(t.orgId, 'viewer'));
    const { id } = await json(await post(t, `/v1/executions?program_id=${program}&cycle_limit=700`), 200);
    const record = await as(session, `/console/v1/orgs/${t.orgId}/executions/${id}`);
    expect(record).toMatchObject({ id, status: 'Queued', cycle_limit: 700, waiting_reason: 'starting', jobs_ahead: 0 });
    expect(record.estimate).toMatchObject({ proof_type: 'stark', proving_seconds: null });
    expect(record.estimate.reason).toMatch(/^No estimate: the execution has not measured its cycles/);
    // The list shows the same run state (its limits and why it waits).
    const list = await as(session, `/console/v1/orgs/${t.orgId}/executions?program_id=${program}`);
    expect(list.items[0]).toMatchObject({ id, cycle_limit: 700, waiting_reason: 'starting' });
    await as(session, `/console/v1/orgs/${t.orgId}/executions/${crypto.randomUUID()}`, 404);
    const other = await seedTenant();
    await as(await signIn(await seedUser(other.orgId, 'owner')), `/console/v1/orgs/${other.orgId}/executions/${id}`, 404);
  });

  it("the organization's defaults do not reach a program registration or a verification (attack: a commit job swept as past its deadline left its program stuck)", async () => {
    const t = await seedTenant();
    await env.DB.prepare(
      'UPDATE organizations SET default_cycle_limit = 500, default_cost_limit = 900, default_deadline_seconds = 30 WHERE id = ?',
    )
      .bind(t.orgId)
      .run();
    const program = await registerProgram(t, await seedConfig());
    expect(await jobOf(program)).toMatchObject({ kind: 'commit', cycle_limit: null, cost_limit: null, deadline_at: null });
    // Queued past what would have been its deadline: the sweep leaves it for an agent.
    expect((await sweep(cronPart('sweep'), Date.now() + 31_000)).pastDeadline).toBe(0);
    expect((await jobOf(program)).status).toBe('queued');
    expect((await json(await api(t, `/v1/programs/${program}`), 200)).status).not.toBe('failed');
  });

  it('the claim hands the cycle limit to the agent; its report of reaching it ends the job Failed, naming the limit and the figure, charged the run', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}&cycle_limit=1000`), 200);
    const job = await claimJob(await seedAgent());
    expect(job.cycle_limit).toBe(1000);
    await env.DB.prepare('UPDATE leases SET claimed_at = claimed_at - 3600000 WHERE id = ?').bind(job.lease_id).run();
    const r = await lease(job, '/fail', {
      error: 'cycle limit of 1000 instructions reached',
      retryable: false,
      limit: { name: 'cycle_limit', reached: 1000 },
    });
    expect(r.status).toBe(200);
    const proof = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(proof.state).toBe('Failed');
    expect(proof.error_message).toBe('Cycle limit reached: the job ran 1000 cycles before it was stopped; its cycle_limit is 1000');
    // an hour on one GPU at 1 USD per GPU-hour (wrangler.toml MACHINE_RATES)
    expect(proof.cost).toBeGreaterThanOrEqual(1_000_000);
    expect(proof.cost).toBeLessThan(1_010_000);
  });

  it('the claim hands the agent the time to the job’s deadline (a span, not an instant) and the caps on its log', async () => {
    const { t, program } = await readyProgram();
    await json(await post(t, `/v1/proofs?program_id=${program}&deadline_seconds=60`), 200);
    const job = await claimJob(await seedAgent());
    expect(job.deadline_in_ms).toBeGreaterThan(0);
    expect(job.deadline_in_ms).toBeLessThanOrEqual(60_000);
    // The deployment's caps (this suite runs small ones: test/vitest.config.ts), not the defaults.
    const caps = tenantLimits(env);
    expect(job.log).toEqual({ seq: 0, offset: 0, max_bytes: caps.LOG_MAX_BYTES, max_chunks: caps.LOG_MAX_CHUNKS });
    await json(await post(t, `/v1/proofs?program_id=${program}`), 200);
    expect((await claimJob(await seedAgent())).deadline_in_ms).toBeNull();
  });

  it('a cost limit stops a running job at its heartbeat, Failed, charged the limit and no more', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/executions?program_id=${program}&cost_limit=5000`), 200);
    const job = await claimJob(await seedAgent());
    expect(await json(await lease(job, '/heartbeat', {}), 200)).toMatchObject({ cancel: false });
    // A minute in: 1,000,000 micro-USD an hour is ~16,667 a minute, past the 5,000 limit.
    await env.DB.prepare('UPDATE leases SET claimed_at = claimed_at - 60000 WHERE id = ?').bind(job.lease_id).run();
    expect(await json(await lease(job, '/heartbeat', {}), 200)).toMatchObject({ cancel: true });
    expect(await json(await lease(job, '/canceled', {}), 200)).toMatchObject({ status: 'canceled' });
    const ex = await json(await api(t, `/v1/executions/${id}`), 200);
    expect(ex.status).toBe('Failed');
    expect(ex.error_message).toMatch(/^Cost limit reached: .*its cost_limit is 5000$/);
    expect(ex.cost).toBeGreaterThanOrEqual(4990);
    expect(ex.cost).toBeLessThanOrEqual(5000);
  });

  it('a cost limit crossed between heartbeats turns a completion into Failed', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/executions?program_id=${program}&cost_limit=5000`), 200);
    const job = await claimJob(await seedAgent());
    await env.DB.prepare('UPDATE leases SET claimed_at = claimed_at - 60000 WHERE id = ?').bind(job.lease_id).run();
    expect((await lease(job, '/status')).status).toBe(200);
    expect(await json(await lease(job, '/status'), 200)).toMatchObject({ cancel: true });
    const done = await lease(job, '/complete', {
      kind: 'execute',
      exit_code: 0,
      public_values: '0x00',
      error: null,
      metrics: { num_instructions: 5 },
    });
    expect(await json(done, 200)).toMatchObject({ status: 'canceled' });
    expect(await json(await api(t, `/v1/executions/${id}`), 200)).toMatchObject({ status: 'Failed', public_values: null, cost: 5000 });
  });

  it('a job is charged at most its cost limit however it ends: a cycle limit, a failed run, a cancel, a deadline (issue 29 finding 8, retried as found)', async () => {
    const { t, program } = await readyProgram();
    const agent = await seedAgent();
    /** Submits, claims and runs the job for a minute (about 16,667 micro-USD at wrangler.toml's 1 USD per GPU-hour), without a heartbeat in between. */
    const started = async (path: string) => {
      const { id } = await json(await post(t, path), 200);
      const job = await claimJob(agent);
      await env.DB.prepare('UPDATE leases SET claimed_at = claimed_at - 60000 WHERE id = ?').bind(job.lease_id).run();
      return { id, job };
    };
    // The finding: stopped at its cycle limit first, a job with a cost limit of 1 was charged its whole lease.
    const cycles = await started(`/v1/proofs?program_id=${program}&cycle_limit=1000&cost_limit=1`);
    await json(
      await lease(cycles.job, '/fail', { error: 'cycle limit reached', retryable: false, limit: { name: 'cycle_limit', reached: 1000 } }),
      200,
    );
    expect(await json(await api(t, `/v1/proofs/${cycles.id}`), 200)).toMatchObject({
      state: 'Failed',
      cost: 1,
      error_message: expect.stringMatching(/^Cycle limit reached/),
    });
    // A run that failed (the guest exited 1) reports as a completion: charged its lease, at most its limit.
    const failed = await started(`/v1/executions?program_id=${program}&cost_limit=7`);
    await json(
      await lease(failed.job, '/complete', {
        kind: 'execute',
        exit_code: 1,
        public_values: null,
        error: null,
        metrics: { num_instructions: 5 },
      }),
      200,
    );
    expect(await json(await api(t, `/v1/executions/${failed.id}`), 200)).toMatchObject({ status: 'Failed', cost: 7 });
    // A caller's cancel a minute in: charged up to the cancel, at most its limit.
    const canceled = await started(`/v1/proofs?program_id=${program}&cost_limit=3`);
    await json(await api(t, `/v1/proofs/${canceled.id}/cancel`, { method: 'POST' }), 200);
    await json(await lease(canceled.job, '/canceled', {}), 200);
    expect(await json(await api(t, `/v1/proofs/${canceled.id}`), 200)).toMatchObject({ state: 'Canceled', cost: 3 });
    // Past its deadline, stopped at its acknowledgement.
    const late = await started(`/v1/proofs?program_id=${program}&cost_limit=2&deadline_seconds=30`);
    await env.DB.prepare('UPDATE jobs SET deadline_at = ? WHERE id = ?')
      .bind(Date.now() - 1000, late.job.id)
      .run();
    expect(await json(await lease(late.job, '/status'), 200)).toMatchObject({ cancel: true });
    await json(await lease(late.job, '/canceled', {}), 200);
    expect(await json(await api(t, `/v1/proofs/${late.id}`), 200)).toMatchObject({ state: 'Failed', cost: 2 });
    // What the month counts is what was charged.
    expect(await env.DB.prepare('SELECT cost FROM budget_usage WHERE org_id = ?').bind(t.orgId).first('cost')).toBe(1 + 7 + 3 + 2);
  });

  it('no statement raises a cost past its job’s cost limit (a trigger refuses it, migrations/0025_ceilings.sql)', async () => {
    const { t, program } = await readyProgram();
    const { id: proof } = await json(await post(t, `/v1/proofs?program_id=${program}&cost_limit=10`), 200);
    const { id: execution } = await json(await post(t, `/v1/executions?program_id=${program}&cost_limit=10`), 200);
    await expect(env.DB.prepare('UPDATE proofs SET cost = 11 WHERE id = ?').bind(proof).run()).rejects.toThrow(
      /a proof is never charged past its cost_limit/,
    );
    await expect(env.DB.prepare('UPDATE executions SET cost = 11 WHERE id = ?').bind(execution).run()).rejects.toThrow(
      /an execution is never charged past its cost_limit/,
    );
    await env.DB.prepare('UPDATE proofs SET cost = 10 WHERE id = ?').bind(proof).run();
    await env.DB.prepare('UPDATE executions SET cost = 10 WHERE id = ?').bind(execution).run();
    await env.DB.prepare('UPDATE proofs SET cost = 0 WHERE id = ?').bind(proof).run();
    await env.DB.prepare('UPDATE executions SET cost = 0 WHERE id = ?').bind(execution).run();
  });

  it('a queued job past its deadline fails in the sweep, charged nothing', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}&deadline_seconds=30`), 200);
    const r = await sweep(cronPart('sweep'), Date.now() + 31_000);
    expect(r.pastDeadline).toBe(1);
    const proof = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(proof).toMatchObject({ state: 'Failed', cost: 0, waiting_reason: null });
    expect(proof.error_message).toMatch(/^Deadline passed: the job was still queued at its deadline, 30 s after its submission/);
    expect((await jobOf(id)).status).toBe('done');
  });

  it('a running job past its deadline is stopped (status check says cancel; its acknowledgement ends it Failed)', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}&deadline_seconds=30`), 200);
    const job = await claimJob(await seedAgent());
    expect(await json(await lease(job, '/status'), 200)).toMatchObject({ cancel: false });
    await env.DB.prepare('UPDATE jobs SET deadline_at = ? WHERE id = ?')
      .bind(Date.now() - 1000, job.id)
      .run();
    expect(await json(await lease(job, '/status'), 200)).toMatchObject({ cancel: true });
    expect(await json(await lease(job, '/heartbeat', { phase: 'Executed' }), 200)).toMatchObject({ cancel: true });
    // Stopping for a limit is not a cancel: never Canceling on the way to Failed.
    expect((await json(await api(t, `/v1/proofs/${id}`), 200)).state).toBe('Executed');
    expect(await json(await lease(job, '/canceled', {}), 200)).toMatchObject({ status: 'canceled' });
    const proof = await json(await api(t, `/v1/proofs/${id}`), 200);
    expect(proof.state).toBe('Failed');
    expect(proof.error_message).toMatch(/^Deadline passed: the job was still running at its deadline/);
  });

  it('a running job past its deadline whose agent died ends Failed when its lease expires', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}&deadline_seconds=30`), 200);
    const job = await claimJob(await seedAgent());
    await env.DB.prepare('UPDATE jobs SET deadline_at = ? WHERE id = ?')
      .bind(Date.now() - 1000, job.id)
      .run();
    await json(await lease(job, '/heartbeat', {}), 200); // records the stop
    await env.DB.prepare('UPDATE jobs SET lease_expires_at = 1 WHERE id = ?').bind(job.id).run();
    await sweep(cronPart('sweep'));
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ state: 'Failed' });
  });
});
