// Proof jobs: a proof of the program on the job's input, with its deferred child proofs.
import { join } from 'node:path';
import { isChildProofArtifact } from '../../protocol.ts';
import type { ProveResult } from '../../engine/types.ts';
import type { EngineOp } from '../engine-process.ts';
import { pickMetrics, withResults, type JobKindHandler } from './contract.ts';

export const proofJob: JobKindHandler<'proof', Extract<EngineOp, { op: 'prove' }>> = {
  kind: 'proof',
  subjectNoun: 'proof',
  operation: (job, f, dir) => ({
    op: 'prove',
    proof_type: job.proof!.proof_type,
    elfPath: f.elf,
    vmexePath: f.vmexe,
    inputPath: f.input,
    // In packing order: the claim lists them last, child-0 first.
    childProofPaths: job.artifacts.filter(isChildProofArtifact).map((n) => f[n]),
    outputPath: join(dir, `${job.proof!.proof_type}-proof.json`),
    app_exe_commit: job.program?.app_exe_commit ?? '',
    baselinePath: f.baseline,
    cycleLimit: job.cycle_limit ?? null,
  }),
  async report(op, result, ctx) {
    const r = result as ProveResult;
    const results = await ctx.sendResult(op.proof_type, op.outputPath);
    return {
      kind: 'proof',
      proofs: [op.proof_type],
      public_values: r.public_values,
      metrics: pickMetrics({ ...ctx.progress, ...r }),
      ...withResults(results),
    };
  },
};
