// The zkVM tool's command lines, per tool version. This is the only module that
// knows `cargo openvm` subcommands, flags, default paths and the file names the
// tool reads and writes; everything else asks it for argv arrays and paths.
//
// Every fact below is traced to openvm-org/openvm at tag v2.0.1 (the CLI crate
// is identical at v2.0.0), cited as `v2.0.1:<path>:<line>` (paths relative to the
// repository root; later paths in one citation share its tag). The stand-in test/engine/openvm/fake-cargo
// models the same facts; its contract table (stand-in.test.ts) cites them too.
//
// Tool-wide facts the mapping relies on:
// - `--verbose` belongs to `cargo openvm` itself, before the subcommand, and
//   raises its log level from WARN to INFO (v2.0.1:crates/cli/src/bin/cargo-openvm.rs:20-21,41-46);
//   `run`'s own `--verbose` is cargo's build verbosity (v2.0.1:crates/cli/src/commands/run.rs:146-152).
//   RUST_LOG overrides both (stark-backend v2.0.1:crates/stark-sdk/src/utils.rs:14).
// - Every command but setup resolves a Cargo manifest (v2.0.1:crates/cli/src/util.rs:64-77) and,
//   for commit and prove stark, names its outputs after the manifest's one binary
//   via `cargo metadata`, which panics (exit 101) when it fails
//   (v2.0.1:crates/cli/src/commands/commit.rs:86, crates/cli/src/commands/prove.rs:217, crates/toolchain/build/src/lib.rs:98-108).
//   Hence a stub package per config directory and --manifest-path on every line.
// - With --target-dir given, ${openvm_dir} = parent(--target-dir)/openvm
//   (v2.0.1:crates/cli/src/util.rs:79-91) and no `cargo metadata` runs for the target dir.
// - clap rejects an unknown flag with exit status 2; eyre errors exit 1; panics
//   (unwrap, assert, expect) exit 101 (Rust's panic status).
//
// Version policy and the config rules (which versions a mapping serves, what keygen
// accepts) are shared with the service's operator tool: prover-agent/src/protocol/openvm-config.ts.
import { OPENVM_RELEASES, parseVersion, releaseOf, versionProblem, type OpenvmRelease, type ProofType } from '../../protocol.ts';

/** Files of one config directory (see config-dir.ts for the layout). */
export interface ConfigPaths {
  dir: string;
  openvmToml: string;
  /** Stub Cargo package the tool resolves even when given --exe. */
  manifestPath: string;
  stubMain: string;
  /** keygen's --target-dir; the tool derives ${openvm_dir} = <dir>/openvm from it. */
  targetDir: string;
  appPk: string;
  appVk: string;
  /** The aggregation prefix proving key keygen writes (--agg-prefix-pk). */
  aggPrefixPk: string;
}

/** Keys the tool keeps in $HOME/.openvm, written by `cargo openvm setup [--evm]`. */
export interface AggregationPaths {
  dir: string;
  /** What `--agg-pk` means: the internal-recursive proving key. */
  internalRecursivePk: string;
  /** What `verify stark --agg-vk` reads by default. */
  internalRecursiveVk: string;
  rootPk: string;
  halo2Pk: string;
  /** Halo2 KZG parameters kzg_bn254_<k>.srs. */
  paramsDir: string;
  /** `verify evm --evm-verifier` (the parent of src/<version dir>/). */
  evmVerifierDir: string;
  /** The versioned directory holding the verifier artifacts. */
  evmVerifierVersionDir: string;
  /** The deployable verifier (bytecode JSON) inside evmVerifierVersionDir. */
  evmVerifierArtifact: string;
}

