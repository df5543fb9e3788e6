// The stand-in CLI (fake-cargo) is a model of cargo-openvm v2.0.1: the engine's
// tests are only worth what this model is. The contract table below pins each
// behaviour the engine relies on to the v2.0.1 source it was read from
// (openvm-org/openvm tag v2.0.1; `cli/` = crates/cli/src/, `sdk/` =
// crates/sdk/src/), so a version bump is a reviewable diff of this table and
// fake-cargo together.
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_MAPPINGS } from '../../../prover-agent/src/engine/openvm/commands.ts';
import { aggregationPaths, configPaths } from '../../../prover-agent/src/engine/openvm/config-dir.ts';
import { CONFIG_ID, FAKE_CARGO, makeHost, OPENVM_TOML, type Host } from './harness.ts';

let host: Host;
beforeAll(async () => {
  host = await makeHost({ evm: true });
});
afterAll(() => host.cleanup());

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

function fake(args: string[], extraEnv: Record<string, string> = {}, cwd = host.root): Promise<Run> {
  return new Promise((resolve) => {
    execFile(FAKE_CARGO, args, { env: { ...host.env, ...extraEnv }, cwd }, (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
  });
}

const v2 = CLI_MAPPINGS[0];
const cfg = () => configPaths(host.configsDir, CONFIG_ID, v2);
const agg = () => aggregationPaths(v2, host.env);

/** A scratch directory with a program, an input file and a target dir. */
async function scratch() {
  const dir = await mkdtemp(join(host.root, 'contract-'));
  const exe = join(dir, 'p.vmexe');
  const input = join(dir, 'in.json');
  await writeFile(exe, 'program');
  await writeFile(input, '{"input": ["0x01ff"]}');
  return { dir, exe, input, targetDir: join(dir, 'target') };
}

/** A HOME with only what setup (without --evm) writes. */
async function starkHome(): Promise<string> {
  const home = await mkdtemp(join(host.root, 'home-'));
  const res = await fake(['openvm', 'setup'], { HOME: home });
  expect(res.code).toBe(0);
  return home;
}

interface Contract {
  behaviour: string;
  /** Where v2.0.1 does it. */
  source: string;
  check(): Promise<void>;
}

const CONTRACT: Contract[] = [
  {
    behaviour: 'clap rejects an unknown flag with exit status 2',
    source: 'clap derive on every command struct, e.g. cli/commands/prove.rs:40-133',
    async check() {
      const res = await fake(['openvm', 'prove', 'stark', '--app-vk', 'x']);
      expect(res.code).toBe(2);
      expect(res.stderr).toMatch(/^error: unexpected argument '--app-vk' found/);
    },
  },
  {
    behaviour: '`--verbose` is cargo openvm’s own flag, before the subcommand; `--version` prints the version',
    source: 'cli/bin/cargo-openvm.rs:14-22,41-46; cli/lib.rs:16-67',
    async check() {
      expect((await fake(['openvm', '--verbose', 'setup'])).code).toBe(0);
      expect((await fake(['openvm', '--version'])).stdout).toMatch(/^cargo-openvm v2\.0\.1 /);
      expect((await fake(['openvm', 'setup', '--verbose'])).code).toBe(2);
    },
  },
  {
    behaviour: 'ProvingKeyArgs: --app-pk, --agg-prefix-pk (${openvm_dir}/agg_prefix.pk), --agg-pk (~/.openvm/internal_recursive.pk)',
    source: 'cli/args.rs:60-85',
    async check() {
      const s = await scratch();
      const missingPrefix = await fake(
        v2
          .commit(cfg(), agg(), { exe: s.exe, outputDir: join(s.dir, 'out'), targetDir: s.targetDir })
          .map((a) => (a.endsWith('agg_prefix.pk') ? join(s.dir, 'none.pk') : a)),
      );
      expect(missingPrefix.code).toBe(1);
      expect(missingPrefix.stderr).toMatch(
        /^Error: Failed to read aggregation prefix proving key from .*none\.pk[\s\S]*\nRun 'cargo openvm keygen' first to generate it/,
      );
      const missingInternal = await fake(
        v2
          .commit(cfg(), agg(), { exe: s.exe, outputDir: join(s.dir, 'out'), targetDir: s.targetDir })
          .map((a) => (a.endsWith('internal_recursive.pk') ? join(s.dir, 'none.pk') : a)),
      );
      expect(missingInternal.stderr).toMatch(
        /^Error: Failed to read internal-recursive proving key from .*none\.pk[\s\S]*\nRun 'cargo openvm setup' first to generate it/,
      );
    },
  },
  {
    behaviour:
      'keygen writes app.pk, app.vk and agg_prefix.pk into ${openvm_dir} = parent(--target-dir)/openvm; --app-only skips agg_prefix.pk',
    source: 'cli/default.rs:9-11; cli/util.rs:89-103; cli/commands/keygen.rs:39-44,57-74,103-108',
    async check() {
      const s = await scratch();
      const c = { ...cfg(), targetDir: s.targetDir };
      expect((await fake(v2.keygen(c))).code).toBe(0);
      expect((await readdir(join(s.dir, 'openvm'))).sort()).toEqual(['agg_prefix.pk', 'app.pk', 'app.vk']);
      const only = await scratch();
      const res = await fake([...v2.keygen({ ...cfg(), targetDir: only.targetDir }), '--app-only']);
      expect(res.stdout).toContain('Successfully generated app pk and vk in');
      expect((await readdir(join(only.dir, 'openvm'))).sort()).toEqual(['app.pk', 'app.vk']);
    },
  },
  {
    behaviour: 'keygen panics (exit 101) on a non-default num_public_values',
    source: 'cli/commands/keygen.rs:130-147',
    async check() {
      const s = await scratch();
      const toml = join(s.dir, 'openvm.toml');
      await writeFile(toml, `${OPENVM_TOML}[app_vm_config.system.config]\nnum_public_values = 64\n`);
      const res = await fake(v2.keygen({ ...cfg(), openvmToml: toml, targetDir: s.targetDir }));
      expect(res.code).toBe(101);
      expect(res.stderr).toContain('cargo openvm keygen only supports the default num_public_values');
    },
  },
  {
    behaviour: 'setup writes ~/.openvm/internal_recursive.pk and .vk, nothing for EVM',
    source: 'cli/default.rs:27-33; cli/commands/setup.rs:56-79',
    async check() {
      const home = await starkHome();
      expect((await readdir(join(home, '.openvm'))).sort()).toEqual(['internal_recursive.pk', 'internal_recursive.vk']);
    },
  },
  {
    behaviour:
      'setup --evm writes root.pk, fetches params/kzg_bn254_{10..24}.srs over the network, halo2.pk and the verifier in halo2/src/v2.0-base/',
    source: 'cli/commands/setup.rs:29,81-113,188-242,277-313; cli/util.rs:24-26; sdk/fs.rs:19-22,79-113',
    async check() {
      const home = await mkdtemp(join(host.root, 'home-'));
      const offline = await fake(['openvm', 'setup', '--evm', '--download'], { HOME: home, FAKE_OPENVM_OFFLINE: '1' });
      expect(offline.code).toBe(1);
      expect(offline.stderr).toMatch(/^Error: failed to download kzg_bn254_10\.srs from S3/);
      expect((await fake(['openvm', 'setup', '--evm', '--download'], { HOME: home })).code).toBe(0);
      const a = aggregationPaths(v2, { HOME: home });
      for (const f of [
        a.rootPk,
        a.halo2Pk,
        join(a.paramsDir, 'kzg_bn254_10.srs'),
        join(a.paramsDir, 'kzg_bn254_24.srs'),
        a.evmVerifierArtifact,
      ])
        expect(existsSync(f)).toBe(true);
      for (const f of v2.aggregationFiles.evmVerifierFiles) expect(existsSync(join(a.evmVerifierVersionDir, f))).toBe(true);
    },
  },
  {
    behaviour: 'setup --evm generates the verifier with solc, so without solc on PATH it needs --download',
    source: 'cli/commands/setup.rs:131-143',
    async check() {
      const res = await fake(['openvm', 'setup', '--evm'], { HOME: await mkdtemp(join(host.root, 'home-')) });
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^Error: solc is not installed, please install solc or rerun with --download/);
    },
  },
  {
    behaviour: 'every command but setup resolves a Cargo manifest; eyre errors exit 1',
    source: 'cli/util.rs:49-77',
    async check() {
      const res = await fake(['openvm', 'run', '--exe', 'x.vmexe']);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(/^Error: could not find Cargo\.toml in current directory or any parent directory/);
    },
  },
  {
    behaviour:
      'commit names its outputs after the manifest’s one binary (cargo metadata), under ${openvm_dir}/release, and copies them to --output-dir; a manifest that is no package panics',
    source: 'cli/commands/commit.rs:82-108; cli/util.rs:105-113,119-182; crates/toolchain/build/src/lib.rs:98-108',
    async check() {
      const s = await scratch();
      const res = await fake(v2.commit(cfg(), agg(), { exe: s.exe, outputDir: join(s.dir, 'out'), targetDir: s.targetDir }));
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(
        /^exe commit: 0x[0-9a-f]{64}\nvm commit: 0x[0-9a-f]{64}\nWriting app commit to .*\/openvm\/release\/openvm-config\.commit\.json\n/,
      );
      expect((await readdir(join(s.dir, 'out'))).sort()).toEqual(['openvm-config.baseline.json', 'openvm-config.commit.json']);
      const bad = join(s.dir, 'bad');
      await mkdir(bad);
      await writeFile(join(bad, 'Cargo.toml'), '[workspace]\n');
      const panicked = await fake(
        v2.commit({ ...cfg(), manifestPath: join(bad, 'Cargo.toml') }, agg(), {
          exe: s.exe,
          outputDir: join(s.dir, 'out2'),
          targetDir: join(s.dir, 't2'),
        }),
      );
      expect(panicked.code).toBe(101);
      expect(panicked.stderr).toContain('cargo metadata command failed for manifest path');
    },
  },
  {
    behaviour: 'the baseline JSON has num_user_pvs and 0x commits; the commit JSON is AppExecutionCommit',
    source: 'sdk/types.rs:92-97,360-399; crates/continuations/src/commit_bytes.rs:129-139',
    async check() {
      const s = await scratch();
      await fake(v2.commit(cfg(), agg(), { exe: s.exe, outputDir: join(s.dir, 'out'), targetDir: s.targetDir }));
      const baseline = JSON.parse(await readFile(join(s.dir, 'out', 'openvm-config.baseline.json'), 'utf8'));
      expect(Object.keys(baseline).sort()).toEqual(
        [
          'app_exe_commit',
          'app_vk_commit',
          'expected_def_hook_commit',
          'internal_for_leaf_vk_commit',
          'internal_recursive_vk_commit',
          'leaf_vk_commit',
          'memory_dimensions',
          'num_user_pvs',
        ].sort(),
      );
      expect(baseline.num_user_pvs).toBe(32);
      const commit = JSON.parse(await readFile(join(s.dir, 'out', 'openvm-config.commit.json'), 'utf8'));
      expect(commit).toEqual({
        app_exe_commit: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        app_vm_commit: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      });
    },
  },
  {
    behaviour:
      'run prints `Execution output: [bytes]`, and in meter mode the instructions and `Total cost`, in segment mode `Total segments`; --mode is checked by clap',
    source: 'cli/commands/run.rs:22-31,64-71,270-290',
    async check() {
      const s = await scratch();
      const meter = await fake(v2.run(cfg(), { exe: s.exe, input: s.input, mode: 'meter' }));
      expect(meter.stdout).toMatch(/^Execution output: \[(\d+, )*\d+\]\nNumber of instructions executed: \d+\nTotal cost: \d+\n$/m);
      const segment = await fake(v2.run(cfg(), { exe: s.exe, input: s.input, mode: 'segment' }));
      expect(segment.stdout).toMatch(/\nNumber of instructions executed: \d+\nTotal segments: \d+\n$/);
      const bad = await fake(['openvm', 'run', '--mode', 'fast']);
      expect(bad.code).toBe(2);
      expect(bad.stderr).toContain('[possible values: pure, meter, segment]');
    },
  },
  {
    behaviour: 'run in meter/segment mode reads ${openvm_dir}/app.pk from the target dir, whatever --config says',
    source: 'cli/commands/run.rs:241-254',
    async check() {
      const s = await scratch();
      const res = await fake([
        'openvm',
        'run',
        '--exe',
        s.exe,
        '--mode',
        'meter',
        '--manifest-path',
        cfg().manifestPath,
        '--target-dir',
        s.targetDir,
      ]);
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(
        /Failed to read app proving key from .*\/openvm\/app\.pk[\s\S]*Run 'cargo openvm keygen --app-only' first/,
      );
    },
  },
  {
    behaviour: 'metering past the cost cap (100 × 15 GiB cells) stops early and still exits 0',
    source: 'crates/vm/src/arch/execution_mode/metered_cost.rs:12-13,65-72; cli/commands/run.rs:275-281',
    async check() {
      const s = await scratch();
      const res = await fake(v2.run(cfg(), { exe: s.exe, input: s.input, mode: 'meter' }), {
        FAKE_OPENVM_METER_COST: String(v2.meterCostCap + 1),
      });
      expect(res.code).toBe(0);
      expect(res.stdout).toContain(`Total cost: ${v2.meterCostCap + 1}`);
    },
  },
  {
    behaviour: 'prove stark writes VersionedVmStarkProof JSON (bare hex, version "v2.0") and the baseline',
    source: 'cli/commands/prove.rs:182-233; sdk/types.rs:298-334; sdk/lib.rs:93-97',
    async check() {
      const s = await scratch();
      const proof = join(s.dir, 'p.stark.proof');
      const res = await fake(v2.prove(cfg(), agg(), { kind: 'stark', exe: s.exe, input: s.input, proof, targetDir: s.targetDir }));
      expect(res.code).toBe(0);
      expect(res.stdout).toMatch(/STARK proof completed! Writing STARK proof to .*p\.stark\.proof\n$/);
      expect(JSON.parse(await readFile(proof, 'utf8'))).toEqual({
        version: 'v2.0',
        proof: expect.stringMatching(/^[0-9a-f]+$/),
        user_pvs_proof: expect.stringMatching(/^[0-9a-f]+$/),
        deferral_merkle_proofs: null,
      });
    },
  },
  {
    behaviour:
      'with --verbose (or RUST_LOG=info) prove prints INFO span trees: app_prove with one prove_segment per segment, then agg_layer; at WARN none',
    source:
      'cli/bin/cargo-openvm.rs:41-46; sdk/prover/app.rs:118-122; crates/vm/src/arch/vm.rs:1097; sdk/prover/agg.rs:185,202,217; stark-backend crates/stark-sdk/src/utils.rs:12-20',
    async check() {
      const s = await scratch();
      const argv = v2.prove(cfg(), agg(), {
        kind: 'stark',
        exe: s.exe,
        input: s.input,
        proof: join(s.dir, 'p.json'),
        targetDir: s.targetDir,
      });
      const verbose = await fake(argv, { FAKE_OPENVM_SEGMENTS: '2' });
      expect(verbose.stdout).toMatch(
        /^INFO {5}app_prove .*\nINFO {5}┝━ prove_segment .*segment: 0\nINFO {5}┕━ prove_segment .*segment: 1\nINFO {5}agg_layer /m,
      );
      const quiet = await fake(argv.filter((a) => a !== '--verbose'));
      expect(quiet.stdout).not.toMatch(/^INFO/m);
      const viaEnv = await fake(
        argv.filter((a) => a !== '--verbose'),
        { RUST_LOG: 'info' },
      );
      expect(viaEnv.stdout).toMatch(/^INFO {5}app_prove/m);
      // run's interpreter logs its instruction count at INFO too (crates/vm/src/arch/interpreter.rs:81,337).
      const run = await fake(['openvm', '--verbose', ...v2.run(cfg(), { exe: s.exe, input: s.input, mode: 'pure' }).slice(1)]);
      expect(run.stdout).toMatch(/^INFO {5}┕━ ｉ \[info\]: instructions_executed=\d+$/m);
    },
  },
  {
    behaviour: 'prove evm reads --root-pk and --halo2-pk (defaults ~/.openvm/root.pk, halo2.pk) and says to run setup --evm',
    source: 'cli/commands/prove.rs:92-133,234-275,390-417; cli/default.rs:35-41',
    async check() {
      const s = await scratch();
      const home = await starkHome();
      const res = await fake(
        v2.prove(cfg(), aggregationPaths(v2, { HOME: home }), {
          kind: 'evm',
          exe: s.exe,
          input: s.input,
          proof: join(s.dir, 'p.json'),
          targetDir: s.targetDir,
        }),
        { HOME: home },
      );
      expect(res.code).toBe(1);
      expect(res.stderr).toMatch(
        /^Error: Failed to read root proving key from [\s\S]*\nRun 'cargo openvm setup --evm' first to generate it/,
      );
    },
  },
  {
    behaviour: 'Halo2 proving panics (exit 101) on a missing KZG parameter file',
    source: 'sdk/halo2_params.rs:39-58',
    async check() {
      const s = await scratch();
      const a = agg();
      const file = join(a.paramsDir, 'kzg_bn254_24.srs');
      const saved = await readFile(file);
      await rm(file);
      try {
        const res = await fake(
          v2.prove(cfg(), a, { kind: 'evm', exe: s.exe, input: s.input, proof: join(s.dir, 'p.json'), targetDir: s.targetDir }),
        );
        expect(res.code).toBe(101);
        expect(res.stderr).toContain(`Failed to open params file ${file}`);
      } finally {
        await writeFile(file, saved);
      }
    },
  },
  {
    behaviour: 'prove evm writes EvmProof JSON: version, flattened 0x commits, 0x user_public_values, proof_data {accumulator, proof}',
    source: 'sdk/types.rs:53-76,99-113; cli/commands/prove.rs:263-274',
    async check() {
      const s = await scratch();
      const proof = join(s.dir, 'p.evm.proof');
      expect((await fake(v2.prove(cfg(), agg(), { kind: 'evm', exe: s.exe, input: s.input, proof, targetDir: s.targetDir }))).code).toBe(0);
      const doc = JSON.parse(await readFile(proof, 'utf8'));
      expect(doc).toEqual({
        version: 'v2.0',
        app_exe_commit: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        app_vm_commit: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        user_public_values: expect.stringMatching(/^0x[0-9a-f]*$/),
        proof_data: { accumulator: expect.stringMatching(/^0x([0-9a-f]{64}){12}$/), proof: expect.stringMatching(/^0x[0-9a-f]+$/) },
      });
    },
  },
  {
    behaviour: 'verify stark reads --agg-vk (default ~/.openvm/internal_recursive.vk) and --app-baseline; STARK hex must be bare',
    source: 'cli/commands/verify.rs:58-87,189-232; sdk/types.rs:305-311 (serde_with::hex)',
    async check() {
      const s = await scratch();
      const proofPath = join(s.dir, 'p.stark.proof');
      await fake(v2.prove(cfg(), agg(), { kind: 'stark', exe: s.exe, input: s.input, proof: proofPath, targetDir: s.targetDir }));
      await fake(v2.commit(cfg(), agg(), { exe: s.exe, outputDir: join(s.dir, 'out'), targetDir: s.targetDir }));
      const baseline = join(s.dir, 'out', 'openvm-config.baseline.json');
      const ok = await fake(v2.verifyStark(cfg(), agg(), { proof: proofPath, baseline, targetDir: s.targetDir }));
      expect(ok).toMatchObject({ code: 0, stdout: expect.stringContaining('Proof verified successfully!') });
      const noHome = await fake(
        v2.verifyStark(
          cfg(),
          { ...agg(), internalRecursiveVk: join(s.dir, 'none.vk') },
          { proof: proofPath, baseline, targetDir: s.targetDir },
        ),
      );
      expect(noHome.stderr).toMatch(
        /^Error: Failed to read aggregation verifying key from .*none\.vk[\s\S]*\nRun 'cargo openvm setup' first to generate it/,
      );
      const proof = JSON.parse(await readFile(proofPath, 'utf8'));
      await writeFile(proofPath, JSON.stringify({ ...proof, proof: '0x' + proof.proof }));
      const prefixed = await fake(v2.verifyStark(cfg(), agg(), { proof: proofPath, baseline, targetDir: s.targetDir }));
      expect(prefixed.code).toBe(1);
      expect(prefixed.stderr).toMatch(
        /Proof needs to be compatible with openvm v2\.0\n\nCaused by:\n {4}Invalid character 'x' at position 1/,
      );
    },
  },
  {
    behaviour:
      'verify evm reads the verifier from --evm-verifier/src/v2.0-base and checks --app-commit; hex with or without 0x; a non-canonical commit panics',
    source:
      'cli/commands/verify.rs:88-116,233-269,276-304; sdk/fs.rs:27-62; sdk/types.rs:71-75; crates/continuations/src/commit_bytes.rs:20-26,141-150',
    async check() {
      const s = await scratch();
      const proofPath = join(s.dir, 'p.evm.proof');
      await fake(v2.prove(cfg(), agg(), { kind: 'evm', exe: s.exe, input: s.input, proof: proofPath, targetDir: s.targetDir }));
      await fake(v2.commit(cfg(), agg(), { exe: s.exe, outputDir: join(s.dir, 'out'), targetDir: s.targetDir }));
      const appCommit = join(s.dir, 'out', 'openvm-config.commit.json');
      const argv = v2.verifyEvm(agg(), { proof: proofPath, appCommit });
      expect(await fake(argv)).toMatchObject({ code: 0, stdout: expect.stringContaining('Proof verified successfully!') });
      const text = await readFile(proofPath, 'utf8');
      await writeFile(proofPath, text.replaceAll('0x', ''));
      expect((await fake(argv)).code).toBe(0);
      await writeFile(proofPath, JSON.stringify({ ...JSON.parse(text), app_vm_commit: '0x' + 'ff'.repeat(32) }));
      const panicked = await fake(argv);
      expect(panicked.code).toBe(101);
      expect(panicked.stderr).toContain('non-canonical CommitBytes for BabyBear digest');
      const noVerifier = await fake(v2.verifyEvm({ ...agg(), evmVerifierDir: join(s.dir, 'none') }, { proof: proofPath, appCommit }));
      expect(noVerifier.stderr).toMatch(
        /^Error: Failed to read EVM verifier from .*none: [\s\S]*\nRun 'cargo openvm setup --evm' to generate it/,
      );
    },
  },
];

describe('fake-cargo models cargo-openvm v2.0.1 (contract table)', () => {
  it.each(CONTRACT.map((c) => [`${c.behaviour} [v2.0.1:${c.source}]`, c] as const))('%s', async (_name, c) => {
    await c.check();
  });
});

describe('command-line checks (clap)', () => {
  it('rejects a flag without its value, and a repeated one', async () => {
    expect((await fake(['openvm', 'verify', 'stark', '--proof'])).stderr).toMatch(
      /^error: a value is required for '--proof <PROOF>' but none was supplied/,
    );
    const twice = await fake(['openvm', 'run', '--exe', 'a', '--exe', 'b']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/cannot be used multiple times/);
  });

  it('checks --input values', async () => {
    const input = await fake(['openvm', 'run', '--input', 'not-a-file']);
    expect(input.code).toBe(2);
    expect(input.stderr).toContain('Input must be a valid file path or a hex string of even length.');
  });

  it('requires a subcommand where the tool does, and knows only its subcommands', async () => {
    expect((await fake(['openvm', 'prove'])).code).toBe(2);
    expect((await fake(['openvm', 'prove', 'snark'])).stderr).toMatch(/unrecognized subcommand 'snark'/);
    expect((await fake(['build'])).code).toBe(101);
  });

  it('accepts every flag the engine passes, and drops flags it is told a tool version lacks', async () => {
    const res = await fake(['openvm', 'setup', '--evm'], { FAKE_OPENVM_UNKNOWN_FLAGS: '--evm' });
    expect(res.code).toBe(2);
    const s = await scratch();
    const older = await fake(
      v2.prove(cfg(), agg(), { kind: 'stark', exe: s.exe, input: s.input, proof: join(s.dir, 'p.json'), targetDir: s.targetDir }),
      { FAKE_OPENVM_UNKNOWN_FLAGS: '--agg-prefix-pk' },
    );
    expect(older.code).toBe(2);
    expect(older.stderr).toMatch(/^error: unexpected argument '--agg-prefix-pk' found/);
  });
});
