/**
 * Pricing by risk grade, read from a credit policy without scoring anybody.
 *
 * An underwriter who approves a referral prices it as the engine would price an automatic approval
 * of that grade. The grade's rates live in the policy graph's pricing table (the decision table
 * whose outputs are `ratesBps.<plan>`), so this runs exactly that table: a two-node graph
 * (input -> the policy's own pricing node -> output) evaluated by ZEN with `{ riskGrade }`. Nothing
 * is copied out of the document, so an edited pricing table prices overrides the same way as
 * automatic approvals. Pure: a function of (policy document, grade); compiled once per policy.
 */
import type { ZenDecision, ZenEngine } from '@gorules/zen-engine';
import type { VehicleCondition } from './auto-loan-features.js';
import type { CompiledAutoLoanPolicy } from './auto-loan-policy.js';
import type { BnplPlan } from './features.js';
import { MAX_RATE_BPS, PolicyDocumentError, RISK_GRADES, type CompiledPolicy, type RiskGrade } from './policy.js';
import { zenModule } from './zen.js';

export type GradeRates = Record<BnplPlan, number | null>;

interface JdmNode {
  id: string;
  type: string;
  content?: { outputs?: Array<{ field?: string }> };
}

let zen: ZenEngine | undefined;
const compiled = new WeakMap<CompiledPolicy, ZenDecision>();

function pricingDecision(policy: CompiledPolicy): ZenDecision {
  const found = compiled.get(policy);
  if (found) return found;
  const nodes = (policy.document as { nodes: JdmNode[] }).nodes;
  const pricing = nodes.find((n) => n.type === 'decisionTableNode' && (n.content?.outputs ?? []).length > 0 && n.content!.outputs!.every((o) => o.field?.startsWith('ratesBps.')));
  if (!pricing) throw new PolicyDocumentError(`policy ${policy.version} has no pricing table (a decision table with ratesBps.* outputs)`);
  const graph = {
    nodes: [
      { id: 'in', type: 'inputNode', name: 'request', position: { x: 0, y: 0 }, content: { schema: '' } },
      structuredClone(pricing),
      { id: 'out', type: 'outputNode', name: 'response', position: { x: 0, y: 0 }, content: { schema: '' } },
    ],
    edges: [
      { id: 'e-in', sourceId: 'in', targetId: pricing.id, type: 'edge' },
      { id: 'e-out', sourceId: pricing.id, targetId: 'out', type: 'edge' },
    ],
  };
  zen ??= new (zenModule().ZenEngine)();
  const decision = zen.createDecision(graph);
  compiled.set(policy, decision);
  return decision;
}

/** The nominal annual rate (bps) per plan the policy gives a grade; null where it does not lend. */
export async function ratesForGrade(policy: CompiledPolicy, grade: RiskGrade): Promise<GradeRates> {
  const result = (await pricingDecision(policy).evaluate({ riskGrade: grade })).result as { ratesBps?: Partial<Record<BnplPlan, unknown>> };
  const rate = (value: unknown): number | null => {
    if (value === null || value === undefined) return null;
    if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_RATE_BPS) {
      throw new PolicyDocumentError(`policy ${policy.version} prices grade ${grade} at ${String(value)} bps`);
    }
    return value as number;
  };
  const r = result.ratesBps ?? {};
  return { pay_in_4: rate(r.pay_in_4), pay_in_6: rate(r.pay_in_6), monthly: rate(r.monthly) };
}

/**
 * The grade an ungraded referral (nothing was scored: credit data unavailable, or identity not
 * verified before scoring) is priced at: the policy's lowest grade that prices `plan`. The most
 * conservative price the policy would ever lend this plan at, never a better one than scoring
 * could have given. Null when no grade prices the plan.
 */
export async function lowestPricedGrade(policy: CompiledPolicy, plan: BnplPlan): Promise<{ grade: RiskGrade; rates: GradeRates } | null> {
  for (const grade of [...RISK_GRADES].reverse()) {
    const rates = await ratesForGrade(policy, grade);
    if (rates[plan] !== null) return { grade, rates };
  }
  return null;
}

// -------------------------------------------------------------------------------------------------
// Auto loans
// -------------------------------------------------------------------------------------------------

/**
 * Auto-loan pricing by grade, the same idea on the auto-loan graph: its buy rate is two nodes, the
 * pricing table (`riskGrade` x `request.termMonths` -> `baseRateBps`) and the expression node that
 * adds the used-vehicle adder (`offer.buyRateBps`). This runs exactly those two nodes, copied from
 * the policy document, with the policy's own constants as `policy`, so an override is priced as an
 * automatic approval of that grade, term and condition would be. The expression node also works out
 * `offer.withinLimit`, which pricing ignores; neutral inputs keep it evaluable.
 */
const compiledAutoLoan = new WeakMap<CompiledAutoLoanPolicy, ZenDecision>();

