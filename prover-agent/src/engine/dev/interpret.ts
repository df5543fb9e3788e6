// The executor's first tier: an interpreter over a pre-decoded instruction cache. All
// code starts here; only blocks entered often get compiled into regions (compile.ts).
// Compiling costs tens of microseconds per block, so code that runs a few times (most of
// a large program) is cheaper to interpret, and only hot loops repay compilation.
// The interpreter also runs exactly up to an instruction limit, which regions (whole
// blocks at a time) cannot.
import type { CodeView, RunState } from './compile.ts';
import { HALT, mulh, mulhsu, mulhu } from './compile.ts';
import { decode, type Instr } from './decode.ts';
import { MEM_SIZE } from './elf.ts';
import type { Machine } from './machine.ts';

// Numeric operation codes of the decoded cache; 0 = not decoded yet.
const ADD = 1,
  SUB = 2,
  SLL = 3,
  SLT = 4,
  SLTU = 5,
  XOR = 6,
  SRL = 7,
  SRA = 8,
  OR = 9,
  AND = 10;
const MUL = 11,
  MULH = 12,
  MULHSU = 13,
  MULHU = 14,
  DIV = 15,
  DIVU = 16,
  REM = 17,
  REMU = 18;
const ADDI = 19,
  SLTI = 20,
  SLTIU = 21,
  XORI = 22,
  ORI = 23,
  ANDI = 24,
  SLLI = 25,
  SRLI = 26,
  SRAI = 27;
const LUI = 28,
  AUIPC = 29,
  JAL = 30,
  JALR = 31;
const BEQ = 32,
  BNE = 33,
  BLT = 34,
  BGE = 35,
  BLTU = 36,
  BGEU = 37;
const LB = 38,
  LH = 39,
  LW = 40,
  LBU = 41,
  LHU = 42,
  SB = 43,
  SH = 44,
  SW = 45,
  FENCE = 46;
const TERMINATE = 47,
  HINTSTOREW = 48,
  HINTBUFFER = 49,
  REVEAL = 50,
  HINTINPUT = 51,
  PRINTSTR = 52,
  HINTRANDOM = 53;
const KECCAKF = 54,
  XORIN = 55,
  SHA256 = 56,
  SHA512 = 57,
  UNSUPPORTED = 58;

const OP_CODES: Record<Instr['op'], number> = {
  add: ADD,
  sub: SUB,
  sll: SLL,
  slt: SLT,
  sltu: SLTU,
  xor: XOR,
  srl: SRL,
  sra: SRA,
  or: OR,
  and: AND,
  mul: MUL,
  mulh: MULH,
  mulhsu: MULHSU,
  mulhu: MULHU,
  div: DIV,
  divu: DIVU,
  rem: REM,
  remu: REMU,
  addi: ADDI,
  slti: SLTI,
  sltiu: SLTIU,
  xori: XORI,
  ori: ORI,
  andi: ANDI,
  slli: SLLI,
  srli: SRLI,
  srai: SRAI,
  lui: LUI,
  auipc: AUIPC,
  jal: JAL,
  jalr: JALR,
  beq: BEQ,
  bne: BNE,
  blt: BLT,
  bge: BGE,
  bltu: BLTU,
  bgeu: BGEU,
  lb: LB,
  lh: LH,
  lw: LW,
  lbu: LBU,
  lhu: LHU,
  sb: SB,
  sh: SH,
  sw: SW,
  fence: FENCE,
  terminate: TERMINATE,
  hintstorew: HINTSTOREW,
  hintbuffer: HINTBUFFER,
  reveal: REVEAL,
  hintinput: HINTINPUT,
  printstr: PRINTSTR,
  hintrandom: HINTRANDOM,
  keccakf: KECCAKF,
  xorin: XORIN,
  sha256_update: SHA256,
  sha512_update: SHA512,
  unsupported: UNSUPPORTED,
};

/** Register slot that writes to x0 go to, so that x0 always reads 0 without a test per write. */
export const X0_SINK = 32;

/**
 * Returns `interpretBlock(pc)`: runs instructions from `pc` (inside the code) to the end of
 * its basic block, the guest's termination, or `st.lim`, whichever comes first, and
 * returns the pc to continue at (or HALT). `regs` must have X0_SINK + 1 slots.
 */
