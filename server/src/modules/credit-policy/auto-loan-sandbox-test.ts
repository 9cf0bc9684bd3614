/**
 * "Test against the sandbox" for auto loans: a fixed set of auto-loan applications decided by two
 * policy versions side by side, with nothing written anywhere (no decision, consumer, event or
 * credit pull), like bnpl-sandbox-test.ts.
 *
 * The set: synthetic applicants from each sandbox credit profile (prime to subprime, thin file, no
 * file) and the bankruptcy and data-unavailable magic files, each with a loan chosen to exercise a
 * grade, LTV, term and vehicle: direct and indirect (a dealer marking up 1.00 point, within every
 * default cap), new and used, 36 to 84 months, LTVs from 80% to 135%, an old high-mileage vehicle.
 * Credit files come from the sandbox connector's pure function, exactly as a sandbox decision gets
 * them. Rows share the BNPL row shape (the portal shows both): `plan` describes the loan, `apr` is
 * the offer's APR at the contract rate (buy rate plus any markup), `amount` the amount financed.
 */
import { formatMoney, formatRateBps } from '../../lib/money.js';
import { sandboxProfileFor, syntheticCreditData } from '../credit-data/sandbox-connector.js';
import type { CreditSubject } from '../credit-data/credit-data.types.js';
import { decideAutoLoan, markupCapBps, type AutoLoanEngineDecision, type AutoLoanEngineDocuments, type AutoLoanTerms } from '../engine/index.js';
import { buildAutoLoanOffer, isAutoLoanTerm } from '../offers/auto-loan-offer.js';
import type { SandboxOutcome, SandboxTestRow } from './bnpl-sandbox-test.js';

export interface AutoLoanSandboxCase {
  id: string;
  label: string;
  channel: 'direct' | 'indirect';
  loan: AutoLoanTerms;
  subject: CreditSubject;
}

/** The dealer markup of indirect cases, basis points (clamped to the version's cap). */
const INDIRECT_MARKUP_BPS = 100;

type LoanShape = { channel: 'direct' | 'indirect'; amount: number; term: number; ltv: number; condition: 'new' | 'used'; age: number; mileage: number };
const SYNTHETIC: ReadonlyArray<{ profile: string; loans: LoanShape[] }> = [
  {
    profile: 'prime',
    loans: [
      { channel: 'direct', amount: 3_200_000, term: 60, ltv: 90, condition: 'new', age: 0, mileage: 12 },
      { channel: 'indirect', amount: 2_400_000, term: 72, ltv: 115, condition: 'used', age: 3, mileage: 38_000 },
      { channel: 'indirect', amount: 1_800_000, term: 84, ltv: 125, condition: 'new', age: 0, mileage: 40 },
      { channel: 'direct', amount: 900_000, term: 72, ltv: 95, condition: 'used', age: 9, mileage: 120_000 },
    ],
  },
  {
    profile: 'near_prime',
    loans: [
      { channel: 'direct', amount: 2_200_000, term: 48, ltv: 100, condition: 'used', age: 4, mileage: 52_000 },
      { channel: 'indirect', amount: 2_800_000, term: 72, ltv: 118, condition: 'new', age: 0, mileage: 25 },
    ],
  },
  {
    profile: 'fair',
    loans: [
      { channel: 'indirect', amount: 1_500_000, term: 60, ltv: 105, condition: 'used', age: 5, mileage: 70_000 },
      { channel: 'direct', amount: 3_500_000, term: 36, ltv: 80, condition: 'new', age: 0, mileage: 10 },
    ],
  },
  { profile: 'marginal', loans: [{ channel: 'indirect', amount: 1_200_000, term: 60, ltv: 98, condition: 'used', age: 6, mileage: 88_000 }] },
  { profile: 'subprime', loans: [{ channel: 'direct', amount: 1_000_000, term: 48, ltv: 90, condition: 'used', age: 7, mileage: 99_000 }] },
  { profile: 'thin', loans: [{ channel: 'direct', amount: 800_000, term: 60, ltv: 100, condition: 'used', age: 2, mileage: 30_000 }] },
  { profile: 'no_file', loans: [{ channel: 'indirect', amount: 1_100_000, term: 60, ltv: 100, condition: 'new', age: 0, mileage: 8 }] },
];

let cases: AutoLoanSandboxCase[] | undefined;

/** The fixed application set (computed once: the names are found by the sandbox's own hash). */
export function autoLoanSandboxCases(): AutoLoanSandboxCase[] {
  cases ??= buildCases();
  return cases;
}

