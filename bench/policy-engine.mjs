#!/usr/bin/env node
/**
 * What the credit policy's evaluation costs a create: the BNPL engine (features, scorecard, policy)
 * for the sandbox's soft consumer, the policy as decisions evaluate it (the graph compiled to
 * JavaScript, engine/jdm-compiler.ts, plus our output check), the bare ZEN call (given the fields
 * the policy reads, engine/policy-input.ts, and given the whole input), the time ZEN reports for its own evaluation, and what any asynchronous ZEN call costs
 * (a one-operator expression, against the same expression evaluated synchronously). CPU per call
 * is this process's (ZEN evaluates on its own threads, which the process's CPU time includes), one
 * call at a time and 50 at once. Plain Node ESM over the compiled server (server/dist).
 *
 *   npm run build && node bench/policy-engine.mjs [--calls N] [--dist DIR]
 */
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opts } = parseArgs({
  options: { calls: { type: 'string', default: '3000' }, dist: { type: 'string', default: path.join(ROOT, 'server', 'dist') } },
  strict: true,
});
const CALLS = Number(opts.calls);
const dist = pathToFileURL(path.resolve(opts.dist) + path.sep).href;
const { syntheticCreditData } = await import(`${dist}modules/credit-data/sandbox-connector.js`);
const { decideBnpl } = await import(`${dist}modules/engine/engine.js`);
const { defaultBnplDocuments } = await import(`${dist}modules/engine/engine-documents.js`);
const { fieldsReadBy } = await import(`${dist}modules/engine/policy-input.js`);
const zen = createRequire(path.join(ROOT, 'server', 'package.json'))('@gorules/zen-engine');

const documents = defaultBnplDocuments();
const creditData = syntheticCreditData({ firstName: 'A', lastName: 'B', dob: '1980-01-01', ssnLast4: null, address: { line1: '1 Main St', city: 'Springfield', state: 'CA', postalCode: '94105' }, sandboxProfile: 'soft' });
const engineInput = (i) => ({ requestedAmountCents: 2500 + ((i * 7919) % 17500), planPreference: null, history: { returning: true, priorApprovals: 2, priorDeclines: 0 }, creditData, asOf: new Date().toISOString() });

// The policy's input as the engine builds it, taken from one real decision.
let policyInput = null;
await decideBnpl(engineInput(1), { ...documents, policy: { ...documents.policy, evaluate: (x) => ((policyInput = x), documents.policy.evaluate(x)) } });

async function measure(name, call) {
  for (let i = 0; i < 300; i++) await call(i);
  const rows = [];
  for (const concurrent of [1, 50]) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    for (let done = 0; done < CALLS; done += concurrent) await Promise.all(Array.from({ length: concurrent }, (_, k) => call(done + k)));
    const c = process.cpuUsage(c0);
    rows.push(`${((c.user + c.system) / CALLS).toFixed(0)} µs CPU (${((performance.now() - t0) * 1000 / CALLS).toFixed(0)} µs wall) ${concurrent === 1 ? 'one at a time' : '50 at once'}`);
  }
  process.stdout.write(`${name.padEnd(48)} ${rows.join(', ')}\n`);
}

process.stdout.write(`${CALLS} calls each, Node ${process.version}\n`);
await measure('decideBnpl (features, scorecard, policy)', (i) => decideBnpl(engineInput(i), documents));
await measure('policy.evaluate (compiled graph + output check)', () => documents.policy.evaluate(policyInput));
const decision = zen.ZenEngine.prototype.createDecision.call(new zen.ZenEngine(), documents.policy.document);
// The fields the server gives ZEN for this document (policy-input.ts), not a list written here.
const read = fieldsReadBy(documents.policy.document, Object.keys(policyInput)) ?? Object.keys(policyInput);
const readFields = Object.fromEntries(read.map((field) => [field, policyInput[field]]));
await measure(`ZEN call, the fields the policy reads (${read.join(', ')})`, () => decision.evaluate(readFields));
await measure('ZEN call, the whole input', () => decision.evaluate(policyInput));
await measure("ZEN evaluateExpression('1 + 1'), async", () => zen.evaluateExpression('1 + 1', {}));
await measure("ZEN evaluateExpressionSync('1 + 1')", async () => zen.evaluateExpressionSync('1 + 1', {}));
const reported = [];
for (let i = 0; i < 1000; i++) reported.push(parseFloat((await decision.evaluate(policyInput)).performance));
reported.sort((a, b) => a - b);
process.stdout.write(`ZEN's own reported evaluation time: median ${reported[500].toFixed(1)} µs, p90 ${reported[900].toFixed(1)} µs (1,000 calls one at a time)\n`);
