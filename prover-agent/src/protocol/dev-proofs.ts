// The dev proof format, shared by the agent's dev engine (which makes proofs *unsealed*)
// and the Worker (which seals them with the deployment's secret when the completion
// stores them, and checks seals when it verifies): files in the zkVM's proof JSON
// shapes whose proof bytes are an *envelope* stating what was run (program, config,
// input, deferred children) and a MAC over that statement and the public values. They
// let the service's flows run end to end without a prover. They prove nothing
// cryptographically: whoever holds the secret can mint them, and only the Worker holds
// it (SECURITY.md). Never accept them under a production config.
//
// Envelope (the `proof` hex of every kind):
//   magic "ZKDEVPF1" (8) | kind (1: app, 2: stark, 3: evm) | app_exe_commit (32)
//   | app_vm_commit (32) | config digest (32) | input digest (32)
//   | child count (u32 LE) | child digests (32 each) | mac (32)
// mac = HMAC-SHA256(secret, devProofMacMessage) = "zkvm-dev/proof/v1" | envelope without
//       mac | u32 LE length of the public values | public values
// An unsealed proof (what the dev engine writes) has an all-zero mac and, as its input
// digest, SHA-256("zkvm-dev/input/v1" | canonical input); sealing replaces the latter
// with HMAC-SHA256(secret, "zkvm-dev/input/v1" | that digest), so a proof's holder cannot
// confirm a guess of a low-entropy input.
//
// No hashing here: each side applies its own crypto (node:crypto on the agent,
// WebCrypto in the Worker) to the messages this module lays out.
import type { EngineConfig, ProofType } from './jobs.ts';

/** The `version` of every dev proof file; the zkVM's own proofs say `v<major>.<minor>`. */
export const DEV_PROOF_VERSION = 'v1.0-dev';

const MAGIC = new TextEncoder().encode('ZKDEVPF1');
const KIND_CODES: Record<ProofType, number> = { app: 1, stark: 2, evm: 3 };
const HEADER_BYTES = MAGIC.length + 1 + 4 * 32 + 4;
export const DEV_DIGEST_BYTES = 32;

/** What a dev proof states, besides its public values. */
export interface DevStatement {
  kind: ProofType;
  appExeCommit: Uint8Array;
  appVmCommit: Uint8Array;
  configDigest: Uint8Array;
  inputDigest: Uint8Array;
  /** Digests (devProofDigestMessage, hashed) of the deferred child proofs, in packing order. */
  childDigests: Uint8Array[];
}

export interface DevProof extends DevStatement {
  publicValues: Uint8Array;
  mac: Uint8Array;
}

export function devHex(bytes: Uint8Array, prefix = '0x'): string {
  let out = prefix;
  for (const b of bytes) out += b.toString(16).padStart(2, '0');
  return out;
}

export function devParseHex(text: string): Uint8Array | null {
  const digits = text.startsWith('0x') || text.startsWith('0X') ? text.slice(2) : text;
  if (digits.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(digits)) return null;
  const out = new Uint8Array(digits.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(digits.slice(2 * i, 2 * i + 2), 16);
  return out;
}

const concat = (...parts: Uint8Array[]): Uint8Array => {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
};

const u32le = (n: number) => {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n, true);
  return b;
};

const text = (s: string) => new TextEncoder().encode(s);

/** What a proof's config digest hashes (SHA-256): it binds a proof to one config, its app_vm_commit and public-values size. */
export const devConfigDigestMessage = (config: Pick<EngineConfig, 'id' | 'app_vm_commit' | 'public_values_bytes'>): Uint8Array =>
  text(`zkvm-dev/config/v1\0${config.id}\0${config.app_vm_commit.toLowerCase()}\0${config.public_values_bytes}`);

/** The domain tag of an input digest (see the top of this module). */
export const DEV_INPUT_TAG = text('zkvm-dev/input/v1');

export function devProofHeader(s: DevStatement): Uint8Array {
  return concat(
    MAGIC,
    Uint8Array.of(KIND_CODES[s.kind]),
    s.appExeCommit,
    s.appVmCommit,
    s.configDigest,
    s.inputDigest,
    u32le(s.childDigests.length),
    ...s.childDigests,
  );
}

/** What the MAC (HMAC-SHA256 under the deployment's secret) is computed over. */
export const devProofMacMessage = (proof: DevStatement & { publicValues: Uint8Array }): Uint8Array =>
  concat(text('zkvm-dev/proof/v1'), devProofHeader(proof), u32le(proof.publicValues.length), proof.publicValues);

/** What identifies a proof (SHA-256 of this) when a parent binds it as a child. */
export const devProofDigestMessage = (proof: DevProof): Uint8Array => concat(devProofHeader(proof), proof.mac, proof.publicValues);

/** Whether the proof has not been sealed yet (an all-zero MAC: what the dev engine writes). */
export const isUnsealed = (proof: DevProof): boolean => proof.mac.every((b) => b === 0);

/** A proof as the dev engine writes it, for the Worker to seal. */
export const unsealedDevProof = (statement: DevStatement, publicValues: Uint8Array): DevProof => ({
  ...statement,
  publicValues,
  mac: new Uint8Array(DEV_DIGEST_BYTES),
});

