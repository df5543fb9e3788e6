/* Freestanding runtime for the test guests: the memory functions clang may call, printing, input. */
#include "zkvm.h"

void *memcpy(void *dst, const void *src, size_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  while (n--) *d++ = *s++;
  return dst;
}

void *memmove(void *dst, const void *src, size_t n) {
  uint8_t *d = dst;
  const uint8_t *s = src;
  if (d < s) {
    while (n--) *d++ = *s++;
  } else {
    while (n--) d[n] = s[n];
  }
  return dst;
}

void *memset(void *dst, int c, size_t n) {
  uint8_t *d = dst;
  while (n--) *d++ = (uint8_t)c;
  return dst;
}

int memcmp(const void *a, const void *b, size_t n) {
  const uint8_t *x = a, *y = b;
  for (; n; n--, x++, y++)
    if (*x != *y) return *x - *y;
  return 0;
}

size_t strlen(const char *s) {
  size_t n = 0;
  while (s[n]) n++;
  return n;
}

void print(const char *s) { print_bytes(s, strlen(s)); }

static const char HEX[] = "0123456789abcdef";

void print_hex(const void *p, uint32_t len) {
  char buf[128];
  const uint8_t *b = p;
  while (len) {
    uint32_t chunk = len > 64 ? 64 : len;
    for (uint32_t i = 0; i < chunk; i++) {
      buf[2 * i] = HEX[b[i] >> 4];
      buf[2 * i + 1] = HEX[b[i] & 15];
    }
    print_bytes(buf, 2 * chunk);
    b += chunk;
    len -= chunk;
  }
}

void print_u32(uint32_t v) {
  char buf[10];
  int i = 10;
  do {
    buf[--i] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  print_bytes(buf + i, 10 - i);
}

void print_hex_u32(uint32_t v) {
  char buf[8];
  for (int i = 7; i >= 0; i--, v >>= 4) buf[i] = HEX[v & 15];
  print_bytes(buf, 8);
}

void panic_at(const char *file, int line, const char *msg) {
  print("panicked at ");
  print(file);
  print(":");
  print_u32((uint32_t)line);
  print(":\n");
  print(msg);
  print("\n");
  TERMINATE(1);
  __builtin_unreachable();
}

uint32_t read_vec(void *buf, uint32_t capacity) {
  uint32_t len;
  hint_input();
  hint_storew(&len);
  uint32_t words = (len + 3) / 4;
  if (4 * words > ((capacity + 3) & ~3u)) panic("input entry larger than the guest's buffer");
  uint8_t *p = buf;
  while (words) {
    uint32_t n = words > 1023 ? 1023 : words;
    hint_buffer(p, n);
    p += 4 * n;
    words -= n;
  }
  return len;
}

uint32_t read_u32(void) {
  uint32_t v[1];
  if (read_vec(v, 4) != 4) panic("expected a 4-byte input entry (a little-endian u32)");
  return v[0];
}

void md_hash(void *state, const void *data, uint32_t len, uint32_t block_bytes, uint32_t length_bytes,
             void (*compress)(void *state, const void *block)) {
  uint8_t block[128];
  const uint8_t *p = data;
  uint32_t left = len;
  while (left >= block_bytes) {
    compress(state, p);
    p += block_bytes;
    left -= block_bytes;
  }
  memset(block, 0, block_bytes);
  memcpy(block, p, left);
  block[left] = 0x80;
  if (left >= block_bytes - length_bytes) {
    compress(state, block);
    memset(block, 0, block_bytes);
  }
  /* The bit length, big-endian, in the last bytes of the block (the high ones stay zero). */
  uint64_t bits = (uint64_t)len * 8;
  for (int i = 0; i < 8; i++) block[block_bytes - 1 - i] = (uint8_t)(bits >> (8 * i));
  compress(state, block);
}

static const uint32_t SHA256_IV[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};

static void sha256_compress(void *state, const void *block) { sha256_update(state, state, block); }

void sha256(const void *data, uint32_t len, uint8_t out[32]) {
  uint32_t state[8];
  memcpy(state, SHA256_IV, 32);
  md_hash(state, data, len, 64, 8, sha256_compress);
  for (int i = 0; i < 8; i++)
    for (int b = 0; b < 4; b++) out[4 * i + b] = (uint8_t)(state[i] >> (24 - 8 * b));
}
