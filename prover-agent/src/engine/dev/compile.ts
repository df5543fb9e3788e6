// Translates guest code into JavaScript functions, one per *region*: a set of basic
// blocks reachable from an entry pc through static control flow (branches, jal,
// fall-through), up to a size budget. V8 then compiles the hot regions to machine code,
// which is what makes the executor fast: registers live in local variables inside a
// region, a loop whose blocks all sit in one region never leaves its function, and
// decoding happens once per region instead of once per executed instruction.
//
// Regions are formed from profile data: the interpreter (interpret.ts) counts block
// entries, a block entered often becomes a region entry, and the region takes in only
// successor blocks that have already run, so cold paths are not compiled.
//
// A region function has the signature `(r: Int32Array, st: RunState) => number`:
// it runs from its entry until control leaves the region, the guest terminates, or
// the next block would take the instruction count past `st.lim`, and returns the pc to
// continue at (or HALT). Counting is exact: each block adds its length to the count
// before it runs and checks first that it fits; a trap subtracts the instructions of
// its block it did not complete before throwing. Faults throw `Trap` (see machine.ts).
import { decode, hexWord, type Instr } from './decode.ts';
import { MEM_SIZE } from './elf.ts';

/** Returned by a region when the guest executed `terminate`. */
export const HALT = -1;

export interface RunState {
  /** Instructions executed so far. */
  n: number;
  /** Stop before the count would exceed this. */
  lim: number;
}

export type RegionFn = (r: Int32Array, st: RunState) => number;

/** The guest code a region is compiled from: the words of the executable segments. */
export interface CodeView {
  /** Byte address of words[0]. */
  start: number;
  words: Int32Array;
  /** 1 where the word belongs to an executable segment. */
  isCode: Uint8Array;
}

/** What generated code calls into: memory views, the custom-instruction host, fault builders. */
export interface RegionRuntime {
  m8: Uint8Array;
  m8s: Int8Array;
  m16: Uint16Array;
  m16s: Int16Array;
  m32: Int32Array;
  host: object;
  memFault(pc: number, addr: number, size: number, store: boolean): Error;
  jumpFault(pc: number, target: number): Error;
}

const RUNTIME_NAMES = ['m8', 'm8s', 'm16', 'm16s', 'm32', 'H', 'memFault', 'jumpFault', 'mulhu', 'mulh', 'mulhsu'] as const;

/** High word of the unsigned 64-bit product, from 16-bit limbs so every step is exact in doubles. */
export function mulhu(a: number, b: number): number {
  const al = a & 0xffff;
  const ah = a >>> 16;
  const bl = b & 0xffff;
  const bh = b >>> 16;
  const lh = al * bh;
  const hl = ah * bl;
  const mid = ((al * bl) >>> 16) + (lh & 0xffff) + (hl & 0xffff);
  return (ah * bh + (lh >>> 16) + (hl >>> 16) + (mid >>> 16)) | 0;
}
/** Signed x signed: a negative operand contributes -2^32 * other to the product. */
export function mulh(a: number, b: number): number {
  return (mulhu(a, b) - (a < 0 ? b : 0) - (b < 0 ? a : 0)) | 0;
}
/** Signed a x unsigned b. */
export function mulhsu(a: number, b: number): number {
  return (mulhu(a, b) - (a < 0 ? b : 0)) | 0;
}

/** Limits of one region: enough to hold typical loops, small enough for V8 to optimize. */
const REGION_MAX_INSTRUCTIONS = 600;
const REGION_MAX_BLOCKS = 48;
const BLOCK_MAX_INSTRUCTIONS = 120;

/** Upper bits and low bits that must be clear for an access of `size` bytes to be in range and aligned. */
const accessMask = (size: number) => ~(MEM_SIZE - 1) | (size - 1) | 0;

interface Block {
  pc: number;
  instrs: Instr[];
}

const isControl = (op: Instr['op']) =>
  op === 'jal' ||
  op === 'jalr' ||
  op === 'beq' ||
  op === 'bne' ||
  op === 'blt' ||
  op === 'bge' ||
  op === 'bltu' ||
  op === 'bgeu' ||
  op === 'terminate' ||
  op === 'unsupported';

