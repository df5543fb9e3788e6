// The registry of job kinds: one contract module per kind (./commit.ts, ./proof.ts,
// ./verify.ts, ./execute.ts; the agent's side: prover-agent/src/agent/kinds/). Adding a kind: its protocol variant
// (prover-agent/src/protocol/jobs.ts JOB_KINDS, CompleteRequest), its module here and
// on the agent, and a line in each registry. The claim's query, which joins what each
// kind's claim names, is src/jobs/state.ts claimJob.
import { JOB_KINDS, type JobKind } from 'prover-agent/protocol';
import { commitJob, type CommitDone } from './commit.ts';
import type { JobKindContract } from './contract.ts';
import { executeJob, type ExecuteDone } from './execute.ts';
import { proofJob, type ProofDone } from './proof.ts';
import { verifyJob, type VerifyDone } from './verify.ts';

export const JOB_KIND_CONTRACTS = { commit: commitJob, proof: proofJob, verify: verifyJob, execute: executeJob } as const satisfies {
  [K in JobKind]: JobKindContract<K>;
};

/**
 * The contract of `kind`, for code that works on any kind (its report and completion
 * are checked against the kind's own types inside its module).
 */
export const contractOf = (kind: JobKind) => JOB_KIND_CONTRACTS[kind] as JobKindContract;

/** Every kind's contract, in the order of the protocol's JOB_KINDS. */
export const ALL_JOB_KINDS: readonly JobKindContract[] = JOB_KINDS.map(contractOf);

/** What a completed job of each kind records (its contract's completion()). */
export type Completion =
  | { kind: 'commit'; done: CommitDone }
  | { kind: 'proof'; done: ProofDone }
  | { kind: 'verify'; done: VerifyDone }
  | { kind: 'execute'; done: ExecuteDone };
