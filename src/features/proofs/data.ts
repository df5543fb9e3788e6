// The statements proofs own. Each is scoped to the caller's organization (`org`: its
// id, or SQL for the API key's organization, src/middleware/auth.ts asCaller): another
// organization's proof is found exactly as much as one that does not exist (404).
import { and, desc, eq, getTableColumns } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { programs, proofs } from '../../db/schema.ts';
import { PROOF_TERMINAL_STATES } from '../../jobs/kinds/proof.ts';
import { inPage, one, type Org } from '../../lib/pages.ts';
import { logPosition, programRuns, runStateSql, type EventSubject, type LogPosition } from '../runs/data.ts';
import { proofRecord, type ProofRow } from './schemas.ts';

/** A proof's columns and its run state (limits, why it waits: runStateSql), as every read of proof records selects them. */
export const proofColumns = () => ({ ...getTableColumns(proofs), run_state: runStateSql('proof', 'proofs').as('run_state') });

/** The caller's proof by id (no row: 404). */
export const proofQuery = (db: Db, org: Org, id: string) =>
  db
    .select(proofColumns())
    .from(proofs)
    .where(and(eq(proofs.id, id), eq(proofs.org_id, org)));

/** The organization's proof, or 404: for routes whose caller is checked already (the console's), the lookup runs alone. */
export async function findProof(db: Db, org: Org, id: string) {
  return one(await proofQuery(db, org, id), 'Proof');
}

/** A page of a program's proofs, newest first, with the program's counter of them (src/features/runs/data.ts runsPage). */
export const programProofs = (db: Db, org: Org, programId: string, page: number, pageSize: number) =>
  programRuns(
    db,
    org,
    programId,
    programs.proof_count,
    inPage(
      db
        .select(proofColumns())
        .from(proofs)
        .where(and(eq(proofs.program_id, programId), eq(proofs.org_id, org)))
        .orderBy(desc(proofs.created_at), desc(proofs.id))
        .$dynamic(),
      page,
      pageSize,
    ),
  );

const TERMINAL_PROOF_STATES = new Set<string>(PROOF_TERMINAL_STATES);

/** What a proof's event stream reads and sends (src/features/runs/events.ts). */
export const proofEvents: EventSubject<ProofRow & LogPosition> = {
  name: 'Proof',
  query: (db, org, id) =>
    db
      .select({ ...proofColumns(), ...logPosition('proof', 'proofs') })
      .from(proofs)
      .where(and(eq(proofs.id, id), eq(proofs.org_id, org))),
  record(row) {
    const record = proofRecord(row);
    return { json: JSON.stringify(record), terminal: TERMINAL_PROOF_STATES.has(record.state) };
  },
};
