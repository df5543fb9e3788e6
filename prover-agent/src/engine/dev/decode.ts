// Decodes one 32-bit instruction word: RV32IM plus the zkVM's custom-0 instructions
// (guest-abi.md, "Custom instructions"). Words the machine does not execute decode
// to `unsupported` with a name for the error message; they only fail when executed.

export type AluOp = 'add' | 'sub' | 'sll' | 'slt' | 'sltu' | 'xor' | 'srl' | 'sra' | 'or' | 'and';
export type MulOp = 'mul' | 'mulh' | 'mulhsu' | 'mulhu' | 'div' | 'divu' | 'rem' | 'remu';
export type BranchOp = 'beq' | 'bne' | 'blt' | 'bge' | 'bltu' | 'bgeu';
export type LoadOp = 'lb' | 'lh' | 'lw' | 'lbu' | 'lhu';
export type StoreOp = 'sb' | 'sh' | 'sw';
export type CustomOp =
  | 'terminate'
  | 'hintstorew'
  | 'hintbuffer'
  | 'reveal'
  | 'hintinput'
  | 'printstr'
  | 'hintrandom'
  | 'keccakf'
  | 'xorin'
  | 'sha256_update'
  | 'sha512_update';

export type Instr =
  | { op: AluOp | MulOp; rd: number; rs1: number; rs2: number }
  /** Register-immediate ALU ops; `imm` is sign-extended (the shift amount for shifts). */
  | { op: 'addi' | 'slti' | 'sltiu' | 'xori' | 'ori' | 'andi' | 'slli' | 'srli' | 'srai'; rd: number; rs1: number; imm: number }
  | { op: 'lui' | 'auipc'; rd: number; imm: number }
  | { op: 'jal'; rd: number; imm: number }
  | { op: 'jalr'; rd: number; rs1: number; imm: number }
  | { op: BranchOp; rs1: number; rs2: number; imm: number }
  | { op: LoadOp; rd: number; rs1: number; imm: number }
  | { op: StoreOp; rs1: number; rs2: number; imm: number }
  | { op: 'fence' }
  | { op: CustomOp; rd: number; rs1: number; rs2: number; imm: number }
  | { op: 'unsupported'; name: string };

const ALU: Record<number, AluOp> = { 0: 'add', 1: 'sll', 2: 'slt', 3: 'sltu', 4: 'xor', 5: 'srl', 6: 'or', 7: 'and' };
const MUL: MulOp[] = ['mul', 'mulh', 'mulhsu', 'mulhu', 'div', 'divu', 'rem', 'remu'];
const BRANCH: Record<number, BranchOp> = { 0: 'beq', 1: 'bne', 4: 'blt', 5: 'bge', 6: 'bltu', 7: 'bgeu' };
const LOAD: Record<number, LoadOp> = { 0: 'lb', 1: 'lh', 2: 'lw', 4: 'lbu', 5: 'lhu' };
const STORE: Record<number, StoreOp> = { 0: 'sb', 1: 'sh', 2: 'sw' };
const OPIMM = { 0: 'addi', 2: 'slti', 3: 'sltiu', 4: 'xori', 6: 'ori', 7: 'andi' } as const;
const CSR = ['', 'csrrw', 'csrrs', 'csrrc', '', 'csrrwi', 'csrrsi', 'csrrci'];
const SHA_KECCAK: CustomOp[] = ['keccakf', 'xorin', 'sha256_update', 'sha512_update'];

export function hexWord(word: number): string {
  return `0x${(word >>> 0).toString(16).padStart(8, '0')}`;
}

