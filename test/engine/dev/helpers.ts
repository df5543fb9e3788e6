// Shared helpers for the dev engine's tests: the committed guest ELFs, input encoding, a config.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { loadElf, type ProgramImage } from '../../../prover-agent/src/engine/dev/elf.ts';
import { executeProgram, type ExecutionOptions, type ExecutionOutcome } from '../../../prover-agent/src/engine/dev/executor.ts';
import { parseInputJson } from '../../../prover-agent/src/engine/dev/input.ts';
import type { EngineConfig } from '../../../prover-agent/src/protocol.ts';

/** A dev-engine config as the service hands it over in a claim; each test names what differs. */
export function devEngineConfig(overrides: Partial<EngineConfig> & Pick<EngineConfig, 'id'>): EngineConfig {
  return {
    engine: 'dev',
    openvm_version: '2.0.0',
    stark_backend_version: '2.0.0',
    app_vm_commit: `0x${'5a'.repeat(32)}`,
    deferral_enabled: false,
    public_values_bytes: 32,
    ...overrides,
  };
}

export const GUEST_DIR = fileURLToPath(new URL('../../guests/build/', import.meta.url));

export function guestPath(name: string): string {
  return `${GUEST_DIR}${name}.elf`;
}

const images = new Map<string, ProgramImage>();
export function loadGuest(name: string): ProgramImage {
  let image = images.get(name);
  if (!image) images.set(name, (image = loadElf(readFileSync(guestPath(name)))));
  return image;
}

const hex = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

/** A 0x01 input entry holding `data`. */
export function bytesEntry(data: Uint8Array | string): string {
  return `0x01${hex(typeof data === 'string' ? Buffer.from(data) : data)}`;
}

/** A 0x01 input entry of little-endian u32 words. */
export function u32Entry(...words: number[]): string {
  const b = Buffer.alloc(4 * words.length);
  words.forEach((w, i) => b.writeUInt32LE(w >>> 0, 4 * i));
  return bytesEntry(b);
}

/** A 0x02 input entry of field elements. */
export function fieldEntry(...elements: number[]): string {
  const b = Buffer.alloc(4 * elements.length);
  elements.forEach((w, i) => b.writeUInt32LE(w, 4 * i));
  return `0x02${hex(b)}`;
}

/** The executor's tiers: [name, compileThreshold] (see ExecutionOptions.compileThreshold). */
export const TIERS: [string, number | undefined][] = [
  ['default tiering', undefined],
  ['compiled regions only', 0],
  ['interpreter only', Infinity],
];

export function runGuest(name: string, entries: string[] = [], options: ExecutionOptions = {}): Promise<ExecutionOutcome> {
  return executeProgram(loadGuest(name), parseInputJson(JSON.stringify({ input: entries })), options);
}

/** Public values as little-endian u32 words. */
export function words(bytes: Uint8Array): number[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Array.from({ length: bytes.length >> 2 }, (_, i) => view.getUint32(4 * i, true));
}

export const TEXT_START = 0x00200800;

export interface ElfSegment {
  vaddr: number;
  data: Uint8Array;
  memsz?: number;
  flags: number; // PF_X = 1, PF_W = 2, PF_R = 4
}

/** A minimal ELF32 RISC-V executable: the given segments and entry point, no sections. */
export function makeElf(
  segments: ElfSegment[],
  entry = segments[0].vaddr,
  header: { machine?: number; type?: number } = {},
): Uint8Array<ArrayBuffer> {
  const headerSize = 52 + 32 * segments.length;
  let offset = headerSize;
  const placed = segments.map((s) => {
    const at = offset;
    offset += s.data.length;
    return at;
  });
  const elf = Buffer.alloc(offset);
  elf.set([0x7f, 0x45, 0x4c, 0x46, 1, 1, 1]);
  elf.writeUInt16LE(header.type ?? 2, 16);
  elf.writeUInt16LE(header.machine ?? 243, 18);
  elf.writeUInt32LE(1, 20);
  elf.writeUInt32LE(entry, 24);
  elf.writeUInt32LE(52, 28);
  elf.writeUInt16LE(52, 40);
  elf.writeUInt16LE(32, 42);
  elf.writeUInt16LE(segments.length, 44);
  segments.forEach((s, i) => {
    const ph = 52 + 32 * i;
    elf.writeUInt32LE(1, ph); // PT_LOAD
    elf.writeUInt32LE(placed[i], ph + 4);
    elf.writeUInt32LE(s.vaddr, ph + 8);
    elf.writeUInt32LE(s.vaddr, ph + 12);
    elf.writeUInt32LE(s.data.length, ph + 16);
    elf.writeUInt32LE(s.memsz ?? s.data.length, ph + 20);
    elf.writeUInt32LE(s.flags, ph + 24);
    elf.writeUInt32LE(4, ph + 28);
    elf.set(s.data, placed[i]);
  });
  return new Uint8Array(elf);
}

