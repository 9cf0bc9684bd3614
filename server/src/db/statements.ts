/**
 * The fixed statements of the hot path (a decision's create), built once and sent in as few round
 * trips as the dialect allows (issue 10).
 *
 * How it works:
 * - `insertStatement(db, table)` gives a function from rows to a compiled INSERT. Kysely builds an
 *   operation tree and compiles it to SQL on every call; for the inserts of a create (a decision
 *   row of 40-odd columns, its audit record, four events) that was most of the query-building time.
 *   Here the SQL text is Kysely's own, compiled the first time a shape is seen (the row count and
 *   the columns with a defined value, in order) and kept; later calls only lay the values out as
 *   parameters, row by row in column order, which is what Kysely does for rows of plain values.
 *   Rows of one call with different columns, or a value that is not a plain one (a Kysely
 *   expression), are compiled by Kysely as before.
 * - `runTogether(trx, dialect, writes, last)` runs statements whose results nobody reads, then `last`,
 *   and returns `last`'s result. On PostgreSQL that is ONE statement: each write becomes a
 *   data-modifying CTE, `with w0 as (insert ...), w1 as (insert ...) <last>`, so a create's unit
 *   costs one round trip instead of one per statement. PostgreSQL runs the parts against one
 *   snapshot and checks foreign keys at the end of the statement, so a child row may be inserted
 *   beside its parent; no part sees another's writes, so `last` must not read what the writes
 *   write (callers read other tables). A failing part fails the whole statement, as a failing
 *   statement of the sequence would fail the unit. On SQLite the statements run one after another
 *   (in-process calls: no round trips to save), in the order given.
 * - `template(names, build)`: a query built and compiled once, at start, whose parameters are
 *   supplied by name per call (the poll path's `rowByIdQuery` does the same by hand).
 * - On PostgreSQL every text built here runs as a named prepared statement (`preparedNameOf`,
 *   applied in database.ts): parsed and planned once per connection.
 */
import { CompiledQuery, type Kysely, type QueryResult } from 'kysely';
import type { DialectName } from './database.js';
import type { Database } from './schema.js';

type Row = Record<string, unknown>;

/** An INSERT into `table` compiled once per row shape. See the opening comment. */
export function insertStatement<T extends keyof Database & string>(db: Kysely<Database>, table: T): (rows: ReadonlyArray<Database[T]>) => CompiledQuery {
  // Shapes are few (fixed row types, small row counts), so a short list compared column by column
  // (property names, so the comparisons are of identical strings); the bound only guards against
  // a caller inserting ever-changing row counts.
  const shapes: Array<{ count: number; columns: string[]; sql: string }> = [];
  const compileWithKysely = (rows: ReadonlyArray<Database[T]>) => db.insertInto(table).values(rows as never).compile();
  return (rows) => {
    const first = rows[0] as unknown as Row | undefined;
    if (first === undefined) throw new RangeError(`insert into ${table} without rows`);
    const columns: string[] = [];
    for (const column in first) if (first[column] !== undefined) columns.push(column);
    const parameters: unknown[] = [];
    for (let i = 0; i < rows.length; i++) {
      const row = rows[i] as unknown as Row;
      if (i > 0) {
        let defined = 0;
        for (const column in row) if (row[column] !== undefined) defined++;
        if (defined !== columns.length) return compileWithKysely(rows);
      }
      for (const column of columns) {
        const value = row[column];
        if (value === undefined || (typeof value === 'object' && value !== null) || typeof value === 'function') return compileWithKysely(rows);
        parameters.push(value);
      }
    }
    let shape = shapes.find((s) => s.count === rows.length && s.columns.length === columns.length && s.columns.every((c, i) => c === columns[i]));
    if (shape === undefined) {
      shape = { count: rows.length, columns, sql: compileWithKysely(rows).sql };
      if (shapes.length < 64) {
        shapes.push(shape);
        prepareOnPostgres(shape.sql);
      }
    }
    return CompiledQuery.raw(shape.sql, parameters);
  };
}

/**
 * A query built and compiled once, its parameters supplied per call by name. `build` gets a marker
 * for each name and must use every value through one (a literal of its own would be compiled into
 * every call's parameters, so it throws at start instead).
 */
export function template<P extends string, R>(
  names: readonly P[],
  // The markers stand in for values of any column type.
  build: (params: Record<P, never>) => { compile(): CompiledQuery<R> },
): (values: Record<P, unknown>) => CompiledQuery<R> {
  const markers = Object.fromEntries(names.map((name) => [name, `\u0000${name}\u0000`])) as Record<P, string>;
  const { sql, parameters } = build(markers as Record<P, never>).compile();
  prepareOnPostgres(sql);
  const order = parameters.map((value) => {
    const name = names.find((n) => markers[n] === value);
    if (name === undefined) throw new Error(`template: a parameter of ${sql} is not one of its named values`);
    return name;
  });
  return (values) => CompiledQuery.raw(sql, order.map((name) => values[name])) as CompiledQuery<R>;
}

