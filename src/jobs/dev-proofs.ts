// Dev proofs' seals, made and checked here and nowhere else: only the Worker holds
// DEV_PROOF_SECRET (SECURITY.md "Agent tokens, job tokens and queue tokens"). The dev
// engine on a host writes its proofs unsealed (the format:
// prover-agent/src/protocol/dev-proofs.ts); a proof job's completion seals each proof
// file into an object of its own that the record then serves (sealDevProofs), after checking that it states the job's program and
// config, the public values the engine reported, and deferred children whose own seals
// hold; a verify job's completion checks the seal of the caller's proof (devProofSealProblem).
// The dev engine is trusted with its outputs by nature (it runs on the host): what
// bounds a host is its agent token's scope, which keeps it off configs it was not issued.
import {
  DEV_INPUT_TAG,
  DEV_MAC_MISMATCH,
  devConfigDigestMessage,
  devHex,
  devParseHex,
  devProofDigestMessage,
  devProofMacMessage,
  devProofText,
  devStatementMismatch,
  isUnsealed,
  readDevProof,
  type DevProof,
  type ProofType,
} from 'prover-agent/protocol';
import type { configs } from '../db/schema.ts';
import { utf8Bytes } from '../lib/bytes.ts';

/** Largest dev proof file read here: an envelope is a few hundred bytes per child; anything bigger is not one. */
export const MAX_DEV_PROOF_BYTES = 1024 * 1024;

type ConfigRow = Pick<typeof configs.$inferSelect, 'id' | 'app_vm_commit' | 'public_values_bytes'>;

const sha256 = async (msg: Uint8Array) => new Uint8Array(await crypto.subtle.digest('SHA-256', msg));

/** The secret's HMAC key, imported once per isolate (a sealing makes two MACs, a check one). */
let hmacKey: { secret: string; key: Promise<CryptoKey> } | undefined;

async function hmac(secret: string, msg: Uint8Array): Promise<Uint8Array> {
  if (hmacKey?.secret !== secret)
    hmacKey = {
      secret,
      key: crypto.subtle.importKey('raw', utf8Bytes(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']),
    };
  return new Uint8Array(await crypto.subtle.sign('HMAC', await hmacKey.key, msg));
}

/** Constant-time comparison of two MACs. */
function sameMac(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i] ^ b[i];
  return diff === 0;
}

/** Where a dev proof is read from: a stored object, or a text in hand (a result sent inline). */
export type DevProofSource = { key: string } | { text: string };

/** A file read as a dev proof (at most MAX_DEV_PROOF_BYTES), or why it is not one. */
async function readStored(bucket: R2Bucket, source: DevProofSource): Promise<DevProof | string> {
  let text: string;
  if ('text' in source) {
    if (source.text.length > MAX_DEV_PROOF_BYTES) return `the file is larger than any dev proof (${source.text.length} characters)`;
    text = source.text;
  } else {
    const obj = await bucket.get(source.key, { range: { offset: 0, length: MAX_DEV_PROOF_BYTES } });
    if (!obj) return 'the file is missing';
    if (obj.size > MAX_DEV_PROOF_BYTES) {
      await obj.body.cancel();
      return `the file is larger than any dev proof (${obj.size} bytes)`;
    }
    text = await obj.text();
  }
  try {
    return readDevProof(JSON.parse(text));
  } catch (err) {
    return (err as Error).message;
  }
}

export interface DevProofExpectation {
  kind: ProofType;
  /** 0x hex of the program; null: the one the proof names (an EVM proof checked against its config alone). */
  appExeCommit: string | null;
  config: ConfigRow;
}

/** Why `proof` is not a sealed dev proof of the expected kind, program and config, or null. */
async function sealProblem(proof: DevProof, expected: DevProofExpectation, secret: string): Promise<string | null> {
  if (!sameMac(await hmac(secret, devProofMacMessage(proof)), proof.mac)) return DEV_MAC_MISMATCH;
  return devStatementMismatch(proof, { ...expected, configDigest: await sha256(devConfigDigestMessage(expected.config)) });
}

/** For a verification: why the stored proof at `key` is not a valid dev proof, or null when it is. */
export async function devProofSealProblem(
  bucket: R2Bucket,
  key: string,
  expected: DevProofExpectation,
  secret: string,
): Promise<string | null> {
  const proof = await readStored(bucket, { key });
  return typeof proof === 'string' ? proof : sealProblem(proof, expected, secret);
}

/**
 * Seals the unsealed dev proofs of a proof job's attempt (`sources`, by proof type: its
 * uploads, or texts it sent inline), once each states the job's program and config, the
 * public values the engine reported and the job's deferred children (`childKeys`, whose
 * seals must hold). Returns the sealed texts, for the completion to store as objects of
 * the attempt's own (src/jobs/results.ts: the host's files are never rewritten), or why
 * the job fails. A proof the host sent sealed already fails it: only this Worker seals.
 */
export async function sealDevProofs(
  bucket: R2Bucket,
  sources: Record<string, DevProofSource>,
  job: { appExeCommit: string; config: ConfigRow; publicValues: string | null; childKeys: string[] },
  secret: string,
): Promise<{ texts: Record<string, string> } | { fail: string }> {
  // The children first: each a sealed STARK proof of the same program and config.
  const childDigests: string[] = [];
  for (const [i, key] of job.childKeys.entries()) {
    const child = await readStored(bucket, { key });
    const problem =
      typeof child === 'string'
        ? child
        : await sealProblem(child, { kind: 'stark', appExeCommit: job.appExeCommit, config: job.config }, secret);
    if (problem || typeof child === 'string') return { fail: `child proof ${i}: ${problem}` };
    childDigests.push(devHex(await sha256(devProofDigestMessage(child))));
  }
  const reported = job.publicValues === null ? null : devParseHex(job.publicValues);
  const texts: Record<string, string> = {};
  for (const [type, source] of Object.entries(sources)) {
    const proof = await readStored(bucket, source);
    if (typeof proof === 'string') return { fail: `the ${type} proof is not a dev proof: ${proof}` };
    if (!isUnsealed(proof)) return { fail: `the ${type} proof came from the host sealed: only the service seals dev proofs` };
    const mismatch = devStatementMismatch(proof, {
      kind: type as ProofType,
      appExeCommit: job.appExeCommit,
      config: job.config,
      configDigest: await sha256(devConfigDigestMessage(job.config)),
    });
    if (mismatch) return { fail: `the ${type} proof was ${mismatch}` };
    if (!reported || devHex(reported) !== devHex(proof.publicValues))
      return { fail: `the ${type} proof's public values are not the ones the engine reported` };
    if (proof.childDigests.length !== childDigests.length || proof.childDigests.some((d, i) => devHex(d) !== childDigests[i])) {
      return { fail: `the ${type} proof does not bind the job's ${childDigests.length} deferred child proofs` };
    }
    texts[type] = devProofText(await sealDevProof(proof, secret));
  }
  return { texts };
}

/** An unsealed dev proof sealed: its input digest keyed, then the MAC over the whole statement. */
export async function sealDevProof(proof: DevProof, secret: string): Promise<DevProof> {
  const statement = { ...proof, inputDigest: await hmac(secret, concat(DEV_INPUT_TAG, proof.inputDigest)) };
  return { ...statement, mac: await hmac(secret, devProofMacMessage(statement)) };
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
