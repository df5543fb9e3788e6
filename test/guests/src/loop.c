/* loop: reads an iteration count (one 4-byte entry, u32 LE), runs that many rounds of an
 * LCG mixed with a xorshift, reveals [iterations, result] and prints the result. The
 * loop body is a fixed instruction sequence, so the instruction count is an affine
 * function of the iteration count (see README.md). */
#include "zkvm.h"

int main(void) {
  uint32_t n = read_u32();
  uint32_t x = 0x12345678;
  for (uint32_t i = 0; i < n; i++) {
    x = x * 1664525u + 1013904223u;
    x ^= x >> 13;
  }
  reveal_u32(n, 0);
  reveal_u32(x, 4);
  print("loop: ");
  print_u32(n);
  print(" iterations, result 0x");
  print_hex_u32(x);
  print("\n");
  return 0;
}
