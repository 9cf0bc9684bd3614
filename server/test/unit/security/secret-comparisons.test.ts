/**
 * Timing-safe comparisons for every secret (issue 11 item 4), kept so by a source scan.
 *
 * Where secrets are compared, and how (the audit, docs/reliability.md, "Timing-safe comparisons"):
 * - API keys, portal session tokens, invitation tokens, verification and document-request tokens:
 *   never compared at all. The presented value is hashed (SHA-256) and the hash is looked up
 *   through an index; a timing difference there can only reveal a prefix of a hash, which does
 *   not help anyone find a value that hashes to it.
 * - Portal CSRF (double submit and the session-bound HMAC), the hosted pages' CSRF, one-time code
 *   hashes, SSN last-4 and date of birth on the hosted page, webhook signatures (server signing.ts):
 *   `safeEqual` (lib/crypto.ts, crypto.timingSafeEqual), every candidate compared, no early exit.
 * - Passwords: argon2id `verify` (constant time inside the library); an unknown email is verified
 *   against a dummy hash so both paths cost the same.
 * - SDKs: Node `timingSafeEqual`, Python `hmac.compare_digest`, over every secret and signature.
 *
 * The scan parses every TypeScript file of the server and the Node SDK and fails on `===`, `!==`,
 * `==` or `!=` where either side is named like a secret (token, secret, csrf, password, signature,
 * hash, ssn, dob, nonce, hmac, digest, key...). Comparisons with null, undefined or '' test
 * presence, not content, and pass. The few deliberate exceptions are listed with their reason.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../../..');
const SCANNED = ['server/src', 'sdks/node/src'];

/** A name that holds a secret or something derived from one. */
const SECRET_NAME = /^(.*token.*|.*secret.*|.*csrf.*|.*password.*|.*passwd.*|.*signature.*|signatures?|expected|candidate|presented|.*hash|.*_hash|.*ssn.*|dob|.*otp.*|nonce|.*hmac.*|.*digest.*|mac|rawkey|apikey|api_key|.*apikey.*)$/i;

/** `file: source text of the comparison` -> why it is not a secret comparison. */
const ALLOWED: Record<string, string> = {
  'server/src/modules/decisions/decisions.service.ts: ssnLast4 === SANDBOX_MAGIC_SSN_LAST4.verificationFails':
    'sandbox only: the documented magic value 2222 (docs/sandbox.md), not a secret of anyone',
};

const PRESENCE = new Set(['null', 'undefined', "''", '""', '0']);

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const full = path.join(dir, name);
    if (statSync(full).isDirectory()) out.push(...filesUnder(full));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(full);
  }
  return out;
}

/** The last name of an operand: `a.b.csrfToken` -> csrfToken, `x[0]` -> x, `f()` -> f. */
function lastName(node: ts.Expression): string | null {
  if (ts.isIdentifier(node)) return node.text;
  if (ts.isPropertyAccessExpression(node)) return node.name.text;
  if (ts.isElementAccessExpression(node)) return lastName(node.expression);
  if (ts.isCallExpression(node)) return lastName(node.expression);
  if (ts.isParenthesizedExpression(node) || ts.isNonNullExpression(node) || ts.isAsExpression(node)) return lastName(node.expression);
  return null;
}

const EQUALITY = new Set([ts.SyntaxKind.EqualsEqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsEqualsToken, ts.SyntaxKind.EqualsEqualsToken, ts.SyntaxKind.ExclamationEqualsToken]);

/** Plain comparisons on secret-named values in one source text. */
export function plainSecretComparisons(file: string, text: string): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (ts.isBinaryExpression(node) && EQUALITY.has(node.operatorToken.kind)) {
      const sides = [node.left, node.right];
      const presence = sides.some((s) => PRESENCE.has(s.getText(source)) || (ts.isTypeOfExpression(s)));
      const secretSide = sides.some((s) => SECRET_NAME.test(lastName(s) ?? ''));
      if (secretSide && !presence) found.push(`${file}: ${node.getText(source).replace(/\s+/g, ' ')}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('secret comparisons', () => {
  it('no secret is compared with ===, !==, == or != anywhere in the server or the Node SDK', () => {
    const found: string[] = [];
    for (const dir of SCANNED) {
      for (const file of filesUnder(path.join(ROOT, dir))) found.push(...plainSecretComparisons(path.relative(ROOT, file), readFileSync(file, 'utf8')));
    }
    expect(found.filter((f) => !(f in ALLOWED)), 'compare secrets with safeEqual (lib/crypto.ts) or timingSafeEqual').toEqual([]);
    // Every exception still exists: a stale one would hide nothing but mislead the reader.
    expect(Object.keys(ALLOWED).filter((a) => !found.includes(a))).toEqual([]);
  });

  it('the scan catches a plain comparison of a secret however it is spelled', () => {
    const sample = [
      'if (csrfToken === presented) ok();',
      'const ok = request.headers["x-csrf-token"] == session.csrfToken;',
      'if (computedSignature !== header.v1) fail();',
      'return row.token_hash === sha256Hex(token);',
      'if (input.ssnLast4 === stored.ssn) pass();',
      'if (consumer.dob !== dob) fail();',
      'if (user.password === password) login();',
      'const same = expected === candidate;',
    ].join('\n');
    expect(plainSecretComparisons('sample.ts', sample)).toHaveLength(8);
    // Presence tests and lengths are not content comparisons.
    expect(plainSecretComparisons('ok.ts', 'if (token === null || secret !== undefined || csrf === "" || typeof token === "string" || signatures.length === 0) {}')).toEqual([]);
  });
});
