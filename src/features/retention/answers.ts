// What a deletion answers, the same through /v1 and the console: the tombstone (200, on
// the first request and every one after it), 404 for a record that is not the
// caller's, 409 for one still running. (A deleted record's files: refuseDeleted, src/lib/errors.ts.)
import { ApiError, notFound } from '../../lib/errors.ts';
import type { DeletionOutcome } from './data.ts';

const WHAT = { proof: 'Proof', execution: 'Execution', program: 'Program', verification: 'Verification' } as const;

/** The row of a deletion that stands, or the refusal. */
export function deletedRow<R>(kind: keyof typeof WHAT, id: string, outcome: DeletionOutcome<R & { state?: string; status?: string }>): R {
  switch (outcome.kind) {
    case 'missing':
      throw notFound(WHAT[kind]);
    case 'deleted':
      return outcome.row;
    case 'busy':
      if (kind === 'verification') throw new ApiError(409, `Verification ${id} is still processing: let it finish, then delete it`);
      if (kind === 'program')
        throw new ApiError(
          409,
          `Program ${id} has queued or running jobs (its commit, or proofs, executions or verifications of it): cancel them or let them finish, then delete it`,
        );
      throw new ApiError(
        409,
        `${WHAT[kind]} ${id} is still running (${outcome.row.state ?? outcome.row.status}): cancel it or let it finish, then delete it`,
      );
  }
}
