// The openvm engine against the stand-in CLI: command lines, outputs in the
// tool's formats, metrics and phases, GPU placement, failures, timeouts and
// cancellation, disk hygiene.
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CycleLimitError, JobError } from '../../../prover-agent/src/engine/types.ts';
import { MAX_VERIFY_PROOF_BYTES } from '../../../prover-agent/src/protocol.ts';
import { alive, makeHost, makeJob, type Host, type Job } from './harness.ts';

let host: Host;
beforeAll(async () => {
  host = await makeHost({ evm: true });
});
afterAll(() => host.cleanup());

const proveRequest = (job: Job, kind: 'app' | 'stark' | 'evm', over: Record<string, unknown> = {}) => ({
  proof_type: kind,
  elfPath: job.files.elf,
  vmexePath: job.files.vmexe,
  inputPath: job.files.input,
  childProofPaths: [] as string[],
  outputPath: join(job.workDir, `${kind}-proof.json`),
  app_exe_commit: '0x' + '00'.repeat(32),
  baselinePath: join(job.workDir, 'baseline.json'),
  ...over,
});

/** Registers the job's program: runs commit and stores the baseline as the service would. */
async function registered(job: Job) {
  const commit = await host.engine().commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe });
  await writeFile(join(job.workDir, 'baseline.json'), JSON.stringify(commit.baseline));
  return commit;
}

/** The stand-in's invocations for one job (they run inside its work directory). */
async function toolCalls(job: Job) {
  return (await host.invocations()).filter((c) => c.cwd.startsWith(job.workDir));
}

async function filesUnder(dir: string): Promise<string[]> {
  return (await readdir(dir, { recursive: true })).map(String);
}

describe('commit', () => {
  it('returns the commits and the verification baseline the tool writes', async () => {
    const job = await makeJob(host);
    const commit = await host.engine().commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe });

    expect(commit.app_exe_commit).toMatch(/^0x[0-9a-f]{64}$/);
    expect(commit.app_vm_commit).toMatch(/^0x[0-9a-f]{64}$/);
    expect(commit.baseline).toMatchObject({
      app_exe_commit: commit.app_exe_commit,
      memory_dimensions: expect.any(Object),
      num_user_pvs: expect.any(Number),
      app_vk_commit: { cached_commit: expect.stringMatching(/^0x/), vk_pre_hash: expect.stringMatching(/^0x/) },
      leaf_vk_commit: expect.any(Object),
      internal_for_leaf_vk_commit: expect.any(Object),
      internal_recursive_vk_commit: expect.any(Object),
      expected_def_hook_commit: null,
    });
  });

  it('passes the exact flags of the 2.x mapping, keys by path from the config directory', async () => {
    const job = await makeJob(host);
    const before = (await host.invocations()).length;
    await host.engine().commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe });
    const calls = (await host.invocations()).slice(before);

    expect(calls.map((c) => c.argv.slice(0, 2))).toEqual([
      ['openvm', '--version'],
      ['openvm', 'commit'],
    ]);
    const argv = calls[1].argv;
    const flag = (name: string) => argv[argv.indexOf(name) + 1];
    expect(argv.filter((a) => a.startsWith('--'))).toEqual([
      '--exe',
      '--app-pk',
      '--agg-prefix-pk',
      '--agg-pk',
      '--output-dir',
      '--manifest-path',
      '--target-dir',
    ]);
    expect(flag('--exe')).toBe(job.files.vmexe);
    expect(flag('--app-pk')).toBe(join(host.configDir, 'openvm', 'app.pk'));
    // --agg-prefix-pk is keygen's agg_prefix.pk; --agg-pk is setup's internal-recursive key.
    expect(flag('--agg-prefix-pk')).toBe(join(host.configDir, 'openvm', 'agg_prefix.pk'));
    expect(flag('--agg-pk')).toBe(join(host.home, '.openvm', 'internal_recursive.pk'));
    expect(flag('--manifest-path')).toBe(join(host.configDir, 'Cargo.toml'));
    expect(flag('--target-dir').startsWith(job.workDir)).toBe(true);
  });

  it('refuses keys that belong to another VM than the config names', async () => {
    const job = await makeJob(host, { config: { app_vm_commit: '0x' + 'ab'.repeat(32) } });
    const err = await host
      .engine()
      .commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(JobError);
    expect((err as Error).message).toMatch(/app_vm_commit .* config says 0xabab/);
  });

  it('accepts keys whose app_vm_commit matches the config', async () => {
    const first = await registered(await makeJob(host));
    const job = await makeJob(host, { config: { app_vm_commit: first.app_vm_commit.toUpperCase().replace('0X', '0x') } });
    await expect(host.engine().commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe })).resolves.toMatchObject({
      app_vm_commit: first.app_vm_commit,
    });
  });

  it('reports a program the tool cannot read as the caller’s error, with the tool’s last stderr lines', async () => {
    const job = await makeJob(host);
    await writeFile(job.files.vmexe, '');
    const err = await host
      .engine()
      .commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobError);
    expect((err as Error).message).toMatch(/^Error: reading from .*program\.vmexe failed/m);
  });
});

