// One directory per config on the host, holding what the zkVM tool needs for
// that config, plus the host-wide aggregation keys the tool keeps in
// $HOME/.openvm. Keys stay here; jobs pass their paths to the tool and never
// copy them.
//
//   <configsDir>/<cfg_id>/
//     openvm.toml          the config's VM extensions (input to keygen and run)
//     Cargo.toml, src/main.rs   stub package: the tool resolves a manifest even with --exe
//     target/              keygen's --target-dir (scratch)
//     openvm/app.pk app.vk agg_prefix.pk   written by `cargo openvm keygen`
//   $HOME/.openvm/         written by `cargo openvm setup [--evm]`, shared by configs
//                          of the same openvm version:
//     internal_recursive.pk internal_recursive.vk      setup
//     root.pk halo2.pk params/kzg_bn254_{10..24}.srs   setup --evm (EVM proving)
//     halo2/src/v2.0-base/...                          setup --evm (EVM verifying)
// (names and sources: commands.ts)
import { stat } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { PublishedKeyName } from '../../protocol.ts';
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
    aggPrefixPk: join(keys, mapping.keyFiles.aggPrefixPk),
  };
}

/** The tool reads $HOME/.openvm (default.rs); the same HOME must reach the tool's environment. */
export function aggregationPaths(mapping: CliMapping, env: NodeJS.ProcessEnv = process.env): AggregationPaths {
  const dir = join(env.HOME || homedir(), '.openvm');
  const f = mapping.aggregationFiles;
  const evmVerifierVersionDir = join(dir, f.evmVerifierDir, f.evmVerifierVersionDir);
  return {
    dir,
    internalRecursivePk: join(dir, f.internalRecursivePk),
    internalRecursiveVk: join(dir, f.internalRecursiveVk),
    rootPk: join(dir, f.rootPk),
    halo2Pk: join(dir, f.halo2Pk),
    paramsDir: join(dir, f.paramsDir),
    evmVerifierDir: join(dir, f.evmVerifierDir),
    evmVerifierVersionDir,
    evmVerifierArtifact: join(evmVerifierVersionDir, f.evmVerifierArtifact),
  };
}

export interface Requirement {
  path: string;
  what: string;
}

/** What an operation needs beyond the STARK keys. */
export interface Needs {
  /** prove evm: root and Halo2 proving keys, KZG parameters. */
  evmProve: boolean;
  /** verify evm: the verifier artifacts. */
  evmVerify: boolean;
}

/** Every file a config needs for STARK work, plus the EVM files `needs` asks for. */
export function requirements(c: ConfigPaths, a: AggregationPaths, mapping: CliMapping, needs: Needs): Requirement[] {
  const reqs: Requirement[] = [
    { path: c.openvmToml, what: 'openvm.toml (the config VM)' },
    { path: c.manifestPath, what: 'stub Cargo.toml' },
    { path: c.stubMain, what: 'stub src/main.rs' },
    { path: c.appPk, what: 'app proving key (cargo openvm keygen)' },
    { path: c.appVk, what: 'app verifying key (cargo openvm keygen)' },
    { path: c.aggPrefixPk, what: 'aggregation prefix proving key (cargo openvm keygen)' },
    { path: a.internalRecursivePk, what: 'internal-recursive proving key (cargo openvm setup)' },
    { path: a.internalRecursiveVk, what: 'internal-recursive verifying key (cargo openvm setup)' },
  ];
  const f = mapping.aggregationFiles;
  if (needs.evmProve) {
    reqs.push(
      { path: a.rootPk, what: 'root proving key (cargo openvm setup --evm)' },
      { path: a.halo2Pk, what: 'Halo2 proving key (cargo openvm setup --evm)' },
    );
    // A missing parameter file is a panic in the middle of an EVM proof.
    for (let k = f.kzgParams.min; k <= f.kzgParams.max; k++) {
      reqs.push({ path: join(a.paramsDir, f.kzgParams.name(k)), what: 'Halo2 KZG parameters (cargo openvm setup --evm downloads them)' });
    }
  }
  if (needs.evmVerify) {
    for (const name of f.evmVerifierFiles)
      reqs.push({ path: join(a.evmVerifierVersionDir, name), what: 'EVM verifier (cargo openvm setup --evm)' });
  }
  return reqs;
}

/** Requirements that are absent (or empty files, which an interrupted keygen leaves behind). */
export async function missingRequirements(reqs: Requirement[]): Promise<Requirement[]> {
  const missing: Requirement[] = [];
  for (const r of reqs) {
    const s = await stat(r.path).catch(() => null);
    const ok = s !== null && s.isFile() && s.size > 0;
    if (!ok) missing.push(r);
  }
  return missing;
}

export function describeMissing(missing: Requirement[]): string {
  return missing.map((r) => `${r.what}: ${r.path}`).join('; ');
}

/**
 * The file behind each key name an operator publishes (protocol.ts
 * PUBLISHED_KEY_NAMES); `evm` marks the ones only `setup --evm` writes.
 * Sources at v2.0.1 (crates/cli/src):
 *   app_pk, app_vk  ${openvm_dir}/app.pk, app.vk      default.rs:9-10, commands/keygen.rs:61-62,103-105
 *   agg_pk          ~/.openvm/internal_recursive.pk   what --agg-pk reads: args.rs:78-84, commands/prove.rs:377-388
 *   agg_vk          ~/.openvm/internal_recursive.vk   what `verify stark --agg-vk` reads: commands/verify.rs:58-65,198-206
 *   halo2_pk        ~/.openvm/halo2.pk                what `prove evm` reads: default.rs:39-41, commands/prove.rs:113-119,404-416
 *   evm_verifier    ~/.openvm/halo2/src/v2.0-base/verifier.bytecode.json, the deployable
 *                   verifier `setup --evm` writes: commands/setup.rs:99-110, crates/sdk/src/fs.rs:22,109-110
 * The aggregation prefix key (${openvm_dir}/agg_prefix.pk) is config-specific
 * and proving-only; no published name covers it.
 */
export function publishedKeyFiles(c: ConfigPaths, a: AggregationPaths): Record<PublishedKeyName, { path: string; evm: boolean }> {
  return {
    app_pk: { path: c.appPk, evm: false },
    app_vk: { path: c.appVk, evm: false },
    agg_pk: { path: a.internalRecursivePk, evm: false },
    agg_vk: { path: a.internalRecursiveVk, evm: false },
    halo2_pk: { path: a.halo2Pk, evm: true },
    evm_verifier: { path: a.evmVerifierArtifact, evm: true },
  };
}
