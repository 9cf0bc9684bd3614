import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it, vi } from 'vitest';
import { compileJdm, evaluatorFor, NotCompiled, SHADOW_EVERY, SHADOW_FIRST, type CompiledGraph } from '../../../src/modules/engine/jdm-compiler.js';
import { defaultAutoLoanDocuments, defaultBnplDocuments } from '../../../src/modules/engine/engine-documents.js';
import { zenEngine } from '../../../src/modules/engine/policy.js';
import { BNPL_PLANS } from '../../../src/modules/engine/features.js';

/** A deterministic pseudo-random sequence: the comparisons must be repeatable. */
function sequence(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2147483648) / 2147483648;
}

/** input -> one expression node (or the given nodes) -> output. */
function graph(nodes: Array<Record<string, unknown>>): { nodes: unknown[]; edges: unknown[] } {
  const all = [{ id: 'in', type: 'inputNode', name: 'request' }, ...nodes, { id: 'out', type: 'outputNode', name: 'response' }];
  return { nodes: all, edges: all.slice(1).map((n, i) => ({ id: `e${i}`, sourceId: all[i]!.id, targetId: n['id'], type: 'edge' })) };
}
const expressionNode = (expressions: Record<string, string>, extra: Record<string, unknown> = {}) => ({
  id: 'x',
  type: 'expressionNode',
  name: 'expressions',
  content: { expressions: Object.entries(expressions).map(([key, value], i) => ({ id: `x${i}`, key, value })), passThrough: false, inputField: null, outputPath: null, executionMode: 'single', ...extra },
});

type Verdict = { kind: 'same' } | { kind: 'gave-up' } | { kind: 'different'; mine: unknown; zen: unknown };

/** The compiled answer against ZEN's for one input: equal, or the compiled graph gave up (ZEN then decides, or fails). */
async function compare(document: unknown, compiled: CompiledGraph, input: Record<string, unknown>): Promise<Verdict> {
  let mine: unknown;
  try {
    mine = compiled(input);
  } catch (err) {
    if (err instanceof NotCompiled) return { kind: 'gave-up' };
    throw err;
  }
  const zen = (await zenEngine().createDecision(structuredClone(document) as object).evaluate(input)).result as unknown;
  return isDeepStrictEqual(mine, zen) ? { kind: 'same' } : { kind: 'different', mine, zen };
}

