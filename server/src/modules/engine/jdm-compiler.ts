/**
 * A credit-policy document compiled into a JavaScript function, for the documents (and the
 * inputs) on which it gives exactly ZEN's answer. ZEN stays the reference and decides everything
 * else.
 *
 * Why: a ZEN call cost 150 to 250 µs of CPU per decision, most of it crossing into Rust and back,
 * about 15% of a create (docs/performance.md). The same graph as closures costs a few µs.
 *
 * How it works.
 * 1. `compileJdm` accepts only what it does exactly as ZEN does, and returns null for anything
 *    else (the caller then uses ZEN for that document): a chain of nodes from the input node to
 *    the output node (no branches, no switch); expression nodes and decision tables (hit policy
 *    `first` or `collect`) in single execution mode, without an input field; expressions made of
 *    literals, context paths (`a.b`, `a[b]`), `$` (an expression node's output so far, a table
 *    cell's subject), `#` (inside `map`), `== != < > <= >=`, `and`/`or` (short-circuit), `+ - * %`,
 *    unary minus, `? :`, array literals and `min`, `max`, `len`, `map`; table cells that are empty,
 *    a literal, or a comparison operator followed by an expression, or, in a column without a
 *    field, a whole expression.
 * 2. At run time a compiled evaluation gives up (throws `NotCompiled`) wherever ZEN's answer could
 *    differ from JavaScript's: arithmetic, or `==`, on numbers that are not integers (ZEN computes
 *    in decimal; comparing their order is safe, see `ordered`), an ordering comparison with a
 *    non-number or a number out of ZEN's range (ZEN fails), a non-boolean condition, a
 *    function given what it does not take, a result beyond 2^53, an output key already in the
 *    context. The caller then asks ZEN for that evaluation.
 * 3. `evaluatorFor` also asks ZEN for the first compiled answers and for one in a thousand after
 *    them, returns ZEN's, and goes back to ZEN for good on any difference;
 *    `unit/engine/jdm-compiler.test.ts` compares the two on thousands of inputs.
 */

import { isDeepStrictEqual } from 'node:util';
import { copyPlainData } from '../../lib/plain-data.js';
import { ZEN_NUMBER_LIMITS } from './policy-input.js';

/** A compiled evaluation met something it cannot answer exactly as ZEN would: ask ZEN. */
export class NotCompiled extends Error {
  override readonly name = 'NotCompiled';
}

export type CompiledGraph = (input: Record<string, unknown>) => unknown;

type Context = Record<string, unknown>;
interface Scope {
  /** The node's input: what bare names read. */
  root: Context;
  /** `$`: an expression node's output so far, or a table cell's subject. */
  dollar: unknown;
  /** `#`: the element inside `map`. */
  hash: unknown;
}
type Fn = (scope: Scope) => unknown;

function giveUp(): never {
  throw new NotCompiled();
}

// ---------------------------------------------------------------------------------------------
// Expressions: tokens, a Pratt parser straight to closures
// ---------------------------------------------------------------------------------------------

type Token = { kind: 'num'; value: number } | { kind: 'str'; value: string } | { kind: 'name'; value: string } | { kind: 'op'; value: string } | { kind: 'end' };

class Unsupported extends Error {}

const OPERATORS = ['==', '!=', '>=', '<=', '>', '<', '+', '-', '*', '%', '(', ')', '[', ']', ',', '.', '?', ':', '$', '#'];

function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < text.length) {
    const c = text[i]!;
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
      continue;
    }
    const number = /^\d+(\.\d+)?/.exec(text.slice(i));
    if (number) {
      // Integers only: a decimal literal is a decimal in ZEN.
      if (number[1] !== undefined || number[0].length > 15) throw new Unsupported();
      tokens.push({ kind: 'num', value: Number(number[0]) });
      i += number[0].length;
      continue;
    }
    if (c === '"' || c === "'") {
      const end = text.indexOf(c, i + 1);
      const value = end < 0 ? '' : text.slice(i + 1, end);
      if (end < 0 || value.includes('\\')) throw new Unsupported();
      tokens.push({ kind: 'str', value });
      i = end + 1;
      continue;
    }
    const name = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
    if (name) {
      tokens.push({ kind: 'name', value: name[0] });
      i += name[0].length;
      continue;
    }
    const op = OPERATORS.find((o) => text.startsWith(o, i));
    if (!op) throw new Unsupported();
    tokens.push({ kind: 'op', value: op });
    i += op.length;
  }
  tokens.push({ kind: 'end' });
  return tokens;
}

