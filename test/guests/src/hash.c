/* hash: for each input entry, prints one line "<keccak-256> <sha3-256> <sha-256> <sha-512>"
 * (hex) of its bytes, computed with the keccakf/xorin and sha256_update/sha512_update
 * instructions. Input: entry 0 = u32 n, then n byte entries (each at most 64 KiB).
 * Keccak-256 and SHA3-256 differ only in the padding byte (0x01 vs 0x06), which lets the
 * test check the sponge against Node's sha3-256. */
#include "zkvm.h"

static uint8_t msg[65536] __attribute__((aligned(4)));

static void sponge256(const uint8_t *data, uint32_t len, uint8_t pad, uint8_t out[32]) {
  uint64_t state[25];
  uint8_t block[136] __attribute__((aligned(4)));
  memset(state, 0, sizeof state);
  while (len >= 136) {
    memcpy(block, data, 136);
    xorin(state, block, 136);
    keccakf(state);
    data += 136;
    len -= 136;
  }
  memset(block, 0, sizeof block);
  memcpy(block, data, len);
  block[len] ^= pad;
  block[135] ^= 0x80;
  /* Absorb the last block in two xorin calls of different lengths. */
  xorin(state, block, 64);
  xorin((uint8_t *)state + 64, block + 64, 72);
  keccakf(state);
  memcpy(out, state, 32);
}

static const uint64_t SHA512_IV[8] = {
    0x6a09e667f3bcc908ull, 0xbb67ae8584caa73bull, 0x3c6ef372fe94f82bull, 0xa54ff53a5f1d36f1ull,
    0x510e527fade682d1ull, 0x9b05688c2b3e6c1full, 0x1f83d9abfb41bd6bull, 0x5be0cd19137e2179ull,
};

static void sha512_compress(void *state, const void *block) { sha512_update(state, state, block); }

static void sha512(const uint8_t *data, uint32_t len, uint8_t out[64]) {
  uint64_t state[8];
  memcpy(state, SHA512_IV, 64);
  md_hash(state, data, len, 128, 16, sha512_compress);
  for (int i = 0; i < 8; i++)
    for (int b = 0; b < 8; b++) out[8 * i + b] = (uint8_t)(state[i] >> (56 - 8 * b));
}

int main(void) {
  uint32_t n = read_u32();
  for (uint32_t i = 0; i < n; i++) {
    uint32_t len = read_vec(msg, sizeof msg);
    uint8_t k[32], s3[32], s256[32], s512[64];
    sponge256(msg, len, 0x01, k);
    sponge256(msg, len, 0x06, s3);
    sha256(msg, len, s256);
    sha512(msg, len, s512);
    print_hex(k, 32);
    print(" ");
    print_hex(s3, 32);
    print(" ");
    print_hex(s256, 32);
    print(" ");
    print_hex(s512, 64);
    print("\n");
  }
  return 0;
}
