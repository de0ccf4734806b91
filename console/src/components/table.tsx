import type { ReactNode } from 'react';
import { Empty } from './ui.tsx';

/** One column of a DataTable. */
export interface Column<T> {
  /** The column's header. */
  header: string;
  /** What one row shows in this column. */
  cell: (row: T) => ReactNode;
  /** Classes of the column's cells (not of its header), e.g. 'mono small'. */
  className?: string;
  /** A column of numbers: its header and its cells are right-aligned (class num). */
  num?: boolean;
}

function cellClass({ num, className }: { num?: boolean; className?: string }): string | undefined {
  return [num ? 'num' : '', className ?? ''].filter(Boolean).join(' ') || undefined;
}

/**
 * A list as the console's pages show it: one row per item, keyed by its id, whose first column is the row's header,
 * and an optional last column of buttons (`actions`) whose header says "Actions" to screen readers only. The table
 * is named by a caption that only screen readers see, or by a heading on the page (`labelledBy`, its id).
 *
 * Nothing is shown before the rows are loaded (the page shows Loading); with no rows, `empty` is shown instead (or
 * nothing, where the page says it itself).
 */
export function DataTable<T extends { readonly id: string }>({
  caption,
  labelledBy,
  rows,
  columns,
  actions,
  rowAttributes,
  empty,
}: ({ caption: string; labelledBy?: never } | { labelledBy: string; caption?: never }) & {
  rows: readonly T[] | undefined;
  columns: readonly [Column<T>, ...Column<T>[]];
  actions?: (row: T) => ReactNode;
  /** data-* attributes of a row (tests and scripts find rows by them). */
  rowAttributes?: (row: T) => Record<`data-${string}`, string>;
  empty?: ReactNode;
}) {
  if (!rows) return null;
  if (rows.length === 0) return empty === undefined ? null : <Empty>{empty}</Empty>;
  const [first, ...rest] = columns;
  return (
    <div className="table-wrap">
      <table className="table" aria-labelledby={labelledBy}>
        {caption ? <caption className="visually-hidden">{caption}</caption> : null}
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.header} scope="col" className={c.num ? 'num' : undefined}>
                {c.header}
              </th>
            ))}
            {actions ? (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            ) : null}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => (
            <tr key={row.id} {...rowAttributes?.(row)}>
              <th scope="row" className={cellClass(first)}>
                {first.cell(row)}
              </th>
              {rest.map((c) => (
                <td key={c.header} className={cellClass(c)}>
                  {c.cell(row)}
                </td>
              ))}
              {actions ? <td className="actions">{actions(row)}</td> : null}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
