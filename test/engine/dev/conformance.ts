// Reference model for the conformance guest (test/guests/src/conformance.c): the
// expected result of every instruction it runs, in the order it reveals them, computed
// from the RISC-V definitions with BigInt arithmetic (independent of the executor's
// 32-bit tricks).

export interface Expected {
  label: string;
  value: number;
}

export const VALUES = [
  0, 1, 2, 0x7fffffff, 0x80000000, 0x80000001, 0xffffffff, 0xfffffffe, 31, 32, 33, 0x0000ffff, 0xffff8000, 0x12345678, 0xdeadbeef,
  0x00008000,
];

const u = (x: number) => BigInt.asUintN(32, BigInt(x));
const s = (x: number) => BigInt.asIntN(32, BigInt(x));
const word = (x: bigint) => Number(BigInt.asUintN(32, x));
const bool = (c: boolean) => (c ? 1 : 0);
const ALL_ONES = 0xffffffff;

export const REGISTER_OPS: Record<string, (a: number, b: number) => number> = {
  add: (a, b) => word(u(a) + u(b)),
  sub: (a, b) => word(u(a) - u(b)),
  sll: (a, b) => word(u(a) << (u(b) & 31n)),
  slt: (a, b) => bool(s(a) < s(b)),
  sltu: (a, b) => bool(u(a) < u(b)),
  xor: (a, b) => word(u(a) ^ u(b)),
  srl: (a, b) => word(u(a) >> (u(b) & 31n)),
  sra: (a, b) => word(s(a) >> (u(b) & 31n)),
  or: (a, b) => word(u(a) | u(b)),
  and: (a, b) => word(u(a) & u(b)),
  mul: (a, b) => word(s(a) * s(b)),
  mulh: (a, b) => word((s(a) * s(b)) >> 32n),
  mulhsu: (a, b) => word((s(a) * u(b)) >> 32n),
  mulhu: (a, b) => word((u(a) * u(b)) >> 32n),
  // BigInt division truncates toward zero and % takes the dividend's sign, as RISC-V does.
  div: (a, b) => (u(b) === 0n ? ALL_ONES : word(s(a) / s(b))),
  divu: (a, b) => (u(b) === 0n ? ALL_ONES : word(u(a) / u(b))),
  rem: (a, b) => (u(b) === 0n ? word(u(a)) : word(s(a) % s(b))),
  remu: (a, b) => (u(b) === 0n ? word(u(a)) : word(u(a) % u(b))),
};

const BRANCH_OPS: Record<string, (a: number, b: number) => boolean> = {
  beq: (a, b) => u(a) === u(b),
  bne: (a, b) => u(a) !== u(b),
  blt: (a, b) => s(a) < s(b),
  bge: (a, b) => s(a) >= s(b),
  bltu: (a, b) => u(a) < u(b),
  bgeu: (a, b) => u(a) >= u(b),
};

const IMMEDIATE_OPS: Record<string, (a: number, imm: number) => number> = {
  addi: (a, imm) => REGISTER_OPS.add(a, imm),
  slti: (a, imm) => REGISTER_OPS.slt(a, imm),
  sltiu: (a, imm) => REGISTER_OPS.sltu(a, imm), // the immediate is sign-extended, then compared unsigned
  xori: (a, imm) => REGISTER_OPS.xor(a, imm),
  ori: (a, imm) => REGISTER_OPS.or(a, imm),
  andi: (a, imm) => REGISTER_OPS.and(a, imm),
};
const IMMEDIATES = [-2048, -2047, -1, 0, 1, 31, 0x555, 2047];
const SHIFT_OPS: Record<string, (a: number, sh: number) => number> = {
  slli: REGISTER_OPS.sll,
  srli: REGISTER_OPS.srl,
  srai: REGISTER_OPS.sra,
};
const SHIFT_AMOUNTS = [0, 1, 4, 16, 31];

