// The executor against the committed guest programs: RV32IM conformance, the custom
// instructions, input reading, panics, traps and the cycle limit. Every test runs under
// both execution tiers alone (interpreter only, everything compiled) and the default mix,
// so the two implementations of the instruction semantics check each other.
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import type { ExecutionOptions } from '../../../prover-agent/src/engine/dev/executor.ts';
import { bytesEntry, fieldEntry, runGuest, TIERS, u32Entry, words } from './helpers.ts';
import { expectedResults, REGISTER_OPS } from './conformance.ts';

describe('the conformance reference model', () => {
  it('has a reference model that matches the RISC-V edge cases spelled out', () => {
    // Spot checks of the model itself, straight from the ISA manual's M-extension table.
    expect(REGISTER_OPS.div(7, 0)).toBe(0xffffffff);
    expect(REGISTER_OPS.divu(7, 0)).toBe(0xffffffff);
    expect(REGISTER_OPS.rem(7, 0)).toBe(7);
    expect(REGISTER_OPS.remu(0x80000000, 0)).toBe(0x80000000);
    expect(REGISTER_OPS.div(0x80000000, 0xffffffff)).toBe(0x80000000);
    expect(REGISTER_OPS.rem(0x80000000, 0xffffffff)).toBe(0);
    expect(REGISTER_OPS.div(-7 >>> 0, 2)).toBe(-3 >>> 0);
    expect(REGISTER_OPS.rem(-7 >>> 0, 2)).toBe(-1 >>> 0);
    expect(REGISTER_OPS.mulh(0x80000000, 0x80000000)).toBe(0x40000000);
    expect(REGISTER_OPS.mulhsu(0xffffffff, 0xffffffff)).toBe(0xffffffff);
    expect(REGISTER_OPS.mulhu(0xffffffff, 0xffffffff)).toBe(0xfffffffe);
    expect(REGISTER_OPS.sll(1, 33)).toBe(2);
    expect(REGISTER_OPS.sra(0x80000000, 31)).toBe(0xffffffff);
  });
});

