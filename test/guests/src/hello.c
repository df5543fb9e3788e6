/* hello: reads one byte-vector input entry, reveals its SHA-256 as the 32 public-value
 * bytes and prints a greeting. */
#include "zkvm.h"

static uint8_t input[1 << 20];

int main(void) {
  uint32_t len = read_vec(input, sizeof input);
  uint8_t digest[32];
  sha256(input, len, digest);
  for (uint32_t i = 0; i < 8; i++) {
    uint32_t word;
    memcpy(&word, digest + 4 * i, 4);
    reveal_u32(word, 4 * i);
  }
  print("hello from the dev zkVM: read ");
  print_u32(len);
  print(" bytes, sha256 ");
  print_hex(digest, 32);
  print("\n");
  return 0;
}
