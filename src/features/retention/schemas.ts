// What a tombstone answers beside its record's fields (docs/callers.md "Deleting
// records"): when it was deleted, and by whom. Shared by the four records a deletion
// keeps as tombstones (proofs, executions, programs, verifications).
import { z } from '@hono/zod-openapi';
import { Timestamp } from '../../lib/schemas.ts';

export const TombstoneFields = {
  deleted_at: Timestamp.optional().openapi({
    description:
      'Present only on a deleted record (DELETE, or the organization’s retention): when its files went. The record stays with its billing figures.',
  }),
  deleted_by: z.string().optional().openapi({
    description:
      'Present only on a deleted record: who deleted it (a console user’s email; an API key’s owner, with the key; `retention`). Absent on records deleted before this was kept.',
  }),
};

/** The tombstone's fields of a row: none unless it is deleted. */
export const tombstoneOf = (r: { deleted_at: string | null; deleted_by?: string | null }) =>
  r.deleted_at ? { deleted_at: r.deleted_at, ...(r.deleted_by ? { deleted_by: r.deleted_by } : {}) } : {};
