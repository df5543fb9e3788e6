// The job runner (prover-agent/src/agent/job-runner.ts) from claim to report, against a
// fake lease client (the service's /internal/v1/lease callbacks) and a fake engine
// launcher: what the runner asks of the service, in order, for each way a job can end.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ArtifactCache } from '../../prover-agent/src/agent/artifact-cache.ts';
import { HttpError } from '../../prover-agent/src/agent/http.ts';
import { CANCEL_KILL_GRACE_MS, JobRunner, type RunnerOptions } from '../../prover-agent/src/agent/job-runner.ts';
import { createLogger } from '../../prover-agent/src/agent/log.ts';
import { Metrics } from '../../prover-agent/src/agent/metrics.ts';
import type { ServiceClient } from '../../prover-agent/src/agent/service-client.ts';
import type { ClaimedJob, FailRequest, LogChunk } from '../../prover-agent/src/protocol.ts';
import { claim, config } from './claims.ts';

/** One call the runner made on its lease: the callback's name and what it sent. */
type Request = { call: string; body?: unknown };

/** A lease client that records every call; `on` scripts the answers (default: what a current lease answers). */
function fakeLease(
  files: Record<string, string>,
  on: { heartbeat?: () => unknown; status?: () => unknown; complete?: (req: unknown) => unknown } = {},
) {
  const requests: Request[] = [];
  const answer = async (call: string, body: unknown, result: unknown) => {
    requests.push({ call, body });
    return result;
  };
  const lease = {
    heartbeat: async (req: unknown) => {
      requests.push({ call: 'heartbeat', body: req });
      return on.heartbeat ? on.heartbeat() : { cancel: false, lease_expires_at: Date.now() + 12_000 };
    },
    status: async () => {
      requests.push({ call: 'status' });
      return on.status ? on.status() : { cancel: false };
    },
    logs: (chunk: unknown) => answer('logs', chunk, { accepted: 'appended' }),
    complete: (req: unknown) => answer('complete', req, on.complete ? on.complete(req) : { status: 'completed' }),
    fail: (req: unknown) => answer('fail', req, { status: (req as { retryable: boolean }).retryable ? 'requeued' : 'failed' }),
    canceled: (ending: unknown) => answer('canceled', ending, { status: 'canceled' }),
    release: (ending: unknown) => answer('release', ending, { status: 'requeued' }),
    download: async (name: string, path: string) => {
      requests.push({ call: 'download', body: name });
      await writeFile(path, files[name] ?? '');
    },
    upload: (name: string) => answer('upload', name, undefined),
  };
  return { requests, service: { lease: () => lease } as unknown as ServiceClient };
}

type Outcome =
  | { kind: 'result'; result: unknown }
  | { kind: 'job-error'; message: string }
  | { kind: 'crash'; message: string }
  | { kind: 'killed'; signal: string };

/**
 * An engine launcher whose operation runs `body` (given the request and the event
 * callback) and ends with what it returns; a kill ends a running operation as a
 * signal would. Records each operation it was asked for and each kill.
 */
function fakeEngines(body: (req: any, emit: (e: unknown) => void, killed: Promise<void>) => Promise<Outcome>) {
  const started: any[] = [];
  const kills: number[] = [];
  return {
    started,
    kills,
    launcher: {
      async start(req: any, onEvent: (e: any) => void) {
        started.push(req);
        let kill!: () => void;
        const killed = new Promise<void>((resolve) => (kill = resolve));
        const done = Promise.race([body(req, onEvent, killed), killed.then((): Outcome => ({ kind: 'killed', signal: 'SIGTERM' }))]);
        return {
          pid: 4242,
          done,
          async kill(graceMs: number) {
            kills.push(graceMs);
            kill();
            await done;
          },
        };
      },
    },
  };
}

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'job-runner-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const quiet = createLogger('error', {}, () => true);

