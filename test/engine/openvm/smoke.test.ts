// The operator's smoke test (prover-agent/README.md "Smoke test on a GPU host") runs here against the stand-in, so the
// script a GPU host runs is known to work up to the tool boundary.
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CONFIG_ID, FAKE_CARGO, makeHost, type Host } from './harness.ts';

const SMOKE = fileURLToPath(new URL('../../../prover-agent/src/engine/openvm/smoke.ts', import.meta.url));

let host: Host;
let args: string[];
beforeAll(async () => {
  host = await makeHost({ evm: true });
  const vmexe = join(host.root, 'smoke.vmexe');
  const input = join(host.root, 'input.json');
  await writeFile(vmexe, 'smoke guest');
  await writeFile(input, JSON.stringify({ input: ['0x010A00000000000000'] }));
  args = [
    '--config',
    CONFIG_ID,
    '--configs-dir',
    host.configsDir,
    '--cargo',
    FAKE_CARGO,
    '--vmexe',
    vmexe,
    '--input',
    input,
    '--gpus',
    '0',
  ];
});
afterAll(() => host.cleanup());

function smoke(extra: string[]): Promise<{ code: number; stdout: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [SMOKE, ...args, ...extra], { env: host.env }, (err, stdout) =>
      resolve({ code: err ? Number(err.code) : 0, stdout }),
    );
  });
}

describe('smoke.ts', () => {
  it('passes every step on a set-up host', async () => {
    const res = await smoke(['--evm']);
    expect(res.code).toBe(0);
    expect(res.stdout.match(/^(PASS|FAIL) {2}[^:]+/gm)).toEqual([
      'PASS  commit',
      'PASS  execute (meter)',
      'PASS  prove stark',
      'PASS  verify stark',
      'PASS  prove evm',
      'PASS  verify evm',
    ]);
  });

  it('fails when the public values are not the expected ones', async () => {
    const res = await smoke(['--expect-public-values', '0x3700000000000000']);
    expect(res.code).toBe(1);
    expect(res.stdout).toMatch(/^FAIL {2}prove stark: public values 0x[0-9a-f]+ \(expected 0x37/m);
  });
});