function staticSuccessors(block: Block): number[] {
  const last = block.instrs[block.instrs.length - 1];
  const lastPc = block.pc + 4 * (block.instrs.length - 1);
  switch (last.op) {
    case 'jal':
      return [lastPc + last.imm];
    case 'beq':
    case 'bne':
    case 'blt':
    case 'bge':
    case 'bltu':
    case 'bgeu':
      return [lastPc + last.imm, lastPc + 4];
    case 'jalr':
    case 'terminate':
    case 'unsupported':
      return [];
    default:
      return [lastPc + 4];
  }
}

/**
 * Discovers the blocks of the region entered at `entry` (a pc inside the code), following
 * static successors for which `include(pc)` holds.
 */
function discoverRegion(code: CodeView, entry: number, include: (pc: number) => boolean): Block[] {
  const inCode = (pc: number) => {
    const off = pc - code.start;
    return off >= 0 && off < code.words.length * 4 && (off & 3) === 0 && code.isCode[off >>> 2] === 1;
  };
  const blocks: Block[] = [];
  const starts = new Set<number>();
  const queue = [entry];
  let total = 0;
  while (queue.length > 0 && blocks.length < REGION_MAX_BLOCKS && total < REGION_MAX_INSTRUCTIONS) {
    const pc = queue.shift()!;
    if (starts.has(pc) || !inCode(pc) || (pc !== entry && !include(pc))) continue;
    const instrs: Instr[] = [];
    let at = pc;
    for (;;) {
      const ins = decode(code.words[(at - code.start) >>> 2]);
      instrs.push(ins);
      at += 4;
      if (isControl(ins.op) || instrs.length >= BLOCK_MAX_INSTRUCTIONS) break;
      if (!inCode(at) || starts.has(at)) break;
    }
    const block = { pc, instrs };
    blocks.push(block);
    starts.add(pc);
    total += instrs.length;
    queue.push(...staticSuccessors(block));
  }
  return blocks;
}

