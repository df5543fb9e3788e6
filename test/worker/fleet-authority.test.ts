// What a host may hold is the operator's word (issue 28; SECURITY.md "Agent tokens, job
// tokens and queue tokens"): the machine type it is billed as, the most GPUs and the most
// concurrent leases are its agent token's, and a declaration can only be narrower. And
// dead credentials stay dead: a revoked key or token never comes back.
import { env } from 'cloudflare:test';
import { beforeEach, describe, expect, it } from 'vitest';
import { app } from '../../src/app.ts';
import { createAgentToken, createApiKey, revokeApiKey, setAgentTokenLimits } from '../../src/admin/statements.ts';
import { parseMachineRates, rateOf } from '../../src/jobs/rates.ts';
import { rateSql } from '../../src/jobs/limits.ts';
import { openDb } from '../../src/db/client.ts';
import { sql } from 'drizzle-orm';
import { leaseCost, type LeaseRow } from '../../src/jobs/state.ts';
import { fleetSettings } from '../../src/jobs/settings.ts';
import { api, json, markReady, registerProgram, runAdmin, seedConfig, seedTenant, type Tenant } from './helpers.ts';
import { claim, claimJob, drainQueuedJobs, lease, presence, seedAgent, type TestAgent } from './fleet-helpers.ts';

beforeEach(drainQueuedJobs);

/** A ready program of a new organization under a config of `engine` (its commit job out of the way). */
async function readyProgram(engine: 'dev' | 'openvm' = 'dev') {
  const t = await seedTenant();
  const program = await registerProgram(t, await seedConfig({ engine }));
  await markReady(program);
  await drainQueuedJobs();
  return { t, program };
}

async function submit(t: Tenant, path: string): Promise<string> {
  const res = await api(t, path, { method: 'POST', body: '{"input": ["0x0101"]}', headers: { 'content-type': 'application/json' } });
  return (await json<{ id: string }>(res, 200)).id;
}

const proofs = (t: Tenant, program: string, n: number) =>
  Promise.all(Array.from({ length: n }, () => submit(t, `/v1/proofs?program_id=${program}`)));

