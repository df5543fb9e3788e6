// Commit jobs: the program's commit and verification baseline, from its ELF and VMEXE.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { CommitResult } from '../../engine/types.ts';
import type { EngineOp } from '../engine-process.ts';
import { withResults, type JobKindHandler } from './contract.ts';

export const commitJob: JobKindHandler<'commit', Extract<EngineOp, { op: 'commit' }>> = {
  kind: 'commit',
  subjectNoun: 'program',
  operation: (_job, f) => ({ op: 'commit', elfPath: f.elf, vmexePath: f.vmexe }),
  async report(_op, result, ctx) {
    const r = result as CommitResult;
    const baseline = join(ctx.dir, 'baseline.json');
    await writeFile(baseline, JSON.stringify(r.baseline));
    return {
      kind: 'commit',
      app_exe_commit: r.app_exe_commit,
      app_vm_commit: r.app_vm_commit,
      ...withResults(await ctx.sendResult('baseline', baseline)),
    };
  },
};
