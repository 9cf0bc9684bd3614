/**
 * An auto-loan decision as the service returned it: a `Decision` (same wire fields, same
 * `isApproved` / `isDeclined` / `isReferred` / `isPending`, same `toJSON`) whose approvals also
 * carry `buy_rate`, `contract_rate`, `dealer_reserve` and `ltv`, in `offer` too.
 */
import { Decision, OFFER_FIELDS, offerOf } from './decision.js';
import type { AutoLoanDecisionData, AutoLoanOffer } from '../types.js';

const AUTO_LOAN_OFFER_FIELDS: Readonly<Record<keyof AutoLoanOffer, true>> = {
  ...OFFER_FIELDS,
  buy_rate: true,
  contract_rate: true,
  dealer_reserve: true,
  ltv: true,
};

export class AutoLoanDecision extends Decision implements AutoLoanDecisionData {
  declare readonly buy_rate?: string;
  declare readonly contract_rate?: string;
  declare readonly dealer_reserve?: string;
  declare readonly ltv?: string;

  /** `Decision.offer` plus the rates, the dealer's reserve and the LTV, every one present. */
  override get offer(): AutoLoanOffer | null {
    return this.isApproved ? offerOf<AutoLoanOffer>(this, AUTO_LOAN_OFFER_FIELDS) : null;
  }

  /** The fields exactly as received. */
  override toJSON(): AutoLoanDecisionData {
    return { ...this };
  }
}
