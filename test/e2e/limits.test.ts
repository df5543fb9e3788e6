// Job limits end to end (README "Job limits"): a Worker under wrangler dev and a real
// prover-agent with the dev engine. A cycle limit stops the guest mid-execution; a
// deadline stops a running job; both end Failed naming the limit and the figure (never
// Canceling on the way). A quota lowered below what runs holds the queued jobs (org_quota).
// The host's own limits on a guest (issue 28): its time limit, its cancel, and a log
// that reaches its cap ending with what it left out and the job's last lines.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { printBombElf, slowHintElf } from '../engine/dev/helpers.ts';
import { caller, liveProcessGroups, registerElf, registerGuest, startStack, type AgentProcess, type Stack } from './stack.ts';

let stack: Stack;
let api: ReturnType<typeof caller>;
let agent: AgentProcess;

beforeAll(async () => {
  stack = await startStack({ vars: { RENOTIFY_AFTER_SECONDS: '0' } });
  api = caller(stack);
  agent = await stack.startAgent({ name: 'e2e-limits' });
});
afterAll(async () => stack?.stop());

/** loop.elf's input: its iteration count N, a 0x01 entry of one little-endian u32 (6 instructions a round: test/guests/README.md). */
const rounds = (n: number) => {
  const le = Buffer.alloc(4);
  le.writeUInt32LE(n);
  return '0x01' + le.toString('hex');
};
const ended = (r: any) => ['Succeeded', 'Failed'].includes(r.state ?? r.status);

describe('job limits with a real agent (dev engine)', () => {
  it('a cycle limit stops the guest mid-execution: Failed, naming the limit and the cycles reached', async () => {
    const program = await registerGuest(api, stack.devConfig, 'loop.elf');
    // 10^9 rounds is 6·10^9 instructions, seconds of work; the limit stops it at 2·10^6.
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}&cycle_limit=2000000`, { input: [rounds(1_000_000_000)] });
    const proof = await api.waitFor(`/v1/proofs/${id}`, ended);
    expect(proof).toMatchObject({
      state: 'Failed',
      cycle_limit: 2000000,
      error_message: 'Cycle limit reached: the job ran 2000000 cycles before it was stopped; its cycle_limit is 2000000',
    });
    expect(await (await api.call('GET', `/v1/proofs/${id}/logs`)).text()).toMatch(/stopped at the job's cycle limit, 2000000 cycles/);

    const { id: ex } = await api.json('POST', `/v1/executions?program_id=${program}&cycle_limit=1000`, { input: [rounds(1_000_000)] });
    expect(await api.waitFor(`/v1/executions/${ex}`, ended)).toMatchObject({
      status: 'Failed',
      error_message: expect.stringMatching(/^Cycle limit reached: the job ran 1000 cycles/),
    });
  });

  it('a deadline stops a running job: its agent stops the engine, and it ends Failed', async () => {
    // A guest that never ends and runs few instructions: on a fast host a long loop.elf
    // could reach the default cycle limit before the deadline; this one cannot.
    const program = await registerElf(api, stack.devConfig, 'endless.elf', slowHintElf());
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}&deadline_seconds=4`, { input: [] });
    await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Executing');
    const seen = new Set<string>();
    const proof = await api.waitFor(`/v1/proofs/${id}`, (p: any) => (seen.add(p.state), ended(p)));
    expect(proof.state).toBe('Failed');
    expect(seen).not.toContain('Canceling'); // a limit's stop is no cancel
    expect(proof.error_message).toMatch(/^Deadline passed: the job was still running at its deadline, 4 s after its submission/);
    // Stopped because of it, so not before it (how long after depends on the host's load, not on the service).
    expect(Date.parse(proof.terminated_at)).toBeGreaterThanOrEqual(Date.parse(proof.deadline_at));
    expect(proof.cost).toBeGreaterThan(0);
  });

  it('org_quota: a quota lowered below what the organization runs holds its queued job, saying so, until a running one ends', async () => {
    const program = await registerGuest(api, stack.devConfig, 'loop.elf');
    // The running job must outlast the polling below on any host: a guest that never ends.
    const endless = await registerElf(api, stack.devConfig, 'endless.elf', slowHintElf());
    const { id: long } = await api.json('POST', `/v1/proofs?program_id=${endless}`, { input: [] });
    await api.waitFor(`/v1/proofs/${long}`, (p: any) => p.state === 'Executing');
    // Queued, then the operator lowers the quota to the one job running.
    const { id: held } = await api.json('POST', `/v1/executions?program_id=${program}`, { input: [rounds(10)] });
    await stack.sql(`UPDATE organizations SET max_active_jobs = 1 WHERE id = 'org_e2e'`);
    try {
      // The sweep writes the reason (RENOTIFY_AFTER_SECONDS 0: it looks at every lane).
      let record: any;
      await expect
        .poll(
          async () => {
            await stack.sweep();
            record = await api.json('GET', `/v1/executions/${held}`);
            return record.waiting_reason;
          },
          { timeout: 30_000, interval: 1_000 },
        )
        .toBe('org_quota');
      expect(record).toMatchObject({
        status: 'Queued',
        waiting_detail: 'its organization runs 1 jobs and its max_active_jobs quota is 1',
        estimated_start_at: null,
      });
      // The running proof ends (canceled): the held execution runs.
      await api.json('POST', `/v1/proofs/${long}/cancel`, {});
      await api.waitFor(`/v1/proofs/${long}`, (p: any) => p.state === 'Canceled');
      await stack.sweep(); // re-notifies the lane, servable again
      expect(await api.waitFor(`/v1/executions/${held}`, ended)).toMatchObject({ status: 'Succeeded' });
    } finally {
      await stack.sql(`UPDATE organizations SET max_active_jobs = NULL WHERE id = 'org_e2e'`);
    }
  });
});

