// The dev engine through the Engine interface: commit, execute, dev proofs and their
// verification, deferred child proofs, phases and cancellation.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createDevEngine } from '../../../prover-agent/src/engine/dev/index.ts';
import { DEV_PROOF_VERSION, readDevProof } from '../../../prover-agent/src/engine/dev/proofs.ts';
import { CycleLimitError, JobError, type EngineContext } from '../../../prover-agent/src/engine/types.ts';
import type { EngineConfig, ProofType, ProvePhase } from '../../../prover-agent/src/protocol.ts';
import { bytesEntry, devEngineConfig, guestPath, makeElf, printBombElf, u32Entry } from './helpers.ts';
import { MAX_STDOUT_CHARS } from '../../../prover-agent/src/engine/dev/machine.ts';
import { MAX_LOG_LINE_CHARS } from '../../../prover-agent/src/engine/types.ts';
import { cutMark } from '../../../prover-agent/src/lib/lines.ts';
import { loadElf } from '../../../prover-agent/src/engine/dev/elf.ts';

const work = mkdtempSync(join(tmpdir(), 'dev-engine-test-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));
let fileCounter = 0;
const file = (name: string, content?: string) => {
  const path = join(work, `${fileCounter++}-${name}`);
  if (content !== undefined) writeFileSync(path, content);
  return path;
};

const DEV_CONFIG = devEngineConfig({
  id: 'cfg_01DEVCONFIG',
  openvm_version: 'v1.4.0',
  stark_backend_version: 'v1.2.0',
  app_vm_commit: `0x${'ab'.repeat(32)}`,
  deferral_enabled: true,
});

interface Recorded {
  ctx: EngineContext;
  logs: string[];
  phases: ProvePhase[];
  metrics: Record<string, number>[];
}

function context(config: Partial<EngineConfig> = {}, signal = new AbortController().signal): Recorded {
  const logs: string[] = [];
  const phases: ProvePhase[] = [];
  const metrics: Record<string, number>[] = [];
  const ctx: EngineContext = {
    workDir: work,
    config: { ...DEV_CONFIG, ...config },
    signal,
    gpus: [],
    log: (line) => logs.push(line),
    progress: (update) => {
      if (update.phase) phases.push(update.phase);
      if (update.metrics) metrics.push({ ...update.metrics });
    },
  };
  return { ctx, logs, phases, metrics };
}

const engine = createDevEngine({});
const input = (...entries: string[]) => file('input.json', JSON.stringify({ input: entries }));

/** Registers a program as the service would: commit, keeping the baseline file. */
async function register(elfPath: string, config: Partial<EngineConfig> = {}) {
  const committed = await engine.commit(context(config).ctx, { elfPath, vmexePath: elfPath });
  return {
    elfPath,
    app_exe_commit: committed.app_exe_commit,
    baselinePath: file('baseline.json', JSON.stringify(committed.baseline)),
    committed,
  };
}

async function prove(
  program: Awaited<ReturnType<typeof register>>,
  inputPath: string,
  options: { kind?: ProofType; config?: Partial<EngineConfig>; children?: string[]; signal?: AbortSignal } = {},
) {
  const recorded = context(options.config, options.signal);
  const outputPath = file('proof.json');
  const result = await engine.prove(recorded.ctx, {
    proof_type: options.kind ?? 'stark',
    elfPath: program.elfPath,
    vmexePath: program.elfPath,
    inputPath,
    childProofPaths: options.children ?? [],
    outputPath,
    app_exe_commit: program.app_exe_commit,
    baselinePath: program.baselinePath,
  });
  return { result, outputPath, proof: JSON.parse(readFileSync(outputPath, 'utf8')) as Record<string, unknown>, ...recorded };
}

async function verify(program: Awaited<ReturnType<typeof register>>, proof: unknown, config: Partial<EngineConfig> = {}) {
  const proofPath = file('verify.json', typeof proof === 'string' ? proof : JSON.stringify(proof));
  return engine.verify(context(config).ctx, {
    proof_type: 'stark',
    proofPath,
    baselinePath: program.baselinePath,
    app_exe_commit: program.app_exe_commit,
  });
}

const hello = await register(guestPath('hello'));
const loop = await register(guestPath('loop'));
const panic = await register(guestPath('panic'));
const io = await register(guestPath('io'));
const helloInput = input(bytesEntry('abc'));
const helloStark = await prove(hello, helloInput);

/** Flips the low bit of the hex digit at `index` of a hex string (0x prefix kept). */
const flipHex = (hex: string, index: number) => {
  const at = hex.startsWith('0x') ? index + 2 : index;
  return hex.slice(0, at) + (parseInt(hex[at], 16) ^ 1).toString(16) + hex.slice(at + 1);
};

describe('commit', () => {
  it('derives a 32-byte exe commit from the program and takes app_vm_commit from the config', () => {
    expect(hello.app_exe_commit).toMatch(/^0x[0-9a-f]{64}$/);
    expect(hello.committed.app_vm_commit).toBe(DEV_CONFIG.app_vm_commit);
    expect(loop.app_exe_commit).not.toBe(hello.app_exe_commit);
  });

  it("writes a baseline with the zkVM's field names", () => {
    const baseline = hello.committed.baseline;
    expect(Object.keys(baseline).sort()).toEqual(
      [
        'app_exe_commit',
        'memory_dimensions',
        'num_user_pvs',
        'app_vk_commit',
        'leaf_vk_commit',
        'internal_for_leaf_vk_commit',
        'internal_recursive_vk_commit',
        'expected_def_hook_commit',
      ].sort(),
    );
    expect(baseline.app_exe_commit).toBe(hello.app_exe_commit);
    expect(baseline.num_user_pvs).toBe(32);
    expect(baseline.app_vk_commit).toEqual({
      cached_commit: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      vk_pre_hash: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });
    expect(baseline.expected_def_hook_commit).toMatch(/^0x[0-9a-f]{64}$/);
  });

  it('depends on the loaded image only, not on symbols or sections', async () => {
    // Re-pack hello's loaded segments into a bare ELF without sections or symbols.
    const image = loadElf(readFileSync(guestPath('hello')));
    const bare = makeElf(
      image.segments.map((s) => ({ vaddr: s.vaddr, data: s.data, memsz: s.memsz, flags: s.executable ? 5 : 6 })),
      image.entry,
    );
    const barePath = file('bare.elf');
    writeFileSync(barePath, bare);
    expect((await register(barePath)).app_exe_commit).toBe(hello.app_exe_commit);
  });

  it('fails the registration with a JobError for a file that is not a guest ELF', async () => {
    await expect(engine.commit(context().ctx, { elfPath: file('bad.elf', 'not an elf'), vmexePath: '' })).rejects.toThrow(JobError);
  });
});

describe('execute', () => {
  it('returns the outcome of a successful run', async () => {
    const result = await engine.execute(context().ctx, { elfPath: hello.elfPath, vmexePath: '', inputPath: helloInput, mode: 'pure' });
    expect(result).toMatchObject({
      exit_code: 0,
      error: null,
      public_values: `0x${'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'}`,
      stdout: expect.stringContaining('hello from the dev zkVM: read 3 bytes'),
    });
    expect(result.num_instructions).toBeGreaterThan(1000);
    expect(result.total_cycle).toBe(result.num_instructions);
  });

  it('returns guest failures and bad input as errors instead of throwing', async () => {
    const panicked = await engine.execute(context().ctx, { elfPath: panic.elfPath, vmexePath: '', inputPath: input(), mode: 'pure' });
    expect(panicked).toMatchObject({ exit_code: 1, error: expect.stringContaining('something went wrong: this guest always panics') });
    const badInput = await engine.execute(context().ctx, { elfPath: hello.elfPath, vmexePath: '', inputPath: input('0x05'), mode: 'pure' });
    expect(badInput).toMatchObject({ exit_code: -1, error: expect.stringMatching(/^bad input: input\[0\]: unknown prefix 0x05/) });
  });

  it("copies the guest's printed lines into the job logs", async () => {
    const { ctx, logs } = context();
    await engine.execute(ctx, { elfPath: panic.elfPath, vmexePath: '', inputPath: input(), mode: 'pure' });
    expect(logs).toContain('guest: about to fail');
    expect(logs).toContain('guest: something went wrong: this guest always panics');
  });

  it('copies a line printed without a newline as one cut line, whatever its size, and keeps the first MiB as stdout', async () => {
    const { ctx, logs } = context();
    const bomb = file('bomb.elf');
    writeFileSync(bomb, printBombElf(32, 1 << 20)); // 32 MiB, never a newline
    const result = await engine.execute(ctx, { elfPath: bomb, vmexePath: '', inputPath: input(), mode: 'pure' });
    expect(result).toMatchObject({ exit_code: 0, error: null });
    const max = MAX_LOG_LINE_CHARS - 'guest: '.length;
    expect(logs.filter((l) => l.startsWith('guest: '))).toEqual([`guest: ${'x'.repeat(max)}${cutMark(max)}`]);
    expect(result.stdout).toBe(`${'x'.repeat(MAX_STDOUT_CHARS)}\n[further output dropped: more than ${MAX_STDOUT_CHARS} characters]\n`);
  });
});

describe('dev proofs', () => {
  it('announces the proving phases with metrics, and returns the public values', () => {
    expect(helloStark.phases).toEqual(['Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing']);
    const executed = helloStark.metrics[0];
    expect(executed.num_instructions).toBeGreaterThan(1000);
    expect(executed.cells_used).toBe(executed.num_instructions * 32);
    expect(helloStark.result).toMatchObject({
      ...executed,
      public_values: '0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    });
    expect(helloStark.logs.join('\n')).toMatch(/not a zero-knowledge proof/);
  });

  it("writes a STARK proof in the zkVM's shape, marked as a dev proof", () => {
    expect(helloStark.proof).toEqual({
      version: DEV_PROOF_VERSION,
      proof: expect.stringMatching(/^[0-9a-f]+$/),
      user_pvs_proof: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      deferral_merkle_proofs: null,
    });
    expect(DEV_PROOF_VERSION).toBe('v1.0-dev');
  });

  it('verifies its own STARK proof, with or without 0x on the hex', async () => {
    expect(await verify(hello, helloStark.proof)).toEqual({ verified: true, reason: null });
    const prefixed = { ...helloStark.proof, proof: `0x${helloStark.proof.proof}`, user_pvs_proof: `0x${helloStark.proof.user_pvs_proof}` };
    expect(await verify(hello, prefixed)).toEqual({ verified: true, reason: null });
    // What the published client uploads: the file's text with every "0x" removed.
    expect(await verify(hello, JSON.stringify(prefixed).replaceAll('0x', ''))).toEqual({ verified: true, reason: null });
  });

  it('makes the same proof for the same program, config and input', async () => {
    expect((await prove(hello, helloInput)).proof).toEqual(helloStark.proof);
  });

  it('writes its proofs unsealed (the host holds no secret: the Worker seals them) and refuses a broken envelope', async () => {
    expect(readDevProof(helloStark.proof).mac).toEqual(new Uint8Array(32));
    const proofHex = helloStark.proof.proof as string;
    for (const index of [0, 10, 20, 150]) {
      const result = await verify(hello, { ...helloStark.proof, proof: flipHex(proofHex, index) });
      expect(result.verified).toBe(false);
    }
    expect((await verify(hello, { ...helloStark.proof, proof: proofHex.slice(2) })).verified).toBe(false);
  });

  it("rejects another program's proof", async () => {
    const loopProof = await prove(loop, input(u32Entry(5)));
    expect(await verify(hello, loopProof.proof)).toEqual({
      verified: false,
      reason: `made for another program (its app_exe_commit is ${loop.app_exe_commit}, expected ${hello.app_exe_commit})`,
    });
  });

  it("rejects a proof made under another config (its seal is the Worker's to check: test/worker/fleet-trust.test.ts)", async () => {
    expect(await verify(hello, helloStark.proof, { id: 'cfg_01OTHERCONFIG' })).toEqual({
      verified: false,
      reason: 'made under another config (not cfg_01OTHERCONFIG)',
    });
    expect(await verify(hello, helloStark.proof, { app_vm_commit: `0x${'cd'.repeat(32)}` })).toMatchObject({
      verified: false,
      reason: expect.stringMatching(/another config/),
    });
  });

  it('checks the proof against a readable baseline, and against app_exe_commit without one', async () => {
    const proofPath = file('verify.json', JSON.stringify(helloStark.proof));
    const verifyWith = (baselinePath: string) =>
      engine.verify(context().ctx, { proof_type: 'stark', proofPath, baselinePath, app_exe_commit: hello.app_exe_commit });
    expect(await verifyWith(loop.baselinePath)).toEqual({
      verified: false,
      reason: `the verification baseline is for another program (${loop.app_exe_commit})`,
    });
    expect(await verifyWith(join(work, 'no-such-baseline.json'))).toEqual({ verified: true, reason: null });
  });

  it('accepts dev proofs only under dev configs', async () => {
    expect(await verify(hello, helloStark.proof, { engine: 'openvm' })).toEqual({
      verified: false,
      reason: `config ${DEV_CONFIG.id} is not a dev config (engine 'openvm'); dev proofs are only accepted under dev configs`,
    });
  });

  it('rejects non-dev proofs and files that are no proof at all', async () => {
    const zkvmProof = { version: 'v1.4', proof: 'ab'.repeat(100), user_pvs_proof: 'cd'.repeat(40), deferral_merkle_proofs: null };
    expect(await verify(hello, zkvmProof)).toEqual({
      verified: false,
      reason: 'not a dev proof (version "v1.4"; dev proofs say "v1.0-dev")',
    });
    expect((await verify(hello, 'not json')).reason).toMatch(/^proof file is not JSON/);
    expect((await verify(hello, { version: DEV_PROOF_VERSION, proof: 'zz', user_pvs_proof: '' })).reason).toBe('proof is not hex');
    expect((await verify(hello, { version: DEV_PROOF_VERSION, proof: 'abcd', user_pvs_proof: '' })).reason).toBe(
      'proof bytes are not a dev proof envelope',
    );
  });

  it('binds the input: the same public values from another input give another proof', async () => {
    // io reveals [entry count, total length, first bytes]: an extra unread entry changes none of them.
    const a = await prove(io, input(u32Entry(1), bytesEntry('same')));
    const b = await prove(io, input(u32Entry(1), bytesEntry('same'), bytesEntry('unread')));
    expect(a.result.public_values).toBe(b.result.public_values);
    expect(a.proof.proof).not.toBe(b.proof.proof);
    expect((await verify(io, a.proof)).verified).toBe(true);
    expect((await verify(io, b.proof)).verified).toBe(true);
  });

  it('writes EVM and app proofs in their shapes', async () => {
    const evm = await prove(hello, helloInput, { kind: 'evm' });
    expect(evm.proof).toEqual({
      version: DEV_PROOF_VERSION,
      app_exe_commit: hello.app_exe_commit,
      app_vm_commit: DEV_CONFIG.app_vm_commit,
      user_public_values: '0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      proof_data: { accumulator: `0x${'00'.repeat(32)}`, proof: expect.stringMatching(/^0x[0-9a-f]+$/) },
    });
    const app = await prove(hello, helloInput, { kind: 'app' });
    expect(app.proof).toEqual({
      version: DEV_PROOF_VERSION,
      kind: 'app',
      app_exe_commit: hello.app_exe_commit,
      app_vm_commit: DEV_CONFIG.app_vm_commit,
      user_public_values: '0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      proof: expect.stringMatching(/^0x[0-9a-f]+$/),
    });
    // The verify operation takes STARK proofs only.
    expect((await verify(hello, evm.proof)).reason).toBe('expected a stark proof, got a evm proof');
  });

  it('sizes the public values by the config', async () => {
    const wide = await register(guestPath('hello'), { public_values_bytes: 64 });
    const proved = await prove(wide, helloInput, { config: { public_values_bytes: 64 } });
    expect(proved.proof.user_pvs_proof).toBe(`ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad${'00'.repeat(32)}`);
    expect((await verify(wide, proved.proof, { public_values_bytes: 64 })).verified).toBe(true);
    expect((await verify(wide, proved.proof)).reason).toMatch(/another config/);
  });
});

describe('proving failures', () => {
  it("fails the job with the guest's panic text, after reporting the instruction count", async () => {
    const { ctx, phases, metrics } = context();
    const error = await engine
      .prove(ctx, {
        proof_type: 'stark',
        elfPath: panic.elfPath,
        vmexePath: '',
        inputPath: input(),
        childProofPaths: [],
        outputPath: file('proof.json'),
        app_exe_commit: panic.app_exe_commit,
        baselinePath: panic.baselinePath,
      })
      .catch((e: unknown) => e);
    expect(phases).toEqual(['Executing']);
    expect(metrics).toEqual([{ num_instructions: expect.any(Number) }]);
    expect(error).toBeInstanceOf(JobError);
    expect((error as Error).message).toBe(
      'guest exited with code 1: about to fail\npanicked at src/panic.c:6:\nsomething went wrong: this guest always panics',
    );
  });

  it('fails the job on bad input, traps and the cycle limit', async () => {
    await expect(prove(hello, input('0x01abc'))).rejects.toThrow(new JobError('bad input: input[0]: not an even-length hex string'));
    await expect(prove(hello, input())).rejects.toThrow(/^input stream exhausted/);
    const limited = createDevEngine({ maxCycles: 1000 });
    const { ctx } = context();
    const job = limited.prove(ctx, {
      proof_type: 'stark',
      elfPath: loop.elfPath,
      vmexePath: '',
      inputPath: input(u32Entry(1_000_000)),
      childProofPaths: [],
      outputPath: file('proof.json'),
      app_exe_commit: loop.app_exe_commit,
      baselinePath: loop.baselinePath,
    });
    const error = await job.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobError);
    expect((error as Error).message).toMatch(/^cycle limit of 1000 instructions reached at pc 0x[0-9a-f]{8} before the guest terminated$/);
  });

  it('stops at the job\'s cycle limit (README "Job limits"), saying how far it ran, in prove and execute', async () => {
    const { ctx } = context();
    const error = await engine
      .prove(ctx, {
        proof_type: 'stark',
        elfPath: loop.elfPath,
        vmexePath: '',
        inputPath: input(u32Entry(1_000_000)),
        childProofPaths: [],
        outputPath: file('proof.json'),
        app_exe_commit: loop.app_exe_commit,
        baselinePath: loop.baselinePath,
        cycleLimit: 5000,
      })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CycleLimitError);
    expect(error).toMatchObject({ reached: 5000, limit: 5000 });
    const ran = await engine
      .execute(context().ctx, {
        elfPath: loop.elfPath,
        vmexePath: '',
        inputPath: input(u32Entry(1_000_000)),
        mode: 'pure',
        cycleLimit: 777,
      })
      .catch((e: unknown) => e);
    expect(ran).toMatchObject({ reached: 777, limit: 777 });
    // A guest that ends under its limit is not stopped.
    const small = await engine.execute(context().ctx, {
      elfPath: loop.elfPath,
      vmexePath: '',
      inputPath: input(u32Entry(1)),
      mode: 'pure',
      cycleLimit: 1_000_000,
    });
    expect(small.error).toBeNull();
  });

  it('fails the job when the ELF is not the registered program', async () => {
    await expect(prove({ ...loop, app_exe_commit: hello.app_exe_commit }, input(u32Entry(1)))).rejects.toThrow(
      /does not match its registered app_exe_commit/,
    );
  });

  it('refuses to prove under a config of another engine', async () => {
    await expect(prove(hello, helloInput, { config: { engine: 'openvm' } })).rejects.toThrow(/only proves under dev configs/);
  });

  it('stops when the job is canceled', async () => {
    const controller = new AbortController();
    const job = prove(loop, input(u32Entry(4_000_000_000)), { signal: controller.signal });
    setTimeout(() => controller.abort(new Error('canceled by the user')), 100);
    const error = await job.catch((e: unknown) => e);
    expect(error).not.toBeInstanceOf(JobError);
    expect((error as Error).message).toBe('canceled by the user');
  });

  it('stops an operation past its timeout (engine option timeouts), as an infrastructure error', async () => {
    const timed = createDevEngine({ timeouts: { execute: 1, prove: 1 } });
    const { ctx } = context();
    const long = input(u32Entry(4_000_000_000));
    const proving = timed.prove(ctx, {
      proof_type: 'stark',
      elfPath: loop.elfPath,
      vmexePath: '',
      inputPath: long,
      childProofPaths: [],
      outputPath: file('proof.json'),
      app_exe_commit: loop.app_exe_commit,
      baselinePath: loop.baselinePath,
    });
    const executing = timed.execute(ctx, { elfPath: loop.elfPath, vmexePath: '', inputPath: long, mode: 'pure' });
    const errors = await Promise.all([proving, executing].map((job: Promise<unknown>) => job.catch((e: unknown) => e)));
    for (const [op, error] of [
      ['prove', errors[0]],
      ['execute', errors[1]],
    ] as const) {
      expect(error).toBeInstanceOf(Error);
      expect(error).not.toBeInstanceOf(JobError);
      expect((error as Error).message).toBe(`dev engine: ${op} timed out after 1 s`);
    }
    // Within its limit an operation runs as without one; a cancel is still a cancel.
    expect((await timed.execute(ctx, { elfPath: hello.elfPath, vmexePath: '', inputPath: helloInput, mode: 'pure' })).exit_code).toBe(0);
    const controller = new AbortController();
    const canceled = timed.execute(context({}, controller.signal).ctx, {
      elfPath: loop.elfPath,
      vmexePath: '',
      inputPath: long,
      mode: 'pure',
    });
    setTimeout(() => controller.abort(new Error('canceled by the user')), 100);
    expect(((await canceled.catch((e: unknown) => e)) as Error).message).toBe('canceled by the user');
  });
});

const childA = helloStark.outputPath;
const childB = (await prove(hello, input(bytesEntry('another input')))).outputPath;

describe('deferred child proofs', () => {
  it('verifies each child and binds them into the parent proof', async () => {
    const parent = await prove(hello, helloInput, { children: [childA, childB] });
    expect(parent.logs).toContain('dev engine: 2 deferred child proofs verified');
    // The envelope grows by one 32-byte digest per child, and the parent verifies.
    expect((parent.proof.proof as string).length).toBe((helloStark.proof.proof as string).length + 2 * 64);
    expect(await verify(hello, parent.proof)).toEqual({ verified: true, reason: null });
  });

  it('fails the job for a child made for another program, naming the child', async () => {
    const other = (await prove(loop, input(u32Entry(3)))).outputPath;
    await expect(prove(hello, helloInput, { children: [childA, other] })).rejects.toThrow(
      new JobError(
        `child proof 1: made for another program (its app_exe_commit is ${loop.app_exe_commit}, expected ${hello.app_exe_commit})`,
      ),
    );
  });

  it('fails the job for a child made under another config', async () => {
    const otherConfig = (await prove(hello, helloInput, { config: { id: 'cfg_01OTHERCONFIG' } })).outputPath;
    await expect(prove(hello, helloInput, { children: [otherConfig] })).rejects.toThrow(
      new JobError('child proof 0: made under another config (not cfg_01DEVCONFIG)'),
    );
  });

  it("fails the job for a broken child, a non-dev child and an EVM child (children's seals are the Worker's to check)", async () => {
    const broken = file('child.json', JSON.stringify({ ...helloStark.proof, proof: (helloStark.proof.proof as string).slice(2) }));
    await expect(prove(hello, helloInput, { children: [childA, childA, broken] })).rejects.toThrow(/^child proof 2: not a dev STARK proof/);
    const foreign = file(
      'child.json',
      JSON.stringify({ version: 'v1.4', proof: 'ab', user_pvs_proof: 'cd', deferral_merkle_proofs: null }),
    );
    await expect(prove(hello, helloInput, { children: [foreign] })).rejects.toThrow(
      /^child proof 0: not a dev STARK proof: not a dev proof/,
    );
    const evm = (await prove(hello, helloInput, { kind: 'evm' })).outputPath;
    await expect(prove(hello, helloInput, { children: [evm] })).rejects.toThrow('child proof 0: expected a stark proof, got a evm proof');
  });

  it('fails the job when the config does not enable deferral', async () => {
    await expect(prove(hello, helloInput, { children: [childA], config: { deferral_enabled: false } })).rejects.toThrow(
      new JobError(`config ${DEV_CONFIG.id} does not enable deferral, but the job has 1 child proofs`),
    );
  });
});
