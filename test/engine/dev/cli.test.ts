// `prover-agent execute`, run as users run it.
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { bytesEntry, guestPath, u32Entry } from './helpers.ts';

const BIN = fileURLToPath(new URL('../../../prover-agent/bin/prover-agent.js', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'dev-execute-cli-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

function execute(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, 'execute', ...args], (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

function inputFile(...entries: string[]): string {
  const path = join(work, `input-${entries.length}-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(path, JSON.stringify({ input: entries }));
  return path;
}

describe('prover-agent execute', () => {
  it('prints the outcome as one JSON object and exits 0 when the guest exits 0', async () => {
    const run = await execute(['--elf', guestPath('hello'), '--input', inputFile(bytesEntry('abc'))]);
    expect(run.code).toBe(0);
    const result = JSON.parse(run.stdout);
    expect(Object.keys(result)).toEqual(['exit_code', 'num_instructions', 'public_values', 'stdout', 'error']);
    expect(result).toMatchObject({
      exit_code: 0,
      public_values: '0xba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
      stdout: expect.stringContaining('hello from the dev zkVM'),
      error: null,
    });
  });

  it('exits 1 with the panic text for a failing guest', async () => {
    const run = await execute(['--elf', guestPath('panic')]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ exit_code: 1, error: expect.stringContaining('this guest always panics') });
  });

  it('applies --max-cycles and --public-values-bytes', async () => {
    const limited = await execute(['--elf', guestPath('loop'), '--input', inputFile(u32Entry(1000)), '--max-cycles', '50']);
    expect(limited.code).toBe(1);
    expect(JSON.parse(limited.stdout)).toMatchObject({
      exit_code: -1,
      num_instructions: 50,
      error: expect.stringMatching(/^cycle limit of 50 instructions/),
    });
    const wide = await execute(['--elf', guestPath('loop'), '--input', inputFile(u32Entry(3)), '--public-values-bytes', '64']);
    expect(JSON.parse(wide.stdout).public_values).toHaveLength(2 + 128);
  });

  it('reports bad input in the JSON and exits 1', async () => {
    const run = await execute(['--elf', guestPath('hello'), '--input', inputFile('0x07')]);
    expect(run.code).toBe(1);
    expect(JSON.parse(run.stdout)).toMatchObject({ exit_code: -1, error: expect.stringMatching(/^input\[0\]: unknown prefix/) });
  });

  it('exits 2 for usage errors', async () => {
    expect((await execute([])).code).toBe(2);
    expect((await execute(['--elf', guestPath('hello'), '--public-values-bytes', '12'])).stderr).toMatch(/not 8 x a power of two/);
    expect((await execute(['--elf', join(work, 'missing.elf')])).code).toBe(2);
  });
});
