/* The zkVM's custom instructions (guest-abi.md) and a few runtime helpers for test guests. */
#ifndef ZKVM_H
#define ZKVM_H

typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef int int32_t;
typedef unsigned long long uint64_t;
typedef long long int64_t;
typedef unsigned int size_t;

#define TERMINATE(code) __asm__ volatile(".insn i 0x0b, 0, x0, x0, " #code)

/* Pops the next input entry into the hint stream (length word, bytes, padding). */
static inline void hint_input(void) { __asm__ volatile(".insn i 0x0b, 3, x0, x0, 0" ::: "memory"); }
/* Stores the next 4 hint bytes at dst (any alignment). */
static inline void hint_storew(void *dst) { __asm__ volatile(".insn i 0x0b, 1, %0, x0, 0" ::"r"(dst) : "memory"); }
/* Stores the next 4*words hint bytes at dst. */
static inline void hint_buffer(void *dst, uint32_t words) { __asm__ volatile(".insn i 0x0b, 1, %0, %1, 1" ::"r"(dst), "r"(words) : "memory"); }
/* Resets the hint stream to 4*words random bytes. */
static inline void hint_random(uint32_t words) { __asm__ volatile(".insn i 0x0b, 3, %0, x0, 2" ::"r"(words) : "memory"); }
/* Writes value at byte offset `offset` of the public values. */
static inline void reveal_u32(uint32_t value, uint32_t offset) { __asm__ volatile(".insn i 0x0b, 2, %0, %1, 0" ::"r"(offset), "r"(value) : "memory"); }
static inline void print_bytes(const void *p, uint32_t len) { __asm__ volatile(".insn i 0x0b, 3, %0, %1, 1" ::"r"(p), "r"(len) : "memory"); }
static inline void keccakf(void *state) { __asm__ volatile(".insn r 0x0b, 4, 0, %0, x0, x0" ::"r"(state) : "memory"); }
static inline void xorin(void *dst, const void *src, uint32_t len) { __asm__ volatile(".insn r 0x0b, 4, 1, %0, %1, %2" ::"r"(dst), "r"(src), "r"(len) : "memory"); }
static inline void sha256_update(void *out, const void *state, const void *block) { __asm__ volatile(".insn r 0x0b, 4, 2, %0, %1, %2" ::"r"(out), "r"(state), "r"(block) : "memory"); }
static inline void sha512_update(void *out, const void *state, const void *block) { __asm__ volatile(".insn r 0x0b, 4, 3, %0, %1, %2" ::"r"(out), "r"(state), "r"(block) : "memory"); }

void zkvm_exit(uint32_t code) __attribute__((noreturn));

/* runtime.c */
void *memcpy(void *dst, const void *src, size_t n);
void *memset(void *dst, int c, size_t n);
void *memmove(void *dst, const void *src, size_t n);
int memcmp(const void *a, const void *b, size_t n);
size_t strlen(const char *s);
void print(const char *s);
void print_hex(const void *p, uint32_t len);
void print_u32(uint32_t v);
void print_hex_u32(uint32_t v);
void panic_at(const char *file, int line, const char *msg) __attribute__((noreturn));
#define panic(msg) panic_at(__FILE__, __LINE__, msg)
/* Reads the next input entry into buf (capacity bytes, rounded up to words); returns its length. */
uint32_t read_vec(void *buf, uint32_t capacity);
/* Reads the next input entry, which must be exactly 4 bytes, as a little-endian u32. */
uint32_t read_u32(void);
/* Merkle-Damgard padding and compression (SHA-2): full blocks, then 0x80, zeros and the
 * big-endian bit length in the last `length_bytes` bytes of the final block. */
void md_hash(void *state, const void *data, uint32_t len, uint32_t block_bytes, uint32_t length_bytes,
             void (*compress)(void *state, const void *block));
/* SHA-256 of data through the sha256_update instruction. */
void sha256(const void *data, uint32_t len, uint8_t out[32]);

#endif
