// ELF loading and hand-assembled programs for the control-flow corners the C guests
// cannot reach (static misaligned jumps, running off the end of the code).
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ElfError, loadElf } from '../../../prover-agent/src/engine/dev/elf.ts';
import { executeProgram } from '../../../prover-agent/src/engine/dev/executor.ts';
import { asm, codeElf, guestPath, makeElf, printBombElf, TEXT_START, TIERS } from './helpers.ts';

describe('ELF loading', () => {
  it('loads the PT_LOAD segments and entry point of a guest', () => {
    const image = loadElf(readFileSync(guestPath('hello')));
    expect(image.entry).toBe(TEXT_START);
    const code = image.segments.find((s) => s.executable)!;
    expect(code.vaddr).toBe(TEXT_START);
    // A zero-filled (bss) segment loads with no file bytes.
    expect(image.segments.some((s) => s.data.length === 0 && s.memsz > 0)).toBe(true);
  });

  const code = new Uint8Array(4);
  const cases: [string, Uint8Array, RegExp][] = [
    ['a non-ELF file', new TextEncoder().encode('#!/bin/sh\necho this is not an ELF file at all, not even close to one\n'), /bad magic/],
    ['a truncated file', makeElf([{ vaddr: TEXT_START, data: code, flags: 5 }]).slice(0, 40), /too short/],
    ['a 64-bit ELF', Object.assign(makeElf([{ vaddr: TEXT_START, data: code, flags: 5 }]), { 4: 2 }), /not a 32-bit ELF/],
    ['a big-endian ELF', Object.assign(makeElf([{ vaddr: TEXT_START, data: code, flags: 5 }]), { 5: 2 }), /not little-endian/],
    ['another machine', makeElf([{ vaddr: TEXT_START, data: code, flags: 5 }], TEXT_START, { machine: 62 }), /machine 62 is not RISC-V/],
    ['a shared object', makeElf([{ vaddr: TEXT_START, data: code, flags: 5 }], TEXT_START, { type: 3 }), /not an executable/],
    ['a segment past the end of memory', makeElf([{ vaddr: 0x1ffffffc, data: code, memsz: 8, flags: 5 }]), /outside guest memory/],
    [
      'an entry point outside the code',
      makeElf([{ vaddr: TEXT_START, data: code, flags: 5 }], 0x1000),
      /entry point 0x00001000 is not in an executable segment/,
    ],
    ['an entry point in data', makeElf([{ vaddr: TEXT_START, data: code, flags: 6 }]), /not in an executable segment/],
    [
      'overlapping segments',
      makeElf([
        { vaddr: TEXT_START, data: code, memsz: 16, flags: 5 },
        { vaddr: TEXT_START + 8, data: code, flags: 6 },
      ]),
      /overlap/,
    ],
  ];
  cases.push([
    'code spanning more than the executor supports',
    makeElf([
      { vaddr: TEXT_START, data: code, flags: 5 },
      { vaddr: TEXT_START + 2 ** 26, data: code, flags: 5 },
    ]),
    /executable segments span 67108868 bytes \(the dev executor supports at most 67108864\)/,
  ]);
  for (const [what, elf, message] of cases) {
    it(`rejects ${what}`, () => {
      expect(() => loadElf(elf)).toThrow(ElfError);
      expect(() => loadElf(elf)).toThrow(message);
    });
  }
});

