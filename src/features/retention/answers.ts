// What a deletion answers, the same through /v1 and the console: the tombstone (200, on
// the first request and every one after it), 404 for a record that is not the
// caller's, 409 for one still running. (A deleted record's files: refuseDeleted, src/lib/errors.ts.)
import type { Db } from '../../db/client.ts';
import { ApiError, notFound } from '../../lib/errors.ts';
import type { NamedActor } from '../accounts/audit.ts';
import { deleteArchived, type ArchiveKind, type ArchiveStub } from './archive.ts';
import { deletionOutcome, type DeletionOutcome } from './data.ts';

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

/**
 * A proof's or execution's deletion, from its batch (the live record's statements and its
 * archive stub, read together): the live record's tombstone, or, when only its stub was
 * found, the archived record's deletion (deleteArchived). Answers the record as it now
 * reads and the ids whose objects to purge.
 */
export async function deletedRun<Row extends { deleted_at: string | null; state?: string; status?: string }>(
  db: Db,
  bucket: R2Bucket,
  kind: ArchiveKind,
  id: string,
  by: NamedActor,
  read: { tombstone: { id: string }[]; record: Row[]; archived: ArchiveStub[] },
): Promise<{ row: Row; purge: string[] }> {
  const [stub] = read.archived;
  const gone = !read.record[0] && stub ? await deleteArchived<Row>(db, bucket, stub, id, by) : undefined;
  if (gone) return { row: gone.row, purge: gone.deleted ? [id] : [] };
  return { row: deletedRow(kind, id, deletionOutcome(read.record[0])), purge: read.tombstone.map((t) => t.id) };
}
