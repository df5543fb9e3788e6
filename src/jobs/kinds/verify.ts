// Verify jobs: a check of a caller's STARK or EVM proof against a program's baseline
// (or, for an EVM proof, against a config's keys alone). The subject is the verification.
//
//   queued       leased (running)   done
//   processing   processing         verified | failed
import { eq, sql } from 'drizzle-orm';
import { verifications } from '../../db/schema.ts';
import { claimedProgram as g, claimedSubject, updateSubjects, type JobKindContract, type SubjectStates } from './contract.ts';

export interface VerifyDone {
  verified: boolean;
  reason: string | null;
}

const { subject: v, join } = claimedSubject('verify', verifications, 'v');

const subject: SubjectStates = {
  table: verifications,
  queued: { result: 'processing' },
  running: () => ({ result: 'processing' }),
  failed: (_now, message) => ({ result: 'failed', error_message: message }),
  // Callers cannot cancel a verification; a cancel recorded anyway fails it.
  canceled: (now) => subject.failed(now, 'canceled'),
  active: eq(verifications.result, 'processing'),
};

export const verifyJob: JobKindContract<'verify', VerifyDone, typeof verifications.$inferSelect> = {
  kind: 'verify',
  subjectNoun: 'verification',
  subject,
  claim: {
    join,
    programId: sql`${v.program_id}`,
    // No program files but its baseline; none at all for an EVM proof checked against a config alone.
    inputs: sql`CASE WHEN ${g.baseline_key} IS NULL THEN json_object('proof', ${v.proof_key}) ELSE json_object('proof', ${v.proof_key}, 'baseline', ${g.baseline_key}) END`,
    isShared: (name) => name === 'baseline',
    subject: {
      table: verifications,
      describe: (verification) => ({ verification: { proof_type: verification.proof_type === 'evm' ? 'evm' : 'stark' } }),
    },
  },
  resultKey: () => null,
  completion: async (_ctx, report) => ({ done: { verified: report.verified, reason: report.reason } }),
  complete: (db, mine, done) => [updateSubjects(db, verifyJob, mine, { result: done.verified ? 'verified' : 'failed', error_message: done.reason ?? '' })],
};
