/**
 * fast-check arbitraries for hostile requests: values (huge and odd numbers, unicode edge cases,
 * long strings, deep nesting, prototype-pollution keys), mutations of a valid JSON body at any
 * depth, and the request around it (content types, Idempotency-Key, API key, path ids, query
 * strings, methods). Everything is plain data; `route-catalogue.ts` combines them per route.
 *
 * Strings that could end up in an HTML page carry the marker `<fz-x>`: a page that shows it
 * unescaped reflects input (see fuzz-properties.ts).
 */
import fc from 'fast-check';
import { clone, containers, fromJs, jnull, jnum, jstr, toText, type JsonNode } from './json-text.js';

export const BODY_LIMIT = 64 * 1024;
export const REFLECTION_MARKER = '<fz-x>';

export interface FuzzRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** How the request was made, for the failure report. */
  note: string;
}

// ---------------------------------------------------------------------------------------------
// Values

/** Number texts that break naive parsers: past 2^53, past double range, -0, hundreds of digits. */
export const hostileNumberText = fc.constantFrom(
  '1e308', '-1e308', '1e400', '-1e400', '-0', '0.0', '9007199254740993', '-9007199254740993', '1' + '0'.repeat(400), '0.' + '0'.repeat(300) + '1',
  '4.9e-324', '1e-400', '123456789012345678901234567890', '149.975', '-1', '0', '2147483648', '1.7976931348623157e309', '0.1e1', '1E2',
);

const UNICODE_EDGES = [
  '\uD800', '\uDFFF', '\uDBFF\uDBFF', 'a\u0000b', '\u0000', '\u202Eevil\u202C', '\u200F\u200E', 'e' + '\u0301'.repeat(200), '\uFEFF', '\u200B',
  '\uFFFF', '\uFFFE', '😀', '𝕏'.repeat(50), 'Ｚ', 'ǅ', 'İ', '\u2028\u2029', '\r\n', '\t', '\u001b[31m', 'ﷺ', '\u0085',
];

/** Strings: edges of unicode, the HTML marker, injection shapes, numbers as text, and long ones around the body limit. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...UNICODE_EDGES) },
  { weight: 2, arbitrary: fc.constantFrom(`${REFLECTION_MARKER}<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>${REFLECTION_MARKER}`, `'${REFLECTION_MARKER}&amp;`) },
  { weight: 1, arbitrary: fc.constantFrom("' OR 1=1 --", '"; DROP TABLE decisions; --', '../../etc/passwd', '%00', '${jndi:ldap://x}', '{{7*7}}', '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty') },
  { weight: 1, arbitrary: fc.constantFrom('1e400', '9007199254740993', '-0', 'NaN', 'Infinity', '0x10', '  12  ', '12.345', '1,000.00', '١٢٣', '00000000000000000000000000149.97') },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 1, arbitrary: fc.constantFrom(0, 1, 254, 255, 256, 1_000, 4_096, 65_000, 66_000, 70_000).map((n) => 'a'.repeat(n)) },
  { weight: 1, arbitrary: fc.constantFrom(300, 5_000, 22_000).map((n) => '\uD83D\uDE00'.repeat(n)) },
);

/** Deep nesting, up to and past what fits in 64 KiB (about 32,000 levels of arrays). */
export const deepNesting: fc.Arbitrary<JsonNode> = fc.tuple(fc.constantFrom(50, 1_000, 5_000, 12_000, 32_000, 40_000), fc.boolean()).map(([depth, arrays]) => {
  let node: JsonNode = jnum('1');
  for (let i = 0; i < depth; i++) node = arrays ? { t: 'arr', items: [node] } : { t: 'obj', entries: [['a', node]] };
  return node;
});

const pollutionPayload: JsonNode = fromJs({ polluted: 'yes', isAdmin: true });
/** `__proto__`, `constructor` and `prototype` keys with a payload that would show if it landed. */
export const pollutionEntry: fc.Arbitrary<[string, JsonNode]> = fc.constantFrom<[string, JsonNode]>(
  ['__proto__', pollutionPayload],
  ['constructor', { t: 'obj', entries: [['prototype', pollutionPayload]] }],
  ['prototype', pollutionPayload],
  ['__proto__', { t: 'obj', entries: [['__proto__', pollutionPayload]] }],
  ['constructor', jstr('x')],
  ['__proto__', jnull],
);

