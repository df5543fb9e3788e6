// The zkVM tool's command lines, per tool version. This is the only module that
// knows `cargo openvm` subcommands, flags and the file names the tool reads and
// writes; everything else asks it for argv arrays and paths.
//
// Where the flags come from: openvm-org/openvm, crates/cli/src, workspace
// version 2.0.0-beta.2 (the 2.x line, whose STARK proof, commit and baseline JSON
// are the formats in client-conventions.md). The stored copies are per file, not
// one commit; these are the newest that agree with each other:
//   args.rs @ ec5f7254      ProvingKeyArgs --app-pk, --agg-pk ("${openvm_dir}/agg.pk");
//                           OpenVmConfigArgs --config, --output-dir, --init-file-name;
//                           ManifestArgs --target-dir, --manifest-path
//   commands/verify.rs @ 0601ae0b   verify stark --agg-vk --app-baseline --proof;
//                           verify evm --evm-verifier --app-commit --proof
//   commands/commit.rs      --exe + ProvingKeyArgs + OpenVmConfigArgs; writes
//                           <target>.commit.json and <target>.baseline.json under
//                           ${openvm_dir}/<profile> and copies both to --output-dir
//   commands/prove.rs       prove app --app-pk; prove stark|evm + ProvingKeyArgs; all
//                           take RunArgs (--exe --input + OpenVmConfigArgs) and --proof
//   commands/run.rs         --mode pure|meter|segment and the metric lines of output.ts
//   commands/setup.rs @ 0bb6e7bf    setup [--evm] [--force] [--download]
//   default.rs, util.rs @ 076f3b36  ${openvm_dir} = parent(--target-dir)/openvm holding
//                           app.pk, app.vk; $HOME/.openvm/internal_recursive.pk, root.pk,
//                           params/, halo2/ (an older util.rs names the aggregation key
//                           agg_prefix.pk; args.rs's agg.pk is what this mapping uses)
// Every command resolves a Cargo manifest even when --exe is given
// (get_manifest_path_and_dir is called unconditionally), so each config
// directory carries a stub Cargo package and every command line passes
// --manifest-path.
//
// Version policy: a mapping covers one major version from a minor upwards. A
// config naming a later minor of a known major uses the newest mapping of that
// major with a logged warning (clap rejects a removed flag with exit status 2,
// which the engine reports as an infrastructure error naming this module). An
// unknown major is refused: its flags, key layout and proof format are unknown.

export type ProofKind = 'app' | 'stark' | 'evm';

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
  aggPk: string;
}

/** Aggregation keys the tool keeps in $HOME/.openvm (its default; no flag moves them for proving). */
export interface AggregationPaths {
  dir: string;
  internalRecursivePk: string;
  internalRecursiveVk: string;
  rootPk: string;
  paramsDir: string;
  evmVerifierDir: string;
}

export interface CliMapping {
  /** Label shown to operators, e.g. "2.x". */
  label: string;
  major: number;
  /** First minor version these flags apply to. */
  sinceMinor: number;
  /** Newest minor whose sources were read; later minors get a warning. */
  readMinor: number;
  /** Key file names inside ${openvm_dir} (what keygen writes). */
  keyFiles: { appPk: string; appVk: string; aggPk: string };
  /** Aggregation key names inside $HOME/.openvm (what setup writes). */
  aggregationFiles: { internalRecursivePk: string; internalRecursiveVk: string; rootPk: string; paramsDir: string; evmVerifierDir: string };
  setup(o: { evm: boolean }): string[];
  keygen(c: ConfigPaths): string[];
  commit(c: ConfigPaths, o: { exe: string; outputDir: string; targetDir: string }): string[];
  run(c: ConfigPaths, o: { exe: string; input: string; mode: string }): string[];
  prove(c: ConfigPaths, o: { kind: ProofKind; exe: string; input: string; proof: string; targetDir: string }): string[];
  verifyStark(c: ConfigPaths, o: { proof: string; baseline: string; aggVk: string; targetDir: string }): string[];
  verifyEvm(c: ConfigPaths, o: { proof: string; appCommit: string; evmVerifier: string; targetDir: string }): string[];
  /** Modes `run --mode` accepts (clap ValueEnum ExecutionMode). */
  runModes: readonly string[];
}

