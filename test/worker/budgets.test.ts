// Budgets per organization and estimates before proving (docs/teams.md "Budgets", docs/callers.md "Estimates";
// src/jobs/budgets.ts, src/features/budgets/, src/features/estimates/,
// migrations/0016_budgets_estimates.sql): threshold notices and events once each, also
// under concurrent completions; the 403 at 100 % while running jobs finish; who may set
// a budget; the counters equal to what they count; estimates with and without measurements.
import { env } from 'cloudflare:test';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { setOrganizationBudget } from '../../src/admin/statements.ts';
import { monthOf } from '../../src/jobs/budgets.ts';
import { openDb } from '../../src/db/client.ts';
import { recordJob, refusalOf } from '../../src/jobs/dispatch.ts';
import { isRefusedJobInsert, orgUsageQuery, quotaDefaults } from '../../src/jobs/quotas.ts';
import {
  api,
  eventually,
  json,
  markReady,
  registerProgram,
  runAdmin,
  seedConfig,
  seedTenant,
  seededRandom,
  type Tenant,
} from './helpers.ts';
import { claimJob, devProofOf, drainQueuedJobs, lease, seedAgent, upload, type TestAgent } from './fleet-helpers.ts';
import { consoleFetch, seedUser, send, signIn, as } from './console-helpers.ts';

const HOUR = 3_600_000;
/** MACHINE_RATES is {"*": 1.0} (wrangler.toml): an hour of a dev job (one billing unit) costs 1,000,000 micro-USD. */
const PER_HOUR = 1_000_000;

const post = (t: Tenant, path: string, body: unknown) =>
  api(t, path, { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
const submitProof = (t: Tenant, program: string) => post(t, `/v1/proofs?program_id=${program}`, { input: ['0x0101'] });
const submitExecution = (t: Tenant, program: string) => post(t, `/v1/executions?program_id=${program}`, { input: ['0x0101'] });

async function readyProgram(t: Tenant, config?: string) {
  const id = await registerProgram(t, config ?? (await seedConfig()));
  await markReady(id);
  await drainQueuedJobs(); // its commit job is not under test here
  return id;
}

/** Submits a proof and claims it (nothing else is queued): its lease, claimed `ms` ago. */
async function startProof(t: Tenant, program: string, agent: TestAgent, ms: number) {
  const { id } = await json<{ id: string }>(await submitProof(t, program), 200);
  const job = await claimJob(agent);
  expect(job.subject_id).toBe(id);
  await env.DB.prepare('UPDATE leases SET claimed_at = ? WHERE id = ?')
    .bind(Date.now() - ms, job.lease_id)
    .run();
  await json(await upload(job, 'stark', await devProofOf(job)), 200);
  return { id, job };
}

type TestJob = Awaited<ReturnType<typeof startProof>>['job'];

const finish = (job: TestJob, cycles = 1000) =>
  lease(job, '/complete', {
    kind: 'proof',
    proofs: ['stark'],
    public_values: '0x00',
    metrics: { num_instructions: cycles, cells_used: 1 },
  });

/** Completes a claimed execution that ran `cycles`, succeeded. */
const finishExecution = (job: Pick<TestJob, 'job_token'>, cycles: number) =>
  lease(job, '/complete', { kind: 'execute', exit_code: 0, public_values: null, error: null, metrics: { num_instructions: cycles } });

async function runProof(t: Tenant, program: string, agent: TestAgent, ms: number, cycles = 1000) {
  const { id, job } = await startProof(t, program, agent, ms);
  await json(await finish(job, cycles), 200);
  return id;
}

const notices = async (orgId: string) =>
  (
    await env.DB.prepare('SELECT metric, threshold FROM budget_notices WHERE org_id = ? ORDER BY metric, threshold')
      .bind(orgId)
      .all<{ metric: string; threshold: number }>()
  ).results;
const events = async (orgId: string) =>
  (
    await env.DB.prepare(`SELECT payload FROM webhook_deliveries WHERE org_id = ? AND event_type = 'budget.threshold' ORDER BY created_at`)
      .bind(orgId)
      .all<{ payload: string }>()
  ).results.map((r) => JSON.parse(r.payload));

async function withEndpoint(t: Tenant) {
  await json(await post(t, '/v1/webhooks', { url: 'https://hooks.example.com/in', events: ['budget.threshold'] }), 201);
}

/** The deliveries whose queue message was sent. */
let enqueued: string[] = [];
beforeEach(async () => {
  await drainQueuedJobs();
  enqueued = [];
  vi.spyOn(env.WEBHOOKS, 'sendBatch').mockImplementation(async (msgs) => {
    for (const m of msgs) enqueued.push((m.body as { delivery_id: string }).delivery_id);
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } };
  });
});
afterEach(() => vi.restoreAllMocks());