describe('execute', () => {
  const request = (job: Job, mode: string) => ({ elfPath: job.files.elf, vmexePath: job.files.vmexe, inputPath: job.files.input, mode });

  it('runs in pure mode and returns public values and what the guest printed', async () => {
    const job = await makeJob(host);
    const res = await host.engine().execute(job.ctx, request(job, 'pure'));
    expect(res).toMatchObject({ exit_code: 0, error: null });
    expect(res.public_values).toMatch(/^0x[0-9a-f]{64}$/);
    expect(res.stdout).toBe('fake guest: read 2 input entries (8 bytes)\n');
    expect(res.num_instructions).toBeUndefined();
  });

  it('keeps the tool’s log lines out of the guest’s output whatever RUST_LOG the host sets', async () => {
    const job = await makeJob(host);
    const res = await host.engine({ fakeEnv: { RUST_LOG: 'info', FAKE_OPENVM_SEGMENTS: '2' } }).execute(job.ctx, request(job, 'pure'));
    expect(res.stdout).toBe('fake guest: read 2 input entries (8 bytes)\n');
    const proving = await makeJob(host);
    const proved = await host
      .engine({ fakeEnv: { RUST_LOG: 'warn', FAKE_OPENVM_SEGMENTS: '2' } })
      .prove(proving.ctx, proveRequest(proving, 'stark'));
    expect(proved.num_segments).toBe(2); // --verbose, not the host's RUST_LOG, decides
  });

  it('reads the instruction count and cost in meter mode, and segments in segment mode', async () => {
    const job = await makeJob(host);
    const meter = await host.engine().execute(job.ctx, request(job, 'meter'));
    expect(meter.num_instructions).toBeGreaterThan(0);
    expect(meter.cells_used).toBe(meter.num_instructions! * 41);
    expect(job.metrics.at(-1)).toMatchObject({ num_instructions: meter.num_instructions, cells_used: meter.cells_used });

    const segment = await host.engine().execute(job.ctx, request(job, 'segment'));
    expect(segment).toMatchObject({ num_instructions: meter.num_instructions, num_segments: 1 });
  });

  it('returns a guest failure as the result’s error', async () => {
    const job = await makeJob(host);
    const engine = host.engine({
      fakeEnv: { FAKE_OPENVM_FAIL: 'run', FAKE_OPENVM_FAIL_MESSAGE: 'guest panicked: attempt to divide by zero' },
    });
    const res = await engine.execute(job.ctx, request(job, 'pure'));
    expect(res.exit_code).not.toBe(0);
    expect(res.error).toContain('Error: guest panicked: attempt to divide by zero');
  });

  it('rejects bad input and unknown modes as the caller’s errors before running the tool', async () => {
    const job = await makeJob(host, { input: { input: ['0x03ff'] } });
    await expect(host.engine().execute(job.ctx, request(job, 'pure'))).rejects.toThrow(JobError);
    await expect(host.engine().execute(job.ctx, request(job, 'pure'))).rejects.toThrow(
      /input\[0\] is invalid: input entry has prefix 03: it must start with 01 .* or 02/,
    );
    const good = await makeJob(host);
    await expect(host.engine().execute(good.ctx, request(good, 'turbo'))).rejects.toThrow(/unknown execution mode 'turbo'/);
    expect((await toolCalls(job)).some((c) => c.argv[1] === 'run')).toBe(false);
  });
});

