/**
 * The product catalogue of credit policies: for each product, what its documents are, how a
 * version is compiled, validated, edited in the structured view and tested against the sandbox.
 * The credit-policy service and its routes are product-agnostic and look everything up here.
 *
 * Adding a product: add its documents type to ProductEngineDocuments (engine) and an entry to
 * POLICY_PRODUCTS; storage, numbering, promote, caching and the portal screens come with it.
 * Products: bnpl, auto_loan (each with its own validation, structured view and sandbox set).
 */
import { formatMoney, parseMoney } from '../../lib/money.js';
import {
  AUTO_LOAN_TERM_BUCKETS,
  bundledAutoLoanDocumentsFor,
  bundledAutoLoanPolicyDocument,
  bundledAutoLoanScorecard,
  bundledAutoLoanScorecardVersions,
  compileAutoLoanPolicy,
  DEFAULT_AUTO_LOAN_POLICY_VERSION,
  DEFAULT_AUTO_LOAN_SCORECARD_VERSION,
  isBundledAutoLoanPolicyVersion,
  readAutoLoanPolicyTables,
  validateAutoLoanPolicyDocument,
  writeAutoLoanPolicyTables,
  type AutoLoanEngineDocuments,
  type AutoLoanPolicyTables,
  type AutoLoanTermBucket,
  BNPL_PLANS,
  bundledDocumentsFor,
  bundledPolicyDocument,
  bundledScorecard,
  bundledScorecardVersions,
  compilePolicy,
  DEFAULT_BNPL_POLICY_VERSION,
  DEFAULT_BNPL_SCORECARD_VERSION,
  isBundledPolicyVersion,
  readPolicyTables,
  RISK_GRADES,
  validateBnplPolicyDocument,
  withPolicyIdentity,
  writePolicyTables,
  formatRateBps,
  type BnplPlan,
  type EngineDocuments,
  type ProductEngineDocuments,
  type PolicyDocumentProblem,
  type PolicyOutcome,
  type PolicyTables,
  type RiskGrade,
} from '../engine/index.js';
import { runAutoLoanSandboxTest } from './auto-loan-sandbox-test.js';
import { runBnplSandboxTest, type SandboxTestRow } from './bnpl-sandbox-test.js';

/** What decides, per product: the engine's own map (one type, so decisions and policies agree). */
export type PolicyProductDocuments = ProductEngineDocuments;
export type PolicyProduct = keyof PolicyProductDocuments;

export interface PolicyIdentity {
  version: string;
  tenant: string;
  environment: 'sandbox' | 'live';
}

export interface ProductPolicyDefinition<D> {
  product: string;
  label: string;
  /** What every tenant decides with until it promotes a version of its own. */
  bundled: { scorecardVersion: string; policyVersion: string };
  scorecardVersions(): string[];
  isBundledPolicyVersion(version: string): boolean;
  bundledPolicyDocument(version: string): unknown;
  bundledDocuments(versions: { scorecard: string; policy: string }): D;
  /** Compile a stored (already validated) version. */
  compile(scorecardVersion: string, policyDocument: unknown): D;
  versionsOf(documents: D): { scorecard: string; policy: string };
  withIdentity(document: unknown, identity: PolicyIdentity): unknown;
  validate(document: unknown): Promise<PolicyDocumentProblem[]>;
  /** The structured view as sent to the portal, or null with the reason. */
  presentTables(document: unknown): { tables: unknown; reason: null } | { tables: null; reason: string };
  /** Apply the portal's structured view to a document; problems name the field of `tables`. */
  applyTables(document: unknown, wire: unknown): { document: unknown; problems: [] } | { document: null; problems: PolicyDocumentProblem[] };
  sandboxTest(active: D, draft: D, now: Date): Promise<SandboxTestRow[]>;
}

