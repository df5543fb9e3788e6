// The binary form in which the published client uploads a deferred child proof: the
// zkVM's own codec of `VersionedVmStarkProof` (what `encode_to_vec` produces).
//
// Sources (read, not copied):
// - the struct, openvm v2.0.1 `crates/sdk/src/types.rs:298-312`: fields, in this order,
//   `version: String`, `proof: Vec<u8>`, `user_pvs_proof: Vec<u8>`,
//   `deferral_merkle_proofs: Option<Vec<u8>>`, with `#[derive(Encode)]`; in its JSON form
//   the byte fields are hex strings and `deferral_merkle_proofs` may be null or absent.
// - the codec, stark-backend v2.0.1 `crates/stark-backend/src/codec.rs`: a derived struct
//   writes its fields one after another with nothing around them; a `usize` length is a
//   u32 little-endian (:197-202); a `String` is its UTF-8 bytes as a length-prefixed slice
//   (:204-208); a `Vec<T>` is its length then each element (:261-267, :289-293), so a
//   `Vec<u8>` is a u32-LE length then the bytes (`u8` is one byte, :185-189); an `Option`
//   is one byte 0 or 1 (`bool`, :178-183) followed by the value when present (:302-310).
//
// The client refuses files whose first non-blank byte is `{` (v2.0.0:crates/sdk/src/prove.rs:537-545);
// an encoded proof starts with the version's length, so it never is.

export interface StarkProofJson {
  version: string;
  proof: string;
  user_pvs_proof: string;
  deferral_merkle_proofs?: string | null;
}

/** Bytes of a hex string, with or without a leading `0x`. */
export function hexToBytes(hex: string): Uint8Array {
  const h = hex.startsWith('0x') || hex.startsWith('0X') ? hex.slice(2) : hex;
  if (h.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(h)) throw new Error(`not a hex byte string: ${hex.slice(0, 40)}…`);
  return Uint8Array.from(Buffer.from(h, 'hex'));
}

function u32le(n: number): Uint8Array {
  if (!Number.isInteger(n) || n < 0 || n > 0xffff_ffff) throw new Error(`length ${n} does not fit a u32`);
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
}

/** A length-prefixed byte run: how both `String` and `Vec<u8>` are written. */
function lengthPrefixed(bytes: Uint8Array): Uint8Array[] {
  return [u32le(bytes.length), bytes];
}

/** Turns a STARK proof file (the zkVM's JSON) into the codec bytes the client uploads. */
export function encodeVersionedStarkProof(doc: StarkProofJson): Uint8Array {
  if (typeof doc.version !== 'string') throw new Error('proof JSON has no version string');
  const chunks: Uint8Array[] = [
    ...lengthPrefixed(new TextEncoder().encode(doc.version)),
    ...lengthPrefixed(hexToBytes(doc.proof)),
    ...lengthPrefixed(hexToBytes(doc.user_pvs_proof)),
  ];
  const dmp = doc.deferral_merkle_proofs;
  if (dmp === null || dmp === undefined) chunks.push(Uint8Array.of(0));
  else chunks.push(Uint8Array.of(1), ...lengthPrefixed(hexToBytes(dmp)));
  return Buffer.concat(chunks);
}

/** The inverse, for the helper's own check: reads the four fields back (hex without `0x`). */
export function decodeVersionedStarkProof(bytes: Uint8Array): Required<StarkProofJson> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let at = 0;
  const take = (n: number) => {
    if (at + n > bytes.length) throw new Error(`truncated at byte ${at}: need ${n} more`);
    const out = bytes.subarray(at, at + n);
    at += n;
    return out;
  };
  const run = () => {
    const len = view.getUint32(take(4).byteOffset - bytes.byteOffset, true);
    return take(len);
  };
  const version = new TextDecoder('utf-8', { fatal: true }).decode(run());
  const proof = Buffer.from(run()).toString('hex');
  const user_pvs_proof = Buffer.from(run()).toString('hex');
  const flag = take(1)[0];
  if (flag !== 0 && flag !== 1) throw new Error(`Option flag byte is ${flag}, not 0 or 1`);
  const deferral_merkle_proofs = flag === 1 ? Buffer.from(run()).toString('hex') : null;
  if (at !== bytes.length) throw new Error(`${bytes.length - at} trailing bytes after the decoded value`);
  return { version, proof, user_pvs_proof, deferral_merkle_proofs };
}