describe("the host's limits on a guest (an agent with --job-time-limit dev=5)", () => {
  let host: AgentProcess;
  let slow: string;
  beforeAll(async () => {
    agent.signal('SIGKILL'); // idle: every job above has ended
    await agent.exited;
    host = await stack.startAgent({ name: 'e2e-guarded', extraArgs: ['--job-time-limit', 'dev=5'] });
    slow = await registerElf(api, stack.devConfig, 'slow.elf', slowHintElf());
  });
  const jobOf = async (proof: string) => (await stack.sql(`SELECT id FROM jobs WHERE subject_id = '${proof}'`))[0].id as string;

  it('a guest whose every instruction costs the host milliseconds is stopped at the time limit: Failed, saying so, its engine gone', async () => {
    const { id } = await api.json('POST', `/v1/proofs?program_id=${slow}`, { input: [] });
    const proof = await api.waitFor(`/v1/proofs/${id}`, ended, 60_000);
    expect(proof).toMatchObject({
      state: 'Failed',
      error_message: 'Time limit reached: the job held its host for 5 s, the most the host allows a dev job; the agent stopped its engine',
    });
    expect(await (await api.call('GET', `/v1/proofs/${id}/logs`)).text()).toContain('stopped: Time limit reached');
    expect(liveProcessGroups(host.enginePids(await jobOf(id)))).toEqual([]);
  });

  it('a cancel stops such a guest mid-instruction: Canceled, its engine gone', async () => {
    const { id } = await api.json('POST', `/v1/proofs?program_id=${slow}`, { input: [] });
    await api.waitFor(`/v1/proofs/${id}`, (p: any) => p.state === 'Executing');
    await api.json('POST', `/v1/proofs/${id}/cancel`, {});
    expect((await api.waitFor(`/v1/proofs/${id}`, (p: any) => ['Canceled', 'Failed', 'Succeeded'].includes(p.state))).state).toBe(
      'Canceled',
    );
    expect(liveProcessGroups(host.enginePids(await jobOf(id)))).toEqual([]);
  });

  it('a guest that prints past the log’s cap: the log stays under it and ends with what was left out, then the job’s last lines', async () => {
    // 200 prints of 64 KiB, a newline every 8 KiB: 12.5 MiB of output, a 4 MiB log cap.
    const lines = new Uint8Array(64 * 1024).fill(0x78);
    for (let at = 8191; at < lines.length; at += 8192) lines[at] = 0x0a;
    const program = await registerElf(api, stack.devConfig, 'chatty.elf', printBombElf(200, lines));
    const { id } = await api.json('POST', `/v1/proofs?program_id=${program}`, { input: [] });
    expect((await api.waitFor(`/v1/proofs/${id}`, ended, 60_000)).state).toBe('Succeeded');
    const res = await api.call('GET', `/v1/proofs/${id}/logs`);
    const log = await res.text();
    expect(res.headers.get('x-log-truncated')).not.toBe('true'); // the agent kept under the cap: no marker of the service's
    expect(new TextEncoder().encode(log).length).toBeLessThanOrEqual(4 * 1024 * 1024);
    expect(log).toMatch(/\n\[agent\] \d+ lines \(\d+ bytes\) left out here: this job's log is capped \(4194304 bytes, 2048 chunks\)/);
    expect(log).toMatch(/guest: \[further output not logged\]\n/);
    expect(log.trimEnd().split('\n').at(-1)).toMatch(/dev engine: wrote a dev stark proof/);
  });
});
