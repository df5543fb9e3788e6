// The fleet's failure handling, end to end: real agent processes against a Worker
// under wrangler dev, with a short lease so lost agents are noticed in seconds
// (`npm run bench:faults` measures the default timing).
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { caller, liveProcessGroups, registerGuest, startStack, type AgentProcess, type Stack } from './stack.ts';

let stack: Stack;
let api: ReturnType<typeof caller>;
let loopProgram: string;
const agents: AgentProcess[] = [];
/** Work directories a test made for its agents itself (the stack removes those it made). */
const ownDirs: string[] = [];

/** Input for loop.elf: `n` iterations, about 6n instructions (~0.4 G/s here). */
const loopInput = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return { input: ['0x01' + b.toString('hex')] };
};
const LONG = 4_000_000_000; // ~15 s in a warm dev-engine worker (more on a loaded machine): long enough to interrupt
const SHORT = 200_000_000; // ~3 s

const terminal = (p: any) => ['Succeeded', 'Failed', 'Canceled'].includes(p.state);

async function agent(opts: Parameters<Stack['startAgent']>[0] = {}) {
  const a = await stack.startAgent(opts);
  agents.push(a);
  return a;
}

async function stopAgent(a: AgentProcess) {
  if (a.proc.exitCode === null) {
    a.signal('SIGKILL');
    await a.exited;
  }
}

async function jobOf(proofId: string): Promise<string> {
  const [job] = await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${proofId}'`);
  return job.id as string;
}

/** Engine processes (groups) that ran a proof's job on agent `a` and are still alive. */
async function engineProcesses(a: AgentProcess, proofId: string): Promise<number[]> {
  return liveProcessGroups(a.enginePids(await jobOf(proofId)));
}

