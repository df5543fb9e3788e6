// Shallow checks of the zkVM's proof JSON formats (client-conventions.md "Proof file
// formats"). Shallow on purpose: the cryptographic check is the prover's job. Every
// check is linear in the file and never builds a string a byte at a time (issue 21); the
// hex check is the fleet protocol's (isHex), which the agents' engines make too (issue 28).

import { isHex } from 'prover-agent/protocol';
import { utf8Bytes } from '../../lib/bytes.ts';
import { hexAscii } from '../../lib/crypto.ts';

/**
 * Why `text` is not a STARK proof file (VersionedVmStarkProof), or null when it has
 * the shape: {"version": "v<major>.<minor>…", "proof": hex, "user_pvs_proof": hex,
 * "deferral_merkle_proofs": hex | null}. Hex with or without `0x`: the published
 * client strips every `0x` before uploading.
 */
export function starkProofShapeError(text: string): string | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    return `not valid JSON (${(e as Error).message})`;
  }
  return starkProofValueError(value);
}

/** starkProofShapeError() of JSON already parsed. */
export function starkProofValueError(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'a STARK proof must be a JSON object';
  const p = value as Record<string, unknown>;
  if (typeof p.version !== 'string' || !/^v?\d+\.\d+/.test(p.version)) return 'field "version" must be a string like "v1.0"';
  for (const field of ['proof', 'user_pvs_proof'] as const) {
    if (typeof p[field] !== 'string') return `field "${field}" must be a hex string`;
    if (!isHex(p[field])) return `field "${field}" is not hex (an even number of hex digits, 0x optional)`;
  }
  const d = p.deferral_merkle_proofs;
  if (d !== undefined && d !== null && (typeof d !== 'string' || !isHex(d))) return 'field "deferral_merkle_proofs" must be hex or null';
  return null;
}

/**
 * A STARK proof file as it may arrive: the JSON above, or the zkVM's binary codec
 * (`VersionedVmStarkProof::encode_to_vec`), which the published client sends for
 * deferred child proofs (axiom-api-cli v2.0.0 crates/sdk/src/prove.rs:262-288: it
 * refuses JSON files and sends `application/octet-stream`). The codec's stream starts
 * with the version string's u32 length, whose first byte is never `{` for any real
 * version, so the first non-blank byte tells them apart.
 */
export function looksLikeJson(bytes: Uint8Array): boolean {
  for (const b of bytes) {
    if (b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d) continue;
    return b === 0x7b; // '{'
  }
  return false;
}

/**
 * Decodes the binary codec of a VersionedVmStarkProof into its fields (views of
 * `bytes`, nothing copied), or says why it cannot. The layout, from openvm-org/stark-backend v2.0.1
 * crates/stark-backend/src/codec.rs and openvm v2.0.1 crates/sdk/src/types.rs:301-312:
 * the struct's fields in declaration order, with no framing of their own —
 *   version: String            u32-LE byte length, then UTF-8 bytes   (codec.rs:204-208, 197-201)
 *   proof: Vec<u8>             u32-LE length, then the bytes          (codec.rs:289-293, 215-221)
 *   user_pvs_proof: Vec<u8>    likewise
 *   deferral_merkle_proofs: Option<Vec<u8>>  one byte (0 none, else some), then the value (codec.rs:302-311, 390-399)
 * and no trailing bytes (Decode::decode_from_bytes, codec.rs:41-48).
 * Only the framing is checked; the inner proof bytes are the prover's to judge.
 */
export function decodeStarkProofCodec(bytes: Uint8Array): { proof: StarkProofCodec } | { error: string } {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const need = (n: number, what: string) => {
    if (bytes.length - at < n) throw new CodecError(`ends inside ${what} (at byte ${at}, ${n} more needed, ${bytes.length - at} left)`);
  };
  const lengthPrefixed = (what: string) => {
    need(4, `the length of ${what}`);
    const len = view.getUint32(at, true);
    at += 4;
    need(len, what);
    const out = bytes.subarray(at, at + len);
    at += len;
    return out;
  };
  try {
    const versionBytes = lengthPrefixed('"version"');
    if (versionBytes.length > 256) throw new CodecError('"version" is longer than 256 bytes');
    let version: string;
    try {
      version = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(versionBytes);
    } catch {
      throw new CodecError('"version" is not UTF-8');
    }
    if (!/^v?\d+\.\d+/.test(version)) throw new CodecError(`"version" is ${JSON.stringify(version.slice(0, 40))}, not like "v2.0"`);
    const proof = lengthPrefixed('"proof"');
    const userPvsProof = lengthPrefixed('"user_pvs_proof"');
    need(1, 'the presence byte of "deferral_merkle_proofs"');
    const present = bytes[at++] !== 0;
    const deferral = present ? lengthPrefixed('"deferral_merkle_proofs"') : null;
    if (at !== bytes.length) throw new CodecError(`${bytes.length - at} trailing bytes after the proof`);
    return { proof: { version, proof, userPvsProof, deferral } };
  } catch (e) {
    if (e instanceof CodecError) return { error: `not a STARK proof in the zkVM's binary codec: ${e.message}` };
    throw e;
  }
}

