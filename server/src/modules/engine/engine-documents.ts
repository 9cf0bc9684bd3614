/**
 * The scorecard and policy documents shipped with the service, loaded and compiled once.
 *
 * Old versions stay here after a new one ships: an audit record names the versions that decided,
 * and `replay` needs exactly those to reproduce it. Adding a version = adding a JSON file and one
 * line to each list below; a document is never edited once a decision has used it.
 */
import { isAdverseActionCode } from './adverse-action-reasons.js';
import { compilePolicy, createPolicyCatalog, type CompiledPolicy, type PolicyCatalog } from './policy.js';
import { loadScorecard, type Scorecard } from './scorecard.js';
import bnplScorecardV1 from './scorecards/bnpl-scorecard-v1.json' with { type: 'json' };
import bnplPolicyV1 from './policies/bnpl-policy-v1.json' with { type: 'json' };
import autoLoanScorecardV1 from './scorecards/auto-loan-scorecard-v1.json' with { type: 'json' };
import autoLoanPolicyV1 from './policies/auto-loan-policy-v1.json' with { type: 'json' };
import { compileAutoLoanPolicy, type CompiledAutoLoanPolicy } from './auto-loan-policy.js';
import type { AutoLoanEngineDocuments } from './auto-loan-engine.js';

/** What decides a BNPL application: one scorecard and one compiled policy. */
export interface EngineDocuments {
  scorecard: Scorecard;
  policy: CompiledPolicy;
}

export const DEFAULT_BNPL_SCORECARD_VERSION = 'bnpl-sc-2026.11.1';
export const DEFAULT_BNPL_POLICY_VERSION = 'bnpl-policy-2026.11.1';

const SCORECARD_DOCUMENTS: readonly unknown[] = [bnplScorecardV1];
const POLICY_DOCUMENTS: readonly unknown[] = [bnplPolicyV1];

let scorecards: Map<string, Scorecard> | undefined;
let policies: Map<string, CompiledPolicy> | undefined;

/** Load a scorecard whose reason codes must all be in the adverse-action registry. */
export function loadBnplScorecard(document: unknown): Scorecard {
  return loadScorecard(document, { isKnownReasonCode: isAdverseActionCode });
}

function bundledScorecards(): Map<string, Scorecard> {
  scorecards ??= indexByVersion(SCORECARD_DOCUMENTS.map(loadBnplScorecard));
  return scorecards;
}

function bundledPolicies(): Map<string, CompiledPolicy> {
  policies ??= indexByVersion(POLICY_DOCUMENTS.map(compilePolicy));
  return policies;
}

export function bundledScorecard(version: string): Scorecard {
  const found = bundledScorecards().get(version);
  if (!found) throw new RangeError(`no bundled scorecard ${version}`);
  return found;
}

export function bundledPolicy(version: string): CompiledPolicy {
  const found = bundledPolicies().get(version);
  if (!found) throw new RangeError(`no bundled policy ${version}`);
  return found;
}

/** The JDM document of a bundled policy (a starting point for a tenant's own versions). */
export function bundledPolicyDocument(version: string): unknown {
  return bundledPolicy(version).document;
}

/** Versions of the bundled BNPL scorecards a policy version may pair with. */
export function bundledScorecardVersions(): string[] {
  return [...bundledScorecards().keys()];
}

export function isBundledPolicyVersion(version: string): boolean {
  return bundledPolicies().has(version);
}

/** The documents that decided a stored decision, found by the versions it names. */
export function bundledDocumentsFor(versions: { scorecard: string; policy: string }): EngineDocuments {
  return { scorecard: bundledScorecard(versions.scorecard), policy: bundledPolicy(versions.policy) };
}

/** The current default scorecard and policy for BNPL. */
export function defaultBnplDocuments(): EngineDocuments {
  return bundledDocumentsFor({ scorecard: DEFAULT_BNPL_SCORECARD_VERSION, policy: DEFAULT_BNPL_POLICY_VERSION });
}

/**
 * The policies in force, by tenant and environment. Today only the default ("*", "*"); a tenant's
 * own policy is a new document whose `policyConstants` name that tenant and environment.
 */