function autoLoanPricingDecision(policy: CompiledAutoLoanPolicy): ZenDecision {
  const found = compiledAutoLoan.get(policy);
  if (found) return found;
  const nodes = (policy.document as { nodes: Array<JdmNode & { content?: { expressions?: Array<{ key?: string }> } }> }).nodes;
  const pricing = nodes.find((n) => n.type === 'decisionTableNode' && (n.content?.outputs ?? []).some((o) => o.field === 'baseRateBps'));
  const adder = nodes.find((n) => n.type === 'expressionNode' && (n.content?.expressions ?? []).some((e) => e.key === 'offer.buyRateBps'));
  if (!pricing || !adder) throw new PolicyDocumentError(`policy ${policy.version} has no buy-rate pricing (a baseRateBps table and an offer.buyRateBps expression)`);
  const graph = {
    nodes: [
      { id: 'in', type: 'inputNode', name: 'request', position: { x: 0, y: 0 }, content: { schema: '' } },
      structuredClone(pricing),
      structuredClone(adder),
      { id: 'out', type: 'outputNode', name: 'response', position: { x: 0, y: 0 }, content: { schema: '' } },
    ],
    edges: [
      { id: 'e-in', sourceId: 'in', targetId: pricing.id, type: 'edge' },
      { id: 'e-adder', sourceId: pricing.id, targetId: adder.id, type: 'edge' },
      { id: 'e-out', sourceId: adder.id, targetId: 'out', type: 'edge' },
    ],
  };
  zen ??= new (zenModule().ZenEngine)();
  const decision = zen.createDecision(graph);
  compiledAutoLoan.set(policy, decision);
  return decision;
}

/** The auto-loan buy rate (bps, used-vehicle adder included) the policy gives a grade, term and condition; null where it does not lend. */
export async function autoLoanBuyRateBps(policy: CompiledAutoLoanPolicy, grade: RiskGrade, termMonths: number, condition: VehicleCondition): Promise<number | null> {
  const input = { policy: policy.constants, riskGrade: grade, request: { termMonths, condition, amountFinancedCents: 0 }, gradeLimitCents: 0 };
  const result = (await autoLoanPricingDecision(policy).evaluate(input)).result as { offer?: { buyRateBps?: unknown } };
  const value = result.offer?.buyRateBps;
  if (value === null || value === undefined) return null;
  if (!Number.isInteger(value) || (value as number) < 0 || (value as number) > MAX_RATE_BPS) {
    throw new PolicyDocumentError(`policy ${policy.version} prices grade ${grade} at ${String(value)} bps for ${termMonths} months`);
  }
  return value as number;
}

/** An ungraded auto-loan referral's grade: the policy's lowest grade with a buy rate for the term and condition (see lowestPricedGrade). */
export async function lowestPricedAutoLoanGrade(policy: CompiledAutoLoanPolicy, termMonths: number, condition: VehicleCondition): Promise<{ grade: RiskGrade; buyRateBps: number } | null> {
  for (const grade of [...RISK_GRADES].reverse()) {
    const buyRateBps = await autoLoanBuyRateBps(policy, grade, termMonths, condition);
    if (buyRateBps !== null) return { grade, buyRateBps };
  }
  return null;
}

/**
 * The collateral rules a term change could break (the term-for-vehicle-age rules; mileage and age
 * rules too, should the policy have been edited since), read by running the policy's own collateral
 * table (a `collect` table with `code`/`rule` outputs whose inputs read `request.termMonths`) on the
 * stored vehicle. The LTV rule is left out (`maxLtvPct` null): it needs the scored grade's maximum,
 * and an override never raises the LTV. Returns the names of the rules that hit, [] when none.
 */
const compiledCollateral = new WeakMap<CompiledAutoLoanPolicy, ZenDecision | null>();

export async function autoLoanCollateralRules(
  policy: CompiledAutoLoanPolicy,
  loan: { termMonths: number; ltvPct: number; mileage: number; vehicleAgeYears: number },
): Promise<string[]> {
  let decision = compiledCollateral.get(policy);
  if (decision === undefined) {
    const nodes = (policy.document as { nodes: Array<JdmNode & { content?: { inputs?: Array<{ field?: string | null; name?: string }>; rules?: Array<Record<string, string>> } }> }).nodes;
    const table = nodes.find(
      (n) => n.type === 'decisionTableNode' && (n.content?.outputs ?? []).some((o) => o.field === 'rule') && JSON.stringify(n.content?.rules ?? []).includes('request.termMonths'),
    );
    decision = table
      ? (zen ??= new (zenModule().ZenEngine)()).createDecision({
          nodes: [
            { id: 'in', type: 'inputNode', name: 'request', position: { x: 0, y: 0 }, content: { schema: '' } },
            structuredClone(table),
            { id: 'out', type: 'outputNode', name: 'response', position: { x: 0, y: 0 }, content: { schema: '' } },
          ],
          edges: [
            { id: 'e-in', sourceId: 'in', targetId: table.id, type: 'edge' },
            { id: 'e-out', sourceId: table.id, targetId: 'out', type: 'edge' },
          ],
        })
      : null;
    compiledCollateral.set(policy, decision);
  }
  if (!decision) return [];
  const input = { policy: policy.constants, maxLtvPct: null, request: { termMonths: loan.termMonths }, features: { ltvPct: loan.ltvPct, mileage: loan.mileage, vehicleAgeYears: loan.vehicleAgeYears } };
  const result = (await decision.evaluate(input)).result as Record<string, unknown>;
  const hits = Object.values(result).find((v): v is Array<{ rule?: unknown }> => Array.isArray(v)) ?? [];
  return [...new Set(hits.map((h) => String(h.rule)))];
}
