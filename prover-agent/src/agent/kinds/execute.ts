// Execute jobs: the program run on the job's input, without a proof.
import type { ExecuteResult } from '../../engine/types.ts';
import type { EngineOp } from '../engine-process.ts';
import { pickMetrics, type JobKindHandler } from './contract.ts';

export const executeJob: JobKindHandler<'execute', Extract<EngineOp, { op: 'execute' }>> = {
  kind: 'execute',
  subjectNoun: 'execution',
  operation: (job, f) => ({
    op: 'execute',
    elfPath: f.elf,
    vmexePath: f.vmexe,
    inputPath: f.input,
    mode: job.execution?.mode ?? 'pure',
    cycleLimit: job.cycle_limit ?? null,
  }),
  async report(_op, result, ctx) {
    const r = result as ExecuteResult;
    if (r.stdout) ctx.log(r.stdout.trimEnd());
    if (r.error) ctx.log(`error: ${r.error}`);
    return { kind: 'execute', exit_code: r.exit_code, public_values: r.public_values, error: r.error, metrics: pickMetrics(r) };
  },
};