describe('budget thresholds', () => {
  it('50, 80 and 100 % each raise one notice and one budget.threshold event per month; at 100 % proofs and executions are refused (403) while a running proof finishes', async () => {
    const t = await seedTenant();
    await withEndpoint(t);
    const program = await readyProgram(t);
    const agent = await seedAgent();
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: PER_HOUR }));

    await runProof(t, program, agent, 0.3 * HOUR); // 30 %
    expect(await notices(t.orgId)).toEqual([]);
    await runProof(t, program, agent, 0.25 * HOUR); // 55 %
    expect(await notices(t.orgId)).toEqual([{ metric: 'cost', threshold: 50 }]);
    // The completion that crossed it sent the event's message at once (its batch read the delivery back).
    const [fifty] = (
      await env.DB.prepare(`SELECT id FROM webhook_deliveries WHERE org_id = ? AND event_type = 'budget.threshold'`)
        .bind(t.orgId)
        .all<{ id: string }>()
    ).results;
    await eventually(() => expect(enqueued).toContain(fifty.id));
    await runProof(t, program, agent, 0.1 * HOUR); // 65 %: nothing new
    await runProof(t, program, agent, 0.2 * HOUR); // 85 %
    expect((await notices(t.orgId)).map((n) => n.threshold)).toEqual([50, 80]);

    // A proof claimed before the budget is reached finishes after it, and is charged.
    const running = await startProof(t, program, agent, 0.05 * HOUR);
    await runProof(t, program, agent, 0.2 * HOUR); // 105 %
    expect((await notices(t.orgId)).map((n) => n.threshold)).toEqual([50, 80, 100]);

    const refused = await json(await submitProof(t, program), 403);
    expect(refused.detail).toMatch(
      /^Budget reached: your organization has used \$1\.0\d of its \$1\.00 monthly spending budget for \d{4}-\d{2} \(UTC\); new proofs and executions are refused/,
    );
    expect((await json(await submitExecution(t, program), 403)).detail).toMatch(/^Budget reached/);
    expect(await json(await finish(running.job), 200)).toEqual({ status: 'completed' });
    expect(await json(await api(t, `/v1/proofs/${running.id}`), 200)).toMatchObject({ state: 'Succeeded', cost: expect.any(Number) });
    expect((await notices(t.orgId)).map((n) => n.threshold)).toEqual([50, 80, 100]); // still once each

    const sent = await events(t.orgId);
    expect(sent.map((e) => [e.type, e.data.threshold, e.data.submissions_refused])).toEqual([
      ['budget.threshold', 50, false],
      ['budget.threshold', 80, false],
      ['budget.threshold', 100, true],
    ]);
    expect(sent[2].data).toMatchObject({
      org_id: t.orgId,
      month: monthOf(Date.now()),
      metric: 'cost',
      budget: PER_HOUR,
      used: expect.any(Number),
    });

    // Raised: submissions are taken again; no notice is made twice.
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: 10 * PER_HOUR }));
    await json(await submitProof(t, program), 200);
    expect(await events(t.orgId)).toHaveLength(3);
    // Registration and verification are not refused by a budget (they charge no cost): only proofs and executions.
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: 1 }));
    await json(await submitProof(t, program), 403);
    await readyProgram(t);
  }, 60_000);

  it('concurrent completions crossing thresholds together notice each threshold exactly once', async () => {
    for (let round = 0; round < 3; round++) {
      const t = await seedTenant();
      await withEndpoint(t);
      const program = await readyProgram(t);
      const agent = await seedAgent();
      await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: PER_HOUR }));
      const started = [];
      for (let i = 0; i < 4; i++) started.push(await startProof(t, program, agent, 0.3 * HOUR));
      const answers = await Promise.all(started.map((s) => finish(s.job)));
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
      expect(await notices(t.orgId)).toEqual([50, 80, 100].map((threshold) => ({ metric: 'cost', threshold })));
      expect((await events(t.orgId)).map((e) => e.data.threshold).sort()).toEqual([100, 50, 80]);
    }
  }, 60_000);

  it('a budget set below this month’s usage notices at once and refuses at once', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await runProof(t, program, await seedAgent(), 0.5 * HOUR);
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: PER_HOUR / 4 }));
    expect((await notices(t.orgId)).map((n) => n.threshold)).toEqual([50, 80, 100]);
    await json(await submitProof(t, program), 403);
  }, 60_000);

  it('GPU-hours: a lease’s GPUs × wall time count, and the GPU-hour budget refuses at 100 %', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t, await seedConfig({ engine: 'openvm' }));
    const agent = await seedAgent({ engines: ['openvm'] });
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyGpuHours: 1 }));
    const { id } = await json<{ id: string }>(await submitProof(t, program), 200);
    const job = await claimJob(agent);
    await env.DB.prepare('UPDATE leases SET claimed_at = ? WHERE id = ?')
      .bind(Date.now() - 1.2 * HOUR, job.lease_id)
      .run();
    await json(await lease(job, '/fail', { error: 'engine crashed', retryable: false }), 200);
    expect(await json(await api(t, `/v1/proofs/${id}`), 200)).toMatchObject({ state: 'Failed' });
    expect((await notices(t.orgId)).map((n) => [n.metric, n.threshold])).toEqual([
      ['gpu_hours', 50],
      ['gpu_hours', 80],
      ['gpu_hours', 100],
    ]);
    expect((await json(await submitProof(t, program), 403)).detail).toMatch(/has used 1\.2\d* of its 1 GPU-hour monthly budget/);
  }, 60_000);
});

