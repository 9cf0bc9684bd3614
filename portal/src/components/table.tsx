/** Tables with a caption for screen readers and server-side paging controls. */
import type { ReactNode } from 'react';
import { Button } from './button';

export interface Column<T> {
  header: string;
  cell(row: T): ReactNode;
  className?: string;
}

export function DataTable<T>({ caption, columns, rows, rowKey, empty }: { caption: string; columns: Column<T>[]; rows: T[]; rowKey(row: T): string; empty?: ReactNode }) {
  return (
    <div className="table-wrap">
      <table className="table">
        <caption className="visually-hidden">{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.header} className={c.className}>
                {c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.length === 0 ? (
            <tr>
              <td colSpan={columns.length} className="table-empty">
                {empty ?? 'Nothing here yet.'}
              </td>
            </tr>
          ) : (
            rows.map((row) => (
              <tr key={rowKey(row)}>
                {columns.map((c) => (
                  <td key={c.header} className={c.className} data-label={c.header}>
                    {c.cell(row)}
                  </td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
    </div>
  );
}

/** Previous / next over a server-paged list; `total` when the server counts, `hasMore` when it does not. */
export function Pagination({ page, pageSize, total, hasMore, count, onPage }: { page: number; pageSize: number; total?: number; hasMore?: boolean; count: number; onPage(page: number): void }) {
  const first = count === 0 ? 0 : (page - 1) * pageSize + 1;
  const last = (page - 1) * pageSize + count;
  const more = total !== undefined ? last < total : Boolean(hasMore);
  if (page === 1 && !more) return total !== undefined && total > 0 ? <p className="pagination-summary muted small">{total === 1 ? '1 result' : `${total} results`}</p> : null;
  return (
    <nav className="pagination" aria-label="Pages">
      <p className="muted small" aria-live="polite">
        {total !== undefined ? `${first}–${last} of ${total}` : `${first}–${last}`}
      </p>
      <div className="pagination-buttons">
        <Button size="small" disabled={page <= 1} onClick={() => onPage(page - 1)}>
          Previous
        </Button>
        <Button size="small" disabled={!more} onClick={() => onPage(page + 1)}>
          Next
        </Button>
      </div>
    </nav>
  );
}
