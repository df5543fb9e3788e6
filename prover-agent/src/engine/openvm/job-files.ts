// Checks on the files a job hands to the tool and gets back from it, in the
// zkVM tool's own formats (client-conventions.md). The caller's files are held to the
// caps the service holds them to and checked as the service checks them (protocol
// job-files.ts, shared with the Worker): each check is linear in the file, so a file
// the service accepted gets a verdict here, never a stack overflow.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { allHexDigits, inputEntryError, isHex, MAX_INPUT_BYTES, MAX_VERIFY_PROOF_BYTES, type ProofType } from '../../protocol.ts';
import { JobError } from '../types.ts';

/** A caller's file as text, or why it is refused: larger than the service takes such a file. */
async function readCallerFile(path: string, what: string, maxBytes: number): Promise<{ text: string } | { reason: string }> {
  const { size } = await stat(path);
  if (size > maxBytes) return { reason: `${what} is ${size} bytes, more than the service takes (${maxBytes})` };
  return { text: await readFile(path, 'utf8') };
}

/**
 * Rejects an input file the tool would reject, before any GPU time is spent and
 * so that the caller gets the reason as their error. Same rules as the tool
 * (crates/cli/src/input.rs): `{"input": [hex, ...]}`, `0x` optional, even
 * length, `01` + bytes or `02` + whole 32-bit words.
 */
export async function checkInputFile(path: string): Promise<void> {
  const read = await readCallerFile(path, 'input', MAX_INPUT_BYTES);
  if ('reason' in read) throw new JobError(read.reason);
  let doc: unknown;
  try {
    doc = JSON.parse(read.text);
  } catch (err) {
    throw new JobError(`input is not a JSON document: ${(err as Error).message}`);
  }
  const entries = (doc as { input?: unknown } | null)?.input;
  if (!Array.isArray(entries)) throw new JobError('input must be a JSON object with an "input" array of hex strings');
  entries.forEach((entry, i) => {
    const problem = inputEntryError(entry);
    if (problem) throw new JobError(`input[${i}] is invalid: ${problem}`);
  });
}

export const isHex32 = (s: unknown): s is string => typeof s === 'string' && s.length === 66 && s.startsWith('0x') && allHexDigits(s, 2);

/** Reads the one `*<suffix>` JSON file the tool wrote into `dir`. */
export async function readToolJson(dir: string, suffix: string): Promise<Record<string, unknown>> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(suffix));
  if (names.length !== 1)
    throw new Error(`openvm engine: expected one *${suffix} from the zkVM tool in its output directory, found ${names.length}`);
  const doc = JSON.parse(await readFile(join(dir, names[0]), 'utf8')) as unknown;
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`openvm engine: ${names[0]} is not a JSON object`);
  return doc as Record<string, unknown>;
}

const STARK_HEX_FIELDS = ['proof', 'user_pvs_proof', 'deferral_merkle_proofs'] as const;