const bnpl: ProductPolicyDefinition<EngineDocuments> = {
  product: 'bnpl',
  label: 'Buy now, pay later',
  bundled: { scorecardVersion: DEFAULT_BNPL_SCORECARD_VERSION, policyVersion: DEFAULT_BNPL_POLICY_VERSION },
  scorecardVersions: bundledScorecardVersions,
  isBundledPolicyVersion,
  bundledPolicyDocument,
  bundledDocuments: bundledDocumentsFor,
  compile: (scorecardVersion, document) => ({ scorecard: bundledScorecard(scorecardVersion), policy: compilePolicy(document) }),
  versionsOf: (d) => ({ scorecard: d.scorecard.version, policy: d.policy.version }),
  withIdentity: withPolicyIdentity,
  validate: validateBnplPolicyDocument,
  presentTables(document) {
    const read = readPolicyTables(document);
    return read.tables ? { tables: presentBnplTables(read.tables), reason: null } : read;
  },
  applyTables(document, wire) {
    const parsed = parseBnplTables(wire);
    if (!parsed.tables) return { document: null, problems: parsed.problems };
    const read = readPolicyTables(document);
    if (!read.tables) return { document: null, problems: [{ path: '/tables', rule: 'structured_view', message: `the base version cannot be edited in the structured view: ${read.reason}` }] };
    return { document: writePolicyTables(document, parsed.tables), problems: [] };
  },
  sandboxTest: runBnplSandboxTest,
};

/**
 * Auto loans: the bundled auto-loan scorecard and JDM policy (ADR 0008) as the default; versions
 * are the same graph with the tenant's numbers (auto-loan-policy-tables.ts) or an uploaded graph
 * that keeps the auto-loan contract (auto-loan-policy-validation.ts).
 */
const autoLoan: ProductPolicyDefinition<AutoLoanEngineDocuments> = {
  product: 'auto_loan',
  label: 'Auto loans',
  bundled: { scorecardVersion: DEFAULT_AUTO_LOAN_SCORECARD_VERSION, policyVersion: DEFAULT_AUTO_LOAN_POLICY_VERSION },
  scorecardVersions: bundledAutoLoanScorecardVersions,
  isBundledPolicyVersion: isBundledAutoLoanPolicyVersion,
  bundledPolicyDocument: bundledAutoLoanPolicyDocument,
  bundledDocuments: bundledAutoLoanDocumentsFor,
  compile: (scorecardVersion, document) => ({ scorecard: bundledAutoLoanScorecard(scorecardVersion), policy: compileAutoLoanPolicy(document) }),
  versionsOf: (d) => ({ scorecard: d.scorecard.version, policy: d.policy.version }),
  // The same policyConstants identity fields as BNPL's graph (version, tenant, environment).
  withIdentity: withPolicyIdentity,
  validate: validateAutoLoanPolicyDocument,
  presentTables(document) {
    const read = readAutoLoanPolicyTables(document);
    return read.tables ? { tables: presentAutoLoanTables(read.tables), reason: null } : read;
  },
  applyTables(document, wire) {
    const parsed = parseAutoLoanTables(wire);
    if (!parsed.tables) return { document: null, problems: parsed.problems };
    const read = readAutoLoanPolicyTables(document);
    if (!read.tables) return { document: null, problems: [{ path: '/tables', rule: 'structured_view', message: `the base version cannot be edited in the structured view: ${read.reason}` }] };
    return { document: writeAutoLoanPolicyTables(document, parsed.tables), problems: [] };
  },
  sandboxTest: runAutoLoanSandboxTest,
};

export const POLICY_PRODUCTS: { [P in PolicyProduct]: ProductPolicyDefinition<PolicyProductDocuments[P]> } = { bnpl, auto_loan: autoLoan };

export const POLICY_PRODUCT_KEYS = Object.keys(POLICY_PRODUCTS) as PolicyProduct[];

/** The name a stored version carries (engine_version's policy part): bnpl-policy-sandbox-v3. */
export function versionName(product: string, environment: string, version: number): string {
  return `${product}-policy-${environment}-v${version}`;
}

// --- BNPL structured view on the wire: money as two-decimal strings, rates as percent strings ---