/** An agent's call with another declaration than its own. */
const post = (agent: TestAgent, path: string, body: unknown) =>
  api(null, `/internal/v1/${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { authorization: `Bearer ${agent.token}`, 'content-type': 'application/json' },
  });

const leasedOf = async (t: Tenant) =>
  (await env.DB.prepare(`SELECT count(*) AS n FROM jobs WHERE org_id = ? AND status = 'leased'`).bind(t.orgId).first<{ n: number }>())!.n;

/** The agent token of an agent that reported its presence. */
const tokenRow = (agent: TestAgent) =>
  env.DB.prepare(
    'SELECT machine_type, max_gpus, max_leases, held_leases, held_gpus FROM agent_tokens WHERE id = (SELECT token_id FROM agents WHERE id = ?)',
  )
    .bind(agent.caps.agent_id)
    .first<Record<string, unknown>>();

describe('the machine type a host is billed as is its token’s', () => {
  it('a host declaring "constructor", "__proto__", "toString" or another type is refused at presence and claim (403), and claims nothing', async () => {
    const { t, program } = await readyProgram();
    const [proof] = await proofs(t, program, 1);
    const host = await seedAgent({ machine_type: 'h100' }, { online: false });
    const { hint_job_id: _, ...who } = host.caps;
    for (const machine_type of ['constructor', '__proto__', 'toString', 'valueOf', 'a100']) {
      const seen = await post(host, 'agents/presence', { ...who, machine_type });
      expect(seen.status, machine_type).toBe(403);
      expect((await seen.json<{ detail: string }>()).detail).toContain('This agent token is for machine type "h100"');
      const claimed = await post(host, 'jobs/claim', { ...host.caps, machine_type });
      expect(claimed.status, machine_type).toBe(403);
      expect((await claimed.json<{ detail: string }>()).detail).toContain(`not ${JSON.stringify(machine_type)}`);
    }
    // Nothing recorded of it, nothing claimed for it.
    expect(await env.DB.prepare('SELECT count(*) AS n FROM agents WHERE id = ?').bind(host.caps.agent_id).first('n')).toBe(0);
    expect((await json(await api(t, `/v1/proofs/${proof}`), 200)).state).toBe('Queued');

    // Declared as it is, it works; the proof says what the token says.
    await presence(host);
    const job = await claimJob(host);
    expect(job.subject_id).toBe(proof);
    expect((await json(await api(t, `/v1/proofs/${proof}`), 200)).machine_type).toBe('h100');
    const leaseRow = await env.DB.prepare('SELECT machine_type FROM leases WHERE id = ?').bind(job.lease_id).first();
    expect(leaseRow).toEqual({ machine_type: 'h100' });
  });

  it('a type this deployment does not price (no "*" in MACHINE_RATES) is refused, after the token is checked', async () => {
    const priced = { ...env, MACHINE_RATES: '{"h100": 2.5}' };
    const call = (token: string, path: string, body: unknown) =>
      app.request(
        `https://api.test/internal/v1/${path}`,
        { method: 'POST', body: JSON.stringify(body), headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' } },
        priced,
      );
    const a100 = await seedAgent({ machine_type: 'a100' }, { online: false });
    const { hint_job_id: _, ...who } = a100.caps;
    const unpriced = await call(a100.token, 'agents/presence', who);
    expect(unpriced.status).toBe(403);
    expect((await unpriced.json<{ detail: string }>()).detail).toMatch(/"a100" has no rate in this deployment's MACHINE_RATES/);
    expect((await call(a100.token, 'jobs/claim', a100.caps)).status).toBe(403);
    // Declaring a priced type it is not: still refused, as another type.
    const other = await call(a100.token, 'jobs/claim', { ...a100.caps, machine_type: 'h100' });
    expect(other.status).toBe(403);
    expect((await other.json<{ detail: string }>()).detail).toContain('This agent token is for machine type "a100"');
    // A made-up token is 401, whatever it declares.
    expect((await call('at_made_up', 'jobs/claim', a100.caps)).status).toBe(401);
  });

  it('the operator’s statements refuse prototype and unplain names for a token’s machine type', async () => {
    const scope = { engines: ['dev'], configs: null };
    for (const machineType of ['constructor', '__proto__', 'toString', 'hasOwnProperty', '*', 'a b', '', 'x'.repeat(101)]) {
      await expect(createAgentToken('bad', scope, { machineType, maxGpus: 1, maxLeases: 1 }), machineType).rejects.toThrow(
        /machine type|every JavaScript object/,
      );
      await expect(setAgentTokenLimits({ id: 'agt_x' }, { machineType }), machineType).rejects.toThrow(
        /machine type|every JavaScript object/,
      );
    }
    await expect(createAgentToken('bad', scope, { machineType: 'h100', maxGpus: 10_001, maxLeases: 1 })).rejects.toThrow(/GPUs/);
    await expect(createAgentToken('bad', scope, { machineType: 'h100', maxGpus: 1, maxLeases: 0 })).rejects.toThrow(/leases/);
  });
});