/** Runner options with an open artifact cache of its own (1 MiB). */
async function options(engines: { start: unknown }): Promise<RunnerOptions> {
  const cache = new ArtifactCache(join(dir, 'cache'), 1 << 20, quiet);
  await cache.open();
  return {
    workRoot: join(dir, 'work'),
    engineOptions: {},
    engines: engines as RunnerOptions['engines'],
    artifacts: cache,
    killGraceMs: 10_000,
    agentName: 'box',
    machineType: 'test-machine',
    jobTimeLimitsMs: {},
  };
}

/** A proof job with every way of getting an input: inline (input), shared and cached (ELF, VMEXE, baseline, a child proof). */
const proofClaim = (id: string) =>
  claim('proof', {
    id,
    subject_id: `proof-${id}`,
    proof: { proof_type: 'stark', num_children: 1 },
    artifacts: ['elf', 'vmexe', 'input', 'baseline', 'child-0'],
    shared_artifacts: { elf: 'programs/p/elf', vmexe: 'programs/p/vmexe', baseline: 'programs/p/baseline', 'child-0': 'proofs/c/stark' },
    inline_artifacts: { input: Buffer.from('{"input":["0x01"]}').toString('base64') },
  });

const served = { elf: 'ELF bytes', vmexe: 'VMEXE bytes', baseline: '{"baseline":1}', 'child-0': '{"child":0}' };

const run = (service: ServiceClient, job: ClaimedJob, opts: RunnerOptions) =>
  new JobRunner(service, job, [], opts, quiet, new Metrics()).run();

describe('published key digests', () => {
  it('an openvm proof runs with the digests the service publishes for its config; a dev proof asks for none', async () => {
    const { requests, service } = fakeLease(served);
    const digests = { app_pk: { version: 2, sha256: 'a'.repeat(64), size: 10 } };
    const asked: string[] = [];
    (service as unknown as { publishedKeys: (id: string) => Promise<unknown> }).publishedKeys = async (id: string) => {
      asked.push(id);
      return digests;
    };
    const { started, launcher } = fakeEngines(async (req) => {
      await writeFile(req.operation.outputPath, '{"proof":"stark"}');
      return { kind: 'result', result: { public_values: '0x' } };
    });
    const opts = await options(launcher);
    const openvm = { ...proofClaim('k1'), config: { ...config, id: 'cfg_gpu', engine: 'openvm' } };
    expect(await run(service, openvm, opts)).toBe('completed');
    expect(asked).toEqual(['cfg_gpu']);
    expect(started[0].publishedKeys).toEqual(digests);

    expect(await run(service, proofClaim('k2'), opts)).toBe('completed');
    expect(asked).toEqual(['cfg_gpu']);
    expect(started[1].publishedKeys).toBeUndefined();
    expect(requests.filter((r) => r.call === 'complete')).toHaveLength(2);
  });

  it('a failure to read the digests fails the attempt as the agent’s (retryable), before the engine starts', async () => {
    const { requests, service } = fakeLease(served);
    (service as unknown as { publishedKeys: () => Promise<unknown> }).publishedKeys = async () => {
      throw new Error('service unreachable');
    };
    const { started, launcher } = fakeEngines(async () => ({ kind: 'result', result: {} }));
    expect(await run(service, { ...proofClaim('k3'), config: { ...config, engine: 'openvm' } }, await options(launcher))).toBe('requeued');
    expect(started).toHaveLength(0);
    expect(requests.at(-1)).toMatchObject({
      call: 'fail',
      body: { retryable: true, error: expect.stringContaining('service unreachable') },
    });
  });
});