const BINARY_PRECEDENCE: Record<string, number> = { or: 1, and: 2, '==': 3, '!=': 3, '<': 3, '>': 3, '<=': 3, '>=': 3, '+': 4, '-': 4, '*': 5, '%': 5 };
const KEYWORDS = new Set(['and', 'or', 'not', 'in', 'true', 'false', 'null', 'matches', 'contains']);

class Parser {
  private at = 0;
  /** Inside `map`'s second argument, where `#` means the element. */
  private inMap = 0;
  /** `allowDollar`: where `$` has a meaning this compiler knows (expression nodes, unary cells). */
  constructor(
    private readonly tokens: Token[],
    private readonly allowDollar: boolean,
  ) {}

  private peek(): Token {
    return this.tokens[this.at]!;
  }
  private next(): Token {
    return this.tokens[this.at++]!;
  }
  private isOp(value: string): boolean {
    const t = this.peek();
    return t.kind === 'op' && t.value === value;
  }
  private expectOp(value: string): void {
    if (!this.isOp(value)) throw new Unsupported();
    this.at++;
  }
  atEnd(): boolean {
    return this.peek().kind === 'end';
  }

  /** expression := binary ('?' expression ':' expression)? */
  expression(): Fn {
    const condition = this.binary(1);
    if (!this.isOp('?')) return condition;
    this.at++;
    const yes = this.expression();
    this.expectOp(':');
    const no = this.expression();
    return (s) => {
      const c = condition(s);
      if (typeof c !== 'boolean') giveUp();
      return c ? yes(s) : no(s);
    };
  }

  private binaryOperator(): string | null {
    const t = this.peek();
    if (t.kind === 'op' && t.value in BINARY_PRECEDENCE) return t.value;
    if (t.kind === 'name' && (t.value === 'and' || t.value === 'or')) return t.value;
    return null;
  }

  private binary(minPrecedence: number): Fn {
    let left = this.unary();
    for (;;) {
      const op = this.binaryOperator();
      if (op === null || BINARY_PRECEDENCE[op]! < minPrecedence) return left;
      this.at++;
      const right = this.binary(BINARY_PRECEDENCE[op]! + 1);
      left = binaryFn(op, left, right);
    }
  }

  private unary(): Fn {
    if (this.isOp('-')) {
      this.at++;
      const operand = this.unary();
      return (s) => {
        const v = operand(s);
        if (!Number.isSafeInteger(v)) giveUp();
        return v === 0 ? 0 : -(v as number);
      };
    }
    return this.postfix(this.primary());
  }

  private primary(): Fn {
    const t = this.next();
    if (t.kind === 'num' || t.kind === 'str') {
      const value = t.value;
      return () => value;
    }
    if (t.kind === 'op' && t.value === '(') {
      const inner = this.expression();
      this.expectOp(')');
      return inner;
    }
    if (t.kind === 'op' && t.value === '[') {
      const items: Fn[] = [];
      if (!this.isOp(']')) {
        items.push(this.expression());
        while (this.isOp(',')) {
          this.at++;
          items.push(this.expression());
        }
      }
      this.expectOp(']');
      return (s) => items.map((f) => f(s));
    }
    if (t.kind === 'op' && t.value === '$') {
      if (!this.allowDollar) throw new Unsupported();
      return (s) => s.dollar;
    }
    if (t.kind === 'op' && t.value === '#') {
      if (this.inMap === 0) throw new Unsupported();
      return (s) => s.hash;
    }
    if (t.kind === 'name') {
      if (t.value === 'true') return () => true;
      if (t.value === 'false') return () => false;
      if (t.value === 'null') return () => null;
      if (KEYWORDS.has(t.value) || t.value.startsWith('$')) throw new Unsupported();
      if (this.isOp('(')) return this.call(t.value);
      const name = t.value;
      return (s) => (Object.hasOwn(s.root, name) ? (s.root[name] ?? null) : null);
    }
    throw new Unsupported();
  }

