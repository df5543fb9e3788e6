// Dev proofs as the dev engine makes and reads them: the format is the protocol's
// (prover-agent/src/protocol/dev-proofs.ts); this adds the hashing, with node:crypto. The
// engine holds no secret: it writes proofs *unsealed* (an all-zero MAC, a plain input
// digest), and the Worker seals them with the deployment's secret when the completion
// stores them, and checks the seal of any proof it verifies or folds in (src/jobs/dev-proofs.ts).
import { createHash } from 'node:crypto';
import {
  DEV_INPUT_TAG,
  devConfigDigestMessage,
  devProofDigestMessage,
  devStatementMismatch,
  unsealedDevProof,
  type DevProof,
  type DevStatement,
  type EngineConfig,
  type ProofType,
} from '../../protocol.ts';
import { canonicalInputBytes, type InputEntry } from './input.ts';

export { DEV_PROOF_VERSION, devProofJson, devProofText, readDevProof, type DevProof, type DevStatement } from '../../protocol.ts';

const sha256 = (...parts: Uint8Array[]) => {
  const h = createHash('sha256');
  for (const p of parts) h.update(p);
  return new Uint8Array(h.digest());
};

/** Binds a proof to one config: its id, its app_vm_commit and its public-values size. */
export const devConfigDigest = (config: EngineConfig): Uint8Array => sha256(devConfigDigestMessage(config));

/** The plain digest of the input; the Worker keys it when it seals the proof. */
export const devInputDigest = (input: InputEntry[]): Uint8Array => sha256(DEV_INPUT_TAG, canonicalInputBytes(input));

/** Identifies a proof (statement, public values and MAC) when a parent binds it as a child. */
export const devProofDigest = (proof: DevProof): Uint8Array => sha256(devProofDigestMessage(proof));

/** A proof for the Worker to seal. */
export const makeDevProof = (statement: DevStatement, publicValues: Uint8Array): DevProof => unsealedDevProof(statement, publicValues);

export interface DevProofExpectation {
  kind: ProofType;
  /** 0x hex of the program the proof must be for; null to accept the program the proof names (an EVM proof checked against its config alone). */
  appExeCommit: string | null;
  config: EngineConfig;
}

/**
 * Why `proof` is not a dev proof of the expected kind, program and config, or null. Its
 * MAC is not checked here (the engine has no secret): the Worker checks it.
 */
export const checkDevProof = (proof: DevProof, expected: DevProofExpectation): string | null =>
  devStatementMismatch(proof, { ...expected, configDigest: devConfigDigest(expected.config) });