describe('a job that completes', () => {
  it('gets its inputs inline, downloaded, then from the cache; runs the engine on them; completes with its last log and its result inline', async () => {
    const { requests, service } = fakeLease(served);
    const seenInputs: Record<string, string>[] = [];
    const { started, launcher } = fakeEngines(async (req, emit) => {
      const op = req.operation;
      seenInputs.push({
        elf: await readFile(op.elfPath, 'utf8'),
        vmexe: await readFile(op.vmexePath, 'utf8'),
        input: await readFile(op.inputPath, 'utf8'),
        baseline: await readFile(op.baselinePath, 'utf8'),
        child: await readFile(op.childProofPaths[0], 'utf8'),
      });
      emit({ type: 'log', line: 'guest says hello' });
      emit({ type: 'progress', phase: 'AppProving', metrics: { num_instructions: 42 } });
      await writeFile(op.outputPath, '{"proof":"stark"}');
      return { kind: 'result', result: { public_values: '0xabcd', cells_used: 7 } };
    });
    const opts = await options(launcher);

    expect(await run(service, proofClaim('j1'), opts)).toBe('completed');

    // The input came with the claim; the shared files were downloaded (in parallel, so in any order).
    const downloads = requests.filter((r) => r.call === 'download').map((r) => r.body);
    expect(downloads.sort()).toEqual(['baseline', 'child-0', 'elf', 'vmexe']);
    expect(requests.map((r) => r.call)).toEqual(['download', 'download', 'download', 'download', 'complete']);
    expect(started).toHaveLength(1);
    expect(started[0]).toMatchObject({
      engine: 'dev',
      config,
      gpus: [],
      operation: { op: 'prove', app_exe_commit: '0x' + '22'.repeat(32) },
    });
    expect(started[0].operation.childProofPaths).toHaveLength(1);
    expect(seenInputs[0]).toEqual({
      elf: 'ELF bytes',
      vmexe: 'VMEXE bytes',
      input: '{"input":["0x01"]}',
      baseline: '{"baseline":1}',
      child: '{"child":0}',
    });

    const complete = requests.at(-1)!.body as any;
    expect(complete).toMatchObject({
      kind: 'proof',
      proofs: ['stark'],
      public_values: '0xabcd',
      metrics: { num_instructions: 42, cells_used: 7 },
      results: { stark: '{"proof":"stark"}' },
      log: { seq: 3, offset: 100 },
    });
    expect(complete.log.text).toContain('attempt 1 of proof proof-j1 on test-machine');
    expect(complete.log.text).toContain('guest says hello\nphase: AppProving\n');

    // A second job of the same program: its shared inputs come from the cache, no download.
    requests.length = 0;
    expect(await run(service, proofClaim('j2'), opts)).toBe('completed');
    expect(requests.map((r) => r.call)).toEqual(['complete']);
    expect(seenInputs[1]).toEqual(seenInputs[0]);
  });

  it('a commit sends its baseline inline and the commits it computed', async () => {
    const { requests, service } = fakeLease(served);
    const { started, launcher } = fakeEngines(async () => ({
      kind: 'result',
      result: { app_exe_commit: '0xexe', app_vm_commit: '0xvm', baseline: { b: 1 } },
    }));
    const job = claim('commit', { artifacts: ['elf', 'vmexe'], shared_artifacts: { elf: 'programs/p/elf', vmexe: 'programs/p/vmexe' } });
    expect(await run(service, job, await options(launcher))).toBe('completed');
    expect(started[0].operation).toMatchObject({ op: 'commit' });
    expect(requests.map((r) => r.call)).toEqual(['download', 'download', 'complete']);
    expect(requests.at(-1)!.body).toMatchObject({
      kind: 'commit',
      app_exe_commit: '0xexe',
      app_vm_commit: '0xvm',
      results: { baseline: '{"b":1}' },
      log: { seq: 3, offset: 100 },
    });
  });

  it('an execution reports what the guest printed, its exit code and metrics', async () => {
    const { requests, service } = fakeLease(served);
    const { started, launcher } = fakeEngines(async () => ({
      kind: 'result',
      result: { exit_code: 0, public_values: '0x01', stdout: 'printed\n', error: null, num_instructions: 9, total_cycle: 9 },
    }));
    const job = claim('execute', {
      execution: { mode: 'meter' },
      artifacts: ['elf', 'vmexe', 'input'],
      inline_artifacts: { elf: '', vmexe: '', input: '' },
    });
    expect(await run(service, job, await options(launcher))).toBe('completed');
    expect(started[0].operation).toMatchObject({ op: 'execute', mode: 'meter' });
    expect(requests.map((r) => r.call)).toEqual(['complete']);
    const body = requests[0].body as any;
    expect(body).toMatchObject({
      kind: 'execute',
      exit_code: 0,
      public_values: '0x01',
      error: null,
      metrics: { num_instructions: 9, total_cycle: 9 },
    });
    expect(body.log.text).toContain('printed\n');
  });

  it('a verification reports its verdict', async () => {
    const { requests, service } = fakeLease({ proof: '{}' });
    const { started, launcher } = fakeEngines(async () => ({ kind: 'result', result: { verified: false, reason: 'bad proof' } }));
    const job = claim('verify', { program: null, verification: { proof_type: 'evm' }, artifacts: ['proof'] });
    expect(await run(service, job, await options(launcher))).toBe('completed');
    expect(started[0].operation).toMatchObject({ op: 'verify', proof_type: 'evm', baselinePath: null, app_exe_commit: null });
    expect(requests.map((r) => r.call)).toEqual(['download', 'complete']);
    expect(requests[1].body).toMatchObject({ kind: 'verify', verified: false, reason: 'bad proof' });
    expect((requests[1].body as any).log.text).toContain('proof rejected: bad proof');
  });
});