/** Any hostile JSON value (leaf or small container). */
export const hostileValue: fc.Arbitrary<JsonNode> = fc.oneof(
  { weight: 4, arbitrary: hostileString.map(jstr) },
  { weight: 3, arbitrary: hostileNumberText.map(jnum) },
  { weight: 1, arbitrary: fc.constantFrom<JsonNode>(jnull, { t: 'bool', v: true }, { t: 'bool', v: false }, { t: 'arr', items: [] }, { t: 'obj', entries: [] }) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(fromJs) },
  { weight: 1, arbitrary: pollutionEntry.map(([k, v]) => ({ t: 'obj', entries: [[k, v]] }) as JsonNode) },
  { weight: 1, arbitrary: deepNesting },
);

// ---------------------------------------------------------------------------------------------
// Mutations of a valid body

type Mutation =
  | { op: 'delete'; at: number; entry: number }
  | { op: 'replace'; at: number; entry: number; value: JsonNode }
  | { op: 'add'; at: number; key: string; value: JsonNode }
  | { op: 'duplicate'; at: number; entry: number; value: JsonNode }
  | { op: 'pollute'; at: number; entry: [string, JsonNode] }
  | { op: 'wrap'; at: number; entry: number; depth: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({ op: fc.constant('delete' as const), at: fc.nat(), entry: fc.nat() }),
  fc.record({ op: fc.constant('replace' as const), at: fc.nat(), entry: fc.nat(), value: hostileValue }),
  fc.record({ op: fc.constant('add' as const), at: fc.nat(), key: fc.oneof(hostileString, fc.constantFrom('extra', 'coupon', 'id', 'tenant_id', 'environment')), value: hostileValue }),
  fc.record({ op: fc.constant('duplicate' as const), at: fc.nat(), entry: fc.nat(), value: hostileValue }),
  fc.record({ op: fc.constant('pollute' as const), at: fc.nat(), entry: pollutionEntry }),
  fc.record({ op: fc.constant('wrap' as const), at: fc.nat(), entry: fc.nat(), depth: fc.constantFrom(1, 2, 100, 3_000) }),
);

function applyMutation(root: JsonNode, m: Mutation): JsonNode {
  // Inserted values are copies: generated values can be shared constants, and later mutations edit in place.
  if ('value' in m) m = { ...m, value: clone(m.value) };
  if (m.op === 'pollute') m = { ...m, entry: [m.entry[0], clone(m.entry[1])] };
  const all = containers(root);
  if (all.length === 0) return m.op === 'replace' ? m.value : root;
  const target = all[m.at % all.length]!;
  const size = target.t === 'obj' ? target.entries.length : target.t === 'arr' ? target.items.length : 0;
  const get = (i: number): JsonNode | undefined => (target.t === 'obj' ? target.entries[i]?.[1] : target.t === 'arr' ? target.items[i] : undefined);
  const set = (i: number, v: JsonNode) => {
    if (target.t === 'obj') target.entries[i]![1] = v;
    if (target.t === 'arr') target.items[i] = v;
  };
  switch (m.op) {
    case 'delete':
      if (size === 0) break;
      if (target.t === 'obj') target.entries.splice(m.entry % size, 1);
      if (target.t === 'arr') target.items.splice(m.entry % size, 1);
      break;
    case 'replace':
      if (size > 0) set(m.entry % size, m.value);
      break;
    case 'add':
      if (target.t === 'obj') target.entries.push([m.key, m.value]);
      if (target.t === 'arr') target.items.push(m.value);
      break;
    case 'duplicate':
      // The same key twice in the text: JSON.parse keeps the last; the first must not matter.
      if (target.t === 'obj' && size > 0) {
        const [key, value] = target.entries[m.entry % size]!;
        target.entries.splice(m.entry % size, 0, [key, m.value]);
        if (m.entry % 2 === 0) target.entries.push([key, value]);
      }
      break;
    case 'pollute':
      if (target.t === 'obj') target.entries.push(m.entry);
      if (target.t === 'arr') target.items.push({ t: 'obj', entries: [m.entry] });
      break;
    case 'wrap':
      if (size > 0) {
        let v = get(m.entry % size)!;
        for (let i = 0; i < m.depth; i++) v = { t: 'arr', items: [v] };
        set(m.entry % size, v);
      }
      break;
  }
  return root;
}