describe('prove', () => {
  it('writes a STARK proof in the tool’s JSON format, with phases, metrics and logs', async () => {
    const job = await makeJob(host);
    const req = proveRequest(job, 'stark');
    const res = await host.engine({ fakeEnv: { FAKE_OPENVM_SEGMENTS: '3' } }).prove(job.ctx, req);

    const proof = JSON.parse(await readFile(req.outputPath, 'utf8'));
    expect(proof).toEqual({
      version: 'v2.0',
      proof: expect.stringMatching(/^[0-9a-f]+$/),
      user_pvs_proof: expect.stringMatching(/^[0-9a-f]+$/),
      deferral_merkle_proofs: null,
    });
    expect(res.public_values).toBe('0x' + proof.user_pvs_proof);
    expect(res.num_instructions).toBeGreaterThan(0);
    expect(res.cells_used).toBe(res.num_instructions! * 41);
    expect(res.num_segments).toBe(3); // one prove_segment span each in the INFO output
    expect(res.total_cycle).toBeUndefined(); // the tool prints no cycle count
    expect(job.phases).toEqual(['Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing']);
    // AppProvingDone comes from the app_prove span tree, printed before aggregation ends.
    expect(job.logs.findIndex((l) => /^INFO {5}app_prove /.test(l))).toBeLessThan(
      job.logs.findIndex((l) => l.startsWith('STARK proof completed!')),
    );
    expect(job.logs).toContain('STARK proof completed! Writing STARK proof to $WORK_DIR/stark-proof.json');
    expect(job.logs.some((l) => l.startsWith('$ ') && l.includes('openvm --verbose prove stark'))).toBe(true);
  });

  it('hides host paths from the job’s logs', async () => {
    const job = await makeJob(host);
    await host.engine().prove(job.ctx, proveRequest(job, 'stark'));
    const text = job.logs.join('\n');
    expect(text).not.toContain(host.configDir);
    expect(text).not.toContain(job.workDir);
    expect(text).not.toContain(host.home);
    expect(text).toContain('--app-pk $CONFIG_DIR/openvm/app.pk');
  });

  it('runs a metered execution, then `prove stark` with the 2.x flags', async () => {
    const job = await makeJob(host);
    const req = proveRequest(job, 'stark');
    const before = (await host.invocations()).length;
    await host.engine().prove(job.ctx, req);
    const calls = (await host.invocations()).slice(before).map((c) => c.argv);

    expect(calls.map((a) => a.slice(0, 3))).toEqual([
      ['openvm', '--version'],
      ['openvm', 'run', '--exe'],
      ['openvm', '--verbose', 'prove'],
    ]);
    expect(calls[1]).toEqual([
      'openvm',
      'run',
      '--exe',
      req.vmexePath,
      '--config',
      join(host.configDir, 'openvm.toml'),
      '--input',
      req.inputPath,
      '--mode',
      'meter',
      '--manifest-path',
      join(host.configDir, 'Cargo.toml'),
      '--target-dir',
      join(host.configDir, 'target'),
    ]);
    const prove = calls[2];
    expect(prove.slice(0, 4)).toEqual(['openvm', '--verbose', 'prove', 'stark']);
    expect(prove.filter((a) => a.startsWith('--'))).toEqual([
      '--verbose',
      '--exe',
      '--config',
      '--input',
      '--proof',
      '--app-pk',
      '--agg-prefix-pk',
      '--agg-pk',
      '--manifest-path',
      '--target-dir',
    ]);
    expect(prove[prove.indexOf('--proof') + 1]).toBe(req.outputPath);
  });

  it('a job with a cycle limit is metered first and refused before proving when over it (README "Job limits")', async () => {
    const job = await makeJob(host);
    const meterRequest = { elfPath: job.files.elf, vmexePath: job.files.vmexe, inputPath: job.files.input, mode: 'meter' };
    const metered = await host.engine().execute(job.ctx, meterRequest);
    const n = metered.num_instructions!;
    const before = (await host.invocations()).length;
    const err = await host
      .engine()
      .prove(job.ctx, { ...proveRequest(job, 'stark'), cycleLimit: n - 1 })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CycleLimitError);
    expect(err).toMatchObject({ reached: n, limit: n - 1 });
    // `run --mode meter` ran, `prove` never did
    const calls = (await host.invocations()).slice(before).map((c) => c.argv.slice(0, 3).join(' '));
    expect(calls).toContain('openvm run --exe');
    expect(calls.some((c) => c.includes('prove'))).toBe(false);
    // within the limit it proves; an execution in meter mode past it is refused the same way
    await expect(host.engine().prove(job.ctx, { ...proveRequest(job, 'stark'), cycleLimit: n })).resolves.toMatchObject({
      num_instructions: n,
    });
    await expect(host.engine().execute(job.ctx, { ...meterRequest, cycleLimit: n - 1 })).rejects.toBeInstanceOf(CycleLimitError);
  });

  it('writes an EVM proof and takes its public values from it', async () => {
    const job = await makeJob(host);
    const req = proveRequest(job, 'evm');
    const res = await host.engine().prove(job.ctx, req);
    const proof = JSON.parse(await readFile(req.outputPath, 'utf8'));
    expect(Object.keys(proof).sort()).toEqual(['app_exe_commit', 'app_vm_commit', 'proof_data', 'user_public_values', 'version']);
    expect(Object.keys(proof.proof_data).sort()).toEqual(['accumulator', 'proof']);
    expect(res.public_values).toBe(proof.user_public_values);
    const argv = (await toolCalls(job)).at(-1)!.argv;
    expect(argv[argv.indexOf('--root-pk') + 1]).toBe(join(host.home, '.openvm', 'root.pk'));
    expect(argv[argv.indexOf('--halo2-pk') + 1]).toBe(join(host.home, '.openvm', 'halo2.pk'));
  });

  it('refuses an EVM proof on a host without halo2.pk or a KZG parameter file, naming setup-config', async () => {
    for (const missing of [join(host.home, '.openvm', 'halo2.pk'), join(host.home, '.openvm', 'params', 'kzg_bn254_24.srs')]) {
      const job = await makeJob(host);
      const saved = await readFile(missing);
      await rm(missing);
      try {
        const err = await host
          .engine()
          .prove(job.ctx, proveRequest(job, 'evm'))
          .catch((e: unknown) => e);
        expect(err).not.toBeInstanceOf(JobError);
        expect((err as Error).message).toContain(missing);
        expect((err as Error).message).toMatch(/setup-config .* --evm --run/);
        expect((await toolCalls(job)).map((c) => c.argv[1])).toEqual([]);
      } finally {
        await writeFile(missing, saved);
      }
    }
  });

  it('writes an app proof and announces the end of app proving', async () => {
    const job = await makeJob(host);
    const req = proveRequest(job, 'app');
    await host.engine().prove(job.ctx, req);
    expect((await readFile(req.outputPath)).subarray(0, 6).toString()).toBe('OVMAPP');
    expect(job.phases).toEqual(['Executing', 'Executed', 'AppProving', 'AppProvingDone']);
    const last = (await host.invocations()).at(-1)!.argv;
    expect(last.slice(0, 4)).toEqual(['openvm', '--verbose', 'prove', 'app']);
    expect(last).not.toContain('--agg-pk');
  });

  it('pins the tool to one GPU: the CLI proves on the current CUDA device only', async () => {
    const job = await makeJob(host, { gpus: [2, 3] });
    await host.engine().prove(job.ctx, proveRequest(job, 'stark'));
    const calls = (await toolCalls(job)).filter((c) => c.argv[1] !== '--version');
    expect(calls.map((c) => [c.argv.find((a) => a === 'run' || a === 'prove'), c.cuda_visible_devices])).toEqual([
      ['run', '2'],
      ['prove', '2'],
    ]);
    expect(job.logs.some((l) => l.endsWith('[CUDA_VISIBLE_DEVICES=2]'))).toBe(true);
  });

  it('leaves only the proof in the work directory and never copies keys', async () => {
    const job = await makeJob(host);
    await host.engine().prove(job.ctx, proveRequest(job, 'stark'));
    expect((await filesUnder(job.workDir)).sort()).toEqual(['input.json', 'program.elf', 'program.vmexe', 'stark-proof.json']);
  });

  it('cleans its scratch directory when the tool fails too', async () => {
    const job = await makeJob(host);
    await host
      .engine({ fakeEnv: { FAKE_OPENVM_FAIL: 'prove' } })
      .prove(job.ctx, proveRequest(job, 'stark'))
      .catch(() => {});
    expect((await filesUnder(job.workDir)).sort()).toEqual(['input.json', 'program.elf', 'program.vmexe']);
  });

  it('turns a failing proof into a JobError carrying the last stderr lines', async () => {
    const job = await makeJob(host);
    const engine = host.engine({ fakeEnv: { FAKE_OPENVM_FAIL: 'prove-stark', FAKE_OPENVM_FAIL_MESSAGE: 'guest exited with code 3' } });
    const err = await engine.prove(job.ctx, proveRequest(job, 'stark')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobError);
    expect((err as Error).message).toBe(
      '[fake-openvm] prove-stark started\nError: guest exited with code 3\nLocation:\n    crates/cli/src/bin/cargo-openvm.rs:51:5',
    );
  });

  it('stops before proving when the guest fails to execute', async () => {
    const job = await makeJob(host);
    const err = await host
      .engine({ fakeEnv: { FAKE_OPENVM_FAIL: 'run' } })
      .prove(job.ctx, proveRequest(job, 'stark'))
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(JobError);
    expect(job.phases).toEqual(['Executing']);
    expect((await toolCalls(job)).map((c) => c.argv[1])).toEqual(['--version', 'run']);
  });

  it('treats GPU trouble as an infrastructure error', async () => {
    const job = await makeJob(host);
    const engine = host.engine({ fakeEnv: { FAKE_OPENVM_FAIL: 'prove', FAKE_OPENVM_FAIL_MESSAGE: 'CUDA error: out of memory' } });
    const err = await engine.prove(job.ctx, proveRequest(job, 'stark')).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err).not.toBeInstanceOf(JobError);
    expect((err as Error).message).toMatch(/^host problem \(not the caller's; the job may run again elsewhere\)/);
    expect((err as Error).message).toContain('CUDA error: out of memory');
  });

  it('treats a panic (exit 101) as the host’s problem, unless it is the guest’s cost overrun', async () => {
    const job = await makeJob(host);
    const panicking = host.engine({
      fakeEnv: { FAKE_OPENVM_PANIC: 'prove', FAKE_OPENVM_FAIL_MESSAGE: 'cargo metadata command failed for manifest path: /x/Cargo.toml' },
    });
    const err = await panicking.prove(job.ctx, proveRequest(job, 'stark')).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(JobError);
    expect((err as Error).message).toMatch(/^host problem .*\(exit status 101\)/);

    const costly = host.engine({
      fakeEnv: {
        FAKE_OPENVM_PANIC: 'prove',
        FAKE_OPENVM_FAIL_MESSAGE: 'Execution cost 3300000000000 exceeded maximum allowed cost of 3221225472000',
      },
    });
    await expect(costly.prove(job.ctx, proveRequest(job, 'stark'))).rejects.toThrow(JobError);
  });

  it('does not report metering counts that stopped at the tool’s cost cap', async () => {
    const job = await makeJob(host);
    const res = await host
      .engine({ fakeEnv: { FAKE_OPENVM_METER_COST: String(100 * 15 * 2 ** 30 + 1) } })
      .prove(job.ctx, proveRequest(job, 'stark'));
    expect(res.cells_used).toBeUndefined();
    expect(res.num_instructions).toBeUndefined();
    expect(job.metrics.some((m) => m.cells_used !== undefined || m.num_instructions !== undefined)).toBe(false);
    expect(job.logs.some((l) => l.startsWith("note: metering stopped past the tool's cost cap"))).toBe(true);
  });

  it('treats a command line the tool rejects (exit 2) as an infrastructure error naming the flag table', async () => {
    const job = await makeJob(host);
    const engine = host.engine({ fakeEnv: { FAKE_OPENVM_UNKNOWN_FLAGS: '--agg-pk' } });
    const err = await engine.prove(job.ctx, proveRequest(job, 'stark')).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(JobError);
    expect((err as Error).message).toMatch(
      /^host problem: the zkVM tool rejected the 'prove stark' command line \(exit status 2\); the flag mapping in .*commands\.ts/,
    );
    expect((err as Error).message).toContain("error: unexpected argument '--agg-pk' found");
  });

  it('refuses deferred child proofs as the caller’s error', async () => {
    const job = await makeJob(host);
    await expect(
      host.engine().prove(job.ctx, proveRequest(job, 'stark', { childProofPaths: [join(job.workDir, 'child.json')] })),
    ).rejects.toThrow(JobError);
  });

  it('stops the tool at the operation’s deadline', async () => {
    const job = await makeJob(host);
    const engine = host.engine({ timeouts: { prove: 0.5 }, fakeEnv: { FAKE_OPENVM_HANG: 'prove' } });
    const err = await engine.prove(job.ctx, proveRequest(job, 'stark')).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(JobError);
    expect((err as Error).message).toBe('openvm prove timed out after 0.5s (during prove stark); the zkVM tool was stopped');
    const pid = (await host.invocations()).at(-1)!.pid;
    expect(alive(pid)).toBe(false);
  });

  it('stops the tool when the job is canceled', async () => {
    const job = await makeJob(host);
    const proving = host.engine({ fakeEnv: { FAKE_OPENVM_HANG: 'prove' } }).prove(job.ctx, proveRequest(job, 'stark'));
    await job.logged(/hanging/);
    job.abort.abort();
    await expect(proving).rejects.toThrow(/canceled; the zkVM tool was stopped \(SIGTERM\)/);
    expect(alive((await host.invocations()).at(-1)!.pid)).toBe(false);
  });

  it('kills a tool that ignores SIGTERM once the grace period is over', async () => {
    const job = await makeJob(host);
    const engine = host.engine({ killGraceMs: 200, fakeEnv: { FAKE_OPENVM_HANG: 'prove', FAKE_OPENVM_IGNORE_SIGTERM: '1' } });
    const proving = engine.prove(job.ctx, proveRequest(job, 'stark'));
    await job.logged(/hanging/);
    job.abort.abort();
    await expect(proving).rejects.toThrow(/\(SIGKILL\)/);
    expect(alive((await host.invocations()).at(-1)!.pid)).toBe(false);
  });
});