describe.each(TIERS)('%s', (_tier, compileThreshold) => {
  const run = (name: string, entries: string[] = [], options: ExecutionOptions = {}) =>
    runGuest(name, entries, { compileThreshold, ...options });

  describe('RV32IM conformance', () => {
    it('gives every instruction the RISC-V result on edge values', async () => {
      const out = await run('conformance', [], { publicValuesBytes: 32768 });
      expect(out.error).toBeNull();
      const expected = expectedResults();
      expect(out.stdout).toBe(`conformance: ${expected.length} results\n`);
      const got = words(out.publicValues);
      const mismatches = expected.flatMap((e, i) =>
        got[i] === e.value ? [] : [`${e.label}: got 0x${got[i].toString(16)}, expected 0x${e.value.toString(16)}`],
      );
      expect(mismatches).toEqual([]);
    });
  });

  describe('input stream and hint instructions', () => {
    it('reads byte entries of every length through hintinput, hintstorew and hintbuffer', async () => {
      const entries = Array.from({ length: 13 }, (_, n) => Buffer.from(Array.from({ length: n * 3 }, (_, i) => (i * 7 + n) & 0xff)));
      const out = await run('io', [u32Entry(entries.length), ...entries.map((e) => bytesEntry(e))]);
      expect(out.error).toBeNull();
      const lines = out.stdout.trim().split('\n');
      entries.forEach((e, i) => {
        const padded = Buffer.concat([e, Buffer.alloc((4 - (e.length % 4)) % 4)]);
        expect(lines[i]).toBe(`entry ${i}: len ${e.length}: ${padded.toString('hex')}`);
      });
      const pv = words(out.publicValues);
      expect(pv[0]).toBe(13);
      expect(pv[1]).toBe(entries.reduce((sum, e) => sum + e.length, 0));
    });

    it('reads a field-element entry as one hint cell per element, stored as its low byte', async () => {
      const out = await run('io', [u32Entry(2), fieldEntry(1, 2, 3, 255, 256 + 7), fieldEntry()]);
      expect(out.error).toBeNull();
      const lines = out.stdout.split('\n');
      // Length = number of elements; each element fills one byte of memory.
      expect(lines[0]).toBe('entry 0: len 5: 010203ff07000000');
      expect(lines[1]).toBe('entry 1: len 0: ');
    });

    it('reveals what the guest reveals, and nothing else', async () => {
      const out = await run('io', [u32Entry(1), bytesEntry('public!')]);
      expect(Buffer.from(out.publicValues).toString('hex')).toBe(
        `01000000${'07000000'}${Buffer.from('public!').toString('hex')}${'00'.repeat(17)}`,
      );
    });

    it('hands hintrandom bytes from the random source', async () => {
      const out = await run('io', [u32Entry(0)], { randomBytes: (n) => new Uint8Array(n).fill(0xab) });
      expect(out.stdout).toBe(`random: ${'ab'.repeat(8)}\n`);
      const a = await run('io', [u32Entry(0)]);
      const b = await run('io', [u32Entry(0)]);
      expect(a.stdout).toMatch(/^random: [0-9a-f]{16}\n$/);
      expect(a.stdout).not.toBe(b.stdout);
    });

    it('fails with "input stream exhausted" when the guest reads more entries than given', async () => {
      const out = await run('io', [u32Entry(3), bytesEntry('a'), bytesEntry('b')]);
      expect(out.exitCode).toBeNull();
      expect(out.error).toMatch(/^input stream exhausted: the guest read input entry 3 but the input has 3 entries at pc 0x[0-9a-f]{8}$/);
      expect(out.stdout).toContain('entry 1: len 1: 62000000');
    });

    it('fails with "input stream exhausted" when the guest reads past the end of an entry', async () => {
      const out = await run('io', [u32Entry(1, 1), bytesEntry('abcd')]);
      expect(out.error).toMatch(/^input stream exhausted: hintstorew needs 4 hint bytes but 0 remain at pc/);
    });
  });

  describe('hash instructions', () => {
    const keccak256Vectors: [string, string][] = [
      ['', 'c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470'],
      ['abc', '4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45'],
      ['The quick brown fox jumps over the lazy dog', '4d741b6f1eb29cb2a9b9911c82f56fa8d73b04959d3d9d222895df6c0b28aa15'],
    ];

    it('computes keccak-256 (published vectors), SHA3-256, SHA-256 and SHA-512 like Node on many inputs', async () => {
      const messages = [
        ...keccak256Vectors.map(([m]) => Buffer.from(m)),
        // Every length around the block boundaries (55/56, 64, 111/112, 128, 135/136).
        ...Array.from({ length: 300 }, (_, n) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 31 + n * 7) & 0xff))),
        Buffer.alloc(5000, 0x61),
        Buffer.from(Array.from({ length: 65536 }, (_, i) => (i * 131) & 0xff)),
      ];
      const out = await run('hash', [u32Entry(messages.length), ...messages.map((m) => bytesEntry(m))]);
      expect(out.error).toBeNull();
      const lines = out.stdout.trim().split('\n');
      expect(lines).toHaveLength(messages.length);
      const mismatches: string[] = [];
      messages.forEach((m, i) => {
        const [keccak, sha3, sha256, sha512] = lines[i].split(' ');
        if (sha3 !== createHash('sha3-256').update(m).digest('hex')) mismatches.push(`sha3-256 of ${m.length} bytes`);
        if (sha256 !== createHash('sha256').update(m).digest('hex')) mismatches.push(`sha256 of ${m.length} bytes`);
        if (sha512 !== createHash('sha512').update(m).digest('hex')) mismatches.push(`sha512 of ${m.length} bytes`);
        if (i < keccak256Vectors.length && keccak !== keccak256Vectors[i][1]) mismatches.push(`keccak-256 of "${keccak256Vectors[i][0]}"`);
      });
      expect(mismatches).toEqual([]);
    });
  });

  describe('exits, panics and traps', () => {
    it('runs hello: reveals the SHA-256 of its input and exits 0', async () => {
      const out = await run('hello', [bytesEntry('abc')]);
      expect(out).toMatchObject({ exitCode: 0, error: null });
      expect(Buffer.from(out.publicValues).toString('hex')).toBe(createHash('sha256').update('abc').digest('hex'));
      expect(out.stdout).toBe(`hello from the dev zkVM: read 3 bytes, sha256 ${createHash('sha256').update('abc').digest('hex')}\n`);
    });

    it("reports a panic with the guest's own message and exit code 1", async () => {
      const out = await run('panic');
      expect(out.exitCode).toBe(1);
      expect(out.error).toBe(
        'guest exited with code 1: about to fail\npanicked at src/panic.c:6:\nsomething went wrong: this guest always panics',
      );
    });

    it('passes any exit code through terminate', async () => {
      for (const code of [0, 2, 255]) {
        const out = await run('faults', [u32Entry(12, code)]);
        expect(out.exitCode).toBe(code);
        expect(out.error).toBe(code === 0 ? null : `guest exited with code ${code}`);
      }
    });

    it('counts instructions exactly, terminate included', async () => {
      // loop.c runs 6 instructions per iteration; 1000, 1001 and 2000 print equally many digits.
      const [c1000, c1001, c2000] = await Promise.all(
        [1000, 1001, 2000].map(async (n) => (await run('loop', [u32Entry(n)])).numInstructions),
      );
      expect(c1001 - c1000).toBe(6);
      expect(c2000 - c1000).toBe(6000);
      // Every instruction up to and including terminate counts: the exit path after the
      // loop ends with the terminate instruction the count was taken at.
      const limited = await run('loop', [u32Entry(1000)], { maxCycles: c1000 });
      expect(limited).toMatchObject({ exitCode: 0, numInstructions: c1000 });
    });

    const trapCases: [string, number, RegExp][] = [
      ['misaligned load', 0, /^misaligned load of 4 bytes at address 0x00001002 at pc 0x[0-9a-f]{8}$/],
      ['misaligned store', 1, /^misaligned store of 2 bytes at address 0x00001001 at pc 0x[0-9a-f]{8}$/],
      [
        'load past the end of memory',
        2,
        /^out-of-bounds load of 4 bytes at address 0x20000000 \(guest memory is 0x20000000 bytes\) at pc 0x/,
      ],
      ['store outside memory', 3, /^out-of-bounds store of 4 bytes at address 0xfffffffc .* at pc 0x/],
      ['unimp', 5, /^unsupported instruction unimp \(0xc0001073\) at pc 0x/],
      ['ecall', 6, /^unsupported instruction ecall \(0x00000073\) at pc 0x/],
      ['ebreak', 7, /^unsupported instruction ebreak \(0x00100073\) at pc 0x/],
      ['custom-1', 8, /^unsupported instruction custom-1 \(0x0000002b\) at pc 0x/],
      ['custom-0 256-bit op', 9, /^unsupported instruction custom-0 256-bit integer instruction \(0x0000500b\) at pc 0x/],
      ['misaligned jump', 10, /^jump to misaligned address 0x[0-9a-f]{7}[26ae] at pc 0x/],
      ['jump outside the code', 11, /^execution left the program's code at pc 0x00000100$/],
      ['reveal past the public values', 14, /^reveal at public-values offset 32 past the end of the 32-byte public values at pc 0x/],
      ['hintbuffer of 0 words', 15, /^hintbuffer of 0 words \(must be 1\.\.1023\) at pc 0x/],
      ['printstr outside memory', 16, /^printstr: 100 bytes at address 0x1ffffff0 extend outside guest memory at pc 0x/],
      ['a CSR read', 17, /^unsupported instruction csrrs \(0xc0002573\) at pc 0x/],
      ['hint store with an empty hint stream', 18, /^input stream exhausted: hintstorew needs 4 hint bytes but 0 remain at pc 0x/],
      ['jump into data', 19, /^execution left the program's code at pc 0x0020[0-9a-f]{4}$/],
      ['misaligned reveal', 20, /^reveal at misaligned public-values offset 2 at pc 0x/],
      ['xorin of 3 bytes', 21, /^xorin of 3 bytes \(must be a multiple of 4, at most 136\) at pc 0x/],
      ['terminate with a non-byte exit code', 22, /^unsupported instruction terminate with exit code 300 \(0x12c0000b\) at pc 0x/],
    ];
    for (const [what, selector, message] of trapCases) {
      it(`traps on ${what}`, async () => {
        const out = await run('faults', [u32Entry(selector, 32)]);
        expect(out.exitCode).toBeNull();
        expect(out.error).toMatch(message);
      });
    }

    it('traps on a hint store past the end of memory', async () => {
      const out = await run('faults', [u32Entry(23), bytesEntry('abcdefgh')]);
      expect(out.error).toMatch(/^hintstorew: 4 bytes at address 0x1ffffffe extend outside guest memory at pc 0x/);
    });

    it('accesses the last bytes of memory without a trap', async () => {
      const out = await run('faults', [u32Entry(4)]);
      expect(out).toMatchObject({ exitCode: 0, error: null, stdout: 'edge accesses ok\n' });
      expect(words(out.publicValues)[0]).toBe(0x5a + 0x01020304);
    });

    it('stops at the cycle limit with a clear error and the exact count', async () => {
      const out = await run('faults', [u32Entry(13)], { maxCycles: 123_457 });
      expect(out.exitCode).toBeNull();
      expect(out.numInstructions).toBe(123_457);
      expect(out.error).toMatch(/^cycle limit of 123457 instructions reached at pc 0x[0-9a-f]{8} before the guest terminated$/);
    });

    it('finishes a guest that needs exactly the cycle limit, and not one fewer', async () => {
      const needed = (await run('loop', [u32Entry(10)])).numInstructions;
      expect((await run('loop', [u32Entry(10)], { maxCycles: needed })).error).toBeNull();
      expect((await run('loop', [u32Entry(10)], { maxCycles: needed - 1 })).error).toMatch(/^cycle limit of/);
    });

    it('rejects with the abort reason when the signal is aborted', async () => {
      const controller = new AbortController();
      const running = run('faults', [u32Entry(13)], { signal: controller.signal, maxCycles: 1e15 });
      setTimeout(() => controller.abort(new Error('job canceled')), 50);
      await expect(running).rejects.toThrow('job canceled');
    });
  });
});