function buildCases(): AutoLoanSandboxCase[] {
  const out: AutoLoanSandboxCase[] = [];
  const add = (id: string, name: { firstName: string; lastName: string }, ssnLast4: string | null, who: string, l: LoanShape) => {
    const loan: AutoLoanTerms = { amountFinancedCents: l.amount, termMonths: l.term, ltvPct: l.ltv, condition: l.condition, vehicleAgeYears: l.age, mileage: l.mileage };
    out.push({
      id,
      label: `${name.firstName} ${name.lastName} (${who}): ${l.channel}, ${l.condition} ${l.age}y ${l.mileage.toLocaleString('en-US')} mi, ${l.term} mo, LTV ${l.ltv}%`,
      channel: l.channel,
      loan,
      subject: { consumerId: id, firstName: name.firstName, lastName: name.lastName, dob: '1985-04-12', ssnLast4, zip: '94105', sandboxProfile: null },
    });
  };
  for (const { profile, loans } of SYNTHETIC) {
    const name = nameFor(profile);
    loans.forEach((l, i) => add(`${profile}-${l.channel}-${l.condition}-${l.term}-${i + 1}`, name, null, profile.replace('_', '-'), l));
  }
  const magicLoan: LoanShape = { channel: 'direct', amount: 1_500_000, term: 60, ltv: 95, condition: 'used', age: 3, mileage: 40_000 };
  add('magic-0000', { firstName: 'Sandbox', lastName: 'Magic0000' }, '0000', 'bankruptcy', magicLoan);
  add('magic-3333', { firstName: 'Sandbox', lastName: 'Magic3333' }, '3333', 'credit data unavailable', magicLoan);
  return out;
}

/** The first "Sample Applicant<n>" whose synthetic file falls in the profile (deterministic). */
function nameFor(profile: string): { firstName: string; lastName: string } {
  for (let i = 1; i < 100_000; i++) {
    const candidate = { firstName: 'Sample', lastName: `Applicant${i}`, dob: '1985-04-12' };
    if (sandboxProfileFor(candidate) === profile) return candidate;
  }
  throw new Error(`no sandbox name for profile ${profile}`);
}

/** Decide every case with both versions; nothing is stored. */
export async function runAutoLoanSandboxTest(active: AutoLoanEngineDocuments, draft: AutoLoanEngineDocuments, now: Date): Promise<SandboxTestRow[]> {
  const rows: SandboxTestRow[] = [];
  for (const c of autoLoanSandboxCases()) {
    const input = { loan: c.loan, history: { returning: false, priorApprovals: 0, priorDeclines: 0 }, creditData: syntheticCreditData(c.subject), asOf: now.toISOString() };
    const a = outcomeOf(c, await decideAutoLoan(input, active), active, now);
    const d = outcomeOf(c, await decideAutoLoan(input, draft), draft, now);
    const changed = (['outcome', 'risk_grade', 'kyc_tier', 'plan', 'amount', 'apr', 'reasons'] as const).filter((k) => JSON.stringify(a[k]) !== JSON.stringify(d[k]));
    rows.push({ id: c.id, label: c.label, requested_amount: formatMoney(c.loan.amountFinancedCents), active: a, draft: d, changed });
  }
  return rows;
}

function outcomeOf(c: AutoLoanSandboxCase, e: AutoLoanEngineDecision, documents: AutoLoanEngineDocuments, now: Date): SandboxOutcome {
  let apr: string | null = null;
  let plan = `${c.loan.termMonths} months ${c.channel}`;
  if (e.outcome === 'approved' && e.buyRateBps !== null && isAutoLoanTerm(c.loan.termMonths)) {
    const markupBps = c.channel === 'indirect' ? Math.min(INDIRECT_MARKUP_BPS, markupCapBps(c.loan.termMonths, documents.policy)) : 0;
    const offer = buildAutoLoanOffer({
      amountFinancedCents: c.loan.amountFinancedCents,
      termMonths: c.loan.termMonths,
      buyRateBps: e.buyRateBps,
      markupBps,
      reserveSharePct: documents.policy.constants.dealerReserveSharePct,
      decisionDate: now.toISOString().slice(0, 10),
    });
    apr = offer.offer.apr;
    plan += c.channel === 'indirect' ? `, buy rate ${formatRateBps(e.buyRateBps)}% + markup ${formatRateBps(markupBps)}` : `, buy rate ${formatRateBps(e.buyRateBps)}%`;
  }
  return {
    outcome: e.outcome,
    risk_grade: e.riskGrade,
    score: e.score,
    kyc_tier: e.kycTier,
    plan,
    amount: e.outcome === 'declined' ? null : formatMoney(e.recommendedAmountCents),
    apr,
    reasons: e.reasons.map((r) => r.code),
  };
}