/** A caller's proof file as a JSON object, or why it is not one. */
async function readProofObject(path: string): Promise<{ doc: Record<string, unknown> } | { reason: string }> {
  const read = await readCallerFile(path, 'proof', MAX_VERIFY_PROOF_BYTES);
  if ('reason' in read) return read;
  let doc: unknown;
  try {
    doc = JSON.parse(read.text);
  } catch (err) {
    return { reason: `proof is not a JSON document: ${(err as Error).message}` };
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return { reason: 'proof is not a JSON object' };
  return { doc: doc as Record<string, unknown> };
}

/**
 * A STARK proof in the form the tool reads (serde_with::hex: bare hex), or the
 * reason it is not one. Callers' files may carry `0x` prefixes or, from the
 * published client, none at all; both are accepted.
 */
export async function canonicalStarkProof(path: string): Promise<{ proof: Record<string, unknown> } | { reason: string }> {
  const read = await readProofObject(path);
  if ('reason' in read) return read;
  const proof = { ...read.doc };
  if (typeof proof.version !== 'string') return { reason: 'proof has no "version"' };
  for (const field of STARK_HEX_FIELDS) {
    const value = proof[field];
    if (value === null && field === 'deferral_merkle_proofs') continue;
    if (value === undefined && field === 'deferral_merkle_proofs') continue;
    if (typeof value !== 'string') return { reason: `proof field "${field}" must be a hex string` };
    if (!isHex(value)) return { reason: `proof field "${field}" is not hex` };
    proof[field] = (value.startsWith('0x') ? value.slice(2) : value).toLowerCase();
  }
  return { proof };
}

/**
 * Checks the proof the tool wrote and returns the public values it states
 * (EVM proofs carry them in the clear; null otherwise).
 */
export async function checkWrittenProof(kind: ProofType, path: string): Promise<string | null> {
  const s = await stat(path).catch(() => null);
  if (!s?.isFile() || s.size === 0) throw new Error(`openvm engine: the zkVM tool reported success but wrote no ${kind} proof at ${path}`);
  if (kind === 'app') return null; // a binary encoding, opaque here
  const doc = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  const fields =
    kind === 'stark'
      ? ['version', 'proof', 'user_pvs_proof']
      : ['version', 'app_exe_commit', 'app_vm_commit', 'user_public_values', 'proof_data'];
  const absent = fields.filter((f) => doc[f] === undefined);
  if (absent.length) throw new Error(`openvm engine: the ${kind} proof the tool wrote lacks ${absent.join(', ')}`);
  return kind === 'evm' && typeof doc.user_public_values === 'string' ? doc.user_public_values : null;
}

// The tool panics (exit 101) instead of rejecting an EVM proof whose commits are
// not canonical BabyBear digests (v2.0.1:crates/continuations/src/commit_bytes.rs:20-26,141-150)
// or whose accumulator is not whole canonical BN254 scalars
// (v2.0.1:crates/sdk/src/types.rs:256-287): such proofs are refused here, as the caller's.
const BABY_BEAR = 2013265921n;
const COMMIT_BOUND = BABY_BEAR ** 8n;
const BN254_SCALAR = 21888242871839275222246405745257275088548364400416034343698204186575808495617n;
const EVM_HEX_FIELDS = ['app_exe_commit', 'app_vm_commit', 'user_public_values'] as const;

const bareHex = (v: unknown): string | null =>
  typeof v === 'string' && isHex(v) ? (v.startsWith('0x') ? v.slice(2) : v).toLowerCase() : null;

/**
 * An EVM proof in the form `verify evm` reads (client-conventions.md; hex with or
 * without `0x`, as the tool accepts: v2.0.1:crates/sdk/src/types.rs:71-75,
 * crates/continuations/src/commit_bytes.rs:141-150), or the reason it is not one.
 */
export async function checkEvmProof(
  path: string,
): Promise<{ proof: { app_exe_commit: string; app_vm_commit: string } } | { reason: string }> {
  const read = await readProofObject(path);
  if ('reason' in read) return read;
  const p = read.doc;
  if (typeof p.version !== 'string') return { reason: 'proof has no "version"' };
  const hex: Record<string, string> = {};
  for (const field of EVM_HEX_FIELDS) {
    const v = bareHex(p[field]);
    if (v === null) return { reason: `proof field "${field}" must be a hex string` };
    hex[field] = v;
  }
  const data = p.proof_data as Record<string, unknown> | null | undefined;
  const accumulator = bareHex(data?.accumulator);
  if (accumulator === null || bareHex(data?.proof) === null)
    return { reason: 'proof field "proof_data" must hold hex "accumulator" and "proof"' };
  for (const field of ['app_exe_commit', 'app_vm_commit'] as const) {
    if (hex[field].length !== 64) return { reason: `proof field "${field}" must be 32 bytes` };
    if (BigInt('0x' + hex[field]) >= COMMIT_BOUND) return { reason: `proof field "${field}" is not a canonical commit` };
  }
  if (accumulator.length % 64 !== 0) return { reason: 'proof_data.accumulator must be whole 32-byte words' };
  for (let i = 0; i < accumulator.length; i += 64) {
    if (BigInt('0x' + accumulator.slice(i, i + 64)) >= BN254_SCALAR)
      return { reason: 'proof_data.accumulator holds a value outside the BN254 scalar field' };
  }
  return { proof: { app_exe_commit: '0x' + hex.app_exe_commit, app_vm_commit: '0x' + hex.app_vm_commit } };
}