export function defaultBnplPolicyCatalog(): PolicyCatalog {
  return createPolicyCatalog([bundledPolicy(DEFAULT_BNPL_POLICY_VERSION)]);
}

// ---------------------------------------------------------------------------------------------
// Auto loans: their own scorecard and policy documents, versioned the same way.
// ---------------------------------------------------------------------------------------------

export const DEFAULT_AUTO_LOAN_SCORECARD_VERSION = 'auto-sc-2026.11.1';
export const DEFAULT_AUTO_LOAN_POLICY_VERSION = 'auto-policy-2026.11.1';

const AUTO_LOAN_SCORECARD_DOCUMENTS: readonly unknown[] = [autoLoanScorecardV1];
const AUTO_LOAN_POLICY_DOCUMENTS: readonly unknown[] = [autoLoanPolicyV1];

let autoLoanScorecards: Map<string, Scorecard> | undefined;
let autoLoanPolicies: Map<string, CompiledAutoLoanPolicy> | undefined;

/** The auto-loan documents of the versions a stored decision names (an unknown version throws). */
export function bundledAutoLoanDocumentsFor(versions: { scorecard: string; policy: string }): AutoLoanEngineDocuments {
  autoLoanScorecards ??= indexByVersion(AUTO_LOAN_SCORECARD_DOCUMENTS.map(loadBnplScorecard));
  autoLoanPolicies ??= indexByVersion(AUTO_LOAN_POLICY_DOCUMENTS.map(compileAutoLoanPolicy));
  const scorecard = autoLoanScorecards.get(versions.scorecard);
  const policy = autoLoanPolicies.get(versions.policy);
  if (!scorecard) throw new RangeError(`no bundled auto-loan scorecard ${versions.scorecard}`);
  if (!policy) throw new RangeError(`no bundled auto-loan policy ${versions.policy}`);
  return { scorecard, policy };
}

/** The current default scorecard and policy for auto loans. */
export function defaultAutoLoanDocuments(): AutoLoanEngineDocuments {
  return bundledAutoLoanDocumentsFor({ scorecard: DEFAULT_AUTO_LOAN_SCORECARD_VERSION, policy: DEFAULT_AUTO_LOAN_POLICY_VERSION });
}

/** Engine documents by product: what `documentsFor(scope, product)` returns. */
export interface ProductEngineDocuments {
  bnpl: EngineDocuments;
  auto_loan: AutoLoanEngineDocuments;
}

function indexByVersion<T extends { version: string }>(items: T[]): Map<string, T> {
  const map = new Map<string, T>();
  for (const item of items) {
    if (map.has(item.version)) throw new Error(`duplicate bundled document version ${item.version}`);
    map.set(item.version, item);
  }
  return map;
}

/** A bundled auto-loan scorecard by version (a stored auto-loan policy version pairs with one). */
export function bundledAutoLoanScorecard(version: string): Scorecard {
  autoLoanScorecards ??= indexByVersion(AUTO_LOAN_SCORECARD_DOCUMENTS.map(loadBnplScorecard));
  const found = autoLoanScorecards.get(version);
  if (!found) throw new RangeError(`no bundled auto-loan scorecard ${version}`);
  return found;
}

/** Versions of the bundled auto-loan scorecards a policy version may pair with. */
export function bundledAutoLoanScorecardVersions(): string[] {
  bundledAutoLoanScorecard(DEFAULT_AUTO_LOAN_SCORECARD_VERSION);
  return [...autoLoanScorecards!.keys()];
}

export function isBundledAutoLoanPolicyVersion(version: string): boolean {
  autoLoanPolicies ??= indexByVersion(AUTO_LOAN_POLICY_DOCUMENTS.map(compileAutoLoanPolicy));
  return autoLoanPolicies.has(version);
}

/** The JDM document of a bundled auto-loan policy (a starting point for a tenant's own versions). */
export function bundledAutoLoanPolicyDocument(version: string): unknown {
  return bundledAutoLoanDocumentsFor({ scorecard: DEFAULT_AUTO_LOAN_SCORECARD_VERSION, policy: version }).policy.document;
}