interface WireBnplTables {
  grades: Array<{ grade: string; min_score: number | null; band: string; limit: string }>;
  pricing: Array<{ grade: string; pay_in_4: string | null; pay_in_6: string | null; monthly: string | null }>;
  kyc_tiers: { enhanced_from: string; hard_from: string };
  plan_minimums: Record<BnplPlan, string>;
  default_plan: { pay_in_4_up_to: string; pay_in_6_up_to: string };
}

function presentBnplTables(t: PolicyTables): WireBnplTables {
  const rate = (bps: number | null) => (bps === null ? null : formatRateBps(bps));
  return {
    grades: t.grades.map((g) => ({ grade: g.grade, min_score: g.minScore, band: g.band, limit: formatMoney(g.limitCents) })),
    pricing: t.pricing.map((p) => ({ grade: p.grade, pay_in_4: rate(p.ratesBps.pay_in_4), pay_in_6: rate(p.ratesBps.pay_in_6), monthly: rate(p.ratesBps.monthly) })),
    kyc_tiers: { enhanced_from: formatMoney(t.kycTiers.enhancedFromCents), hard_from: formatMoney(t.kycTiers.hardFromCents) },
    plan_minimums: { pay_in_4: formatMoney(t.planMinimumCents.pay_in_4), pay_in_6: formatMoney(t.planMinimumCents.pay_in_6), monthly: formatMoney(t.planMinimumCents.monthly) },
    default_plan: { pay_in_4_up_to: formatMoney(t.defaultPlan.payIn4UpToCents), pay_in_6_up_to: formatMoney(t.defaultPlan.payIn6UpToCents) },
  };
}

const RATE_TEXT = /^(\d{1,2})\.(\d{2})$/;

/** Parse the portal's structured view; every malformed field is listed (path under /tables). */
function parseBnplTables(wire: unknown): { tables: PolicyTables; problems: [] } | { tables: null; problems: PolicyDocumentProblem[] } {
  const problems: PolicyDocumentProblem[] = [];
  const add = (path: string, rule: string, message: string) => problems.push({ path: `/tables${path}`, rule, message });
  const w = (wire ?? {}) as Partial<WireBnplTables>;
  const money = (value: unknown, path: string): number => {
    const cents = typeof value === 'string' ? parseMoney(value) : null;
    if (cents === null) add(path, 'money_format', `${path.slice(1).replace(/\//g, '.')} must be an amount like "2500.00"`);
    return cents ?? 0;
  };
  const rate = (value: unknown, path: string): number | null => {
    if (value === null || value === '') return null;
    const m = typeof value === 'string' ? RATE_TEXT.exec(value) : null;
    if (!m) {
      add(path, 'rate_format', `${path.slice(1).replace(/\//g, '.')} must be a percentage with two decimals, like "9.99", or empty`);
      return null;
    }
    return Number(m[1]) * 100 + Number(m[2]);
  };
  if (!Array.isArray(w.grades) || w.grades.length === 0) add('/grades', 'structured_view', 'grades must list every risk grade');
  if (!Array.isArray(w.pricing)) add('/pricing', 'structured_view', 'pricing must be a list of grades');
  const grades = (Array.isArray(w.grades) ? w.grades : []).map((g, i) => {
    if (!(RISK_GRADES as readonly string[]).includes(g?.grade)) add(`/grades/${i}/grade`, 'grade_known', `grades.${i}.grade must be one of ${RISK_GRADES.join(', ')}`);
    if (!['approve', 'refer', 'decline'].includes(g?.band)) add(`/grades/${i}/band`, 'band_known', `grades.${i}.band must be approve, refer or decline`);
    const minScore = g?.min_score ?? null;
    if (minScore !== null && (!Number.isInteger(minScore) || minScore < 300 || minScore > 850)) add(`/grades/${i}/min_score`, 'cutoff_range', `grades.${i}.min_score must be a whole score from 300 to 850`);
    return { grade: g?.grade as RiskGrade, minScore, band: g?.band as PolicyOutcome, limitCents: money(g?.limit, `/grades/${i}/limit`) };
  });
  const pricing = (Array.isArray(w.pricing) ? w.pricing : []).map((p, i) => {
    if (!(RISK_GRADES as readonly string[]).includes(p?.grade)) add(`/pricing/${i}/grade`, 'grade_known', `pricing.${i}.grade must be one of ${RISK_GRADES.join(', ')}`);
    const ratesBps = Object.fromEntries(BNPL_PLANS.map((plan) => [plan, rate(p?.[plan], `/pricing/${i}/${plan}`)])) as Record<BnplPlan, number | null>;
    return { grade: p?.grade as RiskGrade, ratesBps };
  });
  const tables: PolicyTables = {
    grades,
    pricing,
    kycTiers: { enhancedFromCents: money(w.kyc_tiers?.enhanced_from, '/kyc_tiers/enhanced_from'), hardFromCents: money(w.kyc_tiers?.hard_from, '/kyc_tiers/hard_from') },
    planMinimumCents: {
      pay_in_4: money(w.plan_minimums?.pay_in_4, '/plan_minimums/pay_in_4'),
      pay_in_6: money(w.plan_minimums?.pay_in_6, '/plan_minimums/pay_in_6'),
      monthly: money(w.plan_minimums?.monthly, '/plan_minimums/monthly'),
    },
    defaultPlan: { payIn4UpToCents: money(w.default_plan?.pay_in_4_up_to, '/default_plan/pay_in_4_up_to'), payIn6UpToCents: money(w.default_plan?.pay_in_6_up_to, '/default_plan/pay_in_6_up_to') },
  };
  return problems.length > 0 ? { tables: null, problems } : { tables, problems: [] };
}

