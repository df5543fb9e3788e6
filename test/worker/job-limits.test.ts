// Job limits (README "Job limits"): cycle, cost and deadline on POST /v1/proofs and
// /v1/executions, the organization's defaults, and how each one stops a job.
import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { openDb } from '../../src/db/client.ts';
import { sweep } from '../../src/jobs/sweep.ts';
import { tenantLimits } from '../../src/jobs/settings.ts';
import { api, json, markReady, registerProgram, seedConfig, seedTenant, type Tenant } from './helpers.ts';
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

  it("the organization's defaults apply, and a request's own limit wins", async () => {
    const { t, program } = await readyProgram();
    await env.DB.prepare(
      'UPDATE organizations SET default_cycle_limit = 500, default_cost_limit = 900, default_deadline_seconds = 30 WHERE id = ?',
    )
      .bind(t.orgId)
      .run();
    const { id: a } = await json(await post(t, `/v1/proofs?program_id=${program}`), 200);
    expect(await json(await api(t, `/v1/proofs/${a}`), 200)).toMatchObject({ cycle_limit: 500, cost_limit: 900 });
    expect((await jobOf(a)).deadline_at).not.toBeNull();
    const { id: b } = await json(await post(t, `/v1/proofs?program_id=${program}&cycle_limit=2000`), 200);
    expect(await json(await api(t, `/v1/proofs/${b}`), 200)).toMatchObject({ cycle_limit: 2000, cost_limit: 900 });
  });

  it("owners and admins set the organization's default limits on the console; members and viewers read them; API keys cannot", async () => {
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
    const audit = await env.DB.prepare(`SELECT detail FROM audit_log WHERE org_id = ? AND action = 'org_limits.update'`)
      .bind(t.orgId)
      .all();
    expect(audit.results).toHaveLength(1);
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
    expect((await sweep(openDb(env.DB), env, Date.now() + 31_000)).pastDeadline).toBe(0);
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

  it('a queued job past its deadline fails in the sweep, charged nothing', async () => {
    const { t, program } = await readyProgram();
    const { id } = await json(await post(t, `/v1/proofs?program_id=${program}&deadline_seconds=30`), 200);
    const r = await sweep(openDb(env.DB), env, Date.now() + 31_000);
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
    await sweep(openDb(env.DB), env);
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ state: 'Failed' });
  });
});