/** The command lines of one release line (its version range and keygen limits: OpenvmRelease). */
export interface CliMapping extends OpenvmRelease {
  /** `version` in the proof JSON the tool writes: "v<major>.<minor>". */
  proofVersion: string;
  /** Key file names inside ${openvm_dir} (what keygen writes). */
  keyFiles: { appPk: string; appVk: string; aggPrefixPk: string };
  /** Names inside $HOME/.openvm (what setup writes). */
  aggregationFiles: {
    internalRecursivePk: string;
    internalRecursiveVk: string;
    rootPk: string;
    halo2Pk: string;
    paramsDir: string;
    /** KZG parameter files setup --evm fetches: kzg_bn254_<k>.srs for k in [min, max]. */
    kzgParams: { min: number; max: number; name: (k: number) => string };
    evmVerifierDir: string;
    /** Path of the verifier artifacts below evmVerifierDir. */
    evmVerifierVersionDir: string;
    evmVerifierFiles: readonly string[];
    evmVerifierArtifact: string;
  };
  /** Cells past which `run --mode meter` stops early and still exits 0. */
  meterCostCap: number;
  setup(o: { evm: boolean; download: boolean }): string[];
  keygen(c: ConfigPaths): string[];
  commit(c: ConfigPaths, a: AggregationPaths, o: { exe: string; outputDir: string; targetDir: string }): string[];
  run(c: ConfigPaths, o: { exe: string; input: string; mode: string }): string[];
  prove(
    c: ConfigPaths,
    a: AggregationPaths,
    o: { kind: ProofType; exe: string; input: string; proof: string; targetDir: string },
  ): string[];
  verifyStark(c: ConfigPaths, a: AggregationPaths, o: { proof: string; baseline: string; targetDir: string }): string[];
  verifyEvm(a: AggregationPaths, o: { proof: string; appCommit: string }): string[];
  /** Modes `run --mode` accepts (clap ValueEnum ExecutionMode). */
  runModes: readonly string[];
}

const manifest = (c: ConfigPaths, targetDir: string) => ['--manifest-path', c.manifestPath, '--target-dir', targetDir];

