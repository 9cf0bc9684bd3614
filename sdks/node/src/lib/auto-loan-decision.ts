/**
 * An auto-loan decision as the service returned it: a `Decision` (same wire fields, same
 * `isApproved` / `isDeclined` / `isReferred` / `isPending`, same `toJSON`) whose approvals also
 * carry `buy_rate`, `contract_rate`, `dealer_reserve` and `ltv`.
 */
import { Decision } from './decision.js';
import type { AutoLoanDecisionData } from '../types.js';

export class AutoLoanDecision extends Decision implements AutoLoanDecisionData {
  declare readonly buy_rate?: string;
  declare readonly contract_rate?: string;
  declare readonly dealer_reserve?: string;
  declare readonly ltv?: string;

  /** The fields exactly as received. */
  override toJSON(): AutoLoanDecisionData {
    return { ...this };
  }
}
