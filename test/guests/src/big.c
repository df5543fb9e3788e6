/* big: carries about 1 MiB of initialized (pseudo-random) data, so the ELF is about 1 MB;
 * folds it into a checksum, reveals [word count, checksum] and prints it. No input. */
#include "zkvm.h"

extern const uint32_t big_blob[];
extern const uint32_t big_blob_words;

int main(void) {
  uint32_t h = 0;
  for (uint32_t i = 0; i < big_blob_words; i++) h = (h ^ big_blob[i]) * 16777619u;
  reveal_u32(big_blob_words, 0);
  reveal_u32(h, 4);
  print("big: ");
  print_u32(big_blob_words);
  print(" words, checksum 0x");
  print_hex_u32(h);
  print("\n");
  return 0;
}
