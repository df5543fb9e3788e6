// Your sessions: each browser signed in as you, and the end of any or all of them.
import type { ConsoleSession } from '../api-types.ts';
import { formatDate, NONE } from '../format.ts';
import { type Column, DataTable } from '../table.tsx';

const sessionColumns = (onEnd?: (s: ConsoleSession) => void): Column<ConsoleSession>[] => [
  { header: 'Signed in', cell: (s) => formatDate(s.created_at) + (s.current ? ' (this browser)' : '') },
  { header: 'Last active', cell: (s) => formatDate(s.last_refreshed_at ?? s.created_at) },
  { header: 'Browser', cell: (s) => s.user_agent ?? NONE },
  { header: 'Address', cell: (s) => s.client_address ?? NONE },
  {
    header: '',
    cell: (s) => (
      <button type="button" class="danger" aria-label={`End the session signed in ${formatDate(s.created_at)}`} onClick={() => onEnd?.(s)}>
        {s.current ? 'Sign out' : 'End'}
      </button>
    ),
  },
];

export interface SessionsViewProps {
  sessions?: ConsoleSession[];
  onEnd?: (s: ConsoleSession) => void;
  onEndAll?: () => void;
}

export const SessionsView = ({ sessions, onEnd, onEndAll }: SessionsViewProps) => (
  <>
    <p>
      Each browser signed in as you. Ending a session signs that browser out at once. Changing or resetting your password ends them all.
    </p>
    <DataTable
      id="sessions"
      caption="Your sessions"
      columns={sessionColumns(onEnd)}
      rows={sessions}
      empty="No live sessions."
      rowAttributes={(s): Record<string, string> => (s.current ? { 'data-current': 'true' } : {})}
    />
    <button type="button" class="danger" id="end-all-sessions" onClick={onEndAll}>
      Sign out everywhere
    </button>
  </>
);
