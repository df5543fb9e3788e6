// The stand-in CLI keeps the tool's command-line contract: clap's rejections
// (status 2), eyre's failures (status 1), and the tool's file formats. The
// engine tests rely on it; these pin it down on its own.
import { execFile } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI_MAPPINGS } from '../../../prover-agent/src/engine/openvm/commands.ts';
import { aggregationPaths, configPaths } from '../../../prover-agent/src/engine/openvm/config-dir.ts';
import { CONFIG_ID, FAKE_CARGO, makeHost, type Host } from './harness.ts';

let host: Host;
beforeAll(async () => {
  host = await makeHost({ evm: true });
});
afterAll(() => host.cleanup());

function fake(args: string[], extraEnv: Record<string, string> = {}, cwd = host.root): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(FAKE_CARGO, args, { env: { ...host.env, ...extraEnv }, cwd }, (err, stdout, stderr) => {
      resolve({ code: err ? Number(err.code) : 0, stdout, stderr });
    });
  });
}

const v2 = CLI_MAPPINGS[0];
const cfg = () => configPaths(host.configsDir, CONFIG_ID, v2);

describe('command-line checks (clap)', () => {
  it('rejects an unknown flag with status 2', async () => {
    const res = await fake(['openvm', 'prove', 'stark', '--app-vk', 'x']);
    expect(res.code).toBe(2);
    expect(res.stderr).toMatch(/^error: unexpected argument '--app-vk' found/);
  });

  it('rejects a flag without its value, and a repeated one', async () => {
    expect((await fake(['openvm', 'verify', 'stark', '--proof'])).stderr).toMatch(/^error: a value is required for '--proof <PROOF>' but none was supplied/);
    const twice = await fake(['openvm', 'run', '--exe', 'a', '--exe', 'b']);
    expect(twice.code).toBe(2);
    expect(twice.stderr).toMatch(/cannot be used multiple times/);
  });

  it('checks --mode and --input values', async () => {
    const mode = await fake(['openvm', 'run', '--mode', 'fast']);
    expect(mode.code).toBe(2);
    expect(mode.stderr).toContain('[possible values: pure, meter, segment]');
    const input = await fake(['openvm', 'run', '--input', 'not-a-file']);
    expect(input.code).toBe(2);
    expect(input.stderr).toContain('Input must be a valid file path or a hex string of even length.');
  });

  it('requires a subcommand where the tool does, and knows only its subcommands', async () => {
    expect((await fake(['openvm', 'prove'])).code).toBe(2);
    expect((await fake(['openvm', 'prove', 'snark'])).stderr).toMatch(/unrecognized subcommand 'snark'/);
    expect((await fake(['build'])).code).toBe(101);
  });

  it('drops flags it is told a tool version lacks', async () => {
    const res = await fake(['openvm', 'setup', '--evm'], { FAKE_OPENVM_UNKNOWN_FLAGS: '--evm' });
    expect(res.code).toBe(2);
  });
});

describe('tool behaviour', () => {
  it('needs a Cargo manifest like the real tool, and fails through eyre with status 1', async () => {
    const res = await fake(['openvm', 'run', '--exe', 'x.vmexe']);
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/^Error: could not find Cargo\.toml in current directory or any parent directory/);
  });

  it('reports missing aggregation keys the way the tool does', async () => {
    const res = await fake(['openvm', 'verify', 'stark', '--proof', 'p.json', '--app-baseline', 'b.json', '--manifest-path', cfg().manifestPath], { HOME: join(host.root, 'empty-home') });
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/Failed to read internal-recursive verifying key .*\nRun 'cargo openvm setup' first/);
  });

  it('writes the EVM verifier `verify evm` checks against, and checks the app commit', async () => {
    const dir = join(host.root, 'evm-contract');
    await mkdir(dir);
    const exe = join(dir, 'p.vmexe');
    const input = join(dir, 'in.json');
    await writeFile(exe, 'program');
    await writeFile(input, '{"input": []}');
    const c = cfg();
    const proved = await fake(v2.prove(c, { kind: 'evm', exe, input, proof: join(dir, 'p.evm.proof'), targetDir: join(dir, 'target') }));
    expect(proved.code).toBe(0);
    const committed = await fake(v2.commit(c, { exe, outputDir: join(dir, 'commit'), targetDir: join(dir, 'target') }));
    expect(committed.code).toBe(0);
    const commitFile = join(dir, 'commit', (await readdir(join(dir, 'commit'))).find((n) => n.endsWith('.commit.json'))!);
    const agg = aggregationPaths(v2, host.env);
    const verified = await fake(v2.verifyEvm(c, { proof: join(dir, 'p.evm.proof'), appCommit: commitFile, evmVerifier: agg.evmVerifierDir, targetDir: join(dir, 'target') }));
    expect(verified).toMatchObject({ code: 0, stdout: expect.stringContaining('Proof verified successfully!') });

    await writeFile(commitFile, JSON.stringify({ app_exe_commit: '0x' + '00'.repeat(32), app_vm_commit: '0x' + '00'.repeat(32) }));
    const mismatched = await fake(v2.verifyEvm(c, { proof: join(dir, 'p.evm.proof'), appCommit: commitFile, evmVerifier: agg.evmVerifierDir, targetDir: join(dir, 'target') }));
    expect(mismatched.code).toBe(1);
  });

  it('writes STARK proofs as bare hex and rejects 0x in them on verify, like serde_with::hex', async () => {
    const dir = join(host.root, 'stark-contract');
    await mkdir(dir);
    const exe = join(dir, 'p.vmexe');
    await writeFile(exe, 'program');
    await writeFile(join(dir, 'in.json'), '{"input": ["0x01ff"]}');
    const c = cfg();
    const proofPath = join(dir, 'p.stark.proof');
    expect((await fake(v2.prove(c, { kind: 'stark', exe, input: join(dir, 'in.json'), proof: proofPath, targetDir: join(dir, 'target') }))).code).toBe(0);
    expect((await fake(v2.commit(c, { exe, outputDir: join(dir, 'commit'), targetDir: join(dir, 'target') }))).code).toBe(0);
    const baseline = join(dir, 'commit', (await readdir(join(dir, 'commit'))).find((n) => n.endsWith('.baseline.json'))!);

    const proof = JSON.parse(await readFile(proofPath, 'utf8'));
    expect(proof.proof).toMatch(/^[0-9a-f]+$/);
    await writeFile(proofPath, JSON.stringify({ ...proof, proof: '0x' + proof.proof }));
    const res = await fake(v2.verifyStark(c, { proof: proofPath, baseline, aggVk: aggregationPaths(v2, host.env).internalRecursiveVk, targetDir: join(dir, 'target') }));
    expect(res.code).toBe(1);
    expect(res.stderr).toMatch(/Proof needs to be compatible with openvm v2\.0\n\nCaused by:\n {4}Invalid character 'x' at position 1/);
  });
});