const V2: CliMapping = {
  ...OPENVM_RELEASES.find((r) => r.label === '2.x')!,
  proofVersion: 'v2.0', //                            v2.0.1:crates/sdk/src/lib.rs:93-97, crates/sdk/src/types.rs:317
  keyFiles: {
    appPk: 'app.pk', //                                 v2.0.1:crates/cli/src/default.rs:9
    appVk: 'app.vk', //                                 v2.0.1:crates/cli/src/default.rs:10
    aggPrefixPk: 'agg_prefix.pk', //                    v2.0.1:crates/cli/src/default.rs:11, crates/cli/src/commands/keygen.rs:63,107
  },
  aggregationFiles: {
    internalRecursivePk: 'internal_recursive.pk', //   v2.0.1:crates/cli/src/default.rs:27-29, crates/cli/src/commands/setup.rs:63-68
    internalRecursiveVk: 'internal_recursive.vk', //   v2.0.1:crates/cli/src/default.rs:31-33, crates/cli/src/commands/setup.rs:70-75
    rootPk: 'root.pk', //                               v2.0.1:crates/cli/src/default.rs:35-37, crates/cli/src/commands/setup.rs:81-83 (--evm)
    halo2Pk: 'halo2.pk', //                             v2.0.1:crates/cli/src/default.rs:39-41, crates/cli/src/commands/setup.rs:87-97 (--evm)
    paramsDir: 'params', //                             v2.0.1:crates/cli/src/default.rs:23-25, crates/sdk/src/halo2_params.rs:33-36
    kzgParams: { min: 10, max: 24, name: (k) => `kzg_bn254_${k}.srs` }, // v2.0.1:crates/cli/src/commands/setup.rs:29,85,289-290
    evmVerifierDir: 'halo2', //                         v2.0.1:crates/cli/src/default.rs:43-45
    evmVerifierVersionDir: 'src/v2.0-base', //          v2.0.1:crates/cli/src/util.rs:24-26, crates/cli/src/commands/setup.rs:100
    evmVerifierFiles: ['Halo2Verifier.sol', 'OpenVmHalo2Verifier.sol', 'verifier.bytecode.json', 'interfaces/IOpenVmHalo2Verifier.sol'], // v2.0.1:crates/sdk/src/fs.rs:19-22,37-49
    evmVerifierArtifact: 'verifier.bytecode.json', //   v2.0.1:crates/sdk/src/fs.rs:22,49
  },
  // 100 segments x 15 GiB: v2.0.1:crates/vm/src/arch/execution_mode/metered_cost.rs:12-13,65-67;
  // segment_ctx.rs:11. Past it metering suspends and `run` prints its lines as usual.
  meterCostCap: 100 * 15 * 2 ** 30,
  runModes: ['pure', 'meter', 'segment'], //            v2.0.1:crates/cli/src/commands/run.rs:22-31
  //          subcommand and flags                     source
  // setup: --evm, --force, --download; writes $HOME/.openvm only.  v2.0.1:crates/cli/src/commands/setup.rs:31-54
  setup: ({ evm, download }) => ['openvm', 'setup', ...(evm ? ['--evm'] : []), ...(evm && download ? ['--download'] : [])],
  // keygen --config + ManifestArgs; writes ${openvm_dir}/{app.pk,app.vk,agg_prefix.pk}.  v2.0.1:crates/cli/src/commands/keygen.rs:24-74
  keygen: (c) => ['openvm', 'keygen', '--config', c.openvmToml, ...manifest(c, c.targetDir)],
  // commit --exe, ProvingKeyArgs (--app-pk, --agg-prefix-pk, --agg-pk), OpenVmConfigArgs (--output-dir).
  //   v2.0.1:crates/cli/src/commands/commit.rs:30-47,64-68; crates/cli/src/args.rs:60-85; crates/cli/src/commands/prove.rs:351-388
  // writes <bin>.commit.json, <bin>.baseline.json under ${openvm_dir}/<profile>, copies both
  // to --output-dir.  v2.0.1:crates/cli/src/commands/commit.rs:82-108
  commit: (c, a, o) => [
    'openvm',
    'commit',
    '--exe',
    o.exe,
    '--app-pk',
    c.appPk,
    '--agg-prefix-pk',
    c.aggPrefixPk,
    '--agg-pk',
    a.internalRecursivePk,
    '--output-dir',
    o.outputDir,
    ...manifest(c, o.targetDir),
  ],
  // run: RunArgs (--exe --config --input --mode) + RunCargoArgs.  v2.0.1:crates/cli/src/commands/run.rs:33-72
  // meter/segment read ${openvm_dir}/app.pk (no flag moves it): the config's own target dir finds it.
  //   v2.0.1:crates/cli/src/commands/run.rs:241-254
  // Its metric lines are println!, printed at any log level; without --verbose its stdout is
  // the guest's output and those lines only.
  run: (c, o) => [
    'openvm',
    'run',
    '--exe',
    o.exe,
    '--config',
    c.openvmToml,
    '--input',
    o.input,
    '--mode',
    o.mode,
    ...manifest(c, c.targetDir),
  ],
  // prove app: --proof --app-pk + RunArgs; prove stark: --proof + ProvingKeyArgs + RunArgs;
  // prove evm: stark's flags + --root-pk --halo2-pk (defaults ~/.openvm/root.pk, halo2.pk).
  //   v2.0.1:crates/cli/src/commands/prove.rs:40-133, 351-417; prove evm needs the evm-prove feature,
  //   on by default (v2.0.1:crates/cli/Cargo.toml:88-90: default → evm-verify → evm-prove).
  // --verbose (before the subcommand) makes the INFO span trees phases and segments are read from.
  prove: (c, a, o) => [
    'openvm',
    '--verbose',
    'prove',
    o.kind,
    '--exe',
    o.exe,
    '--config',
    c.openvmToml,
    '--input',
    o.input,
    '--proof',
    o.proof,
    '--app-pk',
    c.appPk,
    ...(o.kind === 'app' ? [] : ['--agg-prefix-pk', c.aggPrefixPk, '--agg-pk', a.internalRecursivePk]),
    ...(o.kind === 'evm' ? ['--root-pk', a.rootPk, '--halo2-pk', a.halo2Pk] : []),
    ...manifest(c, o.targetDir),
  ],
  // verify stark: --agg-vk (default ~/.openvm/internal_recursive.vk) --app-baseline --proof.
  //   v2.0.1:crates/cli/src/commands/verify.rs:58-87,189-232
  verifyStark: (c, a, o) => [
    'openvm',
    'verify',
    'stark',
    '--proof',
    o.proof,
    '--app-baseline',
    o.baseline,
    '--agg-vk',
    a.internalRecursiveVk,
    ...manifest(c, o.targetDir),
  ],
  // verify evm: --evm-verifier (default ~/.openvm/halo2/) --app-commit <commit.json> --proof;
  // reads no manifest when --app-commit names a file.  v2.0.1:crates/cli/src/commands/verify.rs:88-116,233-269,276-304
  verifyEvm: (a, o) => ['openvm', 'verify', 'evm', '--proof', o.proof, '--evm-verifier', a.evmVerifierDir, '--app-commit', o.appCommit],
};

