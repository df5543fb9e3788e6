// Dev proofs: files in the zkVM's proof JSON shapes whose proof bytes are an *envelope*
// stating what was run (program, config, input, deferred children) and an HMAC-SHA256
// over that statement and the public values, under the deployment's secret. They let
// the service's flows run end to end without a prover. They prove nothing
// cryptographically: whoever holds the secret can mint them, and they reveal nothing
// about zero knowledge. Never accept them under a production config.
//
// Envelope (the `proof` hex of every kind):
//   magic "ZKDEVPF1" (8) | kind (1: app, 2: stark, 3: evm) | app_exe_commit (32)
//   | app_vm_commit (32) | config digest (32) | input digest (32)
//   | child count (u32 LE) | child digests (32 each) | mac (32)
// mac = HMAC-SHA256(secret, "zkvm-dev/proof/v1" | envelope without mac | u32 LE length
//       of the public values | public values)
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import type { EngineConfig, ProofType } from '../../protocol.ts';
import { toHex } from './commit.ts';
import { canonicalInputBytes, parseHex, type InputEntry } from './input.ts';

/** The `version` of every dev proof file; the zkVM's own proofs say `v<major>.<minor>`. */
export const DEV_PROOF_VERSION = 'v1.0-dev';

const MAGIC = Buffer.from('ZKDEVPF1');
const KIND_CODES: Record<ProofType, number> = { app: 1, stark: 2, evm: 3 };
const HEADER_BYTES = MAGIC.length + 1 + 4 * 32 + 4;
const DIGEST_BYTES = 32;

/** What a dev proof states, besides its public values. */
export interface DevStatement {
  kind: ProofType;
  appExeCommit: Uint8Array;
  appVmCommit: Uint8Array;
  configDigest: Uint8Array;
  inputDigest: Uint8Array;
  /** Digests (devProofDigest) of the deferred child proofs, in packing order. */
  childDigests: Uint8Array[];
}

export interface DevProof extends DevStatement {
  publicValues: Uint8Array;
  mac: Uint8Array;
}

/** Throws when the deployment gave no secret: without it dev proofs can be neither made nor checked. */
export function requireSecret(config: EngineConfig): string {
  if (!config.dev_proof_secret) {
    throw new Error(`config ${config.id}: no dev_proof_secret was provided with the job; the dev engine cannot make or check dev proofs without it`);
  }
  return config.dev_proof_secret;
}

/** Binds a proof to one config: its id, its app_vm_commit and its public-values size. */
export function devConfigDigest(config: EngineConfig): Uint8Array {
  return new Uint8Array(
    createHash('sha256')
      .update(`zkvm-dev/config/v1\0${config.id}\0${config.app_vm_commit.toLowerCase()}\0${config.public_values_bytes}`)
      .digest(),
  );
}

/**
 * A keyed digest of the input: a plain hash would let anyone holding a proof confirm a
 * guess of a low-entropy input.
 */
export function devInputDigest(secret: string, input: InputEntry[]): Uint8Array {
  return new Uint8Array(createHmac('sha256', secret).update('zkvm-dev/input/v1').update(canonicalInputBytes(input)).digest());
}

function hexBytes(value: string, what: string, length?: number): Uint8Array {
  const bytes = parseHex(value);
  if (!bytes) throw new Error(`${what} is not hex`);
  if (length !== undefined && bytes.length !== length) throw new Error(`${what} is ${bytes.length} bytes, expected ${length}`);
  return bytes;
}

function header(s: DevStatement): Buffer {
  const fixed = Buffer.alloc(HEADER_BYTES);
  MAGIC.copy(fixed, 0);
  fixed[MAGIC.length] = KIND_CODES[s.kind];
  let at = MAGIC.length + 1;
  for (const part of [s.appExeCommit, s.appVmCommit, s.configDigest, s.inputDigest]) {
    fixed.set(part, at);
    at += DIGEST_BYTES;
  }
  fixed.writeUInt32LE(s.childDigests.length, at);
  return Buffer.concat([fixed, ...s.childDigests]);
}

function computeMac(secret: string, head: Uint8Array, publicValues: Uint8Array): Uint8Array {
  const len = Buffer.alloc(4);
  len.writeUInt32LE(publicValues.length);
  return new Uint8Array(createHmac('sha256', secret).update('zkvm-dev/proof/v1').update(head).update(len).update(publicValues).digest());
}

/** Identifies a proof (statement, public values and MAC) when a parent binds it as a child. */
export function devProofDigest(proof: DevProof): Uint8Array {
  return new Uint8Array(createHash('sha256').update(header(proof)).update(proof.mac).update(proof.publicValues).digest());
}

export function makeDevProof(secret: string, statement: DevStatement, publicValues: Uint8Array): DevProof {
  return { ...statement, publicValues, mac: computeMac(secret, header(statement), publicValues) };
}

/** The proof file's JSON in the zkVM's shape for the proof's kind. */
export function devProofJson(proof: DevProof): Record<string, unknown> {
  const envelope = Buffer.concat([header(proof), proof.mac]);
  switch (proof.kind) {
    case 'stark':
      return { version: DEV_PROOF_VERSION, proof: toHex(envelope, ''), user_pvs_proof: toHex(proof.publicValues, ''), deferral_merkle_proofs: null };
    case 'evm':
      return {
        version: DEV_PROOF_VERSION,
        app_exe_commit: toHex(proof.appExeCommit),
        app_vm_commit: toHex(proof.appVmCommit),
        user_public_values: toHex(proof.publicValues),
        // A dev proof has no KZG accumulator; 32 zero bytes keep the field well-formed hex.
        proof_data: { accumulator: toHex(new Uint8Array(32)), proof: toHex(envelope) },
      };
    case 'app':
      return {
        version: DEV_PROOF_VERSION,
        kind: 'app',
        app_exe_commit: toHex(proof.appExeCommit),
        app_vm_commit: toHex(proof.appVmCommit),
        user_public_values: toHex(proof.publicValues),
        proof: toHex(envelope),
      };
  }
}

