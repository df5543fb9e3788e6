// The hash permutations behind the custom instructions `keccakf`, `sha256_update` and
// `sha512_update`. 64-bit words are held as (lo, hi) pairs of 32-bit numbers, which is
// also their layout in guest memory (little-endian u64s), so states map straight onto
// Uint32Array views of the guest's bytes.

// ---- keccak-f[1600] ----

const KECCAK_ROUND_CONSTANTS = [
  0x0000000000000001n,
  0x0000000000008082n,
  0x800000000000808an,
  0x8000000080008000n,
  0x000000000000808bn,
  0x0000000080000001n,
  0x8000000080008081n,
  0x8000000000008009n,
  0x000000000000008an,
  0x0000000000000088n,
  0x0000000080008009n,
  0x000000008000000an,
  0x000000008000808bn,
  0x800000000000008bn,
  0x8000000000008089n,
  0x8000000000008003n,
  0x8000000000008002n,
  0x8000000000000080n,
  0x000000000000800an,
  0x800000008000000an,
  0x8000000080008081n,
  0x8000000000008080n,
  0x0000000080000001n,
  0x8000000080008008n,
];
const RC_LO = Int32Array.from(KECCAK_ROUND_CONSTANTS, (c) => Number(c & 0xffffffffn));
const RC_HI = Int32Array.from(KECCAK_ROUND_CONSTANTS, (c) => Number(c >> 32n));
/** rho rotation of the lane visited at each step of the pi walk (FIPS 202, 3.2.2-3.2.3). */
const RHO = [1, 3, 6, 10, 15, 21, 28, 36, 45, 55, 2, 14, 27, 41, 56, 8, 25, 43, 62, 18, 39, 61, 20, 44];
/** The lane the pi walk visits at each step, starting from lane 1. */
const PI_LANE = [10, 7, 11, 17, 18, 3, 5, 16, 8, 21, 24, 4, 15, 23, 19, 13, 12, 2, 20, 14, 22, 9, 6, 1];

/** keccak-f[1600] in place on 25 lanes stored as 50 words: lane i = (s[2i] lo, s[2i+1] hi). */
export function keccakF1600(s: Uint32Array | Int32Array): void {
  const c = new Int32Array(10);
  for (let round = 0; round < 24; round++) {
    // theta
    for (let x = 0; x < 5; x++) {
      c[2 * x] = s[2 * x] ^ s[2 * x + 10] ^ s[2 * x + 20] ^ s[2 * x + 30] ^ s[2 * x + 40];
      c[2 * x + 1] = s[2 * x + 1] ^ s[2 * x + 11] ^ s[2 * x + 21] ^ s[2 * x + 31] ^ s[2 * x + 41];
    }
    for (let x = 0; x < 5; x++) {
      const l = 2 * ((x + 4) % 5);
      const r = 2 * ((x + 1) % 5);
      const dLo = c[l] ^ ((c[r] << 1) | (c[r + 1] >>> 31));
      const dHi = c[l + 1] ^ ((c[r + 1] << 1) | (c[r] >>> 31));
      for (let y = 0; y < 25; y += 5) {
        s[2 * (x + y)] ^= dLo;
        s[2 * (x + y) + 1] ^= dHi;
      }
    }
    // rho and pi
    let lo = s[2];
    let hi = s[3];
    for (let i = 0; i < 24; i++) {
      const j = PI_LANE[i];
      const nextLo = s[2 * j];
      const nextHi = s[2 * j + 1];
      let n = RHO[i];
      let a = lo;
      let b = hi;
      if (n >= 32) {
        a = hi;
        b = lo;
        n -= 32;
      }
      s[2 * j] = n === 0 ? a : (a << n) | (b >>> (32 - n));
      s[2 * j + 1] = n === 0 ? b : (b << n) | (a >>> (32 - n));
      lo = nextLo;
      hi = nextHi;
    }
    // chi
    for (let y = 0; y < 25; y += 5) {
      for (let k = 0; k < 10; k++) c[k] = s[2 * y + k];
      for (let x = 0; x < 5; x++) {
        const p = 2 * ((x + 1) % 5);
        const q = 2 * ((x + 2) % 5);
        s[2 * (y + x)] = c[2 * x] ^ (~c[p] & c[q]);
        s[2 * (y + x) + 1] = c[2 * x + 1] ^ (~c[p + 1] & c[q + 1]);
      }
    }
    // iota
    s[0] ^= RC_LO[round];
    s[1] ^= RC_HI[round];
  }
}