// --- Auto-loan structured view on the wire: money as two-decimal strings, rates as percent strings ---

export interface WireAutoLoanTables {
  grades: Array<{ grade: string; min_score: number | null; band: string; limit: string; max_ltv_pct: number | null }>;
  buy_rates: Array<{ grade: string } & Record<AutoLoanTermBucket, string | null>>;
  used_vehicle_adder: string;
  markup_caps: { up_to_60_months: string; above_60_months: string };
  dealer_reserve_share_pct: number;
  kyc_tiers: { enhanced_from: string; hard_from: string };
  amount_financed: { min: string; max: string };
}

function presentAutoLoanTables(t: AutoLoanPolicyTables): WireAutoLoanTables {
  const rate = (bps: number | null) => (bps === null ? null : formatRateBps(bps));
  return {
    grades: t.grades.map((g) => ({ grade: g.grade, min_score: g.minScore, band: g.band, limit: formatMoney(g.limitCents), max_ltv_pct: g.maxLtvPct })),
    buy_rates: t.buyRates.map((r) => ({ grade: r.grade, ...(Object.fromEntries(AUTO_LOAN_TERM_BUCKETS.map((b) => [b, rate(r.ratesBps[b])])) as Record<AutoLoanTermBucket, string | null>) })),
    used_vehicle_adder: formatRateBps(t.usedVehicleAdderBps),
    markup_caps: { up_to_60_months: formatRateBps(t.markupCapBps.upTo60Months), above_60_months: formatRateBps(t.markupCapBps.above60Months) },
    dealer_reserve_share_pct: t.dealerReserveSharePct,
    kyc_tiers: { enhanced_from: formatMoney(t.kycTiers.enhancedFromCents), hard_from: formatMoney(t.kycTiers.hardFromCents) },
    amount_financed: { min: formatMoney(t.amountFinanced.minCents), max: formatMoney(t.amountFinanced.maxCents) },
  };
}