describe('a completion that claims the next job', () => {
  const verifyJob = () => claim('verify', { program: null, verification: { proof_type: 'evm' }, artifacts: ['proof'] });
  const verdict = async () => ({ kind: 'result' as const, result: { verified: true, reason: null } });
  const who = { agent_id: 'agent-1', name: 'box', machine_type: 'test-machine', engines: ['dev'], configs: [] };

  it('carries the claim for the GPUs the job frees, and hands over the job it brought; without a claim, none is sent', async () => {
    const next = claim('verify', { id: 'job-next' });
    const { requests, service } = fakeLease({ proof: '{}' }, { complete: () => ({ status: 'completed', next }) });
    const offered: number[][] = [];
    const opts = {
      ...(await options(fakeEngines(verdict).launcher)),
      nextClaim: (gpus: number[]) => (offered.push(gpus), { ...who, gpus: gpus.length }),
    };
    const runner = new JobRunner(service, verifyJob(), [2, 3], opts, quiet, new Metrics());
    expect(await runner.run()).toBe('completed');
    expect(offered).toEqual([[2, 3]]);
    expect(requests.at(-1)!.body).toMatchObject({ kind: 'verify', next_claim: { ...who, gpus: 2 } });
    expect(runner.nextJob).toEqual(next);

    // Shutting down: the agent offers nothing, and the completion claims nothing.
    const quietService = fakeLease({ proof: '{}' });
    const draining = new JobRunner(quietService.service, verifyJob(), [], { ...opts, nextClaim: () => null }, quiet, new Metrics());
    expect(await draining.run()).toBe('completed');
    expect(quietService.requests.at(-1)!.body).not.toHaveProperty('next_claim');
    expect(draining.nextJob).toBeUndefined(); // an older service's answer has no `next` either: the agent claims by itself
  });
});

describe('a job that fails', () => {
  it("the engine's job error fails the job for good, with the message in its last log", async () => {
    const { requests, service } = fakeLease(served);
    const { launcher } = fakeEngines(async () => ({ kind: 'job-error', message: 'guest panicked' }));
    expect(
      await run(
        service,
        claim('commit', { artifacts: ['elf', 'vmexe'], inline_artifacts: { elf: '', vmexe: '' } }),
        await options(launcher),
      ),
    ).toBe('failed');
    expect(requests.map((r) => r.call)).toEqual(['fail']);
    const body = requests[0].body as any;
    expect(body).toMatchObject({ error: 'guest panicked', retryable: false, log: { seq: 3, offset: 100 } });
    expect(body.log.text).toContain('error: guest panicked');
  });

  it('an engine crash fails the attempt as retryable', async () => {
    const { requests, service } = fakeLease(served);
    const { launcher } = fakeEngines(async () => ({ kind: 'crash', message: 'engine process exited with code 134' }));
    expect(
      await run(
        service,
        claim('commit', { artifacts: ['elf', 'vmexe'], inline_artifacts: { elf: '', vmexe: '' } }),
        await options(launcher),
      ),
    ).toBe('requeued');
    expect(requests.map((r) => r.call)).toEqual(['fail']);
    expect(requests[0].body).toMatchObject({ error: 'engine process exited with code 134', retryable: true });
    expect((requests[0].body as any).log.text).toContain('engine failure: engine process exited with code 134');
  });
});

