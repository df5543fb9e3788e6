// Checks on the files a job hands to the tool and gets back from it, in the
// zkVM tool's own formats (client-conventions.md).
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { JobError } from '../types.ts';

/**
 * Rejects an input file the tool would reject, before any GPU time is spent and
 * so that the caller gets the reason as their error. Same rules as the tool
 * (crates/cli/src/input.rs): `{"input": [hex, ...]}`, `0x` optional, even
 * length, `01` + bytes or `02` + whole 32-bit words.
 */
export async function checkInputFile(path: string): Promise<void> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    throw new JobError(`input is not a JSON document: ${(err as Error).message}`);
  }
  const entries = (doc as { input?: unknown } | null)?.input;
  if (!Array.isArray(entries)) throw new JobError('input must be a JSON object with an "input" array of hex strings');
  entries.forEach((entry, i) => {
    const problem = typeof entry === 'string' ? inputEntryProblem(entry) : 'not a string';
    if (problem) throw new JobError(`input[${i}] is invalid: ${problem}`);
  });
}

function inputEntryProblem(entry: string): string | null {
  const hex = entry.startsWith('0x') ? entry.slice(2) : entry;
  if (hex.length % 2 !== 0) return 'hex must have an even number of digits';
  if (!/^[0-9a-fA-F]*$/.test(hex)) return 'not hex';
  if (hex.startsWith('02')) return (hex.length - 2) % 8 === 0 ? null : 'a 02 entry must hold whole 32-bit words';
  return hex.startsWith('01') ? null : 'must start with 01 (bytes) or 02 (32-bit words)';
}

export const isHex32 = (s: unknown): s is string => typeof s === 'string' && /^0x[0-9a-fA-F]{64}$/.test(s);

/** Reads the one `*<suffix>` JSON file the tool wrote into `dir`. */
export async function readToolJson(dir: string, suffix: string): Promise<Record<string, unknown>> {
  const names = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith(suffix));
  if (names.length !== 1) throw new Error(`openvm engine: expected one *${suffix} from the zkVM tool in its output directory, found ${names.length}`);
  const doc = JSON.parse(await readFile(join(dir, names[0]), 'utf8')) as unknown;
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) throw new Error(`openvm engine: ${names[0]} is not a JSON object`);
  return doc as Record<string, unknown>;
}

const STARK_HEX_FIELDS = ['proof', 'user_pvs_proof', 'deferral_merkle_proofs'] as const;

/**
 * A STARK proof in the form the tool reads (serde_with::hex: bare hex), or the
 * reason it is not one. Callers' files may carry `0x` prefixes or, from the
 * published client, none at all; both are accepted.
 */
export async function canonicalStarkProof(path: string): Promise<{ proof: Record<string, unknown> } | { reason: string }> {
  let doc: unknown;
  try {
    doc = JSON.parse(await readFile(path, 'utf8'));
  } catch (err) {
    return { reason: `proof is not a JSON document: ${(err as Error).message}` };
  }
  if (!doc || typeof doc !== 'object' || Array.isArray(doc)) return { reason: 'proof is not a JSON object' };
  const proof = { ...(doc as Record<string, unknown>) };
  if (typeof proof.version !== 'string') return { reason: 'proof has no "version"' };
  for (const field of STARK_HEX_FIELDS) {
    const value = proof[field];
    if (value === null && field === 'deferral_merkle_proofs') continue;
    if (value === undefined && field === 'deferral_merkle_proofs') continue;
    if (typeof value !== 'string') return { reason: `proof field "${field}" must be a hex string` };
    const bare = value.replace(/^0x/i, '');
    if (!/^([0-9a-fA-F]{2})*$/.test(bare)) return { reason: `proof field "${field}" is not hex` };
    proof[field] = bare.toLowerCase();
  }
  return { proof };
}

/**
 * Checks the proof the tool wrote and returns the public values it states
 * (EVM proofs carry them in the clear; null otherwise).
 */
export async function checkWrittenProof(kind: 'app' | 'stark' | 'evm', path: string): Promise<string | null> {
  const s = await stat(path).catch(() => null);
  if (!s?.isFile() || s.size === 0) throw new Error(`openvm engine: the zkVM tool reported success but wrote no ${kind} proof at ${path}`);
  if (kind === 'app') return null; // a binary encoding, opaque here
  const doc = JSON.parse(await readFile(path, 'utf8')) as Record<string, unknown>;
  const fields = kind === 'stark' ? ['version', 'proof', 'user_pvs_proof'] : ['version', 'app_exe_commit', 'app_vm_commit', 'user_public_values', 'proof_data'];
  const absent = fields.filter((f) => doc[f] === undefined);
  if (absent.length) throw new Error(`openvm engine: the ${kind} proof the tool wrote lacks ${absent.join(', ')}`);
  return kind === 'evm' && typeof doc.user_public_values === 'string' ? doc.user_public_values : null;
}
