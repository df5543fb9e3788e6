/* faults: performs one faulting (or edge-case) action chosen by its input. Input: one
 * entry of 4 or 8 bytes, u32 LE selector and optional u32 LE argument. The selectors are
 * listed in README.md. */
#include "zkvm.h"

typedef unsigned int uintptr_t;
#define ADDR(a) ((volatile void *)(uintptr_t)(a))

static const uint32_t data_word = 0x13;

int main(void) {
  uint32_t args[2] = {0, 0};
  uint32_t len = read_vec(args, 8);
  if (len != 4 && len != 8) panic("expected a 4- or 8-byte input entry");
  uint32_t arg = args[1];
  uint32_t r = 0;
  switch (args[0]) {
    case 0: r = *(volatile uint32_t *)ADDR(0x1002); break; /* misaligned load */
    case 1: *(volatile uint16_t *)ADDR(0x1001) = 1; break;  /* misaligned store */
    case 2: r = *(volatile uint32_t *)ADDR(0x20000000); break; /* load past the end of memory */
    case 3: *(volatile uint32_t *)ADDR(0xfffffffc) = 1; break; /* store far outside memory */
    case 4: /* accesses at the very end of memory succeed */
      *(volatile uint8_t *)ADDR(0x1fffffff) = 0x5a;
      *(volatile uint32_t *)ADDR(0x1ffffff8) = 0x01020304;
      r = *(volatile uint8_t *)ADDR(0x1fffffff) + *(volatile uint32_t *)ADDR(0x1ffffff8);
      reveal_u32(r, 0);
      print("edge accesses ok\n");
      return 0;
    case 5: __asm__ volatile(".word 0xc0001073"); break; /* unimp */
    case 6: __asm__ volatile("ecall"); break;
    case 7: __asm__ volatile("ebreak"); break;
    case 8: __asm__ volatile(".insn r 0x2b, 0, 0, x0, x0, x0"); break; /* custom-1 */
    case 9: __asm__ volatile(".insn r 0x0b, 5, 0, x0, x0, x0"); break; /* custom-0 256-bit integer op */
    case 10: { /* jalr to an address with bit 1 set */
      void *target;
      __asm__ volatile("lla %0, 1f\n\taddi %0, %0, 2\n\tjalr x0, 0(%0)\n1:" : "=&r"(target));
      break;
    }
    case 11: __asm__ volatile("li t0, 0x100\n\tjr t0" ::: "t0"); break; /* outside the code */
    case 12: zkvm_exit(arg);
    case 13: for (;;) __asm__ volatile(""); /* never terminates */
    case 14: reveal_u32(7, arg); break; /* reveal at offset arg */
    case 15: hint_buffer(args, 0); break;
    case 16: print_bytes((const void *)0x1ffffff0, 100); break;
    case 17: __asm__ volatile("rdcycle %0" : "=r"(r)); break;
    case 18: hint_storew(&r); break; /* no hintinput first: the hint stream is empty */
    case 19: ((void (*)(void))(uintptr_t)&data_word)(); break; /* jump into data */
    case 20: reveal_u32(7, 2); break;
    case 21: { uint32_t buf[2] = {0, 0}; xorin(buf, buf, 3); r = buf[0]; break; }
    case 22: __asm__ volatile(".insn i 0x0b, 0, x0, x0, 300"); break; /* terminate with a non-byte exit code */
    case 23: hint_input(); hint_storew((void *)0x1ffffffe); break; /* hint store past the end of memory */
    default: panic("unknown selector");
  }
  reveal_u32(r, 0);
  print("fault did not happen\n");
  return 2;
}
