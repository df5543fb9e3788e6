// Execute jobs: a program run on an input without a proof (public values, cycle
// counts, segments). The subject is the execution.
//
//   queued   leased (running)   done
//   queued   running            succeeded | failed | canceled
import { inArray, sql } from 'drizzle-orm';
import { artifactKey, keySql } from '../../lib/artifact-keys.ts';
import { executions } from '../../db/schema.ts';
import { isProgramFile } from './commit.ts';
import { updateSubjects, type Claimed, type ColumnsOf, type JobKindContract, type SubjectStates } from './contract.ts';

export interface ExecuteDone {
  succeeded: boolean;
  error: string | null;
  public_values: string | null;
  num_instructions: number | null;
  total_cycle: number | null;
  num_segments: number | null;
  total_tick: number | null;
}

const subject: SubjectStates = {
  table: executions,
  queued: { status: 'queued' },
  running: (now) => ({ status: 'running', launched_at: sql`coalesce(${executions.launched_at}, ${now})` }),
  // A failure is charged nothing (docs/callers.md "Cost"): 0, never NULL (migrations/0023_fleet_authority.sql).
  failed: (now, message) => ({ status: 'failed', error_message: message, terminated_at: now, cost: 0 }),
  canceled: (now, cost) => ({ status: 'canceled', terminated_at: now, cost }),
  active: inArray(executions.status, ['queued', 'running']),
};

export const executeJob: JobKindContract<'execute', ExecuteDone, typeof executions.$inferSelect> = {
  kind: 'execute',
  subjectNoun: 'execution',
  subject,
  claim: {
    programId: ({ subject: execution }: Claimed<ColumnsOf<typeof executions>>) => sql`${execution.program_id}`,
    inputs: ({ program, subject: execution }: Claimed<ColumnsOf<typeof executions>>) =>
      sql`json_object('elf', ${program.elf_key}, 'vmexe', ${program.vmexe_key}, 'input', ${keySql(artifactKey.executionInput, execution.id)})`,
    isShared: isProgramFile,
    subject: { table: executions, describe: (execution) => ({ execution: { mode: execution.mode } }) },
  },
  results: [],
  async completion(_ctx, report) {
    const succeeded = report.exit_code === 0 && !report.error;
    return {
      done: {
        succeeded,
        error: report.error ?? (report.exit_code === 0 ? null : `guest exited with code ${report.exit_code}`),
        // A failed run revealed nothing the caller can rely on: no public values (null, not zeros).
        public_values: succeeded ? report.public_values : null,
        num_instructions: report.metrics.num_instructions ?? null,
        total_cycle: report.metrics.total_cycle ?? report.metrics.num_instructions ?? null,
        num_segments: report.metrics.num_segments ?? null,
        total_tick: report.metrics.total_tick ?? null,
      },
    };
  },
  complete: (db, mine, done, at) => [
    updateSubjects(db, executeJob, mine, {
      status: done.succeeded ? 'succeeded' : 'failed',
      error_message: done.error ?? '',
      public_values: done.public_values,
      num_instructions: done.num_instructions,
      total_cycle: done.total_cycle,
      num_segments: done.num_segments,
      total_tick: done.total_tick,
      cost: at.cost,
      terminated_at: at.now,
    }),
  ],
};
