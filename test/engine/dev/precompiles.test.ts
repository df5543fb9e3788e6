// The hash permutations against published vectors and Node's own hashes.
import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { keccakF1600, sha256Compress, sha512Compress } from '../../../prover-agent/src/engine/dev/precompiles.ts';

/** A keccak sponge with rate 136 and a given padding byte: 0x01 is Keccak-256, 0x06 is SHA3-256. */
function sponge256(message: Uint8Array, pad: number): string {
  const state = new Uint32Array(50);
  const bytes = new Uint8Array(state.buffer);
  const padded = new Uint8Array(Math.floor(message.length / 136) * 136 + 136);
  padded.set(message);
  padded[message.length] ^= pad;
  padded[padded.length - 1] ^= 0x80;
  for (let at = 0; at < padded.length; at += 136) {
    for (let i = 0; i < 136; i++) bytes[i] ^= padded[at + i];
    keccakF1600(state);
  }
  return Buffer.from(bytes.subarray(0, 32)).toString('hex');
}

/** Merkle-Damgard padding and compression, big-endian digest. */
function sha2(message: Uint8Array, wide: boolean): string {
  const block = wide ? 128 : 64;
  // The FIPS 180-4 initial hash values; SHA-512's as (lo, hi) word pairs.
  const state = wide
    ? Uint32Array.from([
        0xf3bcc908, 0x6a09e667, 0x84caa73b, 0xbb67ae85, 0xfe94f82b, 0x3c6ef372, 0x5f1d36f1, 0xa54ff53a, 0xade682d1, 0x510e527f, 0x2b3e6c1f,
        0x9b05688c, 0xfb41bd6b, 0x1f83d9ab, 0x137e2179, 0x5be0cd19,
      ])
    : Uint32Array.from([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);
  const total = Math.ceil((message.length + 1 + (wide ? 16 : 8)) / block) * block;
  const padded = Buffer.alloc(total);
  padded.set(message);
  padded[message.length] = 0x80;
  padded.writeUInt32BE(message.length * 8, total - 4);
  for (let at = 0; at < total; at += block) (wide ? sha512Compress : sha256Compress)(state, padded.subarray(at, at + block));
  const out = Buffer.alloc(state.length * 4);
  if (wide) for (let i = 0; i < 8; i++) (out.writeUInt32BE(state[2 * i + 1], 8 * i), out.writeUInt32BE(state[2 * i], 8 * i + 4));
  else state.forEach((w, i) => out.writeUInt32BE(w, 4 * i));
  return out.toString('hex');
}

const messages = [...Array.from({ length: 300 }, (_, n) => randomBytes(n)), randomBytes(10_000)];

describe('keccak-f[1600]', () => {
  it('permutes the zero state to the published first lane', () => {
    const state = new Uint32Array(50);
    keccakF1600(state);
    expect([state[1], state[0]]).toEqual([0xf1258f79, 0x40e1dde7]);
  });

  it('gives Keccak-256 the published test vectors', () => {
    expect(sponge256(new Uint8Array(0), 0x01)).toBe('c5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470');
    expect(sponge256(Buffer.from('abc'), 0x01)).toBe('4e03657aea45a94fc7d47ba826c8d667c0d1e6e33a64a036ec44f58fa12d6c45');
    expect(sponge256(Buffer.from('The quick brown fox jumps over the lazy dog'), 0x01)).toBe(
      '4d741b6f1eb29cb2a9b9911c82f56fa8d73b04959d3d9d222895df6c0b28aa15',
    );
  });

  it('gives SHA3-256 (the same sponge, padding 0x06) what Node gives, on many inputs', () => {
    const wrong = messages.filter((m) => sponge256(m, 0x06) !== createHash('sha3-256').update(m).digest('hex'));
    expect(wrong.map((m) => m.length)).toEqual([]);
  });
});

describe('SHA-2 compression', () => {
  it('gives SHA-256 what Node gives, on many inputs', () => {
    const wrong = messages.filter((m) => sha2(m, false) !== createHash('sha256').update(m).digest('hex'));
    expect(wrong.map((m) => m.length)).toEqual([]);
  });

  it('gives SHA-512 what Node gives, on many inputs', () => {
    const wrong = messages.filter((m) => sha2(m, true) !== createHash('sha512').update(m).digest('hex'));
    expect(wrong.map((m) => m.length)).toEqual([]);
  });
});