  /** `.name` and `[expression]` after a value: null on null or on anything but a plain object. */
  private postfix(base: Fn): Fn {
    let target = base;
    for (;;) {
      if (this.isOp('.')) {
        this.at++;
        const t = this.next();
        if (t.kind !== 'name') throw new Unsupported();
        const of = target;
        const key = t.value;
        target = (s) => member(of(s), key);
      } else if (this.isOp('[')) {
        this.at++;
        const index = this.expression();
        this.expectOp(']');
        const of = target;
        target = (s) => {
          const key = index(s);
          if (typeof key !== 'string') giveUp();
          return member(of(s), key);
        };
      } else {
        return target;
      }
    }
  }

  private call(name: string): Fn {
    this.expectOp('(');
    if (name === 'map') {
      const list = this.expression();
      this.expectOp(',');
      this.inMap += 1;
      const each = this.expression();
      this.inMap -= 1;
      this.expectOp(')');
      return (s) => {
        const items = list(s);
        if (!Array.isArray(items)) giveUp();
        return items.map((item) => each({ root: s.root, dollar: s.dollar, hash: item }));
      };
    }
    const argument = this.expression();
    this.expectOp(')');
    if (name === 'len') {
      return (s) => {
        const v = argument(s);
        if (Array.isArray(v)) return v.length;
        // ZEN counts characters; JavaScript's length counts UTF-16 units: ASCII only.
        if (typeof v === 'string' && /^[\x20-\x7e]*$/.test(v)) return v.length;
        return giveUp();
      };
    }
    if (name === 'min' || name === 'max') {
      const pick = name === 'min' ? Math.min : Math.max;
      return (s) => {
        const v = argument(s);
        if (!Array.isArray(v) || v.length === 0 || !v.every((x) => Number.isSafeInteger(x))) giveUp();
        return pick(...(v as number[]));
      };
    }
    throw new Unsupported();
  }
}

function member(of: unknown, key: string): unknown {
  // ZEN: a member of null, a number or a boolean is null; strings and arrays have rules of their own.
  if (typeof of === 'string' || Array.isArray(of)) giveUp();
  if (of === null || typeof of !== 'object') return null;
  return Object.hasOwn(of, key) ? ((of as Context)[key] ?? null) : null;
}

function equal(a: unknown, b: unknown): boolean {
  // Integers, strings, booleans and null compare as in ZEN; other numbers are decimals there.
  const scalar = (v: unknown) => v === null || typeof v === 'string' || typeof v === 'boolean' || Number.isSafeInteger(v);
  if (!scalar(a) || !scalar(b)) giveUp();
  return a === b;
}

function integer(v: unknown): number {
  if (!Number.isSafeInteger(v)) giveUp();
  return v as number;
}

/**
 * An operand of `< > <= >=`: any number ZEN takes (policy-input.ts ZEN_NUMBER_LIMITS). ZEN turns a
 * double into a decimal that keeps its order (measured on neighbouring doubles such as
 * 110.00000000000001 against 110, 0.1 + 0.2 against 0.3, 0.9999999999999999 against 1), so
 * comparing the doubles gives its answer; computing with them would not.
 */
function ordered(v: unknown): number {
  if (typeof v !== 'number' || !Number.isFinite(v)) giveUp();
  const magnitude = Math.abs(v as number);
  if (magnitude > ZEN_NUMBER_LIMITS.max || (magnitude !== 0 && magnitude < ZEN_NUMBER_LIMITS.min)) giveUp();
  return v as number;
}

function checked(v: number): number {
  if (!Number.isSafeInteger(v)) giveUp();
  return v === 0 ? 0 : v;
}