describe('reservations (issue 29 finding 8: racing submissions overspent a budget checked against finished spend)', () => {
  const reservedOf = async (orgId: string) =>
    (await env.DB.prepare('SELECT reserved_cost FROM organizations WHERE id = ?').bind(orgId).first<number>('reserved_cost'))!;
  const submit = (t: Tenant, program: string, kind: 'proofs' | 'executions', query = '') =>
    post(t, `/v1/${kind}?program_id=${program}${query}`, { input: ['0x0101'] });

  it('N submissions racing against a budget that allows K: exactly K are accepted, proofs and executions alike; each reserves its cost limit until it ends', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    // Room for 7 jobs of cost_limit 1000, and 500 more.
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: 7500 }));
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) => submit(t, program, i % 2 ? 'executions' : 'proofs', '&cost_limit=1000')),
    );
    expect(answers.map((r) => r.status).sort()).toEqual([...Array(7).fill(200), ...Array(5).fill(403)]);
    const refused = await json(
      answers.find((r) => r.status === 403)!,
      403,
    );
    // The budget refusal's text, with the reservations' figures after it.
    expect(refused.detail).toMatch(
      /^Budget reached: your organization has used \$0\.00 of its \$0\.0075 monthly spending budget for \d{4}-\d{2} \(UTC\); new proofs and executions are refused .* Jobs already queued or running finish\. Reserved by queued and running jobs' cost limits: \$0\.007; this job's cost_limit: 1000 \(micro-USD\)\.$/,
    );
    const stored = async () =>
      (await env.DB.prepare(
        'SELECT (SELECT count(*) FROM proofs WHERE org_id = ?1) + (SELECT count(*) FROM executions WHERE org_id = ?1) AS n',
      )
        .bind(t.orgId)
        .first<number>('n'))!;
    expect(await stored()).toBe(7);
    expect(await reservedOf(t.orgId)).toBe(7000);
    const owner = await signIn(await seedUser(t.orgId, 'viewer'));
    expect(await as(owner, `/console/v1/orgs/${t.orgId}/budget`)).toMatchObject({
      used_cost: 0,
      reserved_cost: 7000,
      submissions_refused: false,
    });
    // What is left admits a job whose limit fits it, and then nothing: not even a job with no limit.
    expect((await submit(t, program, 'executions', '&cost_limit=501')).status).toBe(403);
    await json(await submit(t, program, 'executions', '&cost_limit=500'), 200);
    expect((await submit(t, program, 'proofs', '&cost_limit=1')).status).toBe(403);
    expect((await submit(t, program, 'proofs')).status).toBe(403);
    expect(await as(owner, `/console/v1/orgs/${t.orgId}/budget`)).toMatchObject({ reserved_cost: 7500, submissions_refused: true });

    // A queued proof canceled: its reservation is released and it is charged nothing.
    const queued = (await env.DB.prepare('SELECT id FROM proofs WHERE org_id = ? LIMIT 1').bind(t.orgId).first<string>('id'))!;
    await json(await api(t, `/v1/proofs/${queued}/cancel`, { method: 'POST' }), 200);
    expect(await reservedOf(t.orgId)).toBe(6500);
    // A job run for a second and completed: its charge (about 278) replaces its reservation (1000).
    const agent = await seedAgent();
    const job = await claimJob(agent);
    await env.DB.prepare('UPDATE leases SET claimed_at = ? WHERE id = ?')
      .bind(Date.now() - 1000, job.lease_id)
      .run();
    const reserved = (await env.DB.prepare('SELECT cost_limit FROM jobs WHERE id = ?').bind(job.id).first<number>('cost_limit'))!;
    if (job.kind === 'proof') {
      await json(await upload(job, 'stark', await devProofOf(job)), 200);
      await json(await finish(job), 200);
    } else await json(await finishExecution(job, 5), 200);
    const charged = (await env.DB.prepare('SELECT cost FROM budget_usage WHERE org_id = ?').bind(t.orgId).first<number>('cost'))!;
    expect(charged).toBeGreaterThan(0);
    expect(charged).toBeLessThanOrEqual(1000);
    expect(await reservedOf(t.orgId)).toBe(6500 - reserved);
    const left = 7500 - charged - (await reservedOf(t.orgId));
    expect((await submit(t, program, 'executions', `&cost_limit=${left + 1}`)).status).toBe(403);
    await json(await submit(t, program, 'executions', `&cost_limit=${left}`), 200);
    expect(await reservedOf(t.orgId)).toBe(7500 - charged);
  }, 60_000);

  it('a job naming no cost limit reserves its organization’s; with none at all it reserves nothing, admitted while some budget is left', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: 5000 }));
    await env.DB.prepare('UPDATE organizations SET default_cost_limit = 2000 WHERE id = ?').bind(t.orgId).run();
    await json(await submit(t, program, 'proofs'), 200);
    await json(await submit(t, program, 'executions'), 200);
    expect(await reservedOf(t.orgId)).toBe(4000);
    expect((await submit(t, program, 'proofs')).status).toBe(403);
    await json(await submit(t, program, 'proofs', '&cost_limit=1000'), 200);
    expect(await reservedOf(t.orgId)).toBe(5000);

    const free = await seedTenant();
    const freeProgram = await readyProgram(free);
    await runAdmin(setOrganizationBudget(free.orgId, { monthlyCost: 5000 }));
    for (let i = 0; i < 3; i++) await json(await submit(free, freeProgram, 'executions'), 200);
    expect(await reservedOf(free.orgId)).toBe(0);
  }, 60_000);

  it('the insert decides: a reservation made after a request’s first read refuses it, and the request answers the budget’s 403', async () => {
    const t = await seedTenant();
    const program = await readyProgram(t);
    const config = (await env.DB.prepare('SELECT config_id FROM programs WHERE id = ?').bind(program).first<string>('config_id'))!;
    await runAdmin(setOrganizationBudget(t.orgId, { monthlyCost: 1000 }));
    const insert = (costLimit: number) =>
      recordJob(
        openDb(env.DB),
        {
          kind: 'proof',
          subjectId: crypto.randomUUID(),
          orgId: t.orgId,
          configId: config,
          engine: 'dev',
          priority: 5,
          numGpus: 1,
          limits: { costLimit },
        },
        { orgId: t.orgId, owner: 'race', keyId: '', keyHash: '' },
        quotaDefaults(env),
        [],
      );
    // Both requests' first reads saw 1000 left; the first insert reserves it all.
    const [usage] = await orgUsageQuery(openDb(env.DB), t.orgId, quotaDefaults(env));
    expect(refusalOf(usage, 0, 'proof', { costLimit: 600 })).toBeNull();
    await insert(600);
    await expect(insert(600)).rejects.toSatisfy(isRefusedJobInsert);
    await insert(400);
    await expect(insert(1)).rejects.toSatisfy(isRefusedJobInsert);
    // Re-read on the primary, as the request does (src/features/runs/submit.ts): the 403.
    const [after] = await orgUsageQuery(openDb(env.DB), t.orgId, quotaDefaults(env));
    expect(refusalOf(after, 0, 'proof', { costLimit: 1 })).toMatchObject({
      status: 403,
      message: expect.stringMatching(/^Budget reached/),
    });
  });
});

