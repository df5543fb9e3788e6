// Tables and their pagers. A table is declared once, as its columns (heading and how a
// record fills the cell): the server renders its head, the client its rows.
import type { Child } from 'hono/jsx';
import type { Pagination } from './api-types.ts';
import { shownText } from './format.ts';

/** A cell's text escaped (shownText); a cell of markup escapes its own. */
export const shownChild = (child: Child): Child => (typeof child === 'string' ? shownText(child) : child);

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
  /** Undefined until loaded: an empty body, not the `empty` line. */
  rows?: readonly T[];
  empty?: string;
  /** Extra attributes of a row (data-*). */
  rowAttributes?: (row: T) => Record<string, string>;
}

export function DataTable<T>({ id, caption, columns, rows, empty = 'Nothing here yet.', rowAttributes }: TableProps<T>) {
  return (
    <div class="table-wrap">
      <table id={id}>
        <caption class="sr-only">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col">{c.header}</th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows &&
            (rows.length ? (
              rows.map((row) => (
                <tr {...rowAttributes?.(row)}>
                  {columns.map((c) => (
                    <td class={c.numeric ? 'num' : undefined}>{shownChild(c.cell(row))}</td>
                  ))}
                </tr>
              ))
            ) : (
              <tr>
                <td colspan={columns.length}>{empty}</td>
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

export function Pager({ id, pagination, onGo }: PagerProps) {
  const page = pagination?.page ?? 1;
  const pages = Math.max(1, pagination?.pages ?? 1);
  return (
    <nav class="pager" aria-label="Pages" id={id}>
      <button type="button" disabled={!pagination || page <= 1} onClick={() => onGo?.(page - 1)}>
        Previous
      </button>
      <span aria-live="polite">{pagination && `Page ${page} of ${pages} · ${pagination.total} in all`}</span>
      <button type="button" disabled={!pagination || page >= pages} onClick={() => onGo?.(page + 1)}>
        Next
      </button>
    </nav>
  );
}