describe('a rate card is read by name only for what it says', () => {
  it('no name reads a function or NaN; a rate that is not a number ≥ 0 is left out; no "*": other names are unknown', () => {
    const problems: string[] = [];
    const card = parseMachineRates('{"*": 1.5, "h100": 2, "x": "NaN", "y": -1, "__proto__": 3}', (p) => problems.push(p));
    for (const name of ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'a100']) expect(rateOf(card, name), name).toBe(1.5);
    expect(rateOf(card, 'h100')).toBe(2);
    expect(rateOf(card, '__proto__')).toBe(3); // an own name of the card, like any other
    expect(problems).toEqual([expect.stringContaining('"x"'), expect.stringContaining('"y"')]);
    const strict = parseMachineRates('{"h100": 2}');
    expect(rateOf(strict, 'constructor')).toBeNull();
    expect(rateOf(strict, 'h100')).toBe(2);
    expect(
      rateOf(
        parseMachineRates('[1]', () => {}),
        'h100',
      ),
    ).toBeNull();
    expect(rateOf(parseMachineRates(undefined), 'anything')).toBe(0);
  });

  it('a card of any size binds no parameter in SQL: its names and rates are written as literals, a quote in a name too', async () => {
    const many = Object.fromEntries(Array.from({ length: 60 }, (_, i) => [`gpu-${i}`, i / 4]));
    const card = parseMachineRates(JSON.stringify({ ...many, "it's": 7.5, '*': 0.5, 'nul\u0000': 1 }), () => {});
    expect(card.byType.has('nul\0')).toBe(false);
    const settings = { ...fleetSettings(env), machineRates: card };
    const rateIn = async (machineType: string) => {
      const { sql: text, params } = openDb(env.DB)
        .select({ rate: rateSql(settings, sql`m.t`) })
        .from(sql`(SELECT ${machineType} AS t) m`)
        .toSQL();
      expect(params).toEqual([machineType]);
      const [[rate]] = await env.DB.prepare(text)
        .bind(...params)
        .raw<[number]>();
      return rate;
    };
    expect(await rateIn('gpu-59')).toBe(14.75);
    expect(await rateIn("it's")).toBe(7.5);
    expect(await rateIn("x' OR 1 --")).toBe(0.5);
  });

  it('a lease from before the migration naming "constructor" is charged at the card’s rate, and its cost_limit holds (heartbeat, status, completion)', async () => {
    const { t, program } = await readyProgram();
    const execution = await submit(t, `/v1/executions?program_id=${program}&cost_limit=5000`);
    const job = await claimJob(await seedAgent());
    // What a host could declare before: the lease names a type no card names (MACHINE_RATES is {"*": 1.0}).
    await env.DB.prepare(`UPDATE leases SET machine_type = 'constructor', claimed_at = claimed_at - 60000 WHERE id = ?`)
      .bind(job.lease_id)
      .run();
    const row = (await env.DB.prepare('SELECT * FROM leases WHERE id = ?').bind(job.lease_id).first<LeaseRow>())!;
    expect(leaseCost(row, fleetSettings(env), row.claimed_at + 3_600_000)).toBe(1_000_000);
    expect(await json(await lease(job, '/status'), 200)).toMatchObject({ cancel: true });
    expect(await json(await lease(job, '/heartbeat', {}), 200)).toMatchObject({ cancel: true });
    const done = await lease(job, '/complete', { kind: 'execute', exit_code: 0, public_values: '0x00', error: null, metrics: {} });
    expect(await json(done, 200)).toMatchObject({ status: 'canceled' });
    const ex = await json(await api(t, `/v1/executions/${execution}`), 200);
    expect(ex).toMatchObject({ status: 'Failed' });
    expect(ex.cost).toBeGreaterThanOrEqual(4990);
    expect(ex.cost).toBeLessThanOrEqual(5000);
  });
});

describe('what a token’s hosts may hold', () => {
  it('a host declaring 10,000 GPUs on a token of 2 holds 2 GPUs’ worth of jobs, whatever it renews; presence records 2', async () => {
    const { t, program } = await readyProgram('openvm');
    await proofs(t, program, 5); // openvm jobs hold one GPU each
    const greedy = await seedAgent({ engines: ['openvm'], gpus: 10_000 }, { limits: { maxGpus: 2, maxLeases: 100 } });
    expect(await env.DB.prepare('SELECT gpus FROM agents WHERE id = ?').bind(greedy.caps.agent_id).first('gpus')).toBe(2);
    const held = [await claimJob(greedy), await claimJob(greedy)];
    expect((await claim(greedy)).job).toBeNull();
    for (const job of held) expect(await json(await lease(job, '/heartbeat', {}), 200)).toMatchObject({ cancel: false });
    expect((await claim(greedy)).job).toBeNull();
    expect(await leasedOf(t)).toBe(2);
    expect(await tokenRow(greedy)).toMatchObject({ max_gpus: 2, held_leases: 2, held_gpus: 2 });
    // A job handed back frees its GPU for the next claim.
    expect((await lease(held[0], '/release', {})).status).toBe(200);
    expect(await tokenRow(greedy)).toMatchObject({ held_leases: 1, held_gpus: 1 });
    expect((await claim(greedy)).job).not.toBeNull();
  });

  it('more concurrent claims than the token’s max_leases, from several hosts at once, get exactly max_leases jobs', async () => {
    const { t, program } = await readyProgram();
    await proofs(t, program, 12);
    const first = await seedAgent({ gpus: 0 }, { limits: { maxLeases: 3 } });
    // Other hosts on the same token.
    const hosts = [
      first,
      ...Array.from({ length: 3 }, () => ({ token: first.token, caps: { ...first.caps, agent_id: crypto.randomUUID() } })),
    ];
    const answers = await Promise.all(Array.from({ length: 12 }, (_, i) => claim(hosts[i % hosts.length])));
    const claimed = answers.filter((a) => a.job !== null);
    expect(claimed).toHaveLength(3);
    expect(await leasedOf(t)).toBe(3);
    expect(await tokenRow(first)).toMatchObject({ max_leases: 3, held_leases: 3 });
    // A notice for a queued job while the token is full: handed back for later, not taken.
    const queued = await env.DB.prepare(`SELECT id FROM jobs WHERE org_id = ? AND status = 'queued' LIMIT 1`)
      .bind(t.orgId)
      .first<{ id: string }>();
    expect(await claim(first, { hint_job_id: queued!.id })).toEqual({ job: null, hint: 'not-servable' });
    // One ends: one more, and no more.
    const [done] = claimed;
    expect((await lease(done.job!, '/fail', { error: 'engine crashed', retryable: false })).status).toBe(200);
    const again = await Promise.all([claim(first), claim(hosts[1]), claim(hosts[2])]);
    expect(again.filter((a) => a.job !== null)).toHaveLength(1);
    expect(await leasedOf(t)).toBe(3);
  });

  it('the operator lowers a token’s limits: new claims are held to them at once', async () => {
    const { t, program } = await readyProgram();
    await proofs(t, program, 4);
    const host = await seedAgent({ gpus: 0 }, { limits: { maxLeases: 10 } });
    await claimJob(host);
    await claimJob(host);
    await runAdmin(setAgentTokenLimits({ token: host.token }, { maxLeases: 2 }));
    expect((await claim(host)).job).toBeNull();
    await runAdmin(setAgentTokenLimits({ token: host.token }, { maxLeases: 3 }));
    expect((await claim(host)).job).not.toBeNull();
    expect(await leasedOf(t)).toBe(3);
  });
});

