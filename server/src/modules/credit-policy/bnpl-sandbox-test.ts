/**
 * "Test against the sandbox": a fixed set of sandbox applications decided by two policy versions
 * side by side, with nothing written anywhere (no decision, consumer, event or credit pull).
 *
 * The set: the three seeded sandbox consumers at the amounts they are seeded for (interface.md,
 * Sandbox), the magic files (bankruptcy, referral band, data unavailable), and synthetic
 * applicants from each sandbox credit profile (prime to subprime, thin file, no file) at small,
 * middle and large amounts, so every grade, band, KYC tier and plan is exercised. Credit files
 * come from the sandbox connector's pure function, exactly as a sandbox decision would get them;
 * applicants are new to the lender, and enhanced/hard-tier applications are decided as if their
 * identity verification had passed (the engine is what is being compared).
 */
import { formatMoney } from '../../lib/money.js';
import { SANDBOX_CONSUMERS } from '../consumers/sandbox-consumers.js';
import { sandboxProfileFor, syntheticCreditData } from '../credit-data/sandbox-connector.js';
import type { CreditSubject } from '../credit-data/credit-data.types.js';
import { decideBnpl, type BnplEngineDecision, type EngineDocuments } from '../engine/index.js';
import { buildOffer } from '../offers/offer.js';
import { monthlyTermFor, type Plan } from '../offers/schedule.js';

export interface SandboxCase {
  id: string;
  label: string;
  amountCents: number;
  subject: CreditSubject;
}

export interface SandboxOutcome {
  outcome: BnplEngineDecision['outcome'];
  risk_grade: string | null;
  score: number | null;
  kyc_tier: string;
  plan: string;
  amount: string | null;
  apr: string | null;
  reasons: string[];
}

export interface SandboxTestRow {
  id: string;
  label: string;
  requested_amount: string;
  active: SandboxOutcome;
  draft: SandboxOutcome;
  /** The fields whose value differs: outcome, risk_grade, kyc_tier, plan, amount, apr, reasons. */
  changed: string[];
}

const SYNTHETIC: ReadonlyArray<{ profile: string; amounts: number[] }> = [
  { profile: 'prime', amounts: [80_000, 1_200_000] },
  { profile: 'near_prime', amounts: [45_000, 600_000] },
  { profile: 'fair', amounts: [30_000, 180_000] },
  { profile: 'marginal', amounts: [60_000] },
  { profile: 'subprime', amounts: [40_000] },
  { profile: 'thin', amounts: [15_000] },
  { profile: 'no_file', amounts: [20_000] },
];

let cases: SandboxCase[] | undefined;

/** The fixed application set (computed once: the names are found by the sandbox's own hash). */
export function bnplSandboxCases(): SandboxCase[] {
  cases ??= buildCases();
  return cases;
}

function buildCases(): SandboxCase[] {
  const out: SandboxCase[] = [];
  const seededAmount = { soft: 15_000, enhanced: 150_000, hard: 750_000 } as const;
  for (const fixture of SANDBOX_CONSUMERS) {
    out.push({
      id: `seeded-${fixture.profile}`,
      label: `${fixture.firstName} ${fixture.lastName} (seeded, ${fixture.profile})`,
      amountCents: seededAmount[fixture.profile],
      subject: { consumerId: `seeded-${fixture.profile}`, firstName: fixture.firstName, lastName: fixture.lastName, dob: fixture.dob, ssnLast4: fixture.ssnLast4, zip: fixture.address.zip, sandboxProfile: fixture.profile },
    });
  }
  const magic = [
    { ssn: '0000', label: 'Magic 0000 (bankruptcy)', amount: 50_000 },
    { ssn: '1111', label: 'Magic 1111 (referral band)', amount: 70_000 },
    { ssn: '3333', label: 'Magic 3333 (credit data unavailable)', amount: 30_000 },
  ];
  for (const m of magic) {
    out.push({ id: `magic-${m.ssn}`, label: m.label, amountCents: m.amount, subject: subject(`magic-${m.ssn}`, 'Sandbox', `Magic${m.ssn}`, m.ssn) });
  }
  for (const { profile, amounts } of SYNTHETIC) {
    const name = nameFor(profile);
    for (const amount of amounts) {
      out.push({ id: `${profile}-${amount}`, label: `${name.firstName} ${name.lastName} (${profile.replace('_', '-')})`, amountCents: amount, subject: subject(`${profile}-${amount}`, name.firstName, name.lastName, null) });
    }
  }
  return out;
}

function subject(consumerId: string, firstName: string, lastName: string, ssnLast4: string | null): CreditSubject {
  return { consumerId, firstName, lastName, dob: '1985-04-12', ssnLast4, zip: '94105', sandboxProfile: null };
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
export async function runBnplSandboxTest(active: EngineDocuments, draft: EngineDocuments, now: Date): Promise<SandboxTestRow[]> {
  const rows: SandboxTestRow[] = [];
  for (const c of bnplSandboxCases()) {
    const creditData = syntheticCreditData(c.subject);
    const input = {
      requestedAmountCents: c.amountCents,
      planPreference: null,
      history: { returning: false, priorApprovals: 0, priorDeclines: 0 },
      creditData,
      asOf: now.toISOString(),
    };
    const a = outcomeOf(await decideBnpl(input, active), now);
    const d = outcomeOf(await decideBnpl(input, draft), now);
    const changed = (['outcome', 'risk_grade', 'kyc_tier', 'plan', 'amount', 'apr', 'reasons'] as const).filter(
      (k) => JSON.stringify(a[k]) !== JSON.stringify(d[k]),
    );
    rows.push({ id: c.id, label: c.label, requested_amount: formatMoney(c.amountCents), active: a, draft: d, changed });
  }
  return rows;
}

function outcomeOf(e: BnplEngineDecision, now: Date): SandboxOutcome {
  let apr: string | null = null;
  if (e.outcome === 'approved' && e.approvedAmountCents !== null) {
    const plan = e.plan as Plan;
    try {
      apr = buildOffer({
        plan,
        amountCents: e.approvedAmountCents,
        annualRateBps: e.rateBps ?? 0,
        ...(plan === 'monthly' ? { termMonths: monthlyTermFor(e.approvedAmountCents) } : {}),
        decisionDate: now.toISOString().slice(0, 10),
      }).apr;
    } catch {
      apr = null; // the plan does not take this amount: the API would have refused the request first
    }
  }
  return {
    outcome: e.outcome,
    risk_grade: e.riskGrade,
    score: e.score,
    kyc_tier: e.kycTier,
    plan: e.plan,
    amount: e.approvedAmountCents === null ? null : formatMoney(e.approvedAmountCents),
    apr,
    reasons: e.reasons.map((r) => r.code),
  };
}