function binaryFn(op: string, left: Fn, right: Fn): Fn {
  switch (op) {
    case 'and':
      return (s) => {
        const a = left(s);
        if (typeof a !== 'boolean') giveUp();
        if (!a) return false;
        const b = right(s);
        if (typeof b !== 'boolean') giveUp();
        return b;
      };
    case 'or':
      return (s) => {
        const a = left(s);
        if (typeof a !== 'boolean') giveUp();
        if (a) return true;
        const b = right(s);
        if (typeof b !== 'boolean') giveUp();
        return b;
      };
    case '==':
      return (s) => equal(left(s), right(s));
    case '!=':
      return (s) => !equal(left(s), right(s));
    case '<':
      return (s) => ordered(left(s)) < ordered(right(s));
    case '>':
      return (s) => ordered(left(s)) > ordered(right(s));
    case '<=':
      return (s) => ordered(left(s)) <= ordered(right(s));
    case '>=':
      return (s) => ordered(left(s)) >= ordered(right(s));
    case '+':
      return (s) => checked(integer(left(s)) + integer(right(s)));
    case '-':
      return (s) => checked(integer(left(s)) - integer(right(s)));
    case '*':
      return (s) => checked(integer(left(s)) * integer(right(s)));
    case '%':
      return (s) => {
        const a = integer(left(s));
        const b = integer(right(s));
        if (b === 0 || a < 0 || b < 0) giveUp();
        return a % b;
      };
    default:
      throw new Unsupported();
  }
}

function compileExpression(text: string, allowDollar: boolean): Fn {
  const parser = new Parser(tokenize(text), allowDollar);
  const fn = parser.expression();
  if (!parser.atEnd()) throw new Unsupported();
  return fn;
}

/**
 * A table cell whose column has a field: empty (any value), a comparison operator and an
 * expression, or a literal (equal to it). Anything else (ranges, lists, `$` expressions) is ZEN's.
 */
function compileCell(text: string): ((subject: unknown, scope: Scope) => boolean) | null {
  const trimmed = text.trim();
  if (trimmed === '') return null;
  const op = ['>=', '<=', '==', '!=', '>', '<'].find((o) => trimmed.startsWith(o));
  if (op) {
    const operand = compileExpression(trimmed.slice(op.length), true);
    const compare = binaryFn(op, (s) => s.dollar, operand);
    return (subject, scope) => compare({ root: scope.root, dollar: subject, hash: null }) as boolean;
  }
  const tokens = tokenize(trimmed);
  const literal = tokens.length === 2 && (tokens[0]!.kind === 'num' || tokens[0]!.kind === 'str' || (tokens[0]!.kind === 'name' && ['true', 'false', 'null'].includes(tokens[0]!.value)));
  if (!literal) throw new Unsupported();
  const value = compileExpression(trimmed, false);
  return (subject, scope) => equal(subject, value(scope));
}

// ---------------------------------------------------------------------------------------------
// Nodes and the graph
// ---------------------------------------------------------------------------------------------

type NodeFn = (input: Context) => Context;

interface JdmNode {
  id: string;
  type: string;
  content?: Record<string, unknown>;
}

/**
 * Dotted keys (`a.b.c`) of plain identifiers only, and none that names an object's machinery: a
 * tenant's policy writing `__proto__.x` would otherwise set `x` on every object of the process
 * (`constructor` and `prototype` likewise lead there). Such a graph is left to ZEN.
 */
const RESERVED_KEYS = new Set(['__proto__', 'constructor', 'prototype']);
function keyPath(key: unknown): string[] {
  if (typeof key !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$/.test(key)) throw new Unsupported();
  const path = key.split('.');
  if (path.some((segment) => RESERVED_KEYS.has(segment))) throw new Unsupported();
  return path;
}

function setPath(target: Context, path: string[], value: unknown): void {
  let at = target;
  for (let i = 0; i < path.length - 1; i++) {
    // Own properties only: an inherited one (`toString`) is not the output's to write into.
    const existing = Object.hasOwn(at, path[i]!) ? at[path[i]!] : undefined;
    if (existing === undefined) at = at[path[i]!] = {};
    else if (existing !== null && typeof existing === 'object' && !Array.isArray(existing)) at = existing as Context;
    else giveUp();
  }
  at[path[path.length - 1]!] = value;
}

/** The node's output, passed through with its input or not; a key of both is ZEN's to merge. */
function withPassThrough(passThrough: boolean, input: Context, output: Context): Context {
  if (!passThrough) return output;
  for (const key of Object.keys(output)) if (Object.hasOwn(input, key)) giveUp();
  // Object.assign, not `{ ...input, ...output }`: docs/performance.md, "objects built by spreading".
  return Object.assign({}, input, output);
}