describe('verify', () => {
  async function starkProof() {
    const job = await makeJob(host);
    const commit = await registered(job);
    const req = proveRequest(job, 'stark');
    await host.engine().prove(job.ctx, req);
    return { job, commit, proofPath: req.outputPath, baselinePath: join(job.workDir, 'baseline.json') };
  }

  it('accepts a proof of the program, with or without 0x prefixes', async () => {
    const { job, commit, proofPath, baselinePath } = await starkProof();
    const engine = host.engine();
    await expect(
      engine.verify(job.ctx, { proof_type: 'stark', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit }),
    ).resolves.toEqual({ verified: true, reason: null });

    const proof = JSON.parse(await readFile(proofPath, 'utf8'));
    const prefixed = join(job.workDir, 'prefixed.json');
    await writeFile(prefixed, JSON.stringify({ ...proof, proof: '0x' + proof.proof, user_pvs_proof: '0x' + proof.user_pvs_proof }));
    await expect(
      engine.verify(job.ctx, { proof_type: 'stark', proofPath: prefixed, baselinePath, app_exe_commit: commit.app_exe_commit }),
    ).resolves.toEqual({ verified: true, reason: null });

    const argv = (await host.invocations()).at(-1)!.argv;
    expect(argv.filter((a) => a.startsWith('--'))).toEqual(['--proof', '--app-baseline', '--agg-vk', '--manifest-path', '--target-dir']);
    expect(argv[argv.indexOf('--agg-vk') + 1]).toBe(join(host.home, '.openvm', 'internal_recursive.vk'));
  });

  it('says why a tampered proof does not verify', async () => {
    const { job, commit, proofPath, baselinePath } = await starkProof();
    const proof = JSON.parse(await readFile(proofPath, 'utf8'));
    await writeFile(proofPath, JSON.stringify({ ...proof, user_pvs_proof: '00'.repeat(32) }));
    const res = await host
      .engine()
      .verify(job.ctx, { proof_type: 'stark', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit });
    expect(res.verified).toBe(false);
    expect(res.reason).toMatch(/STARK proof verification failed/);
  });

  it('rejects files that are not STARK proofs without running the tool', async () => {
    const { job, commit, proofPath, baselinePath } = await starkProof();
    await writeFile(proofPath, '{"version": "v2.0", "proof": "zz"');
    await expect(
      host.engine().verify(job.ctx, { proof_type: 'stark', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit }),
    ).resolves.toMatchObject({ verified: false, reason: expect.stringMatching(/not a JSON document/) });
  });

  it('checks a proof the service accepted in time linear in its size: 10 M hex digits get a verdict, not a stack overflow', async () => {
    const { job, commit, proofPath, baselinePath } = await starkProof();
    const proof = JSON.parse(await readFile(proofPath, 'utf8'));
    // 14 MiB of JSON, under the service's cap on a proof to verify (MAX_VERIFY_PROOF_BYTES).
    await writeFile(proofPath, JSON.stringify({ ...proof, proof: 'ab'.repeat(5_000_000), user_pvs_proof: '0x' + 'cd'.repeat(2_000_000) }));
    expect((await stat(proofPath)).size).toBeLessThanOrEqual(MAX_VERIFY_PROOF_BYTES);
    const res = await host
      .engine()
      .verify(job.ctx, { proof_type: 'stark', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit });
    expect(res).toMatchObject({ verified: false, reason: expect.stringMatching(/STARK proof verification failed/) });
    // The tool ran on it: the file passed the agent's checks as it passed the service's.
    expect((await host.invocations()).at(-1)!.argv.slice(0, 3)).toEqual(['openvm', 'verify', 'stark']);
  });

  it('refuses a proof larger than the service takes, naming the cap, without running the tool', async () => {
    const { job, commit, proofPath, baselinePath } = await starkProof();
    await writeFile(proofPath, JSON.stringify({ version: 'v2.0', proof: 'ab'.repeat(MAX_VERIFY_PROOF_BYTES / 2), user_pvs_proof: '' }));
    const before = (await host.invocations()).length;
    await expect(
      host.engine().verify(job.ctx, { proof_type: 'stark', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit }),
    ).resolves.toEqual({
      verified: false,
      reason: expect.stringMatching(new RegExp(`^proof is \\d+ bytes, more than the service takes \\(${MAX_VERIFY_PROOF_BYTES}\\)`)),
    });
    expect((await host.invocations()).slice(before).filter((c) => c.argv[1] === 'verify')).toEqual([]);
  });

  it('refuses a baseline of another program', async () => {
    const { job, proofPath, baselinePath } = await starkProof();
    await expect(
      host.engine().verify(job.ctx, { proof_type: 'stark', proofPath, baselinePath, app_exe_commit: '0x' + '11'.repeat(32) }),
    ).rejects.toThrow(/baseline is for 0x/);
  });
});