/** Runs `writes`, then `last`, in one statement on PostgreSQL. See the opening comment. */
export async function runTogether<R>(trx: Kysely<Database>, dialect: DialectName, writes: readonly CompiledQuery[], last: CompiledQuery<R>): Promise<QueryResult<R>> {
  if (writes.length === 0) return trx.executeQuery(last);
  if (dialect === 'sqlite') {
    for (const write of writes) await trx.executeQuery(write);
    return trx.executeQuery(last);
  }
  const { sql, parameters } = combinedStatement(writes, last);
  return trx.executeQuery(CompiledQuery.raw(sql, parameters as unknown[]) as CompiledQuery<R>);
}

/** A statement's text and values: a compiled query, or a planned statement (group-commit.ts). */
type Statement = { readonly sql: string; readonly parameters: readonly unknown[] };

/**
 * PostgreSQL: `writes` then `last` as the ONE statement `runTogether` sends, for a caller that
 * sends it itself (a planned unit's statement, ADR 0037). No writes: `last` as it is.
 */
export function combinedStatement(writes: readonly Statement[], last: Statement): Statement {
  if (writes.length === 0) return last;
  const parameters: unknown[] = [];
  for (const write of writes) for (const value of write.parameters) parameters.push(value);
  for (const value of last.parameters) parameters.push(value);
  return { sql: combinedSql(writes, last), parameters };
}

// The combined text of each sequence of statement texts seen, in a tree keyed by the parts'
// texts (long-lived strings, so looking them up costs no rehashing of a new string per call).
interface CombinedNode {
  next: Map<string, CombinedNode>;
  sql?: string;
}
const combinedRoot: CombinedNode = { next: new Map() };

/**
 * `with w0 as (<write 0>), ... <last>` with the placeholders renumbered into one sequence, built
 * once per sequence of texts. Every value of these statements is a parameter, so a `$` in their
 * text is always a placeholder.
 */
function combinedSql(writes: readonly Statement[], last: Statement): string {
  let node = combinedRoot;
  for (const part of [...writes, last]) {
    let next = node.next.get(part.sql);
    if (next === undefined) {
      next = { next: new Map() };
      node.next.set(part.sql, next);
    }
    node = next;
  }
  if (node.sql !== undefined) return node.sql;
  if (/^\s*with\b/i.test(last.sql)) throw new Error('runTogether: the last statement must not have a WITH clause of its own');
  let offset = 0;
  const renumber = (query: Statement) => {
    const text = offset === 0 ? query.sql : query.sql.replace(PLACEHOLDER, (_, n: string) => `$${Number(n) + offset}`);
    offset += query.parameters.length;
    return text;
  };
  const sql = `with ${writes.map((write, i) => `w${i} as (${renumber(write)})`).join(', ')} ${renumber(last)}`;
  node.sql = sql;
  prepareOnPostgres(sql);
  return sql;
}

const PLACEHOLDER = /\$(\d+)/g;

/**
 * PostgreSQL: the hot path's statements run as named prepared statements. Each connection parses
 * and plans such a statement once and then only binds and executes it: the database spent more of
 * its CPU parsing and planning a create's statements than executing them. The texts come from
 * here only (templates, insert shapes, combined statements), so the set is small and fixed;
 * `database.ts` gives a registered text its name when the pool's connections run it. None of them
 * selects `*`: a prepared statement's result columns are fixed when it is planned, so a column
 * added by a later migration must not change them (PostgreSQL refuses such a re-plan). After five
 * executions PostgreSQL may keep a generic plan; ANALYZE (autovacuum, on by default) invalidates it
 * when a table's statistics change, so a plan chosen while a table was small does not outlive its
 * growth. The pool keeps `plan_cache_mode` at its default for this: forcing custom plans on every
 * execution cost creates a third of their throughput (docs/performance.md, "Latest results").
 */
const preparedNames = new Map<string, string>();
const PREPARED_LIMIT = 256;

function prepareOnPostgres(sql: string): void {
  if (!preparedNames.has(sql) && preparedNames.size < PREPARED_LIMIT) preparedNames.set(sql, `cds_${preparedNames.size + 1}`);
}

/**
 * Registers a fixed text written by hand (the delivery worker's cycle) to run as a named prepared
 * statement on PostgreSQL, and returns it. The same rules as above: no `select *`, and values only
 * as parameters, so the text is the same on every call.
 */
export function preparedOnPostgres(sql: string): string {
  prepareOnPostgres(sql);
  return sql;
}

/** Every registered text, in the order registered (tests read a hot statement's plan by its text). */
export function registeredStatements(): string[] {
  return [...preparedNames.keys()];
}

/** The prepared statement name of a registered text (PostgreSQL), or undefined. */
export function preparedNameOf(sql: string): string | undefined {
  return preparedNames.get(sql);
}