const manifest = (c: ConfigPaths, targetDir: string) => ['--manifest-path', c.manifestPath, '--target-dir', targetDir];

const V2: CliMapping = {
  label: '2.x',
  major: 2,
  sinceMinor: 0,
  readMinor: 0,
  keyFiles: { appPk: 'app.pk', appVk: 'app.vk', aggPk: 'agg.pk' },
  aggregationFiles: {
    internalRecursivePk: 'internal_recursive.pk',
    internalRecursiveVk: 'internal_recursive.vk',
    rootPk: 'root.pk',
    paramsDir: 'params',
    evmVerifierDir: 'halo2',
  },
  runModes: ['pure', 'meter', 'segment'],
  //                     subcommand            flags
  setup: ({ evm }) => ['openvm', 'setup', ...(evm ? ['--evm'] : [])],
  keygen: (c) => ['openvm', 'keygen', '--config', c.openvmToml, ...manifest(c, c.targetDir)],
  commit: (c, o) => ['openvm', 'commit', '--exe', o.exe, '--app-pk', c.appPk, '--agg-pk', c.aggPk, '--output-dir', o.outputDir, ...manifest(c, o.targetDir)],
  // run reads app.pk from ${openvm_dir} in meter/segment mode: the config's own target dir finds it in place.
  run: (c, o) => ['openvm', 'run', '--exe', o.exe, '--config', c.openvmToml, '--input', o.input, '--mode', o.mode, ...manifest(c, c.targetDir)],
  prove: (c, o) => [
    'openvm', 'prove', o.kind,
    '--exe', o.exe, '--config', c.openvmToml, '--input', o.input, '--proof', o.proof,
    '--app-pk', c.appPk, ...(o.kind === 'app' ? [] : ['--agg-pk', c.aggPk]),
    ...manifest(c, o.targetDir),
  ],
  verifyStark: (c, o) => ['openvm', 'verify', 'stark', '--proof', o.proof, '--app-baseline', o.baseline, '--agg-vk', o.aggVk, ...manifest(c, o.targetDir)],
  verifyEvm: (c, o) => ['openvm', 'verify', 'evm', '--proof', o.proof, '--evm-verifier', o.evmVerifier, '--app-commit', o.appCommit, ...manifest(c, o.targetDir)],
};

/** Known mappings, newest first. */
export const CLI_MAPPINGS: readonly CliMapping[] = [V2];

export interface ParsedVersion {
  major: number;
  minor: number;
  patch: number;
  text: string;
}

/** Parses `v2.0.0`, `2.0`, `2.0.0-beta.2`, or the first such number in a longer text. */
export function parseVersion(text: string): ParsedVersion | null {
  const m = /v?(\d+)\.(\d+)(?:\.(\d+))?(-[0-9A-Za-z.-]+)?/.exec(text);
  if (!m) return null;
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0), text: m[0].replace(/^v/, '') };
}

export interface MappingChoice {
  mapping: CliMapping;
  /** Set when the version is newer than the sources the mapping was read from. */
  warning: string | null;
}

/** Picks the flag mapping for a config's `openvm_version`; throws for unknown majors. */
export function selectCliMapping(openvmVersion: string): MappingChoice {
  const v = parseVersion(openvmVersion);
  if (!v) throw new Error(`openvm engine: cannot read openvm_version '${openvmVersion}'`);
  const known = CLI_MAPPINGS.map((m) => m.label).join(', ');
  const mapping = CLI_MAPPINGS.filter((m) => m.major === v.major && m.sinceMinor <= v.minor).sort((a, b) => b.sinceMinor - a.sinceMinor)[0];
  if (!mapping) {
    throw new Error(`openvm engine: no command-line mapping for openvm ${v.text} (this agent knows ${known}); see prover-agent/src/engine/openvm/commands.ts`);
  }
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
