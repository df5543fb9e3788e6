// The statements executions own, scoped to the caller's organization (`org`: its id,
// or SQL for the API key's organization, src/middleware/auth.ts asCaller).
import { and, desc, eq, getTableColumns } from 'drizzle-orm';
import type { Db } from '../../db/client.ts';
import { executions, programs } from '../../db/schema.ts';
import { inPage, type Org } from '../../lib/pages.ts';
import { logPosition, programRuns, runStateSql, type EventSubject, type LogPosition } from '../runs/data.ts';
import { executionRecord, type ExecutionRow } from './schemas.ts';

/** An execution's columns and its run state (limits, why it waits: runStateSql), as every read of execution records selects them. */
export const executionColumns = () => ({ ...getTableColumns(executions), run_state: runStateSql('execute', 'executions').as('run_state') });

/** The caller's execution by id (no row: 404). */
export const executionQuery = (db: Db, org: Org, id: string) =>
  db
    .select(executionColumns())
    .from(executions)
    .where(and(eq(executions.id, id), eq(executions.org_id, org)));

/** A page of a program's executions, newest first, with the program's counter of them (src/features/runs/data.ts runsPage). */
export const programExecutions = (db: Db, org: Org, programId: string, page: number, pageSize: number) =>
  programRuns(
    db,
    org,
    programId,
    programs.execution_count,
    inPage(
      db
        .select(executionColumns())
        .from(executions)
        .where(and(eq(executions.program_id, programId), eq(executions.org_id, org)))
        .orderBy(desc(executions.created_at), desc(executions.id))
        .$dynamic(),
      page,
      pageSize,
    ),
  );

const TERMINAL_EXECUTION_STATUSES = new Set(['Succeeded', 'Failed']);

/** What an execution's event stream reads and sends (src/features/runs/events.ts). */
export const executionEvents: EventSubject<ExecutionRow & LogPosition> = {
  name: 'Execution',
  query: (db, org, id) =>
    db
      .select({ ...executionColumns(), ...logPosition('execute', 'executions') })
      .from(executions)
      .where(and(eq(executions.id, id), eq(executions.org_id, org))),
  record(row) {
    const record = executionRecord(row);
    return { json: JSON.stringify(record), terminal: TERMINAL_EXECUTION_STATUSES.has(record.status) };
  },
};