describe.each(TIERS)('hand-assembled programs, %s', (_tier, compileThreshold) => {
  const run = (elf: Uint8Array) => executeProgram(loadElf(elf), [], { compileThreshold });

  it('counts every executed instruction, terminate included', async () => {
    const out = await run(codeElf([asm.addi(5, 0, 1), asm.addi(5, 5, 1), asm.terminate(0)]));
    expect(out).toMatchObject({ exitCode: 0, numInstructions: 3, error: null });
  });

  it('ignores unsupported words that are never executed', async () => {
    const out = await run(codeElf([asm.jal(0, 8), 0x0000002b, asm.terminate(0)]));
    expect(out).toMatchObject({ exitCode: 0, numInstructions: 2, error: null });
  });

  it('traps on a taken branch to a misaligned address', async () => {
    const out = await run(codeElf([asm.beq(0, 0, 6), asm.terminate(0), asm.terminate(0)]));
    expect(out.error).toBe(`jump to misaligned address 0x00200806 at pc 0x00200800`);
    expect(out.numInstructions).toBe(0);
  });

  it('does not trap on a misaligned branch that is not taken', async () => {
    const out = await run(codeElf([asm.addi(1, 0, 1), asm.beq(1, 0, 6), asm.terminate(0)]));
    expect(out).toMatchObject({ exitCode: 0, numInstructions: 3 });
  });

  it('traps on a jal to a misaligned address', async () => {
    const out = await run(codeElf([asm.addi(1, 0, 1), asm.jal(1, 10), asm.terminate(0)]));
    expect(out.error).toBe(`jump to misaligned address 0x0020080e at pc 0x00200804`);
  });

  it('traps when execution runs off the end of the code', async () => {
    const out = await run(codeElf([asm.addi(1, 0, 1), asm.addi(1, 1, 1)]));
    expect(out.error).toBe(`execution left the program's code at pc 0x00200808`);
    expect(out.numInstructions).toBe(2);
  });

  it('traps on an all-zero word, which is no instruction', async () => {
    const out = await run(codeElf([asm.addi(1, 0, 1), 0]));
    expect(out.error).toBe('unsupported instruction 0x00000000 at pc 0x00200804');
    expect(out.numInstructions).toBe(1);
  });

  it('keeps the first MiB of printed output and says that the rest was dropped', async () => {
    // Print the 1024 zero bytes at address 0, 2000 times.
    const printstr = (addr: number, len: number) => (1 << 20) | (len << 15) | (3 << 12) | (addr << 7) | 0x0b;
    const bne = (rs1: number, rs2: number, offset: number) => asm.beq(rs1, rs2, offset) | (1 << 12);
    const out = await run(
      codeElf([
        asm.addi(10, 0, 0),
        asm.addi(11, 0, 1024),
        asm.addi(5, 0, 2000),
        printstr(10, 11),
        asm.addi(5, 5, -1),
        bne(5, 0, -8),
        asm.terminate(0),
      ]),
    );
    expect(out.error).toBeNull();
    expect(out.stdout).toBe(`${'\0'.repeat(1 << 20)}\n[further output dropped: more than ${1 << 20} characters]\n`);
  });

  it('hands a large print on in pieces of at most 64 KiB, the same text a whole decode gives', async () => {
    const pieces: string[] = [];
    const out = await executeProgram(loadElf(printBombElf(1, 4 << 20)), [], { onPrint: (t) => pieces.push(t) });
    expect(out.error).toBeNull();
    expect(pieces.every((p) => p.length <= 64 * 1024)).toBe(true);
    expect(pieces.join('')).toBe('x'.repeat(4 << 20));
    // A character cut by a piece's end, and one cut by the print's end (U+FFFD, as a whole decode gives).
    const text = Buffer.concat([
      Buffer.alloc(65535, 'a'),
      Buffer.from('€'),
      Buffer.alloc(4096 - 2 - 2, 'b'),
      Buffer.from('€').subarray(0, 2),
    ]);
    const split: string[] = [];
    await executeProgram(loadElf(printBombElf(1, new Uint8Array(text))), [], { onPrint: (t) => split.push(t) });
    expect(split.join('')).toBe(new TextDecoder().decode(text));
    expect(split.join('')).toContain('a€b');
  });

  it('reveals at [rd] + imm, with positive and negative immediates', async () => {
    const reveal = (rd: number, rs1: number, imm: number) => ((imm & 0xfff) << 20) | (rs1 << 15) | (2 << 12) | (rd << 7) | 0x0b;
    const out = await run(
      codeElf([
        asm.addi(5, 0, 4),
        asm.addi(6, 0, 0x123),
        reveal(5, 6, 8),
        asm.addi(5, 0, 16),
        asm.addi(6, 0, -1),
        reveal(5, 6, -8),
        reveal(0, 5, 0),
        asm.terminate(0),
      ]),
    );
    expect(out.error).toBeNull();
    expect(Buffer.from(out.publicValues).toString('hex')).toBe(`10000000${'00'.repeat(4)}ffffffff23010000${'00'.repeat(16)}`);
  });

  it('runs a long straight-line program across region boundaries', async () => {
    // 5000 increments of x1, then terminate with x1's low byte = 5000 & 255 encoded statically.
    const out = await run(codeElf([...Array.from({ length: 5000 }, () => asm.addi(1, 1, 1)), asm.terminate(5000 & 255)]));
    expect(out).toMatchObject({ exitCode: 5000 & 255, numInstructions: 5001 });
  });
});