describe('verify evm', () => {
  async function evmProof() {
    const first = await makeJob(host);
    const commit = await registered(first);
    // The service's config records the VM commit setup-config reported.
    const job = await makeJob(host, { config: { app_vm_commit: commit.app_vm_commit } });
    await writeFile(join(job.workDir, 'baseline.json'), JSON.stringify(commit.baseline));
    const req = proveRequest(job, 'evm');
    await host.engine().prove(job.ctx, req);
    return { job, commit, proofPath: req.outputPath, baselinePath: join(job.workDir, 'baseline.json') };
  }
  const stripped = (text: string) => text.replaceAll('0x', '');

  it('verifies with `verify evm` against ~/.openvm/halo2, binding the program’s and the config’s commits, with or without 0x', async () => {
    const { job, commit, proofPath, baselinePath } = await evmProof();
    const engine = host.engine();
    await expect(
      engine.verify(job.ctx, { proof_type: 'evm', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit }),
    ).resolves.toEqual({ verified: true, reason: null });
    const argv = (await toolCalls(job)).at(-1)!.argv;
    expect(argv.slice(0, 3)).toEqual(['openvm', 'verify', 'evm']);
    expect(argv.filter((a) => a.startsWith('--'))).toEqual(['--proof', '--evm-verifier', '--app-commit']);
    expect(argv[argv.indexOf('--evm-verifier') + 1]).toBe(join(host.home, '.openvm', 'halo2'));

    // The client strips every 0x before uploading (client-conventions.md).
    await writeFile(proofPath, stripped(await readFile(proofPath, 'utf8')));
    await expect(
      engine.verify(job.ctx, { proof_type: 'evm', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit }),
    ).resolves.toEqual({ verified: true, reason: null });
  });

  it('says why a tampered EVM proof does not verify', async () => {
    const { job, commit, proofPath, baselinePath } = await evmProof();
    const proof = JSON.parse(await readFile(proofPath, 'utf8'));
    await writeFile(proofPath, JSON.stringify({ ...proof, user_public_values: '0x' + '00'.repeat(32) }));
    const res = await host.engine().verify(job.ctx, { proof_type: 'evm', proofPath, baselinePath, app_exe_commit: commit.app_exe_commit });
    expect(res).toEqual({ verified: false, reason: expect.stringMatching(/EVM proof verification failed/) });
  });

  it('refuses, without running the tool, a proof of another program or one the tool would panic on', async () => {
    const { job, commit, proofPath, baselinePath } = await evmProof();
    const proof = JSON.parse(await readFile(proofPath, 'utf8'));
    const before = (await toolCalls(job)).length;
    const engine = host.engine();
    const other = await engine.verify(job.ctx, { proof_type: 'evm', proofPath, baselinePath, app_exe_commit: '0x' + '01'.repeat(32) });
    expect(other).toEqual({ verified: false, reason: expect.stringMatching(/the proof is for app_exe_commit 0x/) });

    await writeFile(proofPath, JSON.stringify({ ...proof, app_vm_commit: '0x' + 'ff'.repeat(32) }));
    const nonCanonical = await engine.verify(job.ctx, {
      proof_type: 'evm',
      proofPath,
      baselinePath,
      app_exe_commit: commit.app_exe_commit,
    });
    expect(nonCanonical).toEqual({ verified: false, reason: 'proof field "app_vm_commit" is not a canonical commit' });

    await writeFile(proofPath, JSON.stringify({ ...proof, proof_data: { ...proof.proof_data, accumulator: '0x' + 'ff'.repeat(32) } }));
    const badAccumulator = await engine.verify(job.ctx, {
      proof_type: 'evm',
      proofPath,
      baselinePath,
      app_exe_commit: commit.app_exe_commit,
    });
    expect(badAccumulator.reason).toMatch(/outside the BN254 scalar field/);
    expect((await toolCalls(job)).slice(before).map((c) => c.argv[1])).toEqual(['--version']);
  });

  it('needs the EVM verifier on the host, and names setup-config --evm', async () => {
    const starkOnly = await makeHost();
    try {
      const job = await makeJob(starkOnly, { config: { app_vm_commit: '0x' + '00'.repeat(32) } });
      await writeFile(join(job.workDir, 'proof.json'), '{}');
      await expect(
        starkOnly.engine().verify(job.ctx, {
          proof_type: 'evm',
          proofPath: join(job.workDir, 'proof.json'),
          baselinePath: join(job.workDir, 'baseline.json'),
          app_exe_commit: '0x' + '00'.repeat(32),
        }),
      ).rejects.toThrow(/missing EVM verifier \(cargo openvm setup --evm\): .*halo2\/src\/v2\.0-base\/.*setup-config .* --evm --run/);
    } finally {
      await starkOnly.cleanup();
    }
  });
});

