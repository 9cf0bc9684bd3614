/**
 * A decision as the service returned it: every wire field under its wire name (absent when the
 * shape does not carry it), plus `isApproved` / `isDeclined` / `isReferred` / `isPending` and
 * `offer` (the approval's fields, none optional).
 * `JSON.stringify(decision)` gives back exactly the fields received; the HTTP details of the call
 * are on the non-enumerable `lastResponse`.
 */
import type { ResponseMeta } from '../core/http.js';
import type {
  DeclineReason,
  DecisionData,
  DecisionOutcome,
  DecisionStatus,
  KycStatus,
  KycTier,
  Offer,
  Payment,
  TilaDisclosure,
} from '../types.js';

/** The fields of `Offer`; a `Record` over its keys, so a field added to `Offer` cannot be forgotten here. */
export const OFFER_FIELDS: Readonly<Record<keyof Offer, true>> = {
  approved_amount: true,
  currency: true,
  apr: true,
  term_months: true,
  payment_schedule: true,
  tila_disclosure: true,
  expires_at: true,
};

/**
 * `fields` of an approved decision, each checked present. A missing one is a service defect: naming
 * it here beats handing out an object whose type promises a field it lacks.
 */
export function offerOf<T>(decision: Decision, fields: Readonly<Record<keyof T, true>>): T {
  const offer: Record<string, unknown> = {};
  for (const key of Object.keys(fields)) {
    const value: unknown = (decision as unknown as Record<string, unknown>)[key];
    if (value == null) {
      const requestId = decision.lastResponse?.requestId;
      throw new Error(
        `Approved decision ${decision.decision_id} has no ${key}: the service sent an incomplete offer` + (requestId ? ` (request ${requestId})` : ''),
      );
    }
    offer[key] = value;
  }
  return offer as T;
}

export class Decision implements DecisionData {
  declare readonly decision_id: string;
  declare readonly application_id: string;
  declare readonly status: DecisionStatus;
  declare readonly outcome: DecisionOutcome | null;
  declare readonly kyc_tier?: KycTier;
  declare readonly kyc_status?: KycStatus;
  declare readonly approved_amount?: string;
  declare readonly currency?: string;
  declare readonly apr?: string;
  declare readonly term_months?: number;
  declare readonly payment_schedule?: Payment[];
  declare readonly tila_disclosure?: TilaDisclosure;
  declare readonly decline_reasons?: DeclineReason[];
  declare readonly consumer_complete_url?: string | null;
  declare readonly polling_url?: string;
  declare readonly estimated_completion_seconds?: number;
  declare readonly expires_at?: string;
  /** Status, headers, request id, replay flag and retries of the response this came from. */
  declare readonly lastResponse: ResponseMeta | undefined;

  constructor(data: DecisionData, lastResponse?: ResponseMeta) {
    for (const [key, value] of Object.entries(data)) {
      // A future wire field must never shadow the helpers below.
      if (!(key in Decision.prototype)) Object.defineProperty(this, key, { value, enumerable: true });
    }
    Object.defineProperty(this, 'lastResponse', { value: lastResponse, enumerable: false });
  }

  /** Complete and approved: the offer (schedule, APR, TILA block) is on the decision. */
  get isApproved(): boolean {
    return this.status === 'complete' && this.outcome === 'approved';
  }

  /** Complete and declined: `decline_reasons` carries the adverse-action reasons. Not an error. */
  get isDeclined(): boolean {
    return this.status === 'complete' && this.outcome === 'declined';
  }

  /** Complete and referred to your underwriters (may still change). */
  get isReferred(): boolean {
    return this.status === 'complete' && this.outcome === 'referred';
  }

  /** Waiting for the consumer (`needs_consumer_action`): send them to `consumer_complete_url`, then poll. */
  get isPending(): boolean {
    return this.status === 'needs_consumer_action';
  }

  /**
   * The approval's offer with every field present, `null` unless `isApproved`: unlike the getters
   * above it narrows, so `if (d.offer) d.offer.apr` is a `string`. Throws when an approval lacks a
   * field (a service defect). Not a wire field: `toJSON()` and `JSON.stringify` leave it out.
   */
  get offer(): Offer | null {
    return this.isApproved ? offerOf<Offer>(this, OFFER_FIELDS) : null;
  }

  /** The fields exactly as received. */
  toJSON(): DecisionData {
    return { ...this };
  }
}
