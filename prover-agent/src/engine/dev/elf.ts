// Loads a guest ELF into the program image the executor runs (guest-abi.md, "Machine").
// Only what execution needs is read: the header, the entry point and the PT_LOAD
// segments. Sections (symbols, `.openvm` metadata) are ignored.

/** Guest memory size: addresses 0 .. 2^29 - 1. */
export const MEM_SIZE = 2 ** 29;
/** The executor decodes code into dense arrays, so the code may span at most this much. */
export const MAX_CODE_SPAN = 2 ** 26;

const PT_LOAD = 1;
const PF_X = 1;
const EM_RISCV = 243;
const ET_EXEC = 2;

export interface Segment {
  vaddr: number;
  memsz: number;
  /** The segment's file bytes (p_filesz of them); the rest up to memsz is zero. */
  data: Uint8Array;
  executable: boolean;
}

export interface ProgramImage {
  entry: number;
  /** PT_LOAD segments sorted by address. */
  segments: Segment[];
}

/** The ELF is not a guest program this executor can load. */
export class ElfError extends Error {
  override name = 'ElfError';
}

const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;

export function loadElf(bytes: Uint8Array): ProgramImage {
  const fail = (why: string): never => {
    throw new ElfError(`invalid guest ELF: ${why}`);
  };
  if (bytes.length < 52) fail(`file too short (${bytes.length} bytes)`);
  if (bytes[0] !== 0x7f || bytes[1] !== 0x45 || bytes[2] !== 0x4c || bytes[3] !== 0x46) fail('bad magic (not an ELF file)');
  if (bytes[4] !== 1) fail('not a 32-bit ELF (ELFCLASS32 expected)');
  if (bytes[5] !== 1) fail('not little-endian');
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const type = view.getUint16(16, true);
  const machine = view.getUint16(18, true);
  if (machine !== EM_RISCV) fail(`machine ${machine} is not RISC-V (${EM_RISCV})`);
  if (type !== ET_EXEC) fail(`type ${type} is not an executable (ET_EXEC)`);
  const entry = view.getUint32(24, true);
  const phoff = view.getUint32(28, true);
  const phentsize = view.getUint16(42, true);
  const phnum = view.getUint16(44, true);
  if (phnum === 0) fail('no program headers');
  if (phentsize < 32) fail(`program header entry size ${phentsize} too small`);
  if (phoff + phnum * phentsize > bytes.length) fail('program headers extend past the end of the file');

  const segments: Segment[] = [];
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (view.getUint32(at, true) !== PT_LOAD) continue;
    const offset = view.getUint32(at + 4, true);
    const vaddr = view.getUint32(at + 8, true);
    const filesz = view.getUint32(at + 16, true);
    const memsz = view.getUint32(at + 20, true);
    const flags = view.getUint32(at + 24, true);
    if (memsz === 0) continue;
    if (filesz > memsz) fail(`segment ${i}: p_filesz ${filesz} exceeds p_memsz ${memsz}`);
    if (offset + filesz > bytes.length) fail(`segment ${i}: file bytes extend past the end of the file`);
    if (vaddr + memsz > MEM_SIZE)
      fail(`segment ${i} at ${hex(vaddr)} (+${memsz} bytes) lies outside guest memory (${hex(MEM_SIZE)} bytes)`);
    segments.push({ vaddr, memsz, data: bytes.slice(offset, offset + filesz), executable: (flags & PF_X) !== 0 });
  }
  if (segments.length === 0) fail('no PT_LOAD segments');
  segments.sort((a, b) => a.vaddr - b.vaddr);
  for (let i = 1; i < segments.length; i++) {
    const prev = segments[i - 1];
    if (prev.vaddr + prev.memsz > segments[i].vaddr) fail(`segments at ${hex(prev.vaddr)} and ${hex(segments[i].vaddr)} overlap`);
  }
  const code = segments.filter((s) => s.executable);
  const codeSpan = code.length ? code[code.length - 1].vaddr + code[code.length - 1].memsz - code[0].vaddr : 0;
  if (codeSpan > MAX_CODE_SPAN) fail(`executable segments span ${codeSpan} bytes (the dev executor supports at most ${MAX_CODE_SPAN})`);
  if (entry % 4 !== 0) fail(`entry point ${hex(entry)} is not 4-byte aligned`);
  if (!segments.some((s) => s.executable && entry >= s.vaddr && entry < s.vaddr + s.memsz)) {
    fail(`entry point ${hex(entry)} is not in an executable segment`);
  }
  return { entry, segments };
}
