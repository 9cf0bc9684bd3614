/**
 * `client.decisions.autoLoan`: POST /v1/decisions/auto-loan, GET /v1/decisions/auto-loan/{decision_id},
 * and the polling helper built on the GET. The same envelope, errors, idempotency and tiers as
 * BNPL: a decline is a decision (`isDeclined`), an amount on the enhanced or hard tier may come back
 * pending (`isPending`) until the consumer verifies, and every create carries one Idempotency-Key
 * (yours, or one generated for the call) across its retries.
 */
import type { HttpCore, RequestOptions } from '../core/http.js';
import { AutoLoanDecision } from '../lib/auto-loan-decision.js';
import { pollUntilComplete, type PollOptions } from '../lib/polling.js';
import type { AdverseActionNotice, AutoLoanCreateParams, AutoLoanDecisionData } from '../types.js';
import type { RetrieveOptions } from './decisions.js';

const PATH = '/v1/decisions/auto-loan';

export class AutoLoanDecisions {
  constructor(private readonly core: HttpCore) {}

  /**
   * Request an auto-loan decision, `direct` or `indirect` (through a dealer of your network, with
   * its markup). Resolves with the decision whatever the outcome. An unknown or disabled dealer, a
   * markup above the cap or an amount outside policy is an UnprocessableEntityError (422).
   */
  async create(params: AutoLoanCreateParams, options: RequestOptions = {}): Promise<AutoLoanDecision> {
    const { data, meta } = await this.core.request<AutoLoanDecisionData>('POST', PATH, params, options);
    return new AutoLoanDecision(data, meta);
  }

  /** The decision in its current state. */
  async retrieve(decisionId: string, options: RetrieveOptions = {}): Promise<AutoLoanDecision> {
    const { data, meta } = await this.core.request<AutoLoanDecisionData>('GET', `${PATH}/${encodeURIComponent(decisionId)}`, undefined, options);
    return new AutoLoanDecision(data, meta);
  }

  /** The decision's adverse-action notice, as `client.decisions.bnpl.adverseActionNotice`. */
  async adverseActionNotice(decisionId: string, options: RetrieveOptions = {}): Promise<AdverseActionNotice> {
    const { data } = await this.core.request<AdverseActionNotice>('GET', `${PATH}/${encodeURIComponent(decisionId)}/adverse-action-notice`, undefined, options);
    return data;
  }

  /**
   * Poll until the decision is complete and return it (every 2.5 s by default, clamped to the
   * recommended 2-3 s). Throws PollTimeoutError at the deadline, APIUserAbortError on `signal`.
   */
  async poll(decision: string | Pick<AutoLoanDecisionData, 'decision_id'>, options: PollOptions = {}): Promise<AutoLoanDecision> {
    const id = typeof decision === 'string' ? decision : decision.decision_id;
    return pollUntilComplete((signal) => this.retrieve(id, signal ? { signal } : {}), options);
  }
}
