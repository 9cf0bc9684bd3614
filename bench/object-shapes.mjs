#!/usr/bin/env node
/**
 * What building an object by spreading costs on this Node (docs/performance.md, "objects built by
 * spreading"; ADR 0034). On Node 20 (V8 11) an object literal with a property after a spread
 * (`{ ...a, b }`) or a second spread gets a hidden class (map) of its own on every call, where a
 * written-out literal, Object.assign, `{ ...a }` alone or `{ b, ...a }` share one. Each shape is
 * built 200,000 times (after a warm-up); the table gives nanoseconds per object and whether two
 * objects built the same way share a map (V8's own %HaveSameMap).
 *
 *   node bench/object-shapes.mjs [--properties N]
 */
import v8 from 'node:v8';
import { parseArgs } from 'node:util';

const { values } = parseArgs({ options: { properties: { type: 'string', default: '10' } } });
const count = Number(values.properties);
if (!Number.isInteger(count) || count < 1 || count > 40) throw new Error('--properties: 1 to 40');

// V8's intrinsics are only parsed in code compiled after the flag is set.
v8.setFlagsFromString('--allow-natives-syntax');
const sameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)');

const base = { a1: 1, a2: 2, a3: 3, a4: 4, a5: 5, a6: 6, a7: 7 };
const names = Array.from({ length: count }, (_, i) => `b${i + 1}`);
const props = names.map((name, k) => `${name}: ${k === 0 ? 'i' : k}`).join(', ');
// The literals are generated so that --properties changes them; `new Function` compiles each as
// the source would be (an object literal, not a loop of assignments).
const compile = (body, extraOf) => new Function('base', 'extraOf', `return (i) => (${body});`)(base, extraOf);
const extraOf = compile(`{ ${props} }`, null);
const literal = (body) => compile(body, extraOf);
const baseProps = Object.keys(base).map((name) => `${name}: base.${name}`).join(', ');

const shapes = [
  ['{ ...base, b1, b2, … }', literal(`{ ...base, ${props} }`)],
  ['{ ...base, ...extra }', literal(`{ ...base, ...extraOf(i) }`)],
  ['Object.assign({ ...base }, extra)', literal(`Object.assign({ ...base }, extraOf(i))`)],
  ['Object.assign({}, base, extra)', literal(`Object.assign({}, base, extraOf(i))`)],
  ['{ b1, b2, …, ...base }', literal(`{ ${props}, ...base }`)],
  ['written out: { a1: base.a1, …, b1, … }', literal(`{ ${baseProps}, ${props} }`)],
  ['{ ...base } alone', literal(`{ ...base }`)],
];

console.log(`Node ${process.version} (V8 ${process.versions.v8}); base of 7 properties, ${count} more`);
console.log('| How the object is built | ns per object | two objects share a map |');
console.log('|---|--:|---|');
let sink = 0;
for (const [name, build] of shapes) {
  for (let i = 0; i < 20_000; i++) sink += build(i).a1;
  const started = process.hrtime.bigint();
  for (let i = 0; i < 200_000; i++) sink += build(i).a1;
  const ns = Number(process.hrtime.bigint() - started) / 200_000;
  console.log(`| \`${name}\` | ${ns.toFixed(0)} | ${sameMap(build(1), build(2)) ? 'yes' : '**no**'} |`);
}
if (sink === 0) throw new Error('unreachable: keeps the objects from being optimised away');
