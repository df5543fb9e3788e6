// What the public API and the console both do to a caller's proof: download one of
// its files, cancel it.
import type { ProofType } from 'prover-agent/protocol';
import type { proofs } from '../../db/schema.ts';
import { servedProofKey } from '../../lib/artifact-keys.ts';
import { reprDigest } from '../configs/keys.ts';
import { streamObject } from '../../lib/artifacts.ts';
import { ApiError, notFound, refuseDeleted } from '../../lib/errors.ts';
import type { CancelOutcome } from '../../jobs/state.ts';

type ProofRow = typeof proofs.$inferSelect;

/**
 * The proof file of a kind, streamed from the object its record names (never an object an
 * attempt merely uploaded: src/jobs/results.ts), with its digest as Repr-Digest when the
 * record has one; 404 until it exists.
 */
export async function proofFileResponse(bucket: R2Bucket, proof: ProofRow, kind: ProofType): Promise<Response> {
  refuseDeleted(proof, `Proof ${proof.id}`);
  const key = servedProofKey(proof, kind);
  const obj = key ? await bucket.get(key) : null;
  if (!obj) throw new ApiError(404, `No ${kind} proof for this job (state: ${proof.state})`);
  const res = streamObject(obj, 'application/json', `${kind}-proof.json`);
  const sha256 = proof.proof_objects?.[kind]?.sha256;
  if (sha256) res.headers.set('repr-digest', reprDigest(sha256));
  return res;
}

/** The answer to a cancel (cancelProofStatements, src/jobs/state.ts): 404 for no such proof, 409 when it already finished. */
export function cancelAnswer(proofId: string, outcome: CancelOutcome | null): { message: string; state: 'Canceled' | 'Canceling' } {
  if (!outcome) throw notFound('Proof');
  switch (outcome.kind) {
    case 'canceled':
      return { message: 'Proof canceled', state: 'Canceled' };
    case 'canceling':
      return {
        message: 'Cancel requested: the proof ends Canceled and is charged only up to now; its prover stops the job within seconds',
        state: 'Canceling',
      };
    case 'already-canceling':
      return { message: 'Cancel already requested', state: 'Canceling' };
    case 'terminal':
      throw new ApiError(409, `Proof ${proofId} already finished (state: ${outcome.state}); there is nothing to cancel`);
  }
}
