/**
 * CommonJS shared by the sources of the SQLite connections that live in worker threads (the writer
 * thread, the off-loop reader and writer: each is plain CommonJS evaluated in its worker, with no
 * build step of its own). Interpolated into those sources after their `db` is opened.
 */

/**
 * `prepared(text)`: the connection `db`'s statement for this SQL text, prepared once and kept by
 * text; past `limit` texts the oldest is dropped (the texts are the callers' constants, so the
 * limit is a guard, never reached in use).
 */
export function preparedStatementsSource(limit: number): string {
  return `
const statements = new Map();
function prepared(text) {
  let statement = statements.get(text);
  if (statement === undefined) {
    statement = db.prepare(text);
    if (statements.size >= ${limit}) statements.delete(statements.keys().next().value);
    statements.set(text, statement);
  }
  return statement;
}
`;
}
