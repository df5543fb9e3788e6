// Checks that an upload is a guest ELF the zkVM can run: a 32-bit little-endian
// RISC-V executable with something to load (guest-abi.md). Reads only the ELF
// header and program header table, which sit at the start of the file.

const PT_LOAD = 1;
const EM_RISCV = 243;
const ET_EXEC = 2;

/** How many leading bytes of the file validateElf() wants to see. */
export const ELF_HEAD_BYTES = 64 * 1024;

/** Returns null when acceptable, otherwise what is wrong, for a 400 message. */
export function validateElf(head: Uint8Array, fileSize: number): string | null {
  if (fileSize === 0) return 'elf is empty';
  if (head.length < 4 || head[0] !== 0x7f || head[1] !== 0x45 || head[2] !== 0x4c || head[3] !== 0x46)
    return 'elf is not an ELF file (bad magic number)';
  if (head.length < 52) return `elf is too short for an ELF header (${fileSize} bytes)`;
  if (head[4] !== 1) return `elf is not a 32-bit ELF (EI_CLASS=${head[4]}; RISC-V guests are ELFCLASS32)`;
  if (head[5] !== 1) return `elf is not little-endian (EI_DATA=${head[5]})`;
  const dv = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const type = dv.getUint16(16, true);
  const machine = dv.getUint16(18, true);
  if (machine !== EM_RISCV) return `elf is not a RISC-V binary (e_machine=${machine}, expected ${EM_RISCV})`;
  if (type !== ET_EXEC) return `elf is not an executable (e_type=${type}, expected ET_EXEC=2)`;
  const entry = dv.getUint32(24, true);
  const phoff = dv.getUint32(28, true);
  const phentsize = dv.getUint16(42, true);
  const phnum = dv.getUint16(44, true);
  if (phnum === 0) return 'elf has no program headers';
  if (phentsize < 32) return `elf has an invalid program header size (${phentsize})`;
  const end = phoff + phnum * phentsize;
  if (end > fileSize) return 'elf program header table lies beyond the end of the file';
  if (end > head.length) return null; // unusual layout: the prover will judge the rest
  let loads = 0;
  let entryMapped = false;
  for (let i = 0; i < phnum; i++) {
    const at = phoff + i * phentsize;
    if (dv.getUint32(at, true) !== PT_LOAD) continue;
    loads++;
    const offset = dv.getUint32(at + 4, true);
    const vaddr = dv.getUint32(at + 8, true);
    const filesz = dv.getUint32(at + 16, true);
    const memsz = dv.getUint32(at + 20, true);
    if (offset + filesz > fileSize) return `elf segment ${i} lies beyond the end of the file`;
    if (entry >= vaddr && entry < vaddr + memsz) entryMapped = true;
  }
  if (loads === 0) return 'elf has no loadable (PT_LOAD) segment';
  if (!entryMapped) return `elf entry point 0x${entry.toString(16)} is not inside any loadable segment`;
  return null;
}