/** Raw-body variants that are not a mutation of the tree: what a confused or hostile client sends. */
const wholeBody: fc.Arbitrary<(validText: string) => Buffer> = fc.oneof(
  fc.constant(() => Buffer.alloc(0)),
  fc.constantFrom('null', 'true', '0', '"text"', '[]', '{}', '[{}]', 'NaN', 'undefined', '{"a":1,}', "{'a':1}", '{"a":01}', '{"a":1e}', '\u0000', '{"a":"\\ud800"}', '{"a":"\\u0000"}').map((t) => () => Buffer.from(t)),
  fc.jsonValue({ maxDepth: 4 }).map((v) => () => Buffer.from(JSON.stringify(v) ?? 'null')),
  fc.nat().map((cut) => (valid: string) => Buffer.from(valid.slice(0, cut % Math.max(1, valid.length)))),
  // Invalid UTF-8: a lone continuation byte, an overlong "/", a CESU surrogate, a truncated sequence, 0xFF.
  fc.tuple(fc.nat(), fc.constantFrom([0x80], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82], [0xff], [0xf8, 0x88, 0x80, 0x80, 0x80])).map(([at, bytes]) => (valid: string) => {
    const b = Buffer.from(valid);
    const i = at % Math.max(1, b.length);
    return Buffer.concat([b.subarray(0, i), Buffer.from(bytes), b.subarray(i)]);
  }),
  fc.constant((valid: string) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(valid)])),
  fc.constant((valid: string) => Buffer.from(valid, 'utf16le')),
  fc.constantFrom(BODY_LIMIT - 200, BODY_LIMIT + 1, BODY_LIMIT * 2).map((n) => (valid: string) => Buffer.from(valid.replace(/^\{/, `{"pad":"${'p'.repeat(n)}",`))),
  fc.constantFrom(8, 64).map((n) => () => Buffer.from('{' + Array.from({ length: n * 100 }, (_, i) => `"k${i}":${i}`).join(',') + '}')),
);

/**
 * A body derived from a valid one: usually 1-3 mutations of its tree (so most of it is still
 * right and the request reaches deep into validation and the handler), sometimes untouched (a
 * valid request must work too), sometimes replaced wholesale.
 */
export function mutatedBody(valid: unknown): fc.Arbitrary<{ body: Buffer; note: string }> {
  const validText = toText(fromJs(valid));
  return fc.oneof(
    { weight: 1, arbitrary: fc.constant({ body: Buffer.from(validText), note: 'valid body' }) },
    {
      weight: 6,
      arbitrary: fc.array(mutation, { minLength: 1, maxLength: 3 }).map((ms) => {
        const tree = ms.reduce((t, m) => applyMutation(t, m), fromJs(valid));
        return { body: Buffer.from(toText(tree)), note: `mutations ${ms.map((m) => m.op).join(',')}` };
      }),
    },
    { weight: 2, arbitrary: wholeBody.map((make) => ({ body: make(validText), note: 'whole-body variant' })) },
  );
}

// ---------------------------------------------------------------------------------------------
// The request around the body

export const jsonContentType = fc.oneof(
  { weight: 8, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8', 'application/json; charset=UTF-8', 'application/json;charset=latin1', 'application/json; charset=utf-16', 'application/json; charset="utf-8"; x=y',
      'APPLICATION/JSON', 'application/vnd.api+json', 'application/jsonx', 'application/json, text/plain', 'text/plain', 'text/json', 'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=zzz', 'application/octet-stream', '', ' ', 'application/json; boundary=--', '*/*', 'application/*', 'json',
    ),
  },
  { weight: 1, arbitrary: fc.constant(undefined) },
);