/** JavaScript source of one region function. */
function regionSource(blocks: Block[]): string {
  const labels = new Map(blocks.map((b, i) => [b.pc, i]));
  const used = new Set<number>();
  const written = new Set<number>();
  const R = (n: number) => {
    if (n === 0) return '0';
    used.add(n);
    return `x${n}`;
  };
  const W = (n: number, expr: string) => {
    if (n === 0) return '';
    used.add(n);
    written.add(n);
    return `x${n} = ${expr};`;
  };
  const goTo = (target: number) => {
    const label = labels.get(target);
    return label === undefined ? `{ ret = ${target}; break run; }` : `{ lbl = ${label}; continue run; }`;
  };

  const cases: string[] = [];
  blocks.forEach((block, label) => {
    const L = block.instrs.length;
    const out: string[] = [`case ${label}: {`, `if (n + ${L} > lim) { ret = ${block.pc}; break run; }`, `n += ${L};`];
    block.instrs.forEach((ins, k) => {
      const pc = block.pc + 4 * k;
      // Before anything that may throw: the count of instructions completed so far.
      const settle = `st.n = n - ${L - k};`;
      const trap = (expr: string) => `{ ${settle} throw ${expr}; }`;
      out.push(`// ${hexWord(pc)} ${ins.op}`);
      const load = (rd: number, rs1: number, imm: number, size: number, view: string, shift: number) => {
        out.push(`a = (${R(rs1)} + ${imm}) | 0;`);
        out.push(`if ((a & ${accessMask(size)}) !== 0) ${trap(`memFault(${pc}, a, ${size}, false)`)}`);
        if (rd !== 0) out.push(W(rd, `${view}[a${shift ? ` >> ${shift}` : ''}]`));
      };
      const store = (rs1: number, rs2: number, imm: number, size: number, view: string, shift: number) => {
        out.push(`a = (${R(rs1)} + ${imm}) | 0;`);
        out.push(`if ((a & ${accessMask(size)}) !== 0) ${trap(`memFault(${pc}, a, ${size}, true)`)}`);
        out.push(`${view}[a${shift ? ` >> ${shift}` : ''}] = ${R(rs2)};`);
      };
      const branch = (cond: string, imm: number) => {
        const target = pc + imm;
        const taken = (target & 3) !== 0 ? trap(`jumpFault(${pc}, ${target >>> 0})`) : goTo(target >>> 0);
        out.push(`if (${cond}) ${taken}`, goTo(pc + 4));
      };
      switch (ins.op) {
        case 'add':
        case 'sub':
        case 'sll':
        case 'slt':
        case 'sltu':
        case 'xor':
        case 'srl':
        case 'sra':
        case 'or':
        case 'and':
        case 'mul':
        case 'mulh':
        case 'mulhsu':
        case 'mulhu':
        case 'div':
        case 'divu':
        case 'rem':
        case 'remu': {
          if (ins.rd === 0) break;
          const a = R(ins.rs1);
          const b = R(ins.rs2);
          out.push(W(ins.rd, registerOp(ins.op, a, b)));
          break;
        }
        case 'addi':
        case 'slti':
        case 'sltiu':
        case 'xori':
        case 'ori':
        case 'andi':
        case 'slli':
        case 'srli':
        case 'srai':
          if (ins.rd === 0) break;
          out.push(W(ins.rd, immediateOp(ins.op, R(ins.rs1), ins.imm)));
          break;
        case 'lui':
          out.push(W(ins.rd, `${ins.imm | 0}`));
          break;
        case 'auipc':
          out.push(W(ins.rd, `${(pc + ins.imm) | 0}`));
          break;
        case 'jal': {
          out.push(W(ins.rd, `${(pc + 4) | 0}`));
          const target = pc + ins.imm;
          out.push((target & 3) !== 0 ? trap(`jumpFault(${pc}, ${target >>> 0})`) : goTo(target >>> 0));
          break;
        }
        case 'jalr':
          // Target first: rd may be rs1.
          out.push(`a = (${R(ins.rs1)} + ${ins.imm}) & -2;`);
          out.push(W(ins.rd, `${(pc + 4) | 0}`));
          out.push(`if ((a & 2) !== 0) ${trap(`jumpFault(${pc}, a >>> 0)`)}`);
          out.push(`{ ret = a >>> 0; break run; }`);
          break;
        case 'beq':
          branch(`${R(ins.rs1)} === ${R(ins.rs2)}`, ins.imm);
          break;
        case 'bne':
          branch(`${R(ins.rs1)} !== ${R(ins.rs2)}`, ins.imm);
          break;
        case 'blt':
          branch(`${R(ins.rs1)} < ${R(ins.rs2)}`, ins.imm);
          break;
        case 'bge':
          branch(`${R(ins.rs1)} >= ${R(ins.rs2)}`, ins.imm);
          break;
        case 'bltu':
          branch(`(${R(ins.rs1)} >>> 0) < (${R(ins.rs2)} >>> 0)`, ins.imm);
          break;
        case 'bgeu':
          branch(`(${R(ins.rs1)} >>> 0) >= (${R(ins.rs2)} >>> 0)`, ins.imm);
          break;
        case 'lb':
          load(ins.rd, ins.rs1, ins.imm, 1, 'm8s', 0);
          break;
        case 'lbu':
          load(ins.rd, ins.rs1, ins.imm, 1, 'm8', 0);
          break;
        case 'lh':
          load(ins.rd, ins.rs1, ins.imm, 2, 'm16s', 1);
          break;
        case 'lhu':
          load(ins.rd, ins.rs1, ins.imm, 2, 'm16', 1);
          break;
        case 'lw':
          load(ins.rd, ins.rs1, ins.imm, 4, 'm32', 2);
          break;
        case 'sb':
          store(ins.rs1, ins.rs2, ins.imm, 1, 'm8', 0);
          break;
        case 'sh':
          store(ins.rs1, ins.rs2, ins.imm, 2, 'm16', 1);
          break;
        case 'sw':
          store(ins.rs1, ins.rs2, ins.imm, 4, 'm32', 2);
          break;
        case 'fence':
          break;
        case 'terminate':
          out.push(`H.terminate(${ins.imm});`, `{ ret = ${HALT}; break run; }`);
          break;
        case 'unsupported':
          out.push(trap(`H.unsupported(${JSON.stringify(ins.name)}, ${pc})`));
          break;
        case 'reveal':
          out.push(settle, `H.reveal((${R(ins.rd)} + ${ins.imm}) | 0, ${R(ins.rs1)}, ${pc});`);
          break;
        case 'hintinput':
          out.push(settle, `H.hintinput(${pc});`);
          break;
        default:
          // The other custom instructions take the values of rd, rs1, rs2 (unused ones are ignored).
          out.push(settle, `H.${ins.op}(${R(ins.rd)}, ${R(ins.rs1)}, ${R(ins.rs2)}, ${pc});`);
      }
    });
    const last = block.instrs[L - 1];
    if (!isControl(last.op)) out.push(goTo(block.pc + 4 * L));
    out.push('}');
    cases.push(out.join('\n'));
  });

  const regs = [...used].sort((a, b) => a - b);
  return [
    `return function region_${hexWord(blocks[0].pc)}(r, st) {`,
    `let n = st.n, lim = st.lim, lbl = 0, ret = 0, a = 0;`,
    regs.length ? `let ${regs.map((i) => `x${i} = r[${i}]`).join(', ')};` : '',
    `run: for (;;) { switch (lbl) {`,
    ...cases,
    `} }`,
    [...written]
      .sort((a, b) => a - b)
      .map((i) => `r[${i}] = x${i};`)
      .join(' '),
    `st.n = n;`,
    `return ret;`,
    `};`,
  ].join('\n');
}

