/* bench: a compute-bound mix (prime sieve, integer hashing over an array, a small matrix
 * product, recursive calls), repeated for the number of rounds given as input (one
 * 4-byte entry, u32 LE). Reveals a checksum. Used by `npm run bench:exec`. */
#include "zkvm.h"

#define SIEVE_N 20000
#define ARRAY_N 4096
#define MAT_N 12

static uint8_t composite[SIEVE_N];
static uint32_t array[ARRAY_N];
static int32_t ma[MAT_N][MAT_N], mb[MAT_N][MAT_N], mc[MAT_N][MAT_N];

static uint32_t sieve(void) {
  memset(composite, 0, sizeof composite);
  uint32_t count = 0;
  for (uint32_t i = 2; i < SIEVE_N; i++) {
    if (composite[i]) continue;
    count++;
    for (uint32_t j = i * i; j < SIEVE_N; j += i) composite[j] = 1;
  }
  return count;
}

static uint32_t hash_array(uint32_t seed) {
  uint32_t h = seed;
  for (uint32_t i = 0; i < ARRAY_N; i++) {
    array[i] = array[i] * 2654435761u + h;
    h ^= array[i];
    h = (h << 5) | (h >> 27);
    h += (uint32_t)((int32_t)array[i] / 7) ^ (array[i] % 13);
  }
  return h;
}

static int32_t matmul(int32_t seed) {
  for (int i = 0; i < MAT_N; i++)
    for (int j = 0; j < MAT_N; j++) {
      ma[i][j] = seed + i - j;
      mb[i][j] = seed * (i + 1) - j * 3;
    }
  int32_t trace = 0;
  for (int i = 0; i < MAT_N; i++)
    for (int j = 0; j < MAT_N; j++) {
      int32_t s = 0;
      for (int k = 0; k < MAT_N; k++) s += ma[i][k] * mb[k][j];
      mc[i][j] = s;
      if (i == j) trace += s;
    }
  return trace;
}

static uint32_t __attribute__((noinline)) fib(uint32_t n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

int main(void) {
  uint32_t rounds = read_u32();
  uint32_t checksum = 0;
  for (uint32_t r = 0; r < rounds; r++) {
    checksum += sieve();
    checksum ^= hash_array(checksum + r);
    checksum += (uint32_t)matmul((int32_t)r);
    checksum += fib(16);
  }
  reveal_u32(rounds, 0);
  reveal_u32(checksum, 4);
  print("bench: checksum 0x");
  print_hex_u32(checksum);
  print("\n");
  return 0;
}