describe('refusals', () => {
  it('refuses a config whose directory is incomplete and names setup-config', async () => {
    const bare = await makeHost({ setUp: false });
    try {
      const job = await makeJob(bare);
      const err = await bare
        .engine()
        .commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe })
        .catch((e: unknown) => e);
      expect(err).not.toBeInstanceOf(JobError);
      expect((err as Error).message).toMatch(
        /is not set up on this host \(missing openvm\.toml .*\); the operator must run `prover-agent setup-config cfg_01JTESTC0NF1G0000000000000 --run`/,
      );
      expect(await bare.invocations()).toEqual([]);
    } finally {
      await bare.cleanup();
    }
  });

  it('asks for the EVM keys only for EVM proofs', async () => {
    const starkOnly = await makeHost();
    try {
      const job = await makeJob(starkOnly);
      await expect(starkOnly.engine().prove(job.ctx, proveRequest(job, 'stark'))).resolves.toBeDefined();
      await expect(starkOnly.engine().prove(job.ctx, proveRequest(job, 'evm'))).rejects.toThrow(
        /missing root proving key .*setup-config .* --evm --run/,
      );
    } finally {
      await starkOnly.cleanup();
    }
  });

  it('refuses a key file an interrupted keygen left empty', async () => {
    const job = await makeJob(host);
    const appPk = join(host.configDir, 'openvm', 'app.pk');
    const saved = await readFile(appPk);
    await writeFile(appPk, '');
    try {
      await expect(host.engine().commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe })).rejects.toThrow(
        /missing app proving key/,
      );
    } finally {
      await writeFile(appPk, saved);
    }
  });

  it('refuses an unknown major and a pre-release as the caller’s error, and a host tool of another version as the host’s', async () => {
    for (const [version, why] of [
      ['v1.4.0', /no command-line mapping for openvm 1\.4\.0 \(this agent knows 2\.0\.0 and later 2\.x releases\)/],
      ['v2.0.0-beta.2', /openvm 2\.0\.0-beta\.2 is a pre-release; this agent maps final releases only/],
    ] as const) {
      const job = await makeJob(host, { config: { openvm_version: version } });
      const err = await host
        .engine()
        .commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe })
        .catch((e: unknown) => e);
      expect(err).toBeInstanceOf(JobError);
      expect((err as Error).message).toMatch(why);
      expect((await toolCalls(job)).length).toBe(0);
    }

    const other = await makeJob(host);
    const engine = host.engine({ fakeEnv: { FAKE_OPENVM_VERSION: '2.1.0' } });
    await expect(engine.commit(other.ctx, { elfPath: other.files.elf, vmexePath: other.files.vmexe })).rejects.toThrow(
      /installed cargo-openvm is 2\.1\.0 but config .* needs openvm 2\.0\.0/,
    );

    const beta = await makeJob(host);
    const preRelease = host.engine({ fakeEnv: { FAKE_OPENVM_VERSION: '2.0.0-beta.2' } });
    const err = await preRelease.commit(beta.ctx, { elfPath: beta.files.elf, vmexePath: beta.files.vmexe }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(JobError);
    expect((err as Error).message).toMatch(/installed cargo-openvm is the pre-release 2\.0\.0-beta\.2/);
  });

  it('uses the newest mapping of a known major for a later minor, with a warning in the logs', async () => {
    const job = await makeJob(host, { config: { openvm_version: 'v2.1.0' } });
    const engine = host.engine({ fakeEnv: { FAKE_OPENVM_VERSION: '2.1.0' } });
    await engine.commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe });
    expect(job.logs[0]).toBe('warning: openvm 2.1.0: using the 2.x command-line mapping read from 2.0 sources');
  });

  it('reports a missing toolchain as an infrastructure error', async () => {
    const job = await makeJob(host);
    const engine = host.engine({ cargoPath: join(host.root, 'no-such-cargo') });
    const err = await engine.commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe }).catch((e: unknown) => e);
    expect(err).not.toBeInstanceOf(JobError);
    expect((err as Error).message).toMatch(/zkVM tool not runnable: .*no-such-cargo' \(ENOENT\)/);
  });

  it('reports a cargo without the openvm subcommand', async () => {
    const job = await makeJob(host);
    const notOpenvm = join(host.root, 'plain-cargo');
    await writeFile(notOpenvm, `#!/bin/sh\necho "error: no such command: \\\`openvm\\\`" >&2\nexit 101\n`, { mode: 0o755 });
    const err = await host
      .engine({ cargoPath: notOpenvm })
      .commit(job.ctx, { elfPath: job.files.elf, vmexePath: job.files.vmexe })
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/--version' failed, is cargo-openvm installed\? error: no such command/);
    await rm(notOpenvm);
  });
});
