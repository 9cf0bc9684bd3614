/**
 * CSV writing (RFC 4180) for the portal's exports: pure, no I/O.
 *
 * - Records end with CRLF; the first record is the header row.
 * - A cell holding a comma, a double quote, CR or LF is enclosed in double quotes and its double
 *   quotes are doubled; everything else is written as is.
 * - Formula injection (OWASP "CSV injection"): a spreadsheet runs a cell starting with `=`, `+`,
 *   `-` or `@` (and, in some, a tab or carriage return) as a formula. Such a cell gets a leading
 *   `'`, which spreadsheets show as text and nobody mistakes for data. The guard runs before the
 *   quoting, so a quoted cell is guarded too. Our own values never start with those characters
 *   (money is never negative, ids are hex), so only text a caller sent can be affected.
 * - null and undefined are empty cells; numbers are written with String() (callers format money
 *   as two-decimal strings and times as ISO 8601 themselves).
 */
export type CsvCell = string | number | boolean | null | undefined;

const FORMULA_START = /^[=+\-@\t\r]/;
const NEEDS_QUOTES = /[",\r\n]/;

export function csvCell(value: CsvCell): string {
  if (value === null || value === undefined) return '';
  let text = String(value);
  if (FORMULA_START.test(text)) text = `'${text}`;
  return NEEDS_QUOTES.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function csvRecord(cells: readonly CsvCell[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}