/** A STARK proof in the binary codec, its byte fields views of the decoded bytes. */
export interface StarkProofCodec {
  version: string;
  proof: Uint8Array;
  userPvsProof: Uint8Array;
  deferral: Uint8Array | null;
}

class CodecError extends Error {}

/** Bytes of a field turned to hex per slice: a slice's hex is the largest piece held at once. */
const HEX_SLICE_BYTES = 1024 * 1024;

/**
 * The JSON form of a decoded codec proof (client-conventions.md: hex with `0x`, the
 * text JSON.stringify gives), as UTF-8 pieces of at most 2 MiB: written to storage
 * as they come, never one string (a 16 MiB child proof is 32 MB of hex).
 */
export function* starkProofJsonPieces(p: StarkProofCodec): Generator<Uint8Array> {
  const hex = function* (bytes: Uint8Array) {
    yield utf8Bytes('"0x');
    for (let at = 0; at < bytes.length; at += HEX_SLICE_BYTES) yield hexAscii(bytes.subarray(at, at + HEX_SLICE_BYTES));
    yield utf8Bytes('"');
  };
  yield utf8Bytes(`{"version":${JSON.stringify(p.version)},"proof":`);
  yield* hex(p.proof);
  yield utf8Bytes(',"user_pvs_proof":');
  yield* hex(p.userPvsProof);
  yield utf8Bytes(',"deferral_merkle_proofs":');
  if (p.deferral) yield* hex(p.deferral);
  else yield utf8Bytes('null');
  yield utf8Bytes('}');
}

/**
 * A STARK proof file in either form, checked shallowly, as the pieces of its JSON form
 * (the one form the engines read): the JSON as sent, or the codec's JSON form; or why
 * it is not one.
 */
export function starkProofFile(bytes: Uint8Array): { pieces: Iterable<Uint8Array> } | { error: string } {
  if (looksLikeJson(bytes)) {
    let text: string;
    try {
      text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false }).decode(bytes);
    } catch {
      return { error: 'not UTF-8' };
    }
    const problem = starkProofShapeError(text);
    return problem ? { error: problem } : { pieces: [bytes] };
  }
  const decoded = decodeStarkProofCodec(bytes);
  return 'error' in decoded ? decoded : { pieces: starkProofJsonPieces(decoded.proof) };
}

/**
 * Why `value` is not an EVM proof file, or null when it has the shape:
 * {"version", "app_exe_commit", "app_vm_commit", "user_public_values",
 *  "proof_data": {"accumulator", "proof"}} (client-conventions.md), the fields the
 * published client itself checks before uploading (axiom-api-cli v2.0.0
 * crates/sdk/src/verify.rs:85-112). Hex with or without `0x`: the client strips
 * every `0x` from the file's text (verify.rs:86).
 */
export function evmProofShapeError(value: unknown): string | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return 'an EVM proof must be a JSON object';
  const p = value as Record<string, unknown>;
  if (typeof p.version !== 'string' || !/^v?\d+\.\d+/.test(p.version)) return 'field "version" must be a string like "v2.0"';
  for (const field of ['app_exe_commit', 'app_vm_commit'] as const) {
    if (typeof p[field] !== 'string' || !/^(0x)?[0-9a-fA-F]{64}$/.test(p[field])) return `field "${field}" must be 32 bytes of hex`;
  }
  if (typeof p.user_public_values !== 'string' || !isHex(p.user_public_values)) return 'field "user_public_values" must be a hex string';
  const d = p.proof_data;
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return 'field "proof_data" must be an object with "accumulator" and "proof"';
  for (const field of ['accumulator', 'proof'] as const) {
    const v = (d as Record<string, unknown>)[field];
    if (typeof v !== 'string' || !isHex(v)) return `field "proof_data.${field}" must be a hex string`;
  }
  return null;
}
