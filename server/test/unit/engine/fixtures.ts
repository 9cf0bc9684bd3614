import type { CreditDataResult, CreditFile } from '../../../src/modules/credit-data/credit-data.types.js';
import type { BnplEngineInput } from '../../../src/modules/engine/engine.js';

export const AS_OF = '2026-11-02T10:00:00.000Z';

export function creditFile(overrides: Partial<CreditFile> = {}): CreditFile {
  return {
    fileId: 'test-file-1',
    source: 'test',
    hasFile: true,
    tradelines: 14,
    oldestTradelineMonths: 120,
    revolvingUtilizationPct: 5,
    delinquencies30dLast24m: 0,
    delinquencies90dLast24m: 0,
    collectionsOrJudgments: 0,
    bankruptcy: false,
    foreclosureOrRepossession: false,
    inquiriesLast6m: 0,
    monthlyObligationsCents: 100_000,
    estimatedMonthlyIncomeCents: 900_000,
    ...overrides,
  };
}

export function ok(file: CreditFile): CreditDataResult {
  return { status: 'ok', file, latencyMs: 12 };
}

export function engineInput(overrides: Partial<BnplEngineInput> = {}): BnplEngineInput {
  return {
    requestedAmountCents: 50_000,
    planPreference: null,
    history: { returning: false, priorApprovals: 0, priorDeclines: 0 },
    creditData: ok(creditFile()),
    asOf: AS_OF,
    ...overrides,
  };
}

/** A C-grade file (score 600-659 at modest amounts): some utilization, a late payment, few lines. */
export const FAIR_FILE = creditFile({
  revolvingUtilizationPct: 65,
  delinquencies30dLast24m: 2,
  tradelines: 5,
  oldestTradelineMonths: 40,
  inquiriesLast6m: 3,
  monthlyObligationsCents: 150_000,
  estimatedMonthlyIncomeCents: 450_000,
});