/** Waits until none of the engine processes agent `a` started (warm workers included) is alive. */
async function noEngineLeft(a: AgentProcess, timeoutMs = 10_000): Promise<void> {
  const pids = a.enginePids();
  expect(pids.length).toBeGreaterThan(0);
  const deadline = Date.now() + timeoutMs;
  while (liveProcessGroups(pids).length > 0) {
    if (Date.now() > deadline) throw new Error(`engine processes left behind: ${liveProcessGroups(pids).join(', ')}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function leases(jobSubject: string) {
  return stack.sql(
    `SELECT l.attempt, l.outcome, l.agent_id FROM leases l JOIN jobs j ON j.id = l.job_id WHERE j.subject_id = '${jobSubject}' ORDER BY l.attempt`,
  );
}

beforeAll(async () => {
  stack = await startStack({ vars: { LEASE_TTL_SECONDS: '3' } });
  api = caller(stack);
  const a = await agent({ name: 'setup' });
  loopProgram = await registerGuest(api, stack.devConfig, 'loop.elf');
  await stopAgent(a);
}, 120_000);
afterEach(async () => {
  for (const a of agents.splice(0)) await stopAgent(a);
});
afterAll(async () => {
  await stack?.stop();
  for (const dir of ownDirs) await rm(dir, { recursive: true, force: true });
});

describe('cancel', () => {
  it('in Queued: canceled at once, never run', async () => {
    const { id } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(10));
    expect(await api.json('POST', `/v1/proofs/${id}/cancel`, {})).toMatchObject({ state: 'Canceled' });
    const a = await agent();
    await new Promise((r) => setTimeout(r, 1500)); // several pulls and an idle claim
    expect((await api.json('GET', `/v1/proofs/${id}`)).state).toBe('Canceled');
    expect(a.logs().some((l) => l.includes(id))).toBe(false);
    expect(await leases(id)).toEqual([]);
  });

  it('while executing: the agent sees it at its next status check and kills the engine’s process group', async () => {
    const a = await agent();
    const { id } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(LONG));
    await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Executing');
    await a.waitForLog(/claimed job/);
    await new Promise((r) => setTimeout(r, 500));
    expect(await api.json('POST', `/v1/proofs/${id}/cancel`, {})).toMatchObject({ state: 'Canceling' });
    const done = await api.waitFor(`/v1/proofs/${id}`, terminal, 15_000);
    expect(done.state).toBe('Canceled');
    // Charged for the attempt up to the cancel, not until the engine stopped (MACHINE_RATES "*": 1.0, one unit).
    const [lease] = await stack.sql(
      `SELECT l.claimed_at, j.cancel_requested_at FROM leases l JOIN jobs j ON j.id = l.job_id WHERE j.subject_id = '${id}'`,
    );
    expect(done.cost).toBe(Math.round(((Number(lease.cancel_requested_at) - Number(lease.claimed_at)) / 3_600_000) * 1_000_000));
    expect(await leases(id)).toMatchObject([{ attempt: 1, outcome: 'canceled' }]);
    await a.waitForLog(/"outcome":"canceled"/);
    const killed = a.enginePids(await jobOf(id));
    expect(killed).toHaveLength(1);
    expect(liveProcessGroups(killed)).toEqual([]);
    // The killed worker is not reused: a later job runs on another (the pool replaced it).
    const { id: next } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(10));
    expect((await api.waitFor(`/v1/proofs/${next}`, terminal)).state).toBe('Succeeded');
    const after = a.enginePids(await jobOf(next));
    expect(after).toHaveLength(1);
    expect(after).not.toEqual(killed);
  });
});

describe('lost agents', () => {
  it('an agent killed with SIGKILL mid-proof: the job completes on a second agent once the lease expires (no cron sweep), exactly once', async () => {
    const first = await agent({ name: 'doomed' });
    const { id } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(SHORT));
    // Mid-proof: its attempt is on record and the engine is running.
    const deadline = Date.now() + 20_000;
    while (!(await (await api.call('GET', `/v1/proofs/${id}/logs`)).text()).includes('[agent doomed] attempt 1')) {
      if (Date.now() > deadline) throw new Error('the first agent never started the job');
      await new Promise((r) => setTimeout(r, 100));
    }
    await stopAgent(first); // SIGKILL: no goodbye, its lease just stops being renewed
    await noEngineLeft(first); // its warm workers, busy or idle, die with it
    const second = await agent({ name: 'rescuer' });
    const proof = await api.waitFor(`/v1/proofs/${id}`, terminal, 60_000);
    expect(proof.state).toBe('Succeeded');
    const rows = await leases(id);
    expect(rows.map((r) => r.outcome)).toEqual(['expired', 'completed']);
    expect(rows[1].attempt).toBe(2);
    const logs = await (await api.call('GET', `/v1/proofs/${id}/logs`)).text();
    expect(logs).toMatch(
      /\[agent doomed\] attempt 1[^]*\[service [^\]]+\] The prover running this attempt stopped answering and its lease expired: queued again for another prover\.\n[^]*\[agent rescuer\] attempt 2/,
    );
    expect(logs.match(/loop: \d+ iterations/g)).toHaveLength(1); // the orphaned engine died with its agent
    const [job] = await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${id}'`);
    expect(second.logs().filter((l) => l.includes('"job finished"') && l.includes(job.id as string))).toHaveLength(1);
  });

  it('duplicate and stale queue notices lead to one run', async () => {
    const { id } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(1000));
    const [job] = await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${id}'`);
    const [old] = await stack.sql(`SELECT id FROM jobs WHERE status = 'done' LIMIT 1`);
    // At-least-once delivery: the same notice three times, plus one for a finished job.
    const notice = (jobId: string, n: number) => {
      const body = Buffer.from(JSON.stringify({ job_id: jobId, kind: 'proof' })).toString('base64');
      return `('dup-${jobId}-${n}', '${body}', 'json', ${Date.now()}, 0, 0)`;
    };
    await stack.sql(
      `INSERT INTO emulated_queue_messages (id, body, content_type, timestamp_ms, attempts, visible_at) VALUES ${[1, 2, 3].map((n) => notice(job.id as string, n)).join(', ')}, ${notice(old.id as string, 9)}`,
    );
    await Promise.all([agent({ name: 'a1' }), agent({ name: 'a2' })]);
    expect((await api.waitFor(`/v1/proofs/${id}`, terminal)).state).toBe('Succeeded');
    expect(await leases(id)).toMatchObject([{ attempt: 1, outcome: 'completed' }]);
    // Every notice was settled: acked, not left to bounce.
    const deadline = Date.now() + 10_000;
    while (
      (await stack.sql(`SELECT count(*) AS n FROM emulated_queue_messages WHERE id LIKE 'dup-%' AND dead_lettered_at IS NULL`))[0].n !== 0
    ) {
      if (Date.now() > deadline) throw new Error('notices were not acked');
      await new Promise((r) => setTimeout(r, 200));
    }
  });
});

