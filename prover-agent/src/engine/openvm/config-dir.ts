// One directory per config on the host, holding what the zkVM tool needs for
// that config, plus the host-wide aggregation keys the tool keeps in
// $HOME/.openvm. Keys stay here; jobs pass their paths to the tool and never
// copy them.
//
//   <configsDir>/<cfg_id>/
//     openvm.toml          the config's VM extensions (input to keygen and run)
//     Cargo.toml, src/main.rs   stub package: the tool resolves a manifest even with --exe
//     target/              keygen's --target-dir (scratch)
//     openvm/app.pk app.vk agg.pk   written by `cargo openvm keygen`
//   $HOME/.openvm/         written by `cargo openvm setup [--evm]`, shared by configs
//                          of the same openvm version
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { AggregationPaths, CliMapping, ConfigPaths } from './commands.ts';

/** Where configs live when neither a flag nor PROVER_AGENT_CONFIGS_DIR says otherwise. */
export const DEFAULT_CONFIGS_DIR = '/var/lib/prover-agent/configs';

export function defaultConfigsDir(env: NodeJS.ProcessEnv = process.env): string {
  return env.PROVER_AGENT_CONFIGS_DIR || DEFAULT_CONFIGS_DIR;
}

export const STUB_MANIFEST = `# Stub package: cargo-openvm resolves a Cargo manifest even when given --exe.
[package]
name = "openvm-config"
version = "0.0.0"
edition = "2021"
publish = false

[workspace]
`;
export const STUB_MAIN = 'fn main() {}\n';

export function configPaths(configsDir: string, configId: string, mapping: CliMapping): ConfigPaths {
  if (!/^[\w.-]+$/.test(configId) || configId === '.' || configId === '..') {
    throw new Error(`openvm engine: config id '${configId}' cannot name a directory`);
  }
  const dir = join(configsDir, configId);
  const keys = join(dir, 'openvm');
  return {
    dir,
    openvmToml: join(dir, 'openvm.toml'),
    manifestPath: join(dir, 'Cargo.toml'),
    stubMain: join(dir, 'src', 'main.rs'),
    targetDir: join(dir, 'target'),
    appPk: join(keys, mapping.keyFiles.appPk),
    appVk: join(keys, mapping.keyFiles.appVk),
    aggPk: join(keys, mapping.keyFiles.aggPk),
  };
}

/** The tool reads $HOME/.openvm (default.rs); the same HOME must reach the tool's environment. */
export function aggregationPaths(mapping: CliMapping, env: NodeJS.ProcessEnv = process.env): AggregationPaths {
  const dir = join(env.HOME || homedir(), '.openvm');
  const f = mapping.aggregationFiles;
  return {
    dir,
    internalRecursivePk: join(dir, f.internalRecursivePk),
    internalRecursiveVk: join(dir, f.internalRecursiveVk),
    rootPk: join(dir, f.rootPk),
    paramsDir: join(dir, f.paramsDir),
    evmVerifierDir: join(dir, f.evmVerifierDir),
  };
}

export interface Requirement {
  path: string;
  what: string;
  kind: 'file' | 'dir';
}

/** Everything a config needs for STARK work, plus the EVM keys when `evm` is set. */
export function requirements(c: ConfigPaths, a: AggregationPaths, o: { evm: boolean }): Requirement[] {
  const reqs: Requirement[] = [
    { path: c.openvmToml, what: 'openvm.toml (the config VM)', kind: 'file' },
    { path: c.manifestPath, what: 'stub Cargo.toml', kind: 'file' },
    { path: c.stubMain, what: 'stub src/main.rs', kind: 'file' },
    { path: c.appPk, what: 'app proving key (cargo openvm keygen)', kind: 'file' },
    { path: c.appVk, what: 'app verifying key (cargo openvm keygen)', kind: 'file' },
    { path: c.aggPk, what: 'aggregation proving key (cargo openvm keygen)', kind: 'file' },
    { path: a.internalRecursivePk, what: 'internal-recursive proving key (cargo openvm setup)', kind: 'file' },
    { path: a.internalRecursiveVk, what: 'internal-recursive verifying key (cargo openvm setup)', kind: 'file' },
  ];
  if (o.evm) {
    reqs.push(
      { path: a.rootPk, what: 'root proving key (cargo openvm setup --evm)', kind: 'file' },
      { path: a.paramsDir, what: 'Halo2 KZG parameters (cargo openvm setup --evm)', kind: 'dir' },
    );
  }
  return reqs;
}

/** Requirements that are absent (or empty files, which an interrupted keygen leaves behind). */
export async function missingRequirements(reqs: Requirement[]): Promise<Requirement[]> {
  const missing: Requirement[] = [];
  for (const r of reqs) {
    const s = await stat(r.path).catch(() => null);
    const ok = s !== null && (r.kind === 'dir' ? s.isDirectory() : s.isFile() && s.size > 0);
    if (!ok) missing.push(r);
  }
  return missing;
}

export function describeMissing(missing: Requirement[]): string {
  return missing.map((r) => `${r.what}: ${r.path}`).join('; ');
}