describe('a job stopped while it runs', () => {
  it('a cancel seen at a status check stops the engine and reports the job canceled', async () => {
    let engineRunning = false;
    // The cancel shows at the first status check once the engine runs.
    const { requests, service } = fakeLease(served, { status: () => ({ cancel: engineRunning }) });
    const { kills, launcher } = fakeEngines((_req, _emit, killed) => {
      engineRunning = true;
      return killed.then(() => ({ kind: 'killed', signal: 'SIGTERM' }));
    });
    const job = claim('commit', { artifacts: ['elf', 'vmexe'], inline_artifacts: { elf: '', vmexe: '' }, cancel_check_interval_ms: 20 });
    expect(await run(service, job, await options(launcher))).toBe('canceled');
    expect(kills.length).toBeGreaterThan(0);
    expect(kills.every((grace) => grace <= 1000)).toBe(true); // a canceled job's result is dropped: a short grace
    const calls = requests.map((r) => r.call);
    expect(calls.at(-2)).toBe('status');
    expect(calls.at(-1)).toBe('canceled');
    expect(calls).not.toContain('complete');
    expect(calls).not.toContain('fail');
    expect((requests.at(-1)!.body as any).log.text).toContain('canceled: the engine was stopped');
  });

  it('a lease lost (409 to a heartbeat) stops the engine and reports nothing', async () => {
    let engineRunning = false;
    const { requests, service } = fakeLease(served, {
      // The lease is lost once the engine runs (before, a heartbeat renews it).
      heartbeat: () => {
        if (!engineRunning) return { cancel: false, lease_expires_at: Date.now() + 12_000 };
        throw new HttpError(409, '{"detail":"This lease was superseded"}', 'heartbeat');
      },
    });
    const { kills, launcher } = fakeEngines((_req, _emit, killed) => {
      engineRunning = true;
      return killed.then(() => ({ kind: 'killed', signal: 'SIGTERM' }));
    });
    const job = claim('commit', {
      artifacts: ['elf', 'vmexe'],
      inline_artifacts: { elf: '', vmexe: '' },
      heartbeat_interval_ms: 20,
      cancel_check_interval_ms: 20,
    });
    expect(await run(service, job, await options(launcher))).toBe('lost');
    expect(kills.length).toBeGreaterThan(0);
    await sleep(50); // nothing more comes after the run ended
    const calls = requests.map((r) => r.call);
    expect(calls.at(-1)).toBe('heartbeat');
    expect(calls.filter((c) => c !== 'heartbeat' && c !== 'status')).toEqual([]);
  });
});

