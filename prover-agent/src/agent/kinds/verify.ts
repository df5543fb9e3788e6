// Verify jobs: a caller's proof checked against the program's baseline (or the config's keys alone).
import type { VerifyResult } from '../../engine/types.ts';
import type { EngineOp } from '../engine-process.ts';
import type { JobKindHandler } from './contract.ts';

export const verifyJob: JobKindHandler<'verify', Extract<EngineOp, { op: 'verify' }>> = {
  kind: 'verify',
  subjectNoun: 'verification',
  operation: (job, f) => ({
    op: 'verify',
    proof_type: job.verification?.proof_type ?? 'stark',
    proofPath: f.proof,
    baselinePath: f.baseline ?? null,
    app_exe_commit: job.program?.app_exe_commit ?? null,
  }),
  async report(_op, result, ctx) {
    const r = result as VerifyResult;
    ctx.log(r.verified ? 'proof verified' : `proof rejected: ${r.reason}`);
    return { kind: 'verify', verified: r.verified, reason: r.reason };
  },
};