/** Lines the tool prints, by the command that prints them (output.ts reads them). */
export const PRINTED = {
  // println!, stdout.  v2.0.1:crates/cli/src/commands/run.rs:273,277-280,284-288
  executionOutput: /^Execution output:\s*(.*)$/,
  instructions: /^Number of instructions executed:\s*(\d+)\s*$/,
  totalCost: /^Total cost:\s*(\d+)\s*$/,
  totalSegments: /^Total segments:\s*(\d+)\s*$/,
  // v2.0.1:crates/cli/src/util.rs:41-44
  defaultConfig: /not found, using default application configuration$/,
  // INFO (with --verbose): the app prover's span closes when the app proof is done;
  // tracing-forest prints a span's tree when its root span closes.
  //   v2.0.1:crates/sdk/src/prover/app.rs:118-122; stark-backend v2.0.1:crates/stark-sdk/src/utils.rs:16-18
  appProveSpan: /\bapp_prove\b/,
  // One `prove_segment` span per proved segment.  v2.0.1:crates/vm/src/arch/vm.rs:1097
  proveSegmentSpan: /\bprove_segment\b/,
  // Aggregation and EVM wrapping spans.  v2.0.1:crates/sdk/src/prover/agg.rs:185,202,217; crates/sdk/src/prover/root.rs:96; crates/sdk/src/prover/halo2.rs:39,44
  aggregationSpan: /\b(agg_layer|halo2_outer|halo2_wrapper)\b/,
} as const;

/** Known mappings, newest first: one per release line of OPENVM_RELEASES. */
export const CLI_MAPPINGS: readonly CliMapping[] = [V2];

export interface MappingChoice {
  mapping: CliMapping;
  /** Set when the version is newer than the sources the mapping was read from. */
  warning: string | null;
}

/** Picks the flag mapping for a config's `openvm_version`; throws for versions no mapping serves. */
export function selectCliMapping(openvmVersion: string): MappingChoice {
  const problem = versionProblem(openvmVersion);
  if (problem) throw new Error(`openvm engine: ${problem}; see prover-agent/src/engine/openvm/commands.ts`);
  const release = releaseOf(openvmVersion)!;
  const mapping = CLI_MAPPINGS.find((m) => m.label === release.label)!;
  const v = parseVersion(openvmVersion)!;
  const warning =
    v.minor > mapping.readMinor
      ? `openvm ${v.text}: using the ${mapping.label} command-line mapping read from ${mapping.major}.${mapping.readMinor} sources`
      : null;
  return { mapping, warning };
}

/** Renders an argv for logs and printed instructions (POSIX-shell quoting). */
export function shellJoin(argv: readonly string[]): string {
  return argv.map((a) => (/^[\w@%+=:,./~$-]+$/.test(a) ? a : `'${a.replace(/'/g, `'\\''`)}'`)).join(' ');
}