describe('a finished job’s cost', () => {
  it('is never NULL: a failed execution is charged 0, and a statement storing NULL for a finished one fails', async () => {
    const { t, program } = await readyProgram();
    const execution = await submit(t, `/v1/executions?program_id=${program}`);
    expect((await json(await api(t, `/v1/executions/${execution}`), 200)).cost).toBeNull(); // queued: no cost yet
    const job = await claimJob(await seedAgent());
    expect((await lease(job, '/fail', { error: 'bad input', retryable: false })).status).toBe(200);
    expect(await json(await api(t, `/v1/executions/${execution}`), 200)).toMatchObject({ status: 'Failed', cost: 0 });
    await expect(env.DB.prepare('UPDATE executions SET cost = NULL WHERE id = ?').bind(execution).run()).rejects.toThrow(
      /a finished execution has a cost/,
    );
  });
});

describe('dead credentials stay dead', () => {
  it('importing a revoked key of organization A into organization B is refused by the insert; the key stays A’s and revoked', async () => {
    const a = await seedTenant();
    const b = await seedTenant();
    await runAdmin(revokeApiKey(a.key));
    expect((await api(a, '/v1/validate_api_key')).status).toBe(401);
    await expect(runAdmin(createApiKey(b.orgId, 'thief', a.key))).rejects.toThrow(/UNIQUE constraint failed: api_keys\.key_hash/);
    await expect(runAdmin(createApiKey(a.orgId, 'again', a.key))).rejects.toThrow(/UNIQUE constraint failed: api_keys\.key_hash/);
    expect((await api(a, '/v1/validate_api_key')).status).toBe(401);
    const rows = await env.DB.prepare(
      'SELECT org_id, revoked_at IS NOT NULL AS revoked FROM api_keys WHERE key_hash = (SELECT key_hash FROM api_keys k WHERE k.owner = ? AND k.org_id = ?)',
    )
      .bind(a.owner, a.orgId)
      .all();
    expect(rows.results).toEqual([{ org_id: a.orgId, revoked: 1 }]);
    // A live key's value is not imported again either, anywhere.
    await expect(runAdmin(createApiKey(a.orgId, 'copy', b.key))).rejects.toThrow(/UNIQUE/);
  });

  it('no statement brings a revoked key or token back', async () => {
    const a = await seedTenant();
    await runAdmin(revokeApiKey(a.key));
    await expect(env.DB.prepare('UPDATE api_keys SET revoked_at = NULL WHERE org_id = ?').bind(a.orgId).run()).rejects.toThrow(
      /a revoked key stays revoked/,
    );
    const host = await seedAgent();
    await env.DB.prepare(
      `UPDATE agent_tokens SET revoked_at = '2026-01-01T00:00:00Z' WHERE id = (SELECT token_id FROM agents WHERE id = ?)`,
    )
      .bind(host.caps.agent_id)
      .run();
    await expect(
      env.DB.prepare('UPDATE agent_tokens SET revoked_at = NULL WHERE id = (SELECT token_id FROM agents WHERE id = ?)')
        .bind(host.caps.agent_id)
        .run(),
    ).rejects.toThrow(/a revoked token stays revoked/);
    expect((await post(host, 'jobs/claim', host.caps)).status).toBe(401);
  });
});
