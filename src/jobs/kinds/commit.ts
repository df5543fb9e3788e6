// Commit jobs: a registered program's commit (its app_exe_commit and verification
// baseline), computed by an agent from its ELF and VMEXE. The subject is the program.
//
//   queued       leased (running)   done
//   not_ready    processing         ready | failed
import { eq, inArray, sql } from 'drizzle-orm';
import { configs, programs, type ServedObject } from '../../db/schema.ts';
import { ApiError } from '../../lib/errors.ts';
import { updateSubjects, type JobKindContract, type SubjectStates } from './contract.ts';

/** A program's own files: written at registration (ELF, VMEXE) or by its commit (baseline), never rewritten; every job of the program reads them. */
export const isProgramFile = (name: string) => name === 'elf' || name === 'vmexe' || name === 'baseline';

export interface CommitDone {
  app_exe_commit: string;
  /** The baseline the program serves from now on: this attempt's own object (src/jobs/results.ts). */
  baseline: ServedObject;
}

const subject: SubjectStates = {
  table: programs,
  queued: { status: 'not_ready' },
  running: (now) => ({ status: 'processing', launched_at: sql`coalesce(${programs.launched_at}, ${now})` }),
  failed: (now, message) => ({ status: 'failed', error_message: message, terminated_at: now }),
  // Callers cannot cancel a commit; a cancel recorded anyway fails it.
  canceled: (now) => subject.failed(now, 'canceled'),
  active: inArray(programs.status, ['not_ready', 'processing']),
};

export const commitJob: JobKindContract<'commit', CommitDone> = {
  kind: 'commit',
  subjectNoun: 'program',
  subject,
  claim: {
    // The subject is the program itself: the claim reads it as the claimed program.
    programId: ({ job }) => sql`${job.subject_id}`,
    inputs: ({ program }) => sql`json_object('elf', ${program.elf_key}, 'vmexe', ${program.vmexe_key})`,
    isShared: isProgramFile,
  },
  results: ['baseline'],
  async completion({ db, job, results }, report) {
    const config = (await db.select().from(configs).where(eq(configs.id, job.config_id)).get())!;
    if (report.app_vm_commit.toLowerCase() !== config.app_vm_commit.toLowerCase()) {
      // The engine's keys are not the config's: the program cannot be proven under it.
      return {
        fail: `The prover's app_vm_commit ${report.app_vm_commit} differs from the config's ${config.app_vm_commit}: the prover host's keys do not match config ${config.id}`,
      };
    }
    const baseline = await results.get('baseline');
    if (!baseline) throw new ApiError(400, 'Upload the baseline result before completing');
    const { key, sha256 } = await results.accept('baseline', baseline);
    return { done: { app_exe_commit: report.app_exe_commit.toLowerCase(), baseline: { key, sha256 } } };
  },
  complete: (db, mine, done, at) => [
    updateSubjects(db, commitJob, mine, {
      status: 'ready',
      app_exe_commit: done.app_exe_commit,
      baseline_key: done.baseline.key,
      baseline_sha256: done.baseline.sha256,
      terminated_at: at.now,
    }),
  ],
};