export function createInterpreter(code: CodeView, machine: Machine, regs: Int32Array, st: RunState): (pc: number) => number {
  const words = code.words.length;
  const ops = new Uint8Array(words);
  const rds = new Uint8Array(words);
  const rs1s = new Uint8Array(words);
  const rs2s = new Uint8Array(words);
  const imms = new Int32Array(words);
  const unsupportedNames = new Map<number, string>();
  const { mem, m8s, m16, m16s, m32 } = machine;
  const r = regs;

  const decodeAt = (idx: number): number => {
    const ins = decode(code.words[idx]);
    const op = OP_CODES[ins.op];
    ops[idx] = op;
    if ('rd' in ins) rds[idx] = ins.rd === 0 ? X0_SINK : ins.rd;
    if ('rs1' in ins) rs1s[idx] = ins.rs1;
    if ('rs2' in ins) rs2s[idx] = ins.rs2;
    if ('imm' in ins) imms[idx] = ins.imm;
    // Custom instructions take the *value* of rd: keep the register number, x0 reads 0.
    if (op >= TERMINATE && 'rd' in ins) rds[idx] = ins.rd;
    if (ins.op === 'unsupported') unsupportedNames.set(idx, ins.name);
    return op;
  };

  const jumpTarget = (pc: number, target: number, n: number): number => {
    if ((target & 3) !== 0) {
      st.n = n - 1;
      throw machine.jumpFault(pc, target >>> 0);
    }
    return target >>> 0;
  };

  const access = (pc: number, addr: number, size: number, store: boolean, n: number): number => {
    if ((addr >>> 0) + size > MEM_SIZE || (addr & (size - 1)) !== 0) {
      st.n = n - 1;
      throw machine.memFault(pc, addr, size, store);
    }
    return addr;
  };

  return (startPc: number): number => {
    let pc = startPc;
    let idx = (pc - code.start) >>> 2;
    let n = st.n;
    const lim = st.lim;
    for (;;) {
      if (n >= lim) break;
      let op = ops[idx];
      if (op === 0) op = decodeAt(idx);
      const d = rds[idx];
      const a = r[rs1s[idx]];
      const b = r[rs2s[idx]];
      const imm = imms[idx];
      n++;
      switch (op) {
        case ADD:
          r[d] = (a + b) | 0;
          break;
        case SUB:
          r[d] = (a - b) | 0;
          break;
        case SLL:
          r[d] = a << b;
          break;
        case SLT:
          r[d] = a < b ? 1 : 0;
          break;
        case SLTU:
          r[d] = a >>> 0 < b >>> 0 ? 1 : 0;
          break;
        case XOR:
          r[d] = a ^ b;
          break;
        case SRL:
          r[d] = a >>> b;
          break;
        case SRA:
          r[d] = a >> b;
          break;
        case OR:
          r[d] = a | b;
          break;
        case AND:
          r[d] = a & b;
          break;
        case MUL:
          r[d] = Math.imul(a, b);
          break;
        case MULH:
          r[d] = mulh(a, b);
          break;
        case MULHSU:
          r[d] = mulhsu(a, b);
          break;
        case MULHU:
          r[d] = mulhu(a, b);
          break;
        case DIV:
          r[d] = b === 0 ? -1 : (a / b) | 0;
          break;
        case DIVU:
          r[d] = b === 0 ? -1 : ((a >>> 0) / (b >>> 0)) | 0;
          break;
        case REM:
          r[d] = b === 0 ? a : (a % b) | 0;
          break;
        case REMU:
          r[d] = b === 0 ? a : ((a >>> 0) % (b >>> 0)) | 0;
          break;
        case ADDI:
          r[d] = (a + imm) | 0;
          break;
        case SLTI:
          r[d] = a < imm ? 1 : 0;
          break;
        case SLTIU:
          r[d] = a >>> 0 < imm >>> 0 ? 1 : 0;
          break;
        case XORI:
          r[d] = a ^ imm;
          break;
        case ORI:
          r[d] = a | imm;
          break;
        case ANDI:
          r[d] = a & imm;
          break;
        case SLLI:
          r[d] = a << imm;
          break;
        case SRLI:
          r[d] = a >>> imm;
          break;
        case SRAI:
          r[d] = a >> imm;
          break;
        case LUI:
          r[d] = imm;
          break;
        case AUIPC:
          r[d] = (pc + imm) | 0;
          break;
        case JAL:
          r[d] = (pc + 4) | 0;
          st.n = n;
          return jumpTarget(pc, pc + imm, n);
        case JALR: {
          const target = (a + imm) & -2; // before the link: rd may be rs1
          r[d] = (pc + 4) | 0;
          st.n = n;
          return jumpTarget(pc, target, n);
        }
        case BEQ:
          st.n = n;
          return a === b ? jumpTarget(pc, pc + imm, n) : pc + 4;
        case BNE:
          st.n = n;
          return a !== b ? jumpTarget(pc, pc + imm, n) : pc + 4;
        case BLT:
          st.n = n;
          return a < b ? jumpTarget(pc, pc + imm, n) : pc + 4;
        case BGE:
          st.n = n;
          return a >= b ? jumpTarget(pc, pc + imm, n) : pc + 4;
        case BLTU:
          st.n = n;
          return a >>> 0 < b >>> 0 ? jumpTarget(pc, pc + imm, n) : pc + 4;
        case BGEU:
          st.n = n;
          return a >>> 0 >= b >>> 0 ? jumpTarget(pc, pc + imm, n) : pc + 4;
        case LB:
          r[d] = m8s[access(pc, (a + imm) | 0, 1, false, n)];
          break;
        case LBU:
          r[d] = mem[access(pc, (a + imm) | 0, 1, false, n)];
          break;
        case LH:
          r[d] = m16s[access(pc, (a + imm) | 0, 2, false, n) >> 1];
          break;
        case LHU:
          r[d] = m16[access(pc, (a + imm) | 0, 2, false, n) >> 1];
          break;
        case LW:
          r[d] = m32[access(pc, (a + imm) | 0, 4, false, n) >> 2];
          break;
        case SB:
          mem[access(pc, (a + imm) | 0, 1, true, n)] = b;
          break;
        case SH:
          m16[access(pc, (a + imm) | 0, 2, true, n) >> 1] = b;
          break;
        case SW:
          m32[access(pc, (a + imm) | 0, 4, true, n) >> 2] = b;
          break;
        case FENCE:
          break;
        case TERMINATE:
          st.n = n;
          machine.terminate(imm);
          return HALT;
        case UNSUPPORTED:
          st.n = n - 1;
          throw machine.unsupported(unsupportedNames.get(idx)!, pc);
        default:
          // Custom instructions: settle the count first, since they may trap.
          st.n = n - 1;
          customInstruction(machine, op, r[d], a, b, imm, pc);
          st.n = n;
      }
      pc += 4;
      idx++;
      if (idx >= words || code.isCode[idx] === 0) break;
    }
    // Let the caller count the block end, the limit or leaving the code.
    st.n = n;
    return pc;
  };
}

function customInstruction(machine: Machine, op: number, rd: number, rs1: number, rs2: number, imm: number, pc: number): void {
  switch (op) {
    case HINTSTOREW:
      return machine.hintstorew(rd, rs1, rs2, pc);
    case HINTBUFFER:
      return machine.hintbuffer(rd, rs1, rs2, pc);
    case REVEAL:
      return machine.reveal((rd + imm) | 0, rs1, pc);
    case HINTINPUT:
      return machine.hintinput(pc);
    case PRINTSTR:
      return machine.printstr(rd, rs1, rs2, pc);
    case HINTRANDOM:
      return machine.hintrandom(rd, rs1, rs2, pc);
    case KECCAKF:
      return machine.keccakf(rd, rs1, rs2, pc);
    case XORIN:
      return machine.xorin(rd, rs1, rs2, pc);
    case SHA256:
      return machine.sha256_update(rd, rs1, rs2, pc);
    case SHA512:
      return machine.sha512_update(rd, rs1, rs2, pc);
    default:
      throw new Error(`interpreter: no operation ${op}`);
  }
}