describe('credit policies compiled to JavaScript (engine/jdm-compiler.ts)', () => {
  it('compiles both bundled policies, and the BNPL one answers 2,000 random inputs exactly as ZEN, never giving up', async () => {
    const document = defaultBnplDocuments().policy.document;
    const compiled = compileJdm(document)!;
    expect(compiled).not.toBeNull();
    expect(compileJdm(defaultAutoLoanDocuments().policy.document)).not.toBeNull();
    const reference = zenEngine().createDecision(structuredClone(document) as object);
    const next = sequence(11);
    for (let i = 0; i < 2000; i++) {
      const hasFile = next() > 0.1;
      const input = {
        score: 300 + Math.floor(next() * 551),
        request: { amountCents: 1000 + Math.floor(next() * 600_000), plan: BNPL_PLANS[Math.floor(next() * BNPL_PLANS.length)] },
        credit: { hasFile, bankruptcy: hasFile ? next() > 0.9 : null },
      };
      expect(compiled(input)).toEqual((await reference.evaluate(input)).result);
    }
  });

  it('answers the bundled auto-loan policy as ZEN does, loan-to-value ratios with decimals included, never giving up', async () => {
    const document = defaultAutoLoanDocuments().policy.document;
    const compiled = compileJdm(document)!;
    const next = sequence(12);
    const counts = { same: 0, 'gave-up': 0, different: 0 };
    for (let i = 0; i < 600; i++) {
      const hasFile = next() > 0.1;
      const input = {
        score: 300 + Math.floor(next() * 551),
        request: { amountFinancedCents: 200_000 + Math.floor(next() * 9_000_000), termMonths: [36, 48, 60, 72, 84][Math.floor(next() * 5)], condition: next() > 0.5 ? 'used' : 'new' },
        credit: { hasFile, bankruptcy: hasFile ? next() > 0.9 : null },
        // Half the loan-to-value ratios whole numbers, half with decimals.
        features: { ltvPct: i % 2 === 0 ? 60 + Math.floor(next() * 90) : 60.25 + Math.floor(next() * 90), mileage: Math.floor(next() * 200_000), vehicleAgeYears: Math.floor(next() * 15), incomeVerifiable: next() > 0.2 },
      };
      const verdict = await compare(document, compiled, input);
      if (verdict.kind === 'different') expect(verdict).toEqual({ kind: 'same', input });
      counts[verdict.kind] += 1;
    }
    expect(counts).toEqual({ same: 600, 'gave-up': 0, different: 0 });
  });

  it('matches ZEN on each construct it compiles, or gives up where ZEN would differ or fail', async () => {
    const contexts = [
      { a: 7, b: 3, s: 'used', t: true, n: null, list: [{ k: 'x' }, { k: 'y' }], m: { used: 100, new: 0 }, d: 2.5 },
      { a: -4, b: 10, s: '', t: false, n: null, list: [], m: {}, d: 0 },
      { a: 0, b: 0, s: 'new', t: true, n: 5, list: [{ k: 1 }], m: { new: -3 }, d: null },
      // Neighbouring doubles: ZEN's decimals keep their order.
      { a: 110, b: 1, s: 'x', t: true, n: 0.3, list: [], m: {}, d: 110.00000000000001 },
      { a: 1, b: 0, s: 'x', t: false, n: 0.30000000000000004, list: [], m: {}, d: 0.9999999999999999 },
      { a: 120, b: 3, s: 'x', t: true, n: 1e-7, list: [], m: {}, d: 119.99999999999999 },
    ];
    const expressions = [
      'a + b', 'a - b', 'a * b', 'a % b', '-a', 'a > b', 'a >= b', 'a < b', 'a <= b', 'a == b', 'a != b', 's == "used"', 's != "used"', 't == true',
      'n == null', 'n != null', '"s" == 1', 't and a > 0', 't or a > 0', 'n != null and n > 3', 'n == null or n > 3', 't ? a : b', 'a > b ? s : "none"',
      'min([a, b])', 'max([a, b, 2])', 'len(list)', 'len(s)', 'map(list, #.k)', 'm[s]', 'm.used', 'm.missing', 'n.x', 'a.b', 'list', '[a, b]', '(a + b) * 2',
      'a + b * 2', 's.x', 'len(list) > 1 and t', 'd > a', 'd >= a', 'd < a', 'd <= a', 'n > d', 'n < d', 'd > 1', 'd + 1', 'a > d', 's > "a"', 'len(n)', 'x.y.z', 'm[s] + 1', 'a - b - 1', 'b % a', 'a % 0',
    ];
    const seen = { same: 0, 'gave-up': 0, different: 0 };
    for (const expression of expressions) {
      const document = graph([expressionNode({ value: expression })]);
      const compiled = compileJdm(document);
      expect(compiled, expression).not.toBeNull();
      for (const context of contexts) {
        const verdict = await compare(document, compiled!, context);
        if (verdict.kind === 'different') expect({ expression, context, ...verdict }).toBeUndefined();
        seen[verdict.kind] += 1;
      }
    }
    expect(seen.same).toBeGreaterThan(100);
    expect(seen['gave-up']).toBeGreaterThan(10);
  });

  it("matches ZEN on an expression node's `$` (its output so far) and its null answers (left out), with and without pass-through", async () => {
    for (const passThrough of [true, false]) {
      const document = graph([expressionNode({ a2: 'a * 2', b: '$.a2 + 1', c: '$.a', 'd.e': '1', f: '$.d.e', g: 'missing' }, { passThrough })]);
      const compiled = compileJdm(document)!;
      for (const a of [3, -2, 0]) expect(await compare(document, compiled, { a })).toEqual({ kind: 'same' });
    }
  });

  it('matches ZEN on decision tables: unary cells, whole-expression cells, first and collect, pass-through', async () => {
    const table = (hitPolicy: string, outputPath: string | null) => ({
      id: 't',
      type: 'decisionTableNode',
      name: 'table',
      content: {
        hitPolicy, passThrough: true, inputField: null, outputPath, executionMode: 'single',
        inputs: [{ id: 'i1', name: 'Score', field: 'score' }, { id: 'i2', name: 'Plan', field: 'req.plan' }, { id: 'i3', name: 'Rule' }],
        outputs: [{ id: 'o1', name: 'Grade', field: 'grade' }, { id: 'o2', name: 'Rate', field: 'rates.p4' }],
        rules: [
          { _id: 'r1', i1: '>= 720', i2: '', i3: '', o1: '"A"', o2: '0' },
          { _id: 'r2', i1: '>= 600', i2: '"monthly"', i3: '', o1: '"B"', o2: 'score - 600' },
          { _id: 'r3', i1: '', i2: '', i3: 'req.amount > 1000 and score < 600', o1: '"C"', o2: 'null' },
          { _id: 'r4', i1: '599', i2: '', i3: '', o1: '"D"', o2: '1' },
          { _id: 'r5', i1: '', i2: '', i3: '', o1: '"E"', o2: 'req.amount' },
        ],
      },
    });
    const next = sequence(13);
    for (const [hit, path] of [['first', null], ['first', 'pick'], ['collect', 'all']] as const) {
      const document = graph([table(hit, path)]);
      const compiled = compileJdm(document)!;
      expect(compiled).not.toBeNull();
      for (let i = 0; i < 60; i++) {
        const input = { score: 550 + Math.floor(next() * 250), req: { plan: next() > 0.5 ? 'monthly' : 'pay_in_4', amount: Math.floor(next() * 2000) } };
        const verdict = await compare(document, compiled, input);
        expect(verdict, `${hit} ${JSON.stringify(input)}`).toEqual({ kind: 'same' });
      }
    }
  });

  it('leaves to ZEN every document with something it does not compile', () => {
    const unsupported: Array<[string, unknown]> = [
      ['a decimal literal', graph([expressionNode({ v: 'a * 1.5' })])],
      ['$root', graph([expressionNode({ v: '$root.a' })])],
      ['$nodes', graph([expressionNode({ v: '$nodes.request' })])],
      ['an unknown function', graph([expressionNode({ v: 'abs(a)' })])],
      ['a string with an escape', graph([expressionNode({ v: '"a\\"b"' })])],
      ['`in`', graph([expressionNode({ v: 'a in [1, 2]' })])],
      ['an input field', graph([expressionNode({ v: 'a' }, { inputField: 'x' })])],
      ['loop mode', graph([expressionNode({ v: 'a' }, { executionMode: 'loop' })])],
      ['a switch node', graph([{ id: 's', type: 'switchNode', content: { statements: [] } }])],
      ['a function node', graph([{ id: 'f', type: 'functionNode', content: { source: '' } }])],
      ['a branch', { ...graph([expressionNode({ v: 'a' })]), edges: [{ id: '1', sourceId: 'in', targetId: 'x' }, { id: '2', sourceId: 'in', targetId: 'out' }, { id: '3', sourceId: 'x', targetId: 'out' }] }],
      ['a range cell', graph([{ id: 't', type: 'decisionTableNode', content: { hitPolicy: 'first', passThrough: true, inputs: [{ id: 'i', field: 'a' }], outputs: [{ id: 'o', field: 'g' }], rules: [{ i: '[1..5]', o: '1' }] } }])],
      ['a list cell', graph([{ id: 't', type: 'decisionTableNode', content: { hitPolicy: 'first', passThrough: true, inputs: [{ id: 'i', field: 'a' }], outputs: [{ id: 'o', field: 'g' }], rules: [{ i: '1, 2', o: '1' }] } }])],
      ['# outside map', graph([expressionNode({ v: '#.k' })])],
      ['$ in a table output', graph([{ id: 't', type: 'decisionTableNode', content: { hitPolicy: 'first', passThrough: true, inputs: [{ id: 'i', field: 'a' }], outputs: [{ id: 'o', field: 'g' }], rules: [{ i: '1', o: '$' }] } }])],
      ['$ in a condition cell', graph([{ id: 't', type: 'decisionTableNode', content: { hitPolicy: 'first', passThrough: true, inputs: [{ id: 'i' }], outputs: [{ id: 'o', field: 'g' }], rules: [{ i: '$ > 1', o: '1' }] } }])],
      ['an empty output cell', graph([{ id: 't', type: 'decisionTableNode', content: { hitPolicy: 'first', passThrough: true, inputs: [{ id: 'i', field: 'a' }], outputs: [{ id: 'o', field: 'g' }], rules: [{ i: '1', o: '' }] } }])],
      ['collect without an output path', graph([{ id: 't', type: 'decisionTableNode', content: { hitPolicy: 'collect', passThrough: true, inputs: [], outputs: [{ id: 'o', field: 'g' }], rules: [{ o: '1' }] } }])],
    ];
    for (const [what, document] of unsupported) expect(compileJdm(document), what).toBeNull();
  });

  it("never writes through an object's machinery: keys naming __proto__, constructor or prototype are left to ZEN, and nothing leaks into Object.prototype", async () => {
    const keys = ['__proto__.polluted', 'constructor.prototype.polluted', 'a.__proto__.polluted', 'prototype'];
    const documents = [
      ...keys.map((key) => graph([expressionNode({ [key]: '1' })])),
      ...keys.map((key) => graph([expressionNode({ v: '1' }, { outputPath: key })])),
      ...keys.map((key) => graph([{ id: 't', type: 'decisionTableNode', content: { hitPolicy: 'first', passThrough: false, inputs: [{ id: 'i', field: 'a' }], outputs: [{ id: 'o', field: key }], rules: [{ i: '1', o: '1' }] } }])),
    ];
    for (const document of documents) expect(compileJdm(document), JSON.stringify(document)).toBeNull();
    // An inherited name on the way (`toString`) is an output of its own, as ZEN makes it.
    const inherited = graph([expressionNode({ 'toString.x': '1' })]);
    expect(await compare(inherited, compileJdm(inherited)!, { a: 1 })).toEqual({ kind: 'same' });
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('evaluatorFor: asks ZEN for the first answers and one in a thousand after, and goes back to ZEN for good on a difference', async () => {
    const document = graph([expressionNode({ doubled: 'a * 2' })]);
    let zenCalls = 0;
    let zenAnswer = (input: { a: number }): unknown => ({ doubled: input.a * 2 });
    const zen = async (input: object) => {
      zenCalls += 1;
      return zenAnswer(input as { a: number });
    };
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    try {
      const evaluate = evaluatorFor(document, zen, 'test-policy-1');
      for (let i = 0; i < SHADOW_FIRST + SHADOW_EVERY; i++) expect(await evaluate({ a: i })).toEqual({ doubled: i * 2 });
      expect(zenCalls).toBe(SHADOW_FIRST + 1);
      // A compiled evaluation that gives up is ZEN's, and does not count as a difference.
      expect(await evaluate({ a: 1.5 })).toEqual({ doubled: 3 });
      expect(warn).not.toHaveBeenCalled();
      // ZEN now answers otherwise: the next shadowed answer is ZEN's, and ZEN decides from then on.
      zenAnswer = () => ({ doubled: -1 });
      const before = zenCalls;
      const answers = [];
      for (let i = 0; i < SHADOW_EVERY; i++) answers.push(await evaluate({ a: 2 }));
      expect(answers.filter((a) => isDeepStrictEqual(a, { doubled: -1 })).length).toBeGreaterThan(0);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(String(warn.mock.calls[0]![0])).toContain('test-policy-1');
      const retiredAt = answers.findIndex((a) => isDeepStrictEqual(a, { doubled: -1 }));
      expect(answers.slice(retiredAt).every((a) => isDeepStrictEqual(a, { doubled: -1 }))).toBe(true);
      expect(zenCalls - before).toBe(SHADOW_EVERY - retiredAt);
    } finally {
      warn.mockRestore();
    }
  });
});
