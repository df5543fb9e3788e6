// Commit jobs: a registered program's commit (its app_exe_commit and verification
// baseline), computed by an agent from its ELF and VMEXE. The subject is the program.
//
//   queued       leased (running)   done
//   not_ready    processing         ready | failed
import { eq, inArray, sql } from 'drizzle-orm';
import { configs, programs } from '../../db/schema.ts';
import { artifactKey } from '../../lib/artifact-keys.ts';
import { ApiError } from '../../lib/errors.ts';
import { updateSubjects, type JobKindContract, type SubjectStates } from './contract.ts';

/** A program's own files: written at registration (ELF, VMEXE) or by its commit (baseline), never rewritten; every job of the program reads them. */
export const isProgramFile = (name: string) => name === 'elf' || name === 'vmexe' || name === 'baseline';

export interface CommitDone {
  app_exe_commit: string;
  baselineKey: string;
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
  resultKey: (programId, name) => (name === 'baseline' ? artifactKey.programBaseline(programId) : null),
  async completion({ db, job, resultSize }, report) {
    const config = (await db.select().from(configs).where(eq(configs.id, job.config_id)).get())!;
    if (report.app_vm_commit.toLowerCase() !== config.app_vm_commit.toLowerCase()) {
      // The engine's keys are not the config's: the program cannot be proven under it.
      return {
        fail: `The prover's app_vm_commit ${report.app_vm_commit} differs from the config's ${config.app_vm_commit}: the prover host's keys do not match config ${config.id}`,
      };
    }
    const baselineKey = artifactKey.programBaseline(job.subject_id);
    if ((await resultSize('baseline', baselineKey)) === null) throw new ApiError(400, 'Upload the baseline result before completing');
    return { done: { app_exe_commit: report.app_exe_commit.toLowerCase(), baselineKey } };
  },
  complete: (db, mine, done, at) => [
    updateSubjects(db, commitJob, mine, {
      status: 'ready',
      app_exe_commit: done.app_exe_commit,
      baseline_key: done.baselineKey,
      terminated_at: at.now,
    }),
  ],
};