const PATTERN = [0x01, 0x7f, 0x80, 0xff, 0x34, 0x12, 0x00, 0x80, 0xff, 0x7f, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12];
const little = (bytes: number[]) => bytes.reduceRight((acc, b) => acc * 256 + b, 0);
const signExtend = (v: number, bits: number) => word(BigInt.asIntN(bits, BigInt(v)));
const range = (from: number, to: number, step = 1) => Array.from({ length: Math.floor((to - from) / step) + 1 }, (_, i) => from + i * step);

const hex = (v: number) => `0x${(v >>> 0).toString(16)}`;

export function expectedResults(): Expected[] {
  const out: Expected[] = [];
  const push = (label: string, value: number) => out.push({ label, value: value >>> 0 });
  for (const [op, f] of Object.entries(REGISTER_OPS))
    for (const a of VALUES) for (const b of VALUES) push(`${op} ${hex(a)}, ${hex(b)}`, f(a, b));
  for (const [op, f] of Object.entries(BRANCH_OPS))
    for (const a of VALUES) for (const b of VALUES) push(`${op} ${hex(a)}, ${hex(b)} taken`, bool(f(a, b)));
  for (const [op, f] of Object.entries(IMMEDIATE_OPS))
    for (const imm of IMMEDIATES) for (const a of VALUES) push(`${op} ${hex(a)}, ${imm}`, f(a, imm));
  for (const [op, f] of Object.entries(SHIFT_OPS))
    for (const sh of SHIFT_AMOUNTS) for (const a of VALUES) push(`${op} ${hex(a)}, ${sh}`, f(a, sh));
  for (const op of ['sub', 'mulh', 'div']) for (const a of VALUES) push(`${op} x, x, x with x = ${hex(a)}`, REGISTER_OPS[op](a, a));
  // Loads relative to pattern + 8.
  const at = (off: number, n: number) => little(PATTERN.slice(8 + off, 8 + off + n));
  for (const off of range(-8, 7)) push(`lb ${off}`, signExtend(at(off, 1), 8));
  for (const off of range(-8, 7)) push(`lbu ${off}`, at(off, 1));
  for (const off of range(-8, 6, 2)) push(`lh ${off}`, signExtend(at(off, 2), 16));
  for (const off of range(-8, 6, 2)) push(`lhu ${off}`, at(off, 2));
  for (const off of range(-8, 4, 4)) push(`lw ${off}`, at(off, 4));
  // Stores relative to the middle of an 8-byte buffer of aa aa aa aa 55 55 55 55.
  const stores: [string, number, number[]][] = [
    ['sb', 1, range(-4, 3)],
    ['sh', 2, range(-4, 2, 2)],
    ['sw', 4, range(-4, 0, 4)],
  ];
  for (const [op, size, offsets] of stores) {
    for (const off of offsets) {
      for (const v of VALUES) {
        const buf = [0xaa, 0xaa, 0xaa, 0xaa, 0x55, 0x55, 0x55, 0x55];
        for (let i = 0; i < size; i++) buf[4 + off + i] = Number((u(v) >> BigInt(8 * i)) & 0xffn);
        push(`${op} ${hex(v)} at ${off}: low word`, little(buf.slice(0, 4)));
        push(`${op} ${hex(v)} at ${off}: high word`, little(buf.slice(4)));
      }
    }
  }
  for (const imm of [0, 1, 0x7ffff, 0x80000, 0xfffff]) push(`lui ${hex(imm)}`, word(BigInt(imm) << 12n));
  for (const imm of [0, 1, 0x80000, 0xfffff]) push(`auipc ${hex(imm)} minus pc`, word(BigInt(imm) << 12n));
  push('jal link minus the next address', 0);
  push('jalr to an odd address: link minus the next address', 0);
  push('jalr rd == rs1: link minus the next address', 0);
  push('jalr with a negative offset: link minus the next address', 0);
  push('backward jumps reach their target', 7);
  push('addi x0 leaves x0 zero', 0);
  push('lui x0 leaves x0 zero', 0);
  push('lw x0 leaves x0 zero', 0);
  push('mul x0 leaves x0 zero: x0 + 0x12345678', 0x12345678);
  push('auipc x0 leaves x0 zero', 0);
  push('fence is a no-op', 1);
  return out;
}
