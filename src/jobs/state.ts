// The job state machine: which states each kind of record moves through, and the
// guarded (conditional) updates that move them. Every transition is one D1 batch
// whose WHERE clauses re-check the state it starts from, so concurrent requests,
// agents and the sweep can never move a record twice or backwards.
//
// Invariant kept by every transition here: a proof is `Queued` exactly while its
// job row is `queued` (claimable).
import { and, eq, inArray } from 'drizzle-orm';
import type { Db } from '../db/client.ts';
import { jobs, proofs, type ProofState } from '../db/schema.ts';

export const PROOF_RUNNING_STATES = ['Executing', 'Executed', 'AppProving', 'AppProvingDone', 'PostProcessing'] as const satisfies ProofState[];
export const PROOF_TERMINAL_STATES = ['Succeeded', 'Failed', 'Canceled'] as const satisfies ProofState[];

export function isTerminalProofState(state: ProofState): boolean {
  return (PROOF_TERMINAL_STATES as readonly ProofState[]).includes(state);
}

export type CancelOutcome =
  | { kind: 'canceled' } // was Queued: stopped at once
  | { kind: 'canceling' } // running: its agent is told at its next heartbeat
  | { kind: 'already-canceling' }
  | { kind: 'terminal'; state: ProofState };

/** Cancels a proof: Queued → Canceled at once; running → Canceling; terminal → refused. */
export async function cancelProof(db: Db, proofId: string, now = new Date().toISOString()): Promise<CancelOutcome> {
  const proofJob = and(eq(jobs.kind, 'proof'), eq(jobs.subject_id, proofId));
  const [, queued] = await db.batch([
    db.update(jobs).set({ status: 'done', cancel_requested: true }).where(and(proofJob, eq(jobs.status, 'queued'))),
    db
      .update(proofs)
      .set({ state: 'Canceled', terminated_at: now })
      .where(and(eq(proofs.id, proofId), eq(proofs.state, 'Queued')))
      .returning({ id: proofs.id }),
  ]);
  if (queued.length) return { kind: 'canceled' };

  const [, running] = await db.batch([
    db.update(jobs).set({ cancel_requested: true }).where(and(proofJob, eq(jobs.status, 'leased'))),
    db
      .update(proofs)
      .set({ state: 'Canceling' })
      .where(and(eq(proofs.id, proofId), inArray(proofs.state, [...PROOF_RUNNING_STATES])))
      .returning({ id: proofs.id }),
  ]);
  if (running.length) return { kind: 'canceling' };

  const current = await db.select({ state: proofs.state }).from(proofs).where(eq(proofs.id, proofId)).get();
  if (!current) throw new Error(`proof ${proofId} vanished during cancel`);
  if (current.state === 'Canceling') return { kind: 'already-canceling' };
  return { kind: 'terminal', state: current.state };
}