/** The proof file's JSON in the zkVM's shape for the proof's kind. */
export function devProofJson(proof: DevProof): Record<string, unknown> {
  const envelope = concat(devProofHeader(proof), proof.mac);
  switch (proof.kind) {
    case 'stark':
      return {
        version: DEV_PROOF_VERSION,
        proof: devHex(envelope, ''),
        user_pvs_proof: devHex(proof.publicValues, ''),
        deferral_merkle_proofs: null,
      };
    case 'evm':
      return {
        version: DEV_PROOF_VERSION,
        app_exe_commit: devHex(proof.appExeCommit),
        app_vm_commit: devHex(proof.appVmCommit),
        user_public_values: devHex(proof.publicValues),
        // A dev proof has no KZG accumulator; 32 zero bytes keep the field well-formed hex.
        proof_data: { accumulator: devHex(new Uint8Array(32)), proof: devHex(envelope) },
      };
    case 'app':
      return {
        version: DEV_PROOF_VERSION,
        kind: 'app',
        app_exe_commit: devHex(proof.appExeCommit),
        app_vm_commit: devHex(proof.appVmCommit),
        user_public_values: devHex(proof.publicValues),
        proof: devHex(envelope),
      };
  }
}

/** The proof file's text as the dev engine and the Worker write it. */
export const devProofText = (proof: DevProof): string => `${JSON.stringify(devProofJson(proof), null, 2)}\n`;

function hexBytes(value: string, what: string): Uint8Array {
  const bytes = devParseHex(value);
  if (!bytes) throw new Error(`${what} is not hex`);
  return bytes;
}

const sameBytes = (a: Uint8Array, b: Uint8Array) => a.length === b.length && a.every((v, i) => v === b[i]);

function parseEnvelope(bytes: Uint8Array, publicValues: Uint8Array): DevProof {
  if (bytes.length < HEADER_BYTES + DEV_DIGEST_BYTES || !sameBytes(bytes.subarray(0, MAGIC.length), MAGIC))
    throw new Error('proof bytes are not a dev proof envelope');
  const kind = (Object.keys(KIND_CODES) as ProofType[]).find((k) => KIND_CODES[k] === bytes[MAGIC.length]);
  if (!kind) throw new Error(`unknown dev proof kind ${bytes[MAGIC.length]}`);
  const digest = (i: number) => bytes.slice(MAGIC.length + 1 + i * DEV_DIGEST_BYTES, MAGIC.length + 1 + (i + 1) * DEV_DIGEST_BYTES);
  const children = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(HEADER_BYTES - 4, true);
  if (bytes.length !== HEADER_BYTES + (children + 1) * DEV_DIGEST_BYTES) throw new Error('dev proof envelope has the wrong length');
  const childDigests = Array.from({ length: children }, (_, i) =>
    bytes.slice(HEADER_BYTES + i * DEV_DIGEST_BYTES, HEADER_BYTES + (i + 1) * DEV_DIGEST_BYTES),
  );
  return {
    kind,
    appExeCommit: digest(0),
    appVmCommit: digest(1),
    configDigest: digest(2),
    inputDigest: digest(3),
    childDigests,
    publicValues,
    mac: bytes.slice(bytes.length - DEV_DIGEST_BYTES),
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
    proof = parseEnvelope(
      hexBytes(str(doc.proof_data, 'proof'), 'proof_data.proof'),
      hexBytes(str(doc, 'user_public_values'), 'user_public_values'),
    );
    // The plain fields repeat the envelope; a mismatch means someone edited them.
    if (devHex(proof.appExeCommit) !== devHex(hexBytes(str(doc, 'app_exe_commit'), 'app_exe_commit')))
      throw new Error('app_exe_commit differs from the one the proof was made for');
    if (devHex(proof.appVmCommit) !== devHex(hexBytes(str(doc, 'app_vm_commit'), 'app_vm_commit')))
      throw new Error('app_vm_commit differs from the one the proof was made for');
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

export interface DevStatementExpectation {
  kind: ProofType;
  /** 0x hex of the program the proof must be for; null to accept the program the proof names (an EVM proof checked against its config alone). */
  appExeCommit: string | null;
  config: Pick<EngineConfig, 'id'>;
  /** SHA-256 of devConfigDigestMessage(config). */
  configDigest: Uint8Array;
}

/** Why the statement of `proof` is not the expected one (kind, program, config), or null. The MAC is the sealer's to check. */
export function devStatementMismatch(proof: DevProof, expected: DevStatementExpectation): string | null {
  if (proof.kind !== expected.kind) return `expected a ${expected.kind} proof, got a ${proof.kind} proof`;
  const program = expected.appExeCommit === null ? proof.appExeCommit : devParseHex(expected.appExeCommit);
  if (!program || devHex(program) !== devHex(proof.appExeCommit)) {
    return `made for another program (its app_exe_commit is ${devHex(proof.appExeCommit)}, expected ${expected.appExeCommit})`;
  }
  if (devHex(proof.configDigest) !== devHex(expected.configDigest)) return `made under another config (not ${expected.config.id})`;
  return null;
}

/** The reason a verification gives for a MAC that does not hold. */
export const DEV_MAC_MISMATCH = 'MAC mismatch: the proof or its public values were altered, or it was made by another deployment';