function commonOptions(content: Record<string, unknown>): { passThrough: boolean; outputPath: string[] | null } {
  if (content['inputField'] !== null && content['inputField'] !== undefined) throw new Unsupported();
  if (content['executionMode'] !== undefined && content['executionMode'] !== 'single') throw new Unsupported();
  const outputPath = content['outputPath'] === null || content['outputPath'] === undefined || content['outputPath'] === '' ? null : keyPath(content['outputPath']);
  return { passThrough: content['passThrough'] === true, outputPath };
}

function compileExpressionNode(content: Record<string, unknown>): NodeFn {
  const { passThrough, outputPath } = commonOptions(content);
  if (outputPath !== null) throw new Unsupported();
  const expressions = content['expressions'];
  if (!Array.isArray(expressions)) throw new Unsupported();
  const steps = expressions.map((e: { key?: unknown; value?: unknown }) => {
    if (typeof e.value !== 'string') throw new Unsupported();
    return { path: keyPath(e.key), value: compileExpression(e.value, true) };
  });
  return (input) => {
    const output: Context = {};
    const scope: Scope = { root: input, dollar: output, hash: null };
    for (const step of steps) {
      const value = step.value(scope);
      // ZEN leaves a key whose expression is null out of the node's output (a table keeps it).
      if (value !== null) setPath(output, step.path, value);
    }
    return withPassThrough(passThrough, input, output);
  };
}

function compileDecisionTable(content: Record<string, unknown>): NodeFn {
  const { passThrough, outputPath } = commonOptions(content);
  const hitPolicy = content['hitPolicy'];
  if (hitPolicy !== 'first' && hitPolicy !== 'collect') throw new Unsupported();
  if (hitPolicy === 'collect' && outputPath === null) throw new Unsupported();
  const inputs = content['inputs'];
  const outputs = content['outputs'];
  const rules = content['rules'];
  if (!Array.isArray(inputs) || !Array.isArray(outputs) || !Array.isArray(rules)) throw new Unsupported();
  const columns = inputs.map((i: { id?: unknown; field?: unknown }) => ({ id: String(i.id), subject: i.field === null || i.field === undefined || i.field === '' ? null : keyPathReader(i.field) }));
  const targets = outputs.map((o: { id?: unknown; field?: unknown }) => ({ id: String(o.id), path: keyPath(o.field) }));
  const compiledRules = rules.map((rule: Record<string, unknown>) => {
    const tests = columns.flatMap((column) => {
      const cell = rule[column.id];
      if (cell !== undefined && typeof cell !== 'string') throw new Unsupported();
      const text = (cell ?? '').trim();
      if (column.subject === null) {
        if (text === '') return [];
        const condition = compileExpression(text, false);
        return [
          (scope: Scope) => {
            const v = condition(scope);
            if (typeof v !== 'boolean') giveUp();
            return v;
          },
        ];
      }
      const test = compileCell(text);
      const subject = column.subject;
      return test === null ? [] : [(scope: Scope) => test(subject(scope.root), scope)];
    });
    const values = targets.map((target) => {
      const cell = rule[target.id];
      if (typeof cell !== 'string' || cell.trim() === '') throw new Unsupported();
      return { path: target.path, value: compileExpression(cell, false) };
    });
    return { tests, values };
  });
  const outputOf = (rule: (typeof compiledRules)[number], scope: Scope): Context => {
    const output: Context = {};
    for (const v of rule.values) setPath(output, v.path, v.value(scope));
    return output;
  };
  const matches = (scope: Scope) => (rule: (typeof compiledRules)[number]) => rule.tests.every((test) => test(scope));
  return (input) => {
    const scope: Scope = { root: input, dollar: null, hash: null };
    let value: Context | Context[];
    if (hitPolicy === 'first') {
      const rule = compiledRules.find(matches(scope));
      // No row matched: ZEN's answer for that is its own to give.
      if (rule === undefined) giveUp();
      value = outputOf(rule, scope);
    } else {
      value = compiledRules.filter(matches(scope)).map((rule) => outputOf(rule, scope));
    }
    // `collect` always has an output path (checked above); `first` may have one.
    let result: Context;
    if (outputPath === null) result = value as Context;
    else setPath((result = {}), outputPath, value);
    return withPassThrough(passThrough, input, result);
  };
}

function keyPathReader(field: unknown): (root: Context) => unknown {
  const path = keyPath(field);
  return (root) => {
    let at: unknown = root;
    for (const key of path) at = member(at, key);
    return at;
  };
}