// ---- SHA-2 round constants, computed from their definition (FIPS 180-4, 4.2.2-4.2.3) ----

function firstPrimes(count: number): number[] {
  const primes: number[] = [];
  for (let n = 2; primes.length < count; n++) if (primes.every((p) => n % p !== 0)) primes.push(n);
  return primes;
}

function integerCubeRoot(n: bigint): bigint {
  let x = 1n << BigInt(Math.ceil(n.toString(2).length / 3) + 1);
  for (;;) {
    const next = (2n * x + n / (x * x)) / 3n;
    if (next >= x) return x;
    x = next;
  }
}

/** The first `bits` bits of the fractional part of the cube root of each of the first `count` primes. */
function cubeRootFractions(count: number, bits: number): bigint[] {
  const mask = (1n << BigInt(bits)) - 1n;
  return firstPrimes(count).map((p) => integerCubeRoot(BigInt(p) << BigInt(3 * bits)) & mask);
}

const K256 = Int32Array.from(cubeRootFractions(64, 32), Number);
const K512 = cubeRootFractions(80, 64);
const K512_LO = Int32Array.from(K512, (k) => Number(k & 0xffffffffn));
const K512_HI = Int32Array.from(K512, (k) => Number(k >> 32n));

// ---- SHA-256 ----

const w256 = new Int32Array(64);

/** One SHA-256 compression: `state` (8 words) is updated in place with the 64-byte `block`. */
export function sha256Compress(state: Uint32Array | Int32Array, block: Uint8Array): void {
  const w = w256;
  for (let t = 0; t < 16; t++) w[t] = (block[4 * t] << 24) | (block[4 * t + 1] << 16) | (block[4 * t + 2] << 8) | block[4 * t + 3];
  for (let t = 16; t < 64; t++) {
    const x = w[t - 15];
    const y = w[t - 2];
    const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
    const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
    w[t] = (w[t - 16] + s0 + w[t - 7] + s1) | 0;
  }
  let a = state[0] | 0,
    b = state[1] | 0,
    c = state[2] | 0,
    d = state[3] | 0;
  let e = state[4] | 0,
    f = state[5] | 0,
    g = state[6] | 0,
    h = state[7] | 0;
  for (let t = 0; t < 64; t++) {
    const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
    const t1 = (h + S1 + ((e & f) ^ (~e & g)) + K256[t] + w[t]) | 0;
    const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
    const t2 = (S0 + ((a & b) ^ (a & c) ^ (b & c))) | 0;
    h = g;
    g = f;
    f = e;
    e = (d + t1) | 0;
    d = c;
    c = b;
    b = a;
    a = (t1 + t2) | 0;
  }
  state[0] += a;
  state[1] += b;
  state[2] += c;
  state[3] += d;
  state[4] += e;
  state[5] += f;
  state[6] += g;
  state[7] += h;
}

// ---- SHA-512 ----

/** Word t of a (lo, hi) pair array. */
const wLo = new Int32Array(80);
const wHi = new Int32Array(80);

/** 64-bit rotate right of (lo, hi) by n (0 < n < 64), returned through `out`. */
function rotr(lo: number, hi: number, n: number, out: Int32Array): void {
  if (n >= 32) {
    const t = lo;
    lo = hi;
    hi = t;
    n -= 32;
  }
  if (n === 0) {
    out[0] = lo;
    out[1] = hi;
    return;
  }
  out[0] = (lo >>> n) | (hi << (32 - n));
  out[1] = (hi >>> n) | (lo << (32 - n));
}

