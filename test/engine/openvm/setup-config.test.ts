// `prover-agent setup-config`, run as the operator runs it, against the stand-in CLI.
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONFIG_ID, FAKE_CARGO, makeHost, OPENVM_TOML, runCli, type Host } from './harness.ts';

let host: Host;
let toml: string;
beforeEach(async () => {
  host = await makeHost({ setUp: false });
  toml = join(host.root, 'openvm.toml');
  await writeFile(toml, OPENVM_TOML);
});
afterEach(() => host.cleanup());

const setupConfig = (...args: string[]) => runCli(['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, ...args], host.env);

describe('setup-config', () => {
  it('prints the steps, with the exact zkVM commands, and changes nothing', async () => {
    const res = await setupConfig('--openvm-toml', toml, '--evm');
    expect(res.code).toBe(0);
    const lines = res.stdout.split('\n');
    expect(lines).toContain(`${FAKE_CARGO} openvm setup --evm`);
    expect(lines).toContain(
      `${FAKE_CARGO} openvm keygen --config ${host.configDir}/openvm.toml --manifest-path ${host.configDir}/Cargo.toml --target-dir ${host.configDir}/target`,
    );
    expect(lines).toContain(`cp ${toml} ${host.configDir}/openvm.toml`);
    expect(res.stdout).toContain(`Aggregation keys in ~/.openvm (${host.home}/.openvm)`);
    expect(await host.invocations()).toEqual([]);
  });

  it('--check lists what is missing and exits 1', async () => {
    const res = await setupConfig('--check', '--evm');
    expect(res.code).toBe(1);
    for (const missing of ['openvm.toml', 'Cargo.toml', 'src/main.rs', 'openvm/app.pk', 'openvm/app.vk', 'openvm/agg_prefix.pk']) {
      expect(res.stderr).toContain(`${host.configDir}/${missing}`);
    }
    for (const missing of [
      'internal_recursive.pk',
      'internal_recursive.vk',
      'root.pk',
      'halo2.pk',
      'params/kzg_bn254_10.srs',
      'params/kzg_bn254_24.srs',
      'halo2/src/v2.0-base/verifier.bytecode.json',
    ]) {
      expect(res.stderr).toContain(`${host.home}/.openvm/${missing}`);
    }
  });

  it('--run builds the directory with the zkVM tool, then checks it', async () => {
    const res = await setupConfig('--openvm-toml', toml, '--run');
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
    expect(res.stdout).toContain(`config directory ${host.configDir} is complete`);
    expect(await readFile(join(host.configDir, 'openvm.toml'), 'utf8')).toBe(OPENVM_TOML);
    expect((await host.invocations()).map((c) => c.argv.slice(0, 2))).toEqual([
      ['openvm', 'setup'],
      ['openvm', 'keygen'],
    ]);
    expect((await setupConfig('--check')).code).toBe(0);
    expect((await setupConfig('--check', '--evm')).code).toBe(1);
  });

  it('--run skips `cargo openvm setup` when the aggregation keys are there', async () => {
    expect((await setupConfig('--openvm-toml', toml, '--run')).code).toBe(0);
    const again = await setupConfig('--run');
    expect(again.code).toBe(0);
    expect(again.stdout).toContain('skipping `cargo openvm setup`');
    expect((await host.invocations()).map((c) => c.argv[1])).toEqual(['setup', 'keygen', 'keygen']);
  });

  it('--run stops at a failing step', async () => {
    const res = await runCli(['setup-config', CONFIG_ID, '--configs-dir', host.configsDir, '--cargo', FAKE_CARGO, '--openvm-toml', toml, '--run'], {
      ...host.env,
      FAKE_OPENVM_FAIL: 'keygen',
    });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('step failed (exit status 1)');
  });

  it('--evm without solc needs --download, as `cargo openvm setup --evm` does', async () => {
    const res = await setupConfig('--openvm-toml', toml, '--evm', '--run');
    expect(res.code).toBe(1);
    expect(res.stderr).toContain('solc is not installed, please install solc or rerun with --download');
    const downloaded = await setupConfig('--openvm-toml', toml, '--evm', '--download', '--run');
    expect(downloaded.stderr).toBe('');
    expect(downloaded.code).toBe(0);
    expect(downloaded.stdout).toContain(`config directory ${host.configDir} is complete (with EVM keys)`);
    expect((await host.invocations()).at(-2)!.argv).toEqual(['openvm', 'setup', '--evm', '--download']);
  });

  it('refuses, before any tool step, a config the tool cannot key or a version it does not map', async () => {
    await writeFile(toml, `${OPENVM_TOML}[app_vm_config.system.config]\nnum_public_values = 64\n`);
    const wide = await setupConfig('--openvm-toml', toml, '--run');
    expect(wide.code).toBe(2);
    expect(wide.stderr).toMatch(/cannot key config .*\n {2}openvm\.toml sets num_public_values = 64: cargo openvm keygen only supports 32 \(v2\.0\.1:crates\/cli\/src\/commands\/keygen\.rs:130-147\)/);
    const beta = await setupConfig('--openvm-version', '2.0.0-beta.2');
    expect(beta.code).toBe(2);
    expect(beta.stderr).toMatch(/openvm 2\.0\.0-beta\.2 is a pre-release/);
    expect(await host.invocations()).toEqual([]);
  });

  it('needs an openvm.toml to run, one config id, and known flags', async () => {
    expect((await setupConfig('--run')).code).toBe(2);
    expect((await runCli(['setup-config'], host.env)).code).toBe(2);
    expect((await setupConfig('--bogus')).code).toBe(2);
    expect((await setupConfig('--openvm-version', 'v1.4.0')).stderr).toMatch(/no command-line mapping for openvm 1\.4\.0/);
  });
});