/** Idempotency-Key values: mostly absent or valid, else the edges of 1-255 printable ASCII. */
export const idempotencyKey = fc.oneof(
  { weight: 5, arbitrary: fc.constant(undefined) },
  { weight: 3, arbitrary: fc.uuid().map((u) => `fz-${u}`) },
  {
    weight: 2,
    arbitrary: fc.constantFrom('', ' ', 'a'.repeat(255), 'a'.repeat(256), 'a'.repeat(5000), 'key with spaces', 'ключ', '\u00e9t\u00e9', 'a,b', 'a\tb', '%00', '__proto__', '"quoted"', 'ab\u007f'),
  },
);

export interface ApiKeys {
  sandbox: string;
  live: string;
  revoked: string;
}

/** The Authorization header: the right key most of the time; the rest every kind of wrong. */
export function authorization(keys: ApiKeys, rightKey: 'sandbox' | 'live' = 'sandbox'): fc.Arbitrary<string | undefined> {
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant(`Bearer ${keys[rightKey]}`) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        undefined, '', 'Bearer', 'Bearer ', `Bearer ${keys.revoked}`, `bearer ${keys.sandbox}`, `Bearer  ${keys.sandbox} `, `Basic ${Buffer.from('a:b').toString('base64')}`,
        `Bearer ${keys.sandbox}x`, `Bearer ${keys.sandbox.slice(0, -1)}`, `Bearer ${'svc_test_' + 'A'.repeat(5000)}`, 'Bearer svc_live_', `Bearer ${keys.live}`, `Bearer ${keys.sandbox}, Bearer ${keys.live}`,
      ),
    },
  );
}

/** Path segment values in place of an id: right ones, wrong shapes, traversal, encodings. */
export function hostileId(valid: string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: valid.length > 0 ? 4 : 0, arbitrary: valid.length > 0 ? fc.constantFrom(...valid) : fc.constant('x') },
    { weight: 2, arbitrary: fc.uuid() },
    {
      weight: 4,
      arbitrary: fc.constantFrom(
        'abc', '0', '-1', '00000000-0000-0000-0000-000000000000', 'FFFFFFFF-FFFF-4FFF-BFFF-FFFFFFFFFFFF', '..', '.', '%2e%2e', '..%2F..%2Fetc%2Fpasswd', 'a%2Fb', '%2F', '%00',
        '%E2%80%AE', '%zz', '%', '%C0%AF', '%ED%A0%80', '%FF', encodeURIComponent(REFLECTION_MARKER), 'a'.repeat(64), 'a'.repeat(65), 'a'.repeat(5000), '9'.repeat(400), '1e400',
        '__proto__', 'constructor', 'null', 'undefined', '%20', '+', 'a;b', 'a,b', '*', '~', '%252e%252e',
      ),
    },
    { weight: 1, arbitrary: fc.uuid().map((u) => u.toUpperCase()) },
    { weight: 1, arbitrary: fc.uuid().map((u) => `${u}x`) },
  );
}

/** Query strings: none, repeated parameters, bracket arrays, pollution keys, junk, long. */
export const hostileQuery: fc.Arbitrary<string> = fc.oneof(
  { weight: 6, arbitrary: fc.constant('') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      '?', '?a=1&a=2', '?limit=1&limit=2', '?limit[]=1', '?__proto__[polluted]=yes', '?__proto__.polluted=yes', '?constructor[prototype][polluted]=yes', '?constructor=1',
      '?type=decision.finalized&type=decision.finalized', '?%zz=1', '?a=%zz', '?&&&', '?=', `?x=${'q'.repeat(20_000)}`, `?${encodeURIComponent(REFLECTION_MARKER)}=1`, '?a=%00', '?a=%ED%A0%80',
      '?page=0', '?page=99999999999999999999', '?page_size=-1', '?starting_after=..', '?limit=1e400', '?created_gte=-0',
    ),
  },
);

export const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/** The route's own methods mostly, any other method (and a few unusual ones) sometimes. */
export function methodFor(own: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...own) }, { weight: 1, arbitrary: fc.constantFrom(...ALL_METHODS, 'TRACE', 'SEARCH', 'PROPFIND') });
}

/** Header record without the undefined ones. */
export function headersOf(entries: Record<string, string | undefined>): Record<string, string> {
  return Object.fromEntries(Object.entries(entries).filter((e): e is [string, string] => e[1] !== undefined));
}
