/**
 * The part of a policy's input its document can read: ZEN is given only that.
 *
 * How it works. On every evaluation ZEN converts each field of the input into its own values
 * (about 2 µs a field on our machines, docs/performance.md), and the BNPL input carries
 * twenty-two features the bundled policy never reads. A graph of data-only nodes (input, output,
 * expression, decision table, switch) reaches a field of its context by name only (in an
 * expression, a table's input field or a cell) or through `$root` and `$nodes`, which expose the
 * whole input; function nodes, sub-decisions and custom nodes get the whole input too. So when a
 * document's text never names a top-level field, that field is left out; a document that mentions
 * `$root` or `$nodes`, or has any other kind of node, is given everything. The check is on the
 * whole text: a name inside a label or a description also keeps its field in, never the reverse.
 * The output check (policy.ts) still sees the full input. Every number given is checked first
 * (`assertZenSafeNumbers`): ZEN aborts the process on some.
 */

/**
 * Every top-level field of a policy input type, from a record naming each of them: a field added
 * to the type and not to the record fails to compile (it would never reach ZEN).
 */
export function inputFields<T>(fields: Record<keyof T & string, true>): (keyof T & string)[] {
  return Object.keys(fields) as (keyof T & string)[];
}

/** The node kinds a policy document may have (policy.ts refuses any other at load). */
export const DATA_ONLY_NODE_TYPES: ReadonlySet<string> = new Set(['inputNode', 'outputNode', 'decisionTableNode', 'expressionNode', 'switchNode']);

/** The top-level `fields` a document may read, or null when it must be given all of them. */
export function fieldsReadBy(document: unknown, fields: readonly string[]): readonly string[] | null {
  const nodes = (document as { nodes?: unknown } | null)?.nodes;
  if (!Array.isArray(nodes) || nodes.some((n) => !DATA_ONLY_NODE_TYPES.has((n as { type?: unknown } | null)?.type as string))) return null;
  const text = JSON.stringify(document);
  if (text.includes('$root') || text.includes('$nodes')) return null;
  const read = fields.filter((field) => text.includes(field));
  return read.length === fields.length ? null : read;
}

/**
 * What to hand ZEN for an input: the input itself, or a copy with only the fields read; either way
 * checked by `assertZenSafeNumbers`.
 */
export function policyInputFor<T extends object>(document: unknown, fields: readonly (keyof T & string)[]): (input: T) => object {
  const read = fieldsReadBy(document, fields);
  if (read === null) return (input) => assertZenSafeNumbers(input);
  return (input) => {
    const given: Record<string, unknown> = {};
    for (const field of read) if (field in input) given[field] = (input as Record<string, unknown>)[field];
    return assertZenSafeNumbers(given);
  };
}

/** The largest magnitude given to ZEN, and the smallest other than 0. */
export const ZEN_NUMBER_LIMITS = Object.freeze({ max: 1e15, min: 1e-12 });

/**
 * ZEN's Node binding aborts the whole process (a Rust panic converting the value, not an error)
 * on a number beyond about 1.8e19 in magnitude, and fails on one as small as 5e-324 (measured with
 * 0.54.0). A credit file is outside data, so every number given to ZEN is checked first: finite,
 * at most 1e15 (well past any amount in cents) and, unless 0, at least 1e-12 in magnitude. A value
 * outside fails this one evaluation with a RangeError naming the field, never its value.
 */
export function assertZenSafeNumbers<T>(value: T, path = 'input'): T {
  if (typeof value === 'number') {
    const magnitude = Math.abs(value);
    if (!Number.isFinite(value) || magnitude > ZEN_NUMBER_LIMITS.max || (magnitude !== 0 && magnitude < ZEN_NUMBER_LIMITS.min)) {
      throw new RangeError(`the policy's ${path} is outside the range the policy engine takes`);
    }
  } else if (Array.isArray(value)) {
    value.forEach((item, i) => assertZenSafeNumbers(item, `${path}[${i}]`));
  } else if (value !== null && typeof value === 'object') {
    for (const [key, item] of Object.entries(value)) assertZenSafeNumbers(item, `${path}.${key}`);
  }
  return value;
}