/** An executable whose code is `instructions` at TEXT_START. */
export function codeElf(instructions: number[]): Uint8Array<ArrayBuffer> {
  const code = Buffer.alloc(4 * instructions.length);
  instructions.forEach((w, i) => code.writeUInt32LE(w >>> 0, 4 * i));
  return makeElf([{ vaddr: TEXT_START, data: code, flags: 5 }]);
}

// Encoders for the few instructions the hand-made programs use.
export const asm = {
  addi: (rd: number, rs1: number, imm: number) => ((imm & 0xfff) << 20) | (rs1 << 15) | (rd << 7) | 0x13,
  terminate: (code: number) => (code << 20) | 0x0b,
  jal: (rd: number, offset: number) =>
    (((offset >> 20) & 1) << 31) |
    (((offset >> 1) & 0x3ff) << 21) |
    (((offset >> 11) & 1) << 20) |
    (((offset >> 12) & 0xff) << 12) |
    (rd << 7) |
    0x6f,
  beq: (rs1: number, rs2: number, offset: number) =>
    (((offset >> 12) & 1) << 31) |
    (((offset >> 5) & 0x3f) << 25) |
    (rs2 << 20) |
    (rs1 << 15) |
    (((offset >> 1) & 0xf) << 8) |
    (((offset >> 11) & 1) << 7) |
    0x63,
  bne: (rs1: number, rs2: number, offset: number) => asm.beq(rs1, rs2, offset) | (1 << 12),
  lui: (rd: number, upper20: number) => ((upper20 & 0xfffff) << 12) | (rd << 7) | 0x37,
  /** printstr: print [rs1] bytes at address [rd] (guest-abi.md). */
  printstr: (rd: number, rs1: number) => (1 << 20) | (rs1 << 15) | (3 << 12) | (rd << 7) | 0x0b,
  /** hintrandom: the hint stream becomes 4·[rd] random bytes. */
  hintrandom: (rd: number) => (2 << 20) | (3 << 12) | (rd << 7) | 0x0b,
};

/** Where printBombElf keeps the bytes it prints. */
const BOMB_DATA = 0x00300000;

/**
 * A guest that prints `prints` times the same bytes (`chunk` of them of 'x', or the
 * bytes given; a multiple of 4096, at most 16 MiB), never a newline unless given, and
 * then exits 0 (or, with `spin`, loops for ever): an output bomb (300 × 1 MiB = 300 MiB).
 */
export function printBombElf(
  prints: number,
  chunk: number | Uint8Array = 1 << 20,
  then: 'exit' | 'spin' = 'exit',
): Uint8Array<ArrayBuffer> {
  const data = typeof chunk === 'number' ? new Uint8Array(chunk).fill(0x78) : chunk;
  if (data.length % 4096 !== 0 || data.length > 1 << 24) throw new RangeError('a print: a multiple of 4096 bytes, at most 16 MiB');
  const code = [
    asm.lui(10, BOMB_DATA >>> 12),
    asm.lui(11, data.length >>> 12),
    asm.lui(5, (prints + 0x800) >>> 12), // x5 = prints, as lui + addi (addi's immediate is signed)
    asm.addi(5, 5, prints & 0xfff),
    asm.printstr(10, 11),
    asm.addi(5, 5, -1),
    asm.bne(5, 0, -8),
    then === 'exit' ? asm.terminate(0) : asm.jal(0, 0),
  ];
  const text = Buffer.alloc(4 * code.length);
  code.forEach((w, i) => text.writeUInt32LE(w >>> 0, 4 * i));
  return makeElf([
    { vaddr: TEXT_START, data: text, flags: 5 },
    { vaddr: BOMB_DATA, data, flags: 4 },
  ]);
}

/**
 * A guest that never ends and runs few instructions: each asks for 2^22 words of random
 * hint (16 MiB, tens of milliseconds of the host's time per instruction).
 */
export function slowHintElf(): Uint8Array<ArrayBuffer> {
  return codeElf([asm.lui(10, 0x400), asm.hintrandom(10), asm.jal(0, -4)]);
}
