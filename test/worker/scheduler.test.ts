// The scheduler at scale (issue 14): claims read the queue lanes and counters the
// triggers keep (migrations/0005_counters.sql), not the backlog. Two properties, over a
// long seeded random run of submissions, claims, completions, failures, releases,
// cancels, lost leases and program moves across organizations, configs and engines:
//   1. every claim takes exactly the job the specified order takes (fair share by
//      running jobs per share_weight, then least recently served, then priority, then
//      age), which this test computes the slow way, over every queued job;
//   2. afterwards every counter equals what it counts.
import { env } from 'cloudflare:test';
import { beforeAll, describe, expect, it } from 'vitest';
import { runAdmin, api, json, markReady, registerProgram, seedConfig, seedTenant, seededRandom, type Tenant } from './helpers.ts';
import { claim, drainQueuedJobs, expireLease, lease, seedAgent, upload, type TestAgent, devProofOf } from './fleet-helpers.ts';
import { setOrganizationLimits } from '../../src/admin/statements.ts';
import type { ClaimedJob } from 'prover-agent/protocol';
import { COUNTER_CHECKS } from '../counter-checks.ts';

/** The specified order, computed over every queued job (what claims did before queue lanes). */
async function expectedNext(caps: TestAgent['caps']): Promise<string | null> {
  const engines = caps.engines.map(() => '?').join(', ');
  const configs = caps.configs.length ? `AND j.config_id IN (${caps.configs.map(() => '?').join(', ')})` : '';
  const row = await env.DB.prepare(
    `SELECT j.id FROM jobs j
       LEFT JOIN (SELECT org_id, count(*) AS running FROM jobs WHERE status = 'leased' GROUP BY org_id) load ON load.org_id = j.org_id
       LEFT JOIN organizations o ON o.id = j.org_id
     WHERE j.status = 'queued' AND j.engine IN (${engines}) ${configs} AND j.gpus_used <= ?
     ORDER BY coalesce(load.running, 0) * 1.0 / max(1, coalesce(o.share_weight, 1)), coalesce(o.last_claimed_at, 0), j.priority DESC, j.queued_at, j.id
     LIMIT 1`,
  )
    .bind(...caps.engines, ...caps.configs, caps.gpus)
    .first<{ id: string }>();
  return row?.id ?? null;
}

/** Every counter and lane, recounted the slow way; the rows that disagree. */
async function counterMismatches(): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const check of COUNTER_CHECKS) out.push(...(await env.DB.prepare(check.sql).all()).results.filter(check.wrong));
  return out;
}

describe('scheduler: one seek per lane, the same order as counting every job', { timeout: 300_000 }, () => {
  beforeAll(drainQueuedJobs);

  it('takes the specified next job at every claim of a long random run, and every counter stays exact', async () => {
    const random = seededRandom(0x14);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)];
    const devA = await seedConfig();
    const devB = await seedConfig();
    const gpu = await seedConfig({ engine: 'openvm' });
    const orgs: { t: Tenant; programs: string[] }[] = [];
    for (let i = 0; i < 4; i++) {
      const t = await seedTenant();
      await runAdmin(setOrganizationLimits(t.orgId, { shareWeight: 1 + (i % 3), maxActiveJobs: 10_000, maxGpus: 10_000 }));
      const programs = [];
      for (const cfg of [devA, devB, gpu]) {
        const p = await registerProgram(t, cfg);
        await markReady(p);
        programs.push(p);
      }
      orgs.push({ t, programs });
    }
    await drainQueuedJobs(); // the programs' commit jobs are not part of this run
    // Tokens with room for all they claim: their limits (test/worker/fleet-authority.test.ts) are not this run's model.
    const roomy = { limits: { maxGpus: 10_000, maxLeases: 10_000 } };
    const agents = [
      await seedAgent({ engines: ['dev'], configs: [], gpus: 0 }, roomy),
      await seedAgent({ engines: ['dev'], configs: [devB], gpus: 0 }, roomy),
      await seedAgent({ engines: ['openvm'], configs: [], gpus: 1 }, roomy),
      await seedAgent({ engines: ['dev', 'openvm'], configs: [devA, gpu], gpus: 1 }, roomy),
    ];
    const running: ClaimedJob[] = [];
    let claims = 0;
    let taken = 0;
    for (let step = 0; step < 400; step++) {
      const r = random();
      if (r < 0.4) {
        const { t, programs } = pick(orgs);
        const res = await api(
          t,
          `/v1/proofs?program_id=${pick(programs)}&priority=${1 + Math.floor(random() * 10)}&num_gpus=${pick([1, 2, 8])}`,
          {
            method: 'POST',
            body: '{"input": []}',
            headers: { 'content-type': 'application/json' },
          },
        );
        await json(res, 200);
      } else if (r < 0.75) {
        const agent = pick(agents);
        const expected = await expectedNext(agent.caps);
        const got = (await claim(agent)).job;
        claims++;
        expect(got?.id ?? null, `claim ${claims} by ${agent.caps.engines}/${agent.caps.configs}`).toBe(expected);
        if (got) (running.push(got), taken++);
      } else if (running.length) {
        const job = running.splice(Math.floor(random() * running.length), 1)[0];
        const end = random();
        if (end < 0.35) {
          await json(await upload(job, 'stark', await devProofOf(job)), 200);
          await json(
            await lease(job, '/complete', { kind: 'proof', proofs: ['stark'], public_values: '0x00', metrics: { num_instructions: 10 } }),
            200,
          );
        } else if (end < 0.55) await json(await lease(job, '/fail', { error: 'x', retryable: random() < 0.5 }), 200);
        else if (end < 0.7) await json(await lease(job, '/release', {}), 200);
        else if (end < 0.85) await expireLease(job);
        else {
          // Canceled while it runs, through the API of the proof's own organization; the agent acknowledges.
          const org = (await env.DB.prepare('SELECT org_id FROM proofs WHERE id = ?').bind(job.subject_id).first<{ org_id: string }>())!
            .org_id;
          const tenant = orgs.find((o) => o.t.orgId === org)!.t;
          await json(await api(tenant, `/v1/proofs/${job.subject_id}/cancel`, { method: 'POST' }), 200);
          await json(await lease(job, '/canceled', {}), 200);
        }
      } else {
        // A queued proof canceled before it runs, or a program moved to another project.
        const { t, programs } = pick(orgs);
        const queued = await env.DB.prepare(`SELECT subject_id FROM jobs WHERE status = 'queued' AND org_id = ? LIMIT 1`)
          .bind(t.orgId)
          .first<{ subject_id: string }>();
        if (queued && random() < 0.7) await json(await api(t, `/v1/proofs/${queued.subject_id}/cancel`, { method: 'POST' }), 200);
        else {
          const target = (await json(await api(t, `/v1/programs/${pick(programs)}`), 200)).project_id;
          await json(
            await api(t, `/v1/programs/${pick(programs)}`, {
              method: 'PUT',
              body: JSON.stringify({ project_id: target }),
              headers: { 'content-type': 'application/json' },
            }),
            200,
          );
        }
      }
    }
    expect(claims).toBeGreaterThan(100);
    expect(taken).toBeGreaterThan(50);
    expect(await counterMismatches()).toEqual([]);
    // And once everything has drained, every lane is empty and every organization idle.
    await drainQueuedJobs();
    expect(await counterMismatches()).toEqual([]);
    expect(await env.DB.prepare('SELECT count(*) AS n FROM queue_lanes WHERE head_job_id IS NOT NULL OR queued <> 0').first('n')).toBe(0);
  });
});
