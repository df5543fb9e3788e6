// Verify jobs: a check of a caller's STARK or EVM proof against a program's baseline
// (or, for an EVM proof, against a config's keys alone). The subject is the verification.
//
//   queued       leased (running)   done
//   processing   processing         verified | failed
import { eq, sql } from 'drizzle-orm';
import { batchByName } from '../../db/batch.ts';
import { configs, programs, verifications } from '../../db/schema.ts';
import { devProofSealProblem } from '../dev-proofs.ts';
import { updateSubjects, type Claimed, type ColumnsOf, type JobKindContract, type SubjectStates } from './contract.ts';

export interface VerifyDone {
  verified: boolean;
  reason: string | null;
}

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
    programId: ({ subject: verification }: Claimed<ColumnsOf<typeof verifications>>) => sql`${verification.program_id}`,
    // No program files but its baseline; none at all for an EVM proof checked against a config alone.
    inputs: ({ program, subject: verification }: Claimed<ColumnsOf<typeof verifications>>) =>
      sql`CASE WHEN ${program.baseline_key} IS NULL THEN json_object('proof', ${verification.proof_key}) ELSE json_object('proof', ${verification.proof_key}, 'baseline', ${program.baseline_key}) END`,
    isShared: (name) => name === 'baseline',
    subject: {
      table: verifications,
      describe: (verification) => ({ verification: { proof_type: verification.proof_type === 'evm' ? 'evm' : 'stark' } }),
    },
  },
  results: [],
  async completion({ db, job, artifacts, devProofSecret }, report) {
    if (job.engine !== 'dev' || !report.verified) return { done: { verified: report.verified, reason: report.reason } };
    // A dev proof's seal is checked here, with the secret only the Worker holds (the host checked the rest).
    if (!devProofSecret)
      return { done: { verified: false, reason: 'This deployment has no DEV_PROOF_SECRET: dev proofs cannot be checked' } };
    const read = await batchByName(db, {
      verification: db
        .select({ proof_key: verifications.proof_key, proof_type: verifications.proof_type, app_exe_commit: programs.app_exe_commit })
        .from(verifications)
        .leftJoin(programs, eq(programs.id, verifications.program_id))
        .where(eq(verifications.id, job.subject_id)),
      config: db.select().from(configs).where(eq(configs.id, job.config_id)),
    });
    const [verification, config] = [read.verification[0], read.config[0]];
    if (!verification || !config) return { fail: 'The verification or its config is gone' };
    const kind = verification.proof_type === 'evm' ? 'evm' : 'stark';
    const problem = await devProofSealProblem(
      artifacts,
      verification.proof_key,
      { kind, appExeCommit: verification.app_exe_commit, config },
      devProofSecret,
    );
    return { done: problem ? { verified: false, reason: problem } : { verified: true, reason: null } };
  },
  complete: (db, mine, done) => [
    updateSubjects(db, verifyJob, mine, { result: done.verified ? 'verified' : 'failed', error_message: done.reason ?? '' }),
  ],
};
