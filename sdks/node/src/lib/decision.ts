/**
 * A decision as the service returned it: every wire field under its wire name (absent when the
 * shape does not carry it), plus `isApproved` / `isDeclined` / `isReferred` / `isPending`.
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
  Payment,
  TilaDisclosure,
} from '../types.js';

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

  /** The fields exactly as received. */
  toJSON(): DecisionData {
    return { ...this };
  }
}
