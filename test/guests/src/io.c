/* io: reads its input entries through every hint instruction and prints what it got.
 * Input: entry 0 = u32 n [, u32 extra] (4 or 8 bytes); then n entries of any kind.
 * For each entry i it prints "entry i: len L: <hex of the 4*ceil(L/4) stored bytes>",
 * reading the length word with hintstorew into an unaligned address and the payload with
 * hintbuffer (in chunks of at most 3 words, to cross calls) and hintstorew; then reads
 * `extra` further words from the last entry's hint stream (past its end when extra > 0).
 * Finally it reads 2 words of hintrandom, prints them as "random: <hex>", and reveals
 * [n, total payload length] and the first 24 payload bytes of entry 0 as public values. */
#include "zkvm.h"

static uint8_t payload[4096] __attribute__((aligned(4)));

int main(void) {
  uint32_t head[2] = {0, 0};
  uint32_t len = read_vec(head, 8);
  if (len != 4 && len != 8) panic("expected a 4- or 8-byte first entry");
  uint32_t n = head[0], extra = head[1], total = 0;
  uint8_t first[24];
  memset(first, 0, sizeof first);
  for (uint32_t i = 0; i < n; i++) {
    uint8_t unaligned[8];
    uint32_t l;
    hint_input();
    hint_storew(unaligned + 1);
    memcpy(&l, unaligned + 1, 4);
    uint32_t words = (l + 3) / 4;
    if (4 * words > sizeof payload) panic("entry too long for io");
    uint32_t done = 0;
    while (words - done >= 3) {
      hint_buffer(payload + 4 * done, 3);
      done += 3;
    }
    while (done < words) {
      hint_storew(payload + 4 * done);
      done++;
    }
    print("entry ");
    print_u32(i);
    print(": len ");
    print_u32(l);
    print(": ");
    print_hex(payload, 4 * words);
    print("\n");
    if (i == 0) memcpy(first, payload, l < 24 ? l : 24);
    total += l;
  }
  for (uint32_t i = 0; i < extra; i++) {
    uint32_t w;
    hint_storew(&w);
  }
  uint32_t rnd[2];
  hint_random(2);
  hint_buffer(rnd, 2);
  print("random: ");
  print_hex(rnd, 8);
  print("\n");
  reveal_u32(n, 0);
  reveal_u32(total, 4);
  for (uint32_t i = 0; i < 6; i++) {
    uint32_t w;
    memcpy(&w, first + 4 * i, 4);
    reveal_u32(w, 8 + 4 * i);
  }
  return 0;
}