describe('who sets a budget', () => {
  it('owners and admins set it in the console; members and viewers read it; API keys cannot reach it', async () => {
    const t = await seedTenant();
    const path = `/console/v1/orgs/${t.orgId}/budget`;
    const sessions = Object.fromEntries(
      await Promise.all(
        (['owner', 'admin', 'member', 'viewer'] as const).map(async (role) => [role, await signIn(await seedUser(t.orgId, role))] as const),
      ),
    );
    const set = await send(sessions.owner, 'PUT', path, { monthly_cost: 5 * PER_HOUR });
    expect(set).toMatchObject({
      monthly_cost: 5 * PER_HOUR,
      monthly_gpu_hours: null,
      used_cost: 0,
      submissions_refused: false,
      notices: [],
    });
    expect(await send(sessions.admin, 'PUT', path, { monthly_cost: 2 * PER_HOUR, monthly_gpu_hours: 10 })).toMatchObject({
      monthly_cost: 2 * PER_HOUR,
      monthly_gpu_hours: 10,
    });
    for (const role of ['member', 'viewer'] as const) {
      await send(sessions[role], 'PUT', path, { monthly_cost: 1 }, 403);
      expect(await as(sessions[role], path)).toMatchObject({ monthly_cost: 2 * PER_HOUR, monthly_gpu_hours: 10 });
    }
    expect(
      (
        await consoleFetch(path, {
          method: 'PUT',
          token: t.key,
          body: '{"monthly_cost": 1}',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(401);
    await send(sessions.owner, 'PUT', path, { monthly_cost: -1 }, 422);
    await send(sessions.owner, 'PUT', path, { monthly_cost: 1.5 }, 422);
    await send(sessions.owner, 'PUT', path, { monthly_cost: 1, surprise: true }, 422);
    const audit = await env.DB.prepare(`SELECT count(*) AS n FROM audit_log WHERE org_id = ? AND action = 'budget.update'`)
      .bind(t.orgId)
      .first<{ n: number }>();
    expect(audit!.n).toBe(2);
    // Cleared: no limit.
    expect(await send(sessions.owner, 'PUT', path, {})).toMatchObject({ monthly_cost: null, monthly_gpu_hours: null });
  }, 60_000);
});

describe('counters', () => {
  it('after a random run, budget_usage and proving_rates equal what they count', async () => {
    const random = seededRandom(23);
    const t = await seedTenant();
    const program = await readyProgram(t);
    const agent = await seedAgent({ machine_type: `m-${crypto.randomUUID().slice(0, 6)}` });
    for (let i = 0; i < 12; i++) {
      const ms = Math.floor(random() * HOUR);
      const pick = random();
      if (pick < 0.5) await runProof(t, program, agent, ms, 100 + Math.floor(random() * 10_000));
      else if (pick < 0.7) {
        const { id, job } = await startProof(t, program, agent, ms);
        await json(await api(t, `/v1/proofs/${id}/cancel`, { method: 'POST' }), 200);
        await json(await lease(job, '/canceled', {}), 200);
      } else if (pick < 0.85) {
        const { job } = await startProof(t, program, agent, ms);
        await json(await lease(job, '/fail', { error: 'bad input', retryable: false }), 200);
      } else {
        await json(await submitExecution(t, program), 200);
        const job = await claimJob(agent);
        await env.DB.prepare('UPDATE leases SET claimed_at = ? WHERE id = ?')
          .bind(Date.now() - ms, job.lease_id)
          .run();
        await json(await finishExecution(job, 500), 200);
      }
    }
    const usage = await env.DB.prepare('SELECT month, cost, gpu_ms FROM budget_usage WHERE org_id = ?').bind(t.orgId).all();
    const counted = await env.DB.prepare(
      `SELECT month, sum(cost) AS cost FROM (
         SELECT substr(terminated_at, 1, 7) AS month, cost FROM proofs WHERE org_id = ?1 AND state IN ('Succeeded', 'Failed', 'Canceled')
         UNION ALL SELECT substr(terminated_at, 1, 7), coalesce(cost, 0) FROM executions WHERE org_id = ?1 AND status IN ('succeeded', 'failed', 'canceled'))
       GROUP BY month`,
    )
      .bind(t.orgId)
      .all<{ month: string; cost: number }>();
    const gpu = await env.DB.prepare(
      `SELECT coalesce(sum(max(0, l.ended_at - l.claimed_at) * l.gpus), 0) AS gpu_ms FROM leases l JOIN jobs j ON j.id = l.job_id WHERE j.org_id = ?`,
    )
      .bind(t.orgId)
      .first<{ gpu_ms: number }>();
    expect(usage.results).toEqual(counted.results.map((r) => ({ month: r.month, cost: r.cost, gpu_ms: gpu!.gpu_ms })));
    const rates = await env.DB.prepare('SELECT jobs, cycles, cost FROM proving_rates WHERE machine_type = ?')
      .bind(agent.caps.machine_type)
      .first();
    const proofs = await env.DB.prepare(
      `SELECT count(*) AS jobs, 1.0 * sum(num_instructions) AS cycles, 1.0 * sum(cost) AS cost FROM proofs WHERE org_id = ? AND state = 'Succeeded'`,
    )
      .bind(t.orgId)
      .first();
    expect(rates).toEqual(proofs);
  }, 60_000);
});

describe('estimates', () => {
  async function executed(t: Tenant, program: string, agent: TestAgent, cycles: number) {
    const { id } = await json<{ id: string }>(await submitExecution(t, program), 200);
    const job = await claimJob(agent);
    await json(
      await lease(job, '/complete', {
        kind: 'execute',
        exit_code: 0,
        public_values: null,
        error: null,
        metrics: { num_instructions: cycles, total_cycle: cycles },
      }),
      200,
    );
    return id;
  }

  it('with no proof measured for the config: no estimate, saying why; with some: the line through them, and how many it rests on', async () => {
    const t = await seedTenant();
    const config = await seedConfig();
    const program = await readyProgram(t, config);
    const agent = await seedAgent({ machine_type: 'estimator-box' });
    const execution = await executed(t, program, agent, 2000);

    // Without a parameter the record is exactly as before (what the published client and the webhook events carry).
    expect(await json(await api(t, `/v1/executions/${execution}`), 200)).not.toHaveProperty('estimate');
    const none = await json(await api(t, `/v1/executions/${execution}?proof_type=stark`), 200);
    expect(none).toMatchObject({ status: 'Succeeded', num_instructions: 2000 });
    expect(none.estimate).toMatchObject({ proof_type: 'stark', based_on_jobs: 0, proving_seconds: null, cost: null, machine_type: null });
    expect(none.estimate.reason).toMatch(/^No estimate: no stark proof of config .* has succeeded on the fleet yet/);

    await runProof(t, program, agent, 1 * HOUR, 1000);
    const one = (await json(await api(t, `/v1/executions/${execution}?num_gpus=8`), 200)).estimate;
    expect(one).toMatchObject({ based_on_jobs: 1, machine_type: 'estimator-box' });
    expect(one.proving_seconds).toBeCloseTo(7200, -1); // 2000 cycles at an hour per 1000
    await runProof(t, program, agent, 2 * HOUR, 3000);
    const two = (await json(await api(t, `/v1/executions/${execution}?proof_type=stark`), 200)).estimate;
    expect(two).toMatchObject({ based_on_jobs: 2, machine_type: 'estimator-box', num_gpus: expect.any(Number) });
    expect(two.proving_seconds).toBeCloseTo(5400, -1); // on the line through (1000, 1 h) and (3000, 2 h)
    expect(Math.abs(two.cost - 1.5 * PER_HOUR)).toBeLessThan(2000);
    expect(two.reason).toMatch(/^From 2 succeeded stark proof/);
    // The console's program page: the estimate of the latest succeeded execution.
    const owner = await signIn(await seedUser(t.orgId, 'viewer'));
    expect(await as(owner, `/console/v1/orgs/${t.orgId}/programs/${program}/estimate`)).toEqual({
      execution_id: execution,
      cycles: 2000,
      estimate: two,
    });

    // Another proof type, or a machine type nothing ran on, has no estimate.
    expect((await json(await api(t, `/v1/executions/${execution}?proof_type=evm`), 200)).estimate).toMatchObject({
      proving_seconds: null,
      based_on_jobs: 0,
    });
    expect((await json(await api(t, `/v1/executions/${execution}?machine_type=other`), 200)).estimate).toMatchObject({ cost: null });
    await json(await api(t, `/v1/executions/${execution}?num_gpus=0`), 422);
    // Parsed as every other integer parameter is (attack: `0x8` or `1e1` read as a number of GPUs).
    for (const bad of ['0x8', '1e1', '', '8.0.0'])
      expect((await json(await api(t, `/v1/executions/${execution}?num_gpus=${bad}`), 422)).detail[0]).toMatchObject({
        loc: ['query', 'num_gpus'],
        type: 'int_parsing',
      });
    // A run not yet finished has no cycles to estimate from.
    const queued = (await json<{ id: string }>(await submitExecution(t, program), 200)).id;
    expect((await json(await api(t, `/v1/executions/${queued}?proof_type=stark`), 200)).estimate.reason).toMatch(
      /has not measured its cycles/,
    );
  }, 60_000);
});
