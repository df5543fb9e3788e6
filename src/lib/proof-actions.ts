// What the public API and the console both do to a caller's proof: download one of
// its files, cancel it.
import type { proofs } from '../db/schema.ts';
import type { Db } from '../db/client.ts';
import { cancelProof } from '../jobs/state.ts';
import { streamObject } from './artifacts.ts';
import { ApiError } from './errors.ts';

type ProofRow = typeof proofs.$inferSelect;

/** The proof file of a kind, streamed; 404 until it exists. */
export async function proofFileResponse(bucket: R2Bucket, proof: ProofRow, kind: 'stark' | 'evm' | 'app'): Promise<Response> {
  const key = (JSON.parse(proof.proof_keys) as Record<string, string>)[kind];
  const obj = key ? await bucket.get(key) : null;
  if (!obj) throw new ApiError(404, `No ${kind} proof for this job (state: ${proof.state})`);
  return streamObject(obj, 'application/json', `${kind}-proof.json`);
}

/** Cancels a proof: the answer to send, or 409 when it already finished. */
export async function cancelProofAnswer(db: Db, proof: ProofRow): Promise<{ message: string; state: 'Canceled' | 'Canceling' }> {
  const outcome = await cancelProof(db, proof.id);
  switch (outcome.kind) {
    case 'canceled':
      return { message: 'Proof canceled', state: 'Canceled' };
    case 'canceling':
      return { message: 'Cancel requested: the proof ends Canceled and is charged only up to now; its prover stops the job within seconds', state: 'Canceling' };
    case 'already-canceling':
      return { message: 'Cancel already requested', state: 'Canceling' };
    case 'terminal':
      throw new ApiError(409, `Proof ${proof.id} already finished (state: ${outcome.state}); there is nothing to cancel`);
  }
}