describe('dispatch order', () => {
  it('honours priority across queued jobs', async () => {
    const a = await agent({ name: 'busy' });
    const blocker = (await api.json('POST', `/v1/proofs?program_id=${loopProgram}&priority=10`, loopInput(SHORT))).id;
    await api.waitFor(`/v1/proofs/${blocker}`, (p: any) => p.state === 'Executing');
    const submit = async (priority: number) =>
      (await api.json('POST', `/v1/proofs?program_id=${loopProgram}&priority=${priority}`, loopInput(10))).id as string;
    const low = await submit(1);
    const high = await submit(9);
    const mid = await submit(5);
    for (const id of [low, high, mid]) await api.waitFor(`/v1/proofs/${id}`, terminal, 60_000);
    const claims = a
      .logs()
      .filter((l) => l.includes('"claimed job"'))
      .map((l) => JSON.parse(l) as { job_id: string; with?: string });
    const order = claims.map((c) => c.job_id);
    const jobIds = Object.fromEntries(
      await Promise.all(
        [low, high, mid].map(async (p) => [(await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${p}'`))[0].id, p] as const),
      ),
    );
    expect(order.filter((j) => jobIds[j]).map((j) => jobIds[j])).toEqual([high, mid, low]);
    // Each came with the completion of the job before it: no claim request of its own.
    expect(claims.filter((c) => jobIds[c.job_id]).map((c) => c.with)).toEqual(['completion', 'completion', 'completion']);
  });
});

describe('resilience', () => {
  it('an agent restarted after a crash clears what the crashed run left in its work directory (its artifact cache stays)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'zk-crashed-'));
    ownDirs.push(dir);
    await mkdir(join(dir, 'job-from-a-crash-1'));
    await writeFile(join(dir, 'job-from-a-crash-1', 'input'), 'left behind');
    await agent({ name: 'restarted', extraArgs: ['--work-dir', dir] });
    expect(await readdir(dir)).toEqual(['artifact-cache']);
  });

  it('graceful SIGTERM: stops pulling, finishes the running job, exits 0', async () => {
    const a = await agent({ name: 'drainer' });
    const { id } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(SHORT));
    await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Executing');
    a.signal('SIGTERM');
    await a.waitForLog(/shutting down/);
    expect(await a.exitedWithin(60_000)).toBe(0);
    expect((await api.json('GET', `/v1/proofs/${id}`)).state).toBe('Succeeded');
    expect(liveProcessGroups(a.enginePids())).toEqual([]); // its idle warm worker stopped with it
  });

  it('a token the service refuses for good stops the agent with exit 2 and one line saying why, not a poll of the refusal', async () => {
    const madeUp = await agent({ name: 'made-up', extraArgs: ['--agent-token', `at_made_up_${crypto.randomUUID()}`] });
    expect(await madeUp.exited).toBe(2);
    expect(madeUp.logs().at(-1)).toMatch(/^prover-agent: the service refuses this agent: .*HTTP 401.*Invalid or revoked agent token/);
    // The e2e token is for machine type e2e: declaring another is refused (403) for good too.
    const other = await agent({ name: 'other-type', extraArgs: ['--machine-type', 'fake-gpu'] });
    expect(await other.exited).toBe(2);
    expect(other.logs().at(-1)).toMatch(/HTTP 403.*This agent token is for machine type \\"e2e\\", not \\"fake-gpu\\"/);
  });

  it('a token revoked while its agent idles: the agent stops at its next claim (exit 2), and the job waits for another', async () => {
    const a = await agent({ name: 'revoked-later', machineType: 'fake-gpu' });
    await a.waitForLog(/agent running/);
    await stack.sql(`UPDATE agent_tokens SET revoked_at = '${new Date().toISOString()}' WHERE machine_type = 'fake-gpu'`);
    const { id } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(SHORT));
    expect(await a.exited).toBe(2);
    expect(a.logs().join('\n')).toMatch(/the service refuses this agent; stopping/);
    expect((await api.json('GET', `/v1/proofs/${id}`)).state).toBe('Queued');
    await api.json('POST', `/v1/proofs/${id}/cancel`, {});
  });

  it('past the shutdown grace (or on a second SIGTERM) the job is released to another agent', async () => {
    const a = await agent({ name: 'impatient', extraArgs: ['--shutdown-grace', '1'] });
    const { id } = await api.json('POST', `/v1/proofs?program_id=${loopProgram}`, loopInput(LONG));
    await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Executing');
    a.signal('SIGTERM');
    expect(await a.exited).toBe(0);
    expect((await leases(id)).map((r) => r.outcome)).toEqual(['released']);
    expect((await api.json('GET', `/v1/proofs/${id}`)).state).toBe('Queued');
    const b = await agent({ name: 'next' });
    await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Executing');
    b.signal('SIGTERM');
    await b.waitForLog(/shutting down/);
    b.signal('SIGTERM');
    expect(await b.exited).toBe(0);
    // The test sees Executing when the claim commits, which can be before the agent has its
    // answer: both signals may come first. That job is released unrun too (the agent's log
    // comes with a failure; before stop 37 it ran to its end and failed).
    expect(
      (await leases(id)).map((r) => r.outcome),
      `agent "next":\n${b.logs().join('\n')}`,
    ).toEqual(['released', 'released']);
    expect(await engineProcesses(b, id)).toEqual([]);
    expect(liveProcessGroups([...a.enginePids(), ...b.enginePids()])).toEqual([]);
    await api.json('POST', `/v1/proofs/${id}/cancel`, {});
  });
});
