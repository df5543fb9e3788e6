// Tables and their pagers. A table is declared once, as its columns (heading and how a
// record fills the cell): the server renders its head with grey rows (loading), the
// client its rows, or, for an empty list, what it means and the next step. On a narrow
// screen each row reads as a card, each cell under its column's heading (data-label).
import type { Child } from 'hono/jsx';
import type { Pagination } from './api-types.ts';
import { formatCount, shownChild } from './format.ts';
import { EmptyState, LOADING_LINES, Skeleton } from './widgets.tsx';

export interface Column<T> {
  header: string;
  cell: (row: T) => Child;
  /** Right-aligned, tabular figures. */
  numeric?: boolean;
}

export interface TableProps<T> {
  id: string;
  caption: string;
  columns: readonly Column<T>[];
  /** Undefined until loaded: grey rows. */
  rows?: readonly T[];
  /** An empty list: a line, or what it means and the next step (an EmptyState), shown instead of the table. */
  empty?: Child;
  /** Extra attributes of a row (data-*). */
  rowAttributes?: (row: T) => Record<string, string>;
}

export function DataTable<T>({ id, caption, columns, rows, empty = 'Nothing here yet.', rowAttributes }: TableProps<T>) {
  if (rows && !rows.length) return typeof empty === 'string' ? <EmptyState id={`${id}-empty`} title={empty} /> : <>{empty}</>;
  return (
    <div class="table-wrap">
      <table id={id} class="cards" aria-busy={rows ? undefined : 'true'}>
        <caption class="sr-only">{rows ? caption : `${caption} (loading)`}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col">{c.header}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows
            ? rows.map((row) => (
                <tr {...rowAttributes?.(row)}>
                  {columns.map((c) => (
                    <td class={c.numeric ? 'num' : undefined} data-label={c.header}>
                      {shownChild(c.cell(row))}
                    </td>
                  ))}
                </tr>
              ))
            : Array.from({ length: LOADING_LINES }, (_, i) => (
                <tr class="loading">
                  {columns.map((c, j) => (
                    <td data-label={c.header}>{c.header && <Skeleton size={((i + j) % 3) + 2} />}</td>
                  ))}
                </tr>
              ))}
        </tbody>
      </table>
    </div>
  );
}

export interface PagerProps {
  id: string;
  /** Undefined until loaded. */
  pagination?: Pagination;
  onGo?: (page: number) => void;
}

/** Where a list is and how long it is; its buttons only when there is more than one page. */
export function Pager({ id, pagination, onGo }: PagerProps) {
  if (!pagination?.total) return null;
  const page = pagination.page;
  const pages = Math.max(1, pagination.pages);
  return (
    <nav class="pager" aria-label="Pages" id={id}>
      {pages > 1 && (
        <button type="button" disabled={page <= 1} onClick={() => onGo?.(page - 1)}>
          Previous
        </button>
      )}
      <span aria-live="polite">{`Page ${formatCount(page)} of ${formatCount(pages)} · ${formatCount(pagination.total)} in all`}</span>
      {pages > 1 && (
        <button type="button" disabled={page >= pages} onClick={() => onGo?.(page + 1)}>
          Next
        </button>
      )}
    </nav>
  );
}