describe('a job whose log reaches its cap', () => {
  it('ends with what was left out and its last lines, with the ending or (to an older service) flushed before it', async () => {
    for (const older of [false, true]) {
      const { requests, service } = fakeLease(served);
      const { launcher } = fakeEngines(async (_req, emit) => {
        for (let i = 0; i < 5000; i++) emit({ type: 'log', line: `guest: line ${i} ${'q'.repeat(100)}` });
        return { kind: 'job-error', message: 'guest panicked' };
      });
      const job = claim('commit', {
        artifacts: ['elf', 'vmexe'],
        inline_artifacts: { elf: '', vmexe: '' },
        log: { seq: 3, offset: 100, max_bytes: 256 * 1024, max_chunks: 2048 },
        ...(older ? { shared_artifacts: undefined } : {}),
      });
      expect(await run(service, job, await options(launcher))).toBe('failed');
      const sent = requests.flatMap((r) => (r.call === 'logs' ? [(r.body as LogChunk).text] : []));
      const ending = requests.at(-1)!;
      expect(ending.call).toBe('fail');
      if (older) expect((ending.body as FailRequest).log).toBeUndefined();
      const log = [...sent, (ending.body as FailRequest).log?.text ?? ''].join('');
      expect(Buffer.byteLength(log)).toBeLessThanOrEqual(256 * 1024 - 100);
      expect(log).toMatch(/\n\[agent\] \d+ lines \(\d+ bytes\) left out here: this job's log is capped/);
      expect(log.trimEnd().split('\n').slice(-2)).toEqual([expect.stringMatching(/^guest: line 4999 /), 'error: guest panicked']);
    }
  });
});

describe('a job stopped at a time limit', () => {
  /**
   * An engine that never ends by itself (a guest whose instructions each cost the host
   * milliseconds). The runner's timers are fake: time moves by `ms` only once the engine
   * runs, so the limit passes while it runs however loaded the machine is.
   */
  const endless = (ms: number) =>
    fakeEngines((_req, _emit, killed) => {
      setImmediate(() => vi.advanceTimersByTime(ms));
      return killed.then((): Outcome => ({ kind: 'killed', signal: 'SIGTERM' }));
    });
  const commitJob = (over: Partial<ClaimedJob> = {}) =>
    claim('commit', { artifacts: ['elf', 'vmexe'], inline_artifacts: { elf: '', vmexe: '' }, ...over });
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("past the host's limit for its engine: the engine is killed with the short grace and the job fails for good, saying why", async () => {
    const { requests, service } = fakeLease(served);
    const { kills, launcher } = endless(60_000);
    const opts = { ...(await options(launcher)), jobTimeLimitsMs: { dev: 60_000, openvm: 3_600_000 } };
    expect(await run(service, commitJob(), opts)).toBe('failed');
    expect(kills.length).toBeGreaterThan(0);
    expect(kills.every((grace) => grace <= CANCEL_KILL_GRACE_MS)).toBe(true);
    expect(requests.map((r) => r.call).filter((c) => c !== 'logs')).toEqual(['fail']); // (a minute passed: the first lines were flushed)
    const body = requests.at(-1)!.body as any;
    expect(body).toMatchObject({
      retryable: false,
      error: expect.stringMatching(/^Time limit reached: the job held its host for 60 s, the most the host allows a dev job/),
    });
    expect(body.log.text).toContain(`stopped: ${body.error}`);
  });

  it('at its deadline, when that comes first: the engine is killed and the job fails for good (the service words a deadline it sees passed)', async () => {
    const { requests, service } = fakeLease(served);
    const { kills, launcher } = endless(30_000);
    const opts = { ...(await options(launcher)), jobTimeLimitsMs: { dev: 3_600_000 } };
    expect(await run(service, commitJob({ deadline_in_ms: 30_000 }), opts)).toBe('failed');
    expect(kills.length).toBeGreaterThan(0);
    expect(requests.at(-1)).toMatchObject({ call: 'fail', body: { retryable: false, error: expect.stringMatching(/^Deadline passed/) } });
  });

  it('a deadline already passed at the claim stops the job before its engine starts', async () => {
    const { requests, service } = fakeLease(served);
    const { started, launcher } = endless(0);
    expect(await run(service, commitJob({ deadline_in_ms: 0, artifacts: ['elf'], inline_artifacts: {} }), await options(launcher))).toBe(
      'failed',
    );
    expect(started).toHaveLength(0);
    expect(requests.at(-1)).toMatchObject({ call: 'fail', body: { retryable: false, error: expect.stringMatching(/^Deadline passed/) } });
  });

  it('an engine that ended in time is reported as it ended, whatever the clock says after', async () => {
    const { requests, service } = fakeLease(served);
    const { launcher } = fakeEngines(async () => ({
      kind: 'result',
      result: { app_exe_commit: '0xexe', app_vm_commit: '0xvm', baseline: {} },
    }));
    const opts = { ...(await options(launcher)), jobTimeLimitsMs: { dev: 3_600_000 } };
    expect(await run(service, commitJob({ deadline_in_ms: 3_600_000 }), opts)).toBe('completed');
    expect(requests.map((r) => r.call)).toEqual(['complete']);
  });
});