export function decode(word: number): Instr {
  const opcode = word & 0x7f;
  const rd = (word >>> 7) & 31;
  const funct3 = (word >>> 12) & 7;
  const rs1 = (word >>> 15) & 31;
  const rs2 = (word >>> 20) & 31;
  const funct7 = word >>> 25;
  const immI = word >> 20;
  const unsupported = (name?: string): Instr => ({ op: 'unsupported', name: name ? `${name} (${hexWord(word)})` : hexWord(word) });

  switch (opcode) {
    case 0x37:
      return { op: 'lui', rd, imm: word & 0xfffff000 };
    case 0x17:
      return { op: 'auipc', rd, imm: word & 0xfffff000 };
    case 0x6f: {
      const imm = ((word >> 31) << 20) | (((word >>> 12) & 0xff) << 12) | (((word >>> 20) & 1) << 11) | (((word >>> 21) & 0x3ff) << 1);
      return { op: 'jal', rd, imm };
    }
    case 0x67:
      return funct3 === 0 ? { op: 'jalr', rd, rs1, imm: immI } : unsupported();
    case 0x63: {
      const op = BRANCH[funct3];
      if (!op) return unsupported();
      const imm = ((word >> 31) << 12) | (((word >>> 7) & 1) << 11) | (((word >>> 25) & 0x3f) << 5) | (((word >>> 8) & 0xf) << 1);
      return { op, rs1, rs2, imm };
    }
    case 0x03: {
      const op = LOAD[funct3];
      return op ? { op, rd, rs1, imm: immI } : unsupported();
    }
    case 0x23: {
      const op = STORE[funct3];
      return op ? { op, rs1, rs2, imm: ((word >> 25) << 5) | ((word >>> 7) & 31) } : unsupported();
    }
    case 0x13: {
      if (funct3 === 1) return funct7 === 0 ? { op: 'slli', rd, rs1, imm: rs2 } : unsupported();
      if (funct3 === 5) {
        if (funct7 === 0) return { op: 'srli', rd, rs1, imm: rs2 };
        if (funct7 === 0x20) return { op: 'srai', rd, rs1, imm: rs2 };
        return unsupported();
      }
      return { op: OPIMM[funct3 as 0 | 2 | 3 | 4 | 6 | 7], rd, rs1, imm: immI };
    }
    case 0x33: {
      if (funct7 === 0) return { op: ALU[funct3], rd, rs1, rs2 };
      if (funct7 === 1) return { op: MUL[funct3], rd, rs1, rs2 };
      if (funct7 === 0x20 && funct3 === 0) return { op: 'sub', rd, rs1, rs2 };
      if (funct7 === 0x20 && funct3 === 5) return { op: 'sra', rd, rs1, rs2 };
      return unsupported();
    }
    case 0x0f:
      // A single hart with no caches to order: FENCE is a no-op, as in the zkVM's transpiler.
      return funct3 === 0 ? { op: 'fence' } : unsupported(funct3 === 1 ? 'fence.i' : undefined);
    case 0x73:
      if (word === 0x00000073) return unsupported('ecall');
      if (word === 0x00100073) return unsupported('ebreak');
      if (word === (0xc0001073 | 0)) return unsupported('unimp');
      return unsupported(CSR[funct3] || 'system instruction');
    case 0x0b:
      return decodeCustom0(rd, funct3, rs1, rs2, funct7, immI, unsupported);
    case 0x2b:
      return unsupported('custom-1');
    default:
      return unsupported();
  }
}

function decodeCustom0(
  rd: number,
  funct3: number,
  rs1: number,
  rs2: number,
  funct7: number,
  immI: number,
  unsupported: (name?: string) => Instr,
): Instr {
  const i = (op: CustomOp): Instr => ({ op, rd, rs1, rs2: 0, imm: immI });
  switch (funct3) {
    case 0:
      // The exit code is one byte; the zkVM's transpiler rejects anything else.
      return immI >= 0 && immI <= 255 ? i('terminate') : unsupported(`terminate with exit code ${immI}`);
    case 1:
      if (immI === 0) return i('hintstorew');
      if (immI === 1) return i('hintbuffer');
      return unsupported(`custom-0 hint store with imm ${immI}`);
    case 2:
      return i('reveal');
    case 3:
      if (immI === 0) return i('hintinput');
      if (immI === 1) return i('printstr');
      if (immI === 2) return i('hintrandom');
      return unsupported(`custom-0 phantom with imm ${immI}`);
    case 4: {
      const op = SHA_KECCAK[funct7];
      return op ? { op, rd, rs1, rs2, imm: 0 } : unsupported(`custom-0 funct3=4 funct7=${funct7}`);
    }
    case 5:
      return unsupported('custom-0 256-bit integer instruction');
    case 6:
      return unsupported('beq256');
    default:
      return unsupported(`custom-0 funct3=${funct3}`);
  }
}
