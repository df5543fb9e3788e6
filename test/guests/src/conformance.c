/* conformance: runs every RV32IM instruction on edge values and reveals each result as
 * one public-value word, in the order documented in test/engine/dev/conformance.ts
 * (which holds the reference model). Run with 32768 bytes of public values. No input. */
#include "zkvm.h"

#define NV 16
static const uint32_t V[NV] = {
    0,          1,          2,          0x7fffffff, 0x80000000, 0x80000001, 0xffffffff, 0xfffffffe,
    31,         32,         33,         0x0000ffff, 0xffff8000, 0x12345678, 0xdeadbeef, 0x00008000,
};

static uint32_t out[8192];
static uint32_t n_out;
static void emit(uint32_t v) { out[n_out++] = v; }

#define R_OP(op)                                                                    \
  for (int i = 0; i < NV; i++)                                                      \
    for (int j = 0; j < NV; j++) {                                                  \
      uint32_t r;                                                                   \
      __asm__ volatile(#op " %0, %1, %2" : "=r"(r) : "r"(V[i]), "r"(V[j]));         \
      emit(r);                                                                      \
    }

#define B_OP(op)                                                                    \
  for (int i = 0; i < NV; i++)                                                      \
    for (int j = 0; j < NV; j++) {                                                  \
      uint32_t r;                                                                   \
      __asm__ volatile("li %0, 1\n\t" #op " %1, %2, 1f\n\tli %0, 0\n1:"             \
                       : "=&r"(r)                                                   \
                       : "r"(V[i]), "r"(V[j]));                                     \
      emit(r);                                                                      \
    }

#define I_ONE(op, imm)                                                              \
  for (int i = 0; i < NV; i++) {                                                    \
    uint32_t r;                                                                     \
    __asm__ volatile(#op " %0, %1, " #imm : "=r"(r) : "r"(V[i]));                   \
    emit(r);                                                                        \
  }
/* Immediates: -2048, -2047, -1, 0, 1, 31, 0x555, 2047 */
#define I_OP(op) I_ONE(op, -2048) I_ONE(op, -2047) I_ONE(op, -1) I_ONE(op, 0) I_ONE(op, 1) I_ONE(op, 31) I_ONE(op, 0x555) I_ONE(op, 2047)
/* Shift amounts: 0, 1, 4, 16, 31 */
#define SH_OP(op) I_ONE(op, 0) I_ONE(op, 1) I_ONE(op, 4) I_ONE(op, 16) I_ONE(op, 31)

/* The same register as rd, rs1 and rs2. */
#define ALIAS_OP(op)                                                                \
  for (int i = 0; i < NV; i++) {                                                    \
    uint32_t r = V[i];                                                              \
    __asm__ volatile(#op " %0, %0, %0" : "+r"(r));                                  \
    emit(r);                                                                        \
  }

static uint8_t pattern[16] __attribute__((aligned(4))) = {
    0x01, 0x7f, 0x80, 0xff, 0x34, 0x12, 0x00, 0x80, 0xff, 0x7f, 0x00, 0x00, 0x78, 0x56, 0x34, 0x12,
};
/* Loads relative to pattern + 8, so the offsets run from -8 to 7. */
#define LD(op, off)                                                                 \
  {                                                                                 \
    uint32_t r;                                                                     \
    __asm__ volatile(#op " %0, " #off "(%1)" : "=r"(r) : "r"(pattern + 8) : "memory"); \
    emit(r);                                                                        \
  }

static uint32_t store_buf[2];
/* Stores relative to store_buf + 4 into a buffer pre-filled with 0xaa/0x55 bytes. */
#define ST(op, off)                                                                 \
  for (int i = 0; i < NV; i++) {                                                    \
    store_buf[0] = 0xaaaaaaaa;                                                      \
    store_buf[1] = 0x55555555;                                                      \
    __asm__ volatile(#op " %0, " #off "(%1)" ::"r"(V[i]), "r"((uint8_t *)store_buf + 4) : "memory"); \
    emit(store_buf[0]);                                                             \
    emit(store_buf[1]);                                                             \
  }

#define LUI(imm)                                                                    \
  {                                                                                 \
    uint32_t r;                                                                     \
    __asm__ volatile("lui %0, " #imm : "=r"(r));                                    \
    emit(r);                                                                        \
  }
/* auipc result minus the address of the auipc itself. */
#define AUIPC(imm)                                                                  \
  {                                                                                 \
    uint32_t r, at;                                                                 \
    __asm__ volatile("1: auipc %0, " #imm "\n\tlla %1, 1b\n\tsub %0, %0, %1" : "=&r"(r), "=&r"(at)); \
    emit(r);                                                                        \
  }

static void jumps(void) {
  uint32_t r, t, u;
  /* jal: the link is the address after the jal, and the jump skips the li. */
  __asm__ volatile("jal %0, 1f\n2:\tli %0, 0\n1:\tlla %1, 2b\n\tsub %0, %0, %1" : "=&r"(r), "=&r"(t));
  emit(r);
  /* jalr to an odd address: bit 0 of the target is cleared. */
  __asm__ volatile("lla %1, 1f\n\taddi %1, %1, 1\n\tjalr %0, 0(%1)\n2:\tli %0, 0\n1:\tlla %2, 2b\n\tsub %0, %0, %2"
                   : "=&r"(r), "=&r"(t), "=&r"(u));
  emit(r);
  /* jalr with rd == rs1: the target is read before the link is written. */
  __asm__ volatile("lla %0, 1f\n\tjalr %0, 0(%0)\n2:\tli %0, 0\n1:\tlla %1, 2b\n\tsub %0, %0, %1" : "=&r"(r), "=&r"(t));
  emit(r);
  /* jalr with a negative offset. */
  __asm__ volatile("lla %1, 1f\n\taddi %1, %1, 16\n\tjalr %0, -16(%1)\n2:\tli %0, 0\n1:\tlla %2, 2b\n\tsub %0, %0, %2"
                   : "=&r"(r), "=&r"(t), "=&r"(u));
  emit(r);
  /* Backward jumps. */
  __asm__ volatile("li %0, 0\n\tj 2f\n1:\tli %0, 7\n\tj 3f\n2:\tj 1b\n3:" : "=&r"(r));
  emit(r);
  /* x0 ignores writes from every kind of instruction. */
  __asm__ volatile("addi x0, x0, 5\n\tmv %0, x0" : "=r"(r));
  emit(r);
  __asm__ volatile("lui x0, 0x12345\n\tmv %0, x0" : "=r"(r));
  emit(r);
  __asm__ volatile("lw x0, 0(%1)\n\tmv %0, x0" : "=r"(r) : "r"(pattern) : "memory");
  emit(r);
  __asm__ volatile("mul x0, %1, %1\n\tadd %0, x0, %1" : "=r"(r) : "r"(V[13]));
  emit(r);
  __asm__ volatile("jal x0, 1f\n1:\tauipc x0, 1\n\tmv %0, x0" : "=r"(r));
  emit(r);
  __asm__ volatile("fence\n\tli %0, 1" : "=r"(r));
  emit(r);
}

int main(void) {
  R_OP(add) R_OP(sub) R_OP(sll) R_OP(slt) R_OP(sltu) R_OP(xor) R_OP(srl) R_OP(sra) R_OP(or) R_OP(and)
  R_OP(mul) R_OP(mulh) R_OP(mulhsu) R_OP(mulhu) R_OP(div) R_OP(divu) R_OP(rem) R_OP(remu)
  B_OP(beq) B_OP(bne) B_OP(blt) B_OP(bge) B_OP(bltu) B_OP(bgeu)
  I_OP(addi) I_OP(slti) I_OP(sltiu) I_OP(xori) I_OP(ori) I_OP(andi)
  SH_OP(slli) SH_OP(srli) SH_OP(srai)
  ALIAS_OP(sub) ALIAS_OP(mulh) ALIAS_OP(div)
  LD(lb, -8) LD(lb, -7) LD(lb, -6) LD(lb, -5) LD(lb, -4) LD(lb, -3) LD(lb, -2) LD(lb, -1)
  LD(lb, 0) LD(lb, 1) LD(lb, 2) LD(lb, 3) LD(lb, 4) LD(lb, 5) LD(lb, 6) LD(lb, 7)
  LD(lbu, -8) LD(lbu, -7) LD(lbu, -6) LD(lbu, -5) LD(lbu, -4) LD(lbu, -3) LD(lbu, -2) LD(lbu, -1)
  LD(lbu, 0) LD(lbu, 1) LD(lbu, 2) LD(lbu, 3) LD(lbu, 4) LD(lbu, 5) LD(lbu, 6) LD(lbu, 7)
  LD(lh, -8) LD(lh, -6) LD(lh, -4) LD(lh, -2) LD(lh, 0) LD(lh, 2) LD(lh, 4) LD(lh, 6)
  LD(lhu, -8) LD(lhu, -6) LD(lhu, -4) LD(lhu, -2) LD(lhu, 0) LD(lhu, 2) LD(lhu, 4) LD(lhu, 6)
  LD(lw, -8) LD(lw, -4) LD(lw, 0) LD(lw, 4)
  ST(sb, -4) ST(sb, -3) ST(sb, -2) ST(sb, -1) ST(sb, 0) ST(sb, 1) ST(sb, 2) ST(sb, 3)
  ST(sh, -4) ST(sh, -2) ST(sh, 0) ST(sh, 2)
  ST(sw, -4) ST(sw, 0)
  LUI(0) LUI(1) LUI(0x7ffff) LUI(0x80000) LUI(0xfffff)
  AUIPC(0) AUIPC(1) AUIPC(0x80000) AUIPC(0xfffff)
  jumps();

  for (uint32_t i = 0; i < n_out; i++) reveal_u32(out[i], 4 * i);
  print("conformance: ");
  print_u32(n_out);
  print(" results\n");
  return 0;
}