function parseEnvelope(bytes: Uint8Array, publicValues: Uint8Array): DevProof {
  if (bytes.length < HEADER_BYTES + DIGEST_BYTES || !MAGIC.equals(bytes.subarray(0, MAGIC.length))) throw new Error('proof bytes are not a dev proof envelope');
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const kind = (Object.keys(KIND_CODES) as ProofType[]).find((k) => KIND_CODES[k] === buf[MAGIC.length]);
  if (!kind) throw new Error(`unknown dev proof kind ${buf[MAGIC.length]}`);
  const digest = (i: number) => bytes.slice(MAGIC.length + 1 + i * DIGEST_BYTES, MAGIC.length + 1 + (i + 1) * DIGEST_BYTES);
  const children = buf.readUInt32LE(HEADER_BYTES - 4);
  if (bytes.length !== HEADER_BYTES + (children + 1) * DIGEST_BYTES) throw new Error('dev proof envelope has the wrong length');
  const childDigests = Array.from({ length: children }, (_, i) => bytes.slice(HEADER_BYTES + i * DIGEST_BYTES, HEADER_BYTES + (i + 1) * DIGEST_BYTES));
  return {
    kind,
    appExeCommit: digest(0),
    appVmCommit: digest(1),
    configDigest: digest(2),
    inputDigest: digest(3),
    childDigests,
    publicValues,
    mac: bytes.slice(bytes.length - DIGEST_BYTES),
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const str = (doc: Record<string, unknown>, key: string): string => {
  const v = doc[key];
  if (typeof v !== 'string') throw new Error(`field "${key}" is missing or not a string`);
  return v;
};

/**
 * Reads a proof file's JSON (any of the three shapes). Throws, with a reason fit for a
 * verification result, when it is not a well-formed dev proof.
 */
export function readDevProof(doc: unknown): DevProof {
  if (!isRecord(doc)) throw new Error('proof file is not a JSON object');
  const version = doc.version;
  if (typeof version !== 'string') throw new Error('proof file has no version');
  if (version !== DEV_PROOF_VERSION) throw new Error(`not a dev proof (version "${version}"; dev proofs say "${DEV_PROOF_VERSION}")`);
  let proof: DevProof;
  if (isRecord(doc.proof_data)) {
    proof = parseEnvelope(hexBytes(str(doc.proof_data, 'proof'), 'proof_data.proof'), hexBytes(str(doc, 'user_public_values'), 'user_public_values'));
    // The plain fields repeat the envelope; a mismatch means someone edited them.
    if (toHex(proof.appExeCommit) !== toHex(hexBytes(str(doc, 'app_exe_commit'), 'app_exe_commit'))) throw new Error('app_exe_commit differs from the one the proof was made for');
    if (toHex(proof.appVmCommit) !== toHex(hexBytes(str(doc, 'app_vm_commit'), 'app_vm_commit'))) throw new Error('app_vm_commit differs from the one the proof was made for');
    if (proof.kind !== 'evm') throw new Error(`an EVM-shaped file holds a ${proof.kind} proof`);
  } else if ('user_pvs_proof' in doc) {
    proof = parseEnvelope(hexBytes(str(doc, 'proof'), 'proof'), hexBytes(str(doc, 'user_pvs_proof'), 'user_pvs_proof'));
    if (proof.kind !== 'stark') throw new Error(`a STARK-shaped file holds a ${proof.kind} proof`);
  } else {
    proof = parseEnvelope(hexBytes(str(doc, 'proof'), 'proof'), hexBytes(str(doc, 'user_public_values'), 'user_public_values'));
    if (proof.kind !== 'app') throw new Error(`an app-shaped file holds a ${proof.kind} proof`);
  }
  return proof;
}

export interface DevProofExpectation {
  kind: ProofType;
  /** 0x hex of the program the proof must be for; null to accept the program the proof names (an EVM proof checked against its config alone). */
  appExeCommit: string | null;
  config: EngineConfig;
  secret: string;
}

/** Why `proof` is not a valid dev proof for the expected program and config, or null when it is. */
export function checkDevProof(proof: DevProof, expected: DevProofExpectation): string | null {
  if (proof.kind !== expected.kind) return `expected a ${expected.kind} proof, got a ${proof.kind} proof`;
  const mac = computeMac(expected.secret, header(proof), proof.publicValues);
  if (!timingSafeEqual(mac, proof.mac)) {
    return 'MAC mismatch: the proof or its public values were altered, or it was made by another deployment';
  }
  // The MAC holds, so the statement is authentic: report what it does not match.
  const program = expected.appExeCommit === null ? proof.appExeCommit : parseHex(expected.appExeCommit);
  if (!program || toHex(program) !== toHex(proof.appExeCommit)) {
    return `made for another program (its app_exe_commit is ${toHex(proof.appExeCommit)}, expected ${expected.appExeCommit})`;
  }
  if (toHex(proof.configDigest) !== toHex(devConfigDigest(expected.config))) return `made under another config (not ${expected.config.id})`;
  return null;
}