/** Parse the portal's auto-loan structured view; every malformed field is listed (path under /tables). */
function parseAutoLoanTables(wire: unknown): { tables: AutoLoanPolicyTables; problems: [] } | { tables: null; problems: PolicyDocumentProblem[] } {
  const problems: PolicyDocumentProblem[] = [];
  const add = (path: string, rule: string, message: string) => problems.push({ path: `/tables${path}`, rule, message });
  const name = (path: string) => path.slice(1).replace(/\//g, '.');
  const w = (wire ?? {}) as Partial<WireAutoLoanTables>;
  const money = (value: unknown, path: string): number => {
    const cents = typeof value === 'string' ? parseMoney(value) : null;
    if (cents === null) add(path, 'money_format', `${name(path)} must be an amount like "25000.00"`);
    return cents ?? 0;
  };
  const rate = (value: unknown, path: string, optional: boolean): number | null => {
    if (optional && (value === null || value === '')) return null;
    const m = typeof value === 'string' ? RATE_TEXT.exec(value) : null;
    if (!m) {
      add(path, 'rate_format', `${name(path)} must be a percentage with two decimals, like "5.49"${optional ? ', or empty' : ''}`);
      return null;
    }
    return Number(m[1]) * 100 + Number(m[2]);
  };
  if (!Array.isArray(w.grades) || w.grades.length === 0) add('/grades', 'structured_view', 'grades must list every risk grade');
  if (!Array.isArray(w.buy_rates)) add('/buy_rates', 'structured_view', 'buy_rates must be a list of grades');
  const gradeKnown = (grade: unknown, path: string) => {
    if (!(RISK_GRADES as readonly unknown[]).includes(grade)) add(path, 'grade_known', `${name(path)} must be one of ${RISK_GRADES.join(', ')}`);
  };
  const grades = (Array.isArray(w.grades) ? w.grades : []).map((g, i) => {
    gradeKnown(g?.grade, `/grades/${i}/grade`);
    if (!['approve', 'refer', 'decline'].includes(g?.band)) add(`/grades/${i}/band`, 'band_known', `grades.${i}.band must be approve, refer or decline`);
    const minScore = g?.min_score ?? null;
    if (minScore !== null && (!Number.isInteger(minScore) || minScore < 300 || minScore > 850)) add(`/grades/${i}/min_score`, 'cutoff_range', `grades.${i}.min_score must be a whole score from 300 to 850`);
    const maxLtv = g?.max_ltv_pct ?? null;
    if (maxLtv !== null && (!Number.isInteger(maxLtv) || maxLtv < 1 || maxLtv > 200)) add(`/grades/${i}/max_ltv_pct`, 'ltv_range', `grades.${i}.max_ltv_pct must be a whole percent from 1 to 200, or empty`);
    return { grade: g?.grade as RiskGrade, minScore, band: g?.band as PolicyOutcome, limitCents: money(g?.limit, `/grades/${i}/limit`), maxLtvPct: maxLtv };
  });
  const buyRates = (Array.isArray(w.buy_rates) ? w.buy_rates : []).map((r, i) => {
    gradeKnown(r?.grade, `/buy_rates/${i}/grade`);
    const ratesBps = Object.fromEntries(AUTO_LOAN_TERM_BUCKETS.map((b) => [b, rate(r?.[b], `/buy_rates/${i}/${b}`, true)])) as Record<AutoLoanTermBucket, number | null>;
    return { grade: r?.grade as RiskGrade, ratesBps };
  });
  const share = w.dealer_reserve_share_pct;
  if (typeof share !== 'number' || !Number.isInteger(share) || share < 0 || share > 100) add('/dealer_reserve_share_pct', 'reserve_share_range', 'dealer_reserve_share_pct must be a whole percent from 0 to 100');
  const tables: AutoLoanPolicyTables = {
    grades,
    buyRates,
    usedVehicleAdderBps: rate(w.used_vehicle_adder, '/used_vehicle_adder', false) ?? 0,
    markupCapBps: {
      upTo60Months: rate(w.markup_caps?.up_to_60_months, '/markup_caps/up_to_60_months', false) ?? 0,
      above60Months: rate(w.markup_caps?.above_60_months, '/markup_caps/above_60_months', false) ?? 0,
    },
    dealerReserveSharePct: typeof share === 'number' ? share : 0,
    kycTiers: { enhancedFromCents: money(w.kyc_tiers?.enhanced_from, '/kyc_tiers/enhanced_from'), hardFromCents: money(w.kyc_tiers?.hard_from, '/kyc_tiers/hard_from') },
    amountFinanced: { minCents: money(w.amount_financed?.min, '/amount_financed/min'), maxCents: money(w.amount_financed?.max, '/amount_financed/max') },
  };
  return problems.length > 0 ? { tables: null, problems } : { tables, problems: [] };
}
