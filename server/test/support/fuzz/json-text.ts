/**
 * JSON as text, not as JavaScript values, so hostile bodies can say what JSON.stringify cannot:
 * duplicate keys, `__proto__` as an own key, numbers whose text is past double precision
 * (9007199254740993, 1e400, four hundred digits), negative zero. A body is a tree of `JsonNode`s;
 * objects keep an ordered list of entries (so a key may repeat), numbers keep their source text.
 */
export type JsonNode =
  | { t: 'null' }
  | { t: 'bool'; v: boolean }
  | { t: 'num'; raw: string }
  | { t: 'str'; v: string }
  | { t: 'arr'; items: JsonNode[] }
  | { t: 'obj'; entries: Array<[string, JsonNode]> };

export const jnull: JsonNode = { t: 'null' };
export const jnum = (raw: string): JsonNode => ({ t: 'num', raw });
export const jstr = (v: string): JsonNode => ({ t: 'str', v });

/** A plain JavaScript value (what a valid request body is written as) into a tree. */
export function fromJs(value: unknown): JsonNode {
  if (value === null || value === undefined) return jnull;
  if (typeof value === 'boolean') return { t: 'bool', v: value };
  if (typeof value === 'number') return jnum(Object.is(value, -0) ? '-0' : JSON.stringify(value));
  if (typeof value === 'string') return jstr(value);
  if (Array.isArray(value)) return { t: 'arr', items: value.map(fromJs) };
  return { t: 'obj', entries: Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, fromJs(v)]) };
}

/**
 * The tree as JSON text. Strings go through JSON.stringify, which escapes lone surrogates as
 * \udXXX (valid JSON text whose value is still a lone surrogate); raw bytes that are not UTF-8 at
 * all are added later, on the Buffer.
 */
export function toText(node: JsonNode): string {
  // Iterative: a tree thousands of levels deep must not overflow the test's own stack.
  const out: string[] = [];
  const stack: Array<JsonNode | string> = [node];
  while (stack.length > 0) {
    const item = stack.pop()!;
    if (typeof item === 'string') {
      out.push(item);
      continue;
    }
    switch (item.t) {
      case 'null':
        out.push('null');
        break;
      case 'bool':
        out.push(String(item.v));
        break;
      case 'num':
        out.push(item.raw);
        break;
      case 'str':
        out.push(JSON.stringify(item.v));
        break;
      case 'arr': {
        const parts: Array<JsonNode | string> = ['['];
        item.items.forEach((child, i) => parts.push(...(i > 0 ? [','] : []), child));
        parts.push(']');
        for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]!);
        break;
      }
      case 'obj': {
        const parts: Array<JsonNode | string> = ['{'];
        item.entries.forEach(([k, child], i) => parts.push(`${i > 0 ? ',' : ''}${JSON.stringify(k)}:`, child));
        parts.push('}');
        for (let i = parts.length - 1; i >= 0; i--) stack.push(parts[i]!);
        break;
      }
    }
  }
  return out.join('');
}

/**
 * The containers of the tree down to `maxDepth` (the root first), for mutations at any depth that
 * matters; below that a tree is only ever deep nesting, which is the mutation itself.
 */
export function containers(root: JsonNode, maxDepth = 64): JsonNode[] {
  const out: JsonNode[] = [];
  const stack: Array<[JsonNode, number]> = [[root, 0]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (node.t !== 'obj' && node.t !== 'arr') continue;
    out.push(node);
    if (depth >= maxDepth) continue;
    const children = node.t === 'obj' ? node.entries.map((e) => e[1]) : node.items;
    for (let i = children.length - 1; i >= 0; i--) stack.push([children[i]!, depth + 1]);
  }
  return out;
}

/** A deep copy, iterative (trees tens of thousands of levels deep); generated values may be shared constants. */
export function clone(root: JsonNode): JsonNode {
  const copyOf = (n: JsonNode): JsonNode => (n.t === 'arr' ? { t: 'arr', items: [...n.items] } : n.t === 'obj' ? { t: 'obj', entries: n.entries.map(([k, v]) => [k, v] as [string, JsonNode]) } : { ...n });
  const top = copyOf(root);
  const stack: JsonNode[] = [top];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.t === 'arr') n.items = n.items.map((c) => { const d = copyOf(c); stack.push(d); return d; });
    if (n.t === 'obj') n.entries = n.entries.map(([k, c]) => { const d = copyOf(c); stack.push(d); return [k, d] as [string, JsonNode]; });
  }
  return top;
}