const r1 = new Int32Array(2);
const r2 = new Int32Array(2);
const r3 = new Int32Array(2);

/** XOR of three rotations (or two rotations and a shift when `shift` is set) into `out`. */
function sigma(lo: number, hi: number, a: number, b: number, c: number, shift: boolean, out: Int32Array): void {
  rotr(lo, hi, a, r1);
  rotr(lo, hi, b, r2);
  if (shift) {
    r3[0] = (lo >>> c) | (hi << (32 - c));
    r3[1] = hi >>> c;
  } else {
    rotr(lo, hi, c, r3);
  }
  out[0] = r1[0] ^ r2[0] ^ r3[0];
  out[1] = r1[1] ^ r2[1] ^ r3[1];
}

const TWO32 = 4294967296;
const sumOut = new Int32Array(2);

/** Sum of (lo, hi) pairs mod 2^64 into `sumOut`. */
function add64(...pairs: number[]): void {
  let lo = 0;
  let hi = 0;
  for (let i = 0; i < pairs.length; i += 2) {
    lo += pairs[i] >>> 0;
    hi += pairs[i + 1] >>> 0;
  }
  sumOut[0] = lo | 0;
  sumOut[1] = (hi + Math.floor(lo / TWO32)) | 0;
}

const s0 = new Int32Array(2);
const s1 = new Int32Array(2);

/**
 * One SHA-512 compression: `state` holds the 8 words as (lo, hi) pairs (16 numbers, the
 * layout of little-endian u64s) and is updated in place with the 128-byte `block`.
 */
export function sha512Compress(state: Uint32Array | Int32Array, block: Uint8Array): void {
  const be = (i: number) => (block[i] << 24) | (block[i + 1] << 16) | (block[i + 2] << 8) | block[i + 3];
  for (let t = 0; t < 16; t++) {
    wHi[t] = be(8 * t);
    wLo[t] = be(8 * t + 4);
  }
  for (let t = 16; t < 80; t++) {
    sigma(wLo[t - 15], wHi[t - 15], 1, 8, 7, true, s0);
    sigma(wLo[t - 2], wHi[t - 2], 19, 61, 6, true, s1);
    add64(wLo[t - 16], wHi[t - 16], s0[0], s0[1], wLo[t - 7], wHi[t - 7], s1[0], s1[1]);
    wLo[t] = sumOut[0];
    wHi[t] = sumOut[1];
  }
  const v = Int32Array.from(state);
  for (let t = 0; t < 80; t++) {
    const [aL, aH, bL, bH, cL, cH, dL, dH, eL, eH, fL, fH, gL, gH, hL, hH] = v;
    sigma(eL, eH, 14, 18, 41, false, s1);
    add64(hL, hH, s1[0], s1[1], (eL & fL) ^ (~eL & gL), (eH & fH) ^ (~eH & gH), K512_LO[t], K512_HI[t], wLo[t], wHi[t]);
    const t1L = sumOut[0];
    const t1H = sumOut[1];
    sigma(aL, aH, 28, 34, 39, false, s0);
    add64(s0[0], s0[1], (aL & bL) ^ (aL & cL) ^ (bL & cL), (aH & bH) ^ (aH & cH) ^ (bH & cH));
    const t2L = sumOut[0];
    const t2H = sumOut[1];
    v.copyWithin(2, 0, 14); // h = g, g = f, ..., b = a
    add64(dL, dH, t1L, t1H);
    v[8] = sumOut[0];
    v[9] = sumOut[1];
    add64(t1L, t1H, t2L, t2H);
    v[0] = sumOut[0];
    v[1] = sumOut[1];
  }
  for (let i = 0; i < 16; i += 2) {
    add64(state[i], state[i + 1], v[i], v[i + 1]);
    state[i] = sumOut[0];
    state[i + 1] = sumOut[1];
  }
}