/** The document as one function, or null when it uses anything this does not do as ZEN does. */
export function compileJdm(document: unknown): CompiledGraph | null {
  try {
    const doc = document as { nodes?: unknown; edges?: unknown };
    if (!Array.isArray(doc.nodes) || !Array.isArray(doc.edges)) return null;
    const nodes = new Map<string, JdmNode>();
    for (const n of doc.nodes as JdmNode[]) {
      if (typeof n?.id !== 'string' || nodes.has(n.id)) return null;
      nodes.set(n.id, n);
    }
    const next = new Map<string, string>();
    const incoming = new Set<string>();
    for (const e of doc.edges as Array<{ sourceId?: unknown; targetId?: unknown; sourceHandle?: unknown; type?: unknown }>) {
      if (typeof e.sourceId !== 'string' || typeof e.targetId !== 'string' || (e.sourceHandle !== undefined && e.sourceHandle !== null)) return null;
      if (e.type !== undefined && e.type !== 'edge') return null;
      if (next.has(e.sourceId) || incoming.has(e.targetId)) return null;
      next.set(e.sourceId, e.targetId);
      incoming.add(e.targetId);
    }
    const inputNodes = [...nodes.values()].filter((n) => n.type === 'inputNode');
    if (inputNodes.length !== 1) return null;
    // Walk the chain from the input node; it must end at the output node and visit every node.
    const chain: NodeFn[] = [];
    let id: string | undefined = next.get(inputNodes[0]!.id);
    let visited = 1;
    for (;;) {
      const node = id === undefined ? undefined : nodes.get(id);
      if (!node) return null;
      visited += 1;
      if (node.type === 'outputNode') {
        if (next.has(node.id)) return null;
        break;
      }
      if (node.type === 'expressionNode') chain.push(compileExpressionNode(node.content ?? {}));
      else if (node.type === 'decisionTableNode') chain.push(compileDecisionTable(node.content ?? {}));
      else return null;
      id = next.get(node.id);
    }
    if (visited !== nodes.size) return null;
    return (input) => {
      let context: Context = input;
      for (const step of chain) context = step(context);
      // Answers are fresh values, as ZEN's are: nothing of the caller's input is shared.
      try {
        return copyPlainData(context);
      } catch {
        // Something that is not plain data came through from the input: ZEN's to answer.
        return giveUp();
      }
    };
  } catch (err) {
    if (err instanceof Unsupported) return null;
    throw err;
  }
}

/** Compiled answers also asked of ZEN: the first ones, then one in this many. */
export const SHADOW_FIRST = 100;
export const SHADOW_EVERY = 1000;

/**
 * A policy's evaluation: the compiled graph where it can answer, ZEN everywhere else, and ZEN as
 * the judge. The first SHADOW_FIRST compiled answers, and every SHADOW_EVERY-th after them, are
 * also asked of ZEN, and ZEN's answer is the one returned; a difference, or a compiled evaluation
 * failing in any other way than NotCompiled, sends the policy back to ZEN for good, with a process
 * warning that names its version (never an input).
 */
export function evaluatorFor(document: unknown, zen: (input: object) => Promise<unknown>, version: string): (input: object) => Promise<unknown> {
  const graph = compileJdm(document);
  if (graph === null) return zen;
  let compiledAnswers = 0;
  let retired = false;
  const retire = (why: string) => {
    if (retired) return;
    retired = true;
    process.emitWarning(`credit policy ${version}: ${why}; ZEN evaluates it from now on`, { code: 'CDS_POLICY_COMPILED_RETIRED' });
  };
  return async (input) => {
    if (retired) return zen(input);
    let answer: unknown;
    try {
      answer = graph(input as Record<string, unknown>);
    } catch (err) {
      if (!(err instanceof NotCompiled)) retire(`the compiled graph failed (${err instanceof Error ? err.name : 'error'})`);
      return zen(input);
    }
    compiledAnswers += 1;
    if (compiledAnswers <= SHADOW_FIRST || compiledAnswers % SHADOW_EVERY === 0) {
      const reference = await zen(input);
      if (!isDeepStrictEqual(answer, reference)) retire('the compiled graph answered differently from ZEN');
      return reference;
    }
    return answer;
  };
}