function registerOp(op: string, a: string, b: string): string {
  switch (op) {
    case 'add':
      return `(${a} + ${b}) | 0`;
    case 'sub':
      return `(${a} - ${b}) | 0`;
    // JavaScript shifts use the low 5 bits of the amount, exactly like RV32.
    case 'sll':
      return `${a} << ${b}`;
    case 'srl':
      return `(${a} >>> ${b}) | 0`;
    case 'sra':
      return `${a} >> ${b}`;
    case 'slt':
      return `${a} < ${b} ? 1 : 0`;
    case 'sltu':
      return `(${a} >>> 0) < (${b} >>> 0) ? 1 : 0`;
    case 'xor':
      return `${a} ^ ${b}`;
    case 'or':
      return `${a} | ${b}`;
    case 'and':
      return `${a} & ${b}`;
    case 'mul':
      return `Math.imul(${a}, ${b})`;
    case 'mulh':
      return `mulh(${a}, ${b})`;
    case 'mulhsu':
      return `mulhsu(${a}, ${b})`;
    case 'mulhu':
      return `mulhu(${a}, ${b})`;
    // Division by zero gives all ones (div, divu) or the dividend (rem, remu). Signed
    // overflow needs no case: -2^31 / -1 = 2^31 wraps to -2^31 under `| 0`, and
    // -2^31 % -1 is -0, which `| 0` makes 0, both as RISC-V requires.
    case 'div':
      return `${b} === 0 ? -1 : (${a} / ${b}) | 0`;
    case 'divu':
      return `${b} === 0 ? -1 : ((${a} >>> 0) / (${b} >>> 0)) | 0`;
    case 'rem':
      return `${b} === 0 ? ${a} : (${a} % ${b}) | 0`;
    case 'remu':
      return `${b} === 0 ? ${a} : ((${a} >>> 0) % (${b} >>> 0)) | 0`;
    default:
      throw new Error(`no register op ${op}`);
  }
}

function immediateOp(op: string, a: string, imm: number): string {
  switch (op) {
    case 'addi':
      return a === '0' ? `${imm}` : `(${a} + ${imm}) | 0`;
    case 'slti':
      return `${a} < ${imm} ? 1 : 0`;
    case 'sltiu':
      return `(${a} >>> 0) < ${imm >>> 0} ? 1 : 0`;
    case 'xori':
      return `${a} ^ ${imm}`;
    case 'ori':
      return `${a} | ${imm}`;
    case 'andi':
      return `${a} & ${imm}`;
    case 'slli':
      return `${a} << ${imm}`;
    case 'srli':
      return `(${a} >>> ${imm}) | 0`;
    case 'srai':
      return `${a} >> ${imm}`;
    default:
      throw new Error(`no immediate op ${op}`);
  }
}

/** Compiles the region entered at `entry`, taking in the successor blocks `include` accepts. */
export function compileRegion(code: CodeView, entry: number, rt: RegionRuntime, include: (pc: number) => boolean): RegionFn {
  const source = regionSource(discoverRegion(code, entry, include));
  const factory = new Function(...RUNTIME_NAMES, source) as (...args: unknown[]) => RegionFn;
  return factory(rt.m8, rt.m8s, rt.m16, rt.m16s, rt.m32, rt.host, rt.memFault, rt.jumpFault, mulhu, mulh, mulhsu);
}
