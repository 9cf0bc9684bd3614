/**
 * `client.decisions.bnpl`: POST /v1/decisions/bnpl, GET /v1/decisions/bnpl/{decision_id}, the
 * polling helper built on the GET, and the decision's adverse-action notice.
 */
import type { HttpCore, RequestOptions } from '../core/http.js';
import { Decision } from '../lib/decision.js';
import { pollUntilComplete, type PollOptions } from '../lib/polling.js';
import { AutoLoanDecisions } from './auto-loans.js';
import type { AdverseActionNotice, BnplCreateParams, DecisionData } from '../types.js';

export type RetrieveOptions = Omit<RequestOptions, 'idempotencyKey'>;

export class BnplDecisions {
  constructor(private readonly core: HttpCore) {}

  /**
   * Request a BNPL decision (`transaction` or `order` form). Resolves with the decision whatever the
   * outcome: approved, declined (`isDeclined`), referred, or pending verification (`isPending`).
   * Retries carry the same Idempotency-Key (yours, or one generated for this call).
   */
  async create(params: BnplCreateParams, options: RequestOptions = {}): Promise<Decision> {
    const { data, meta } = await this.core.request<DecisionData>('POST', '/v1/decisions/bnpl', params, options);
    return new Decision(data, meta);
  }

  /** The decision in its current state. */
  async retrieve(decisionId: string, options: RetrieveOptions = {}): Promise<Decision> {
    const { data, meta } = await this.core.request<DecisionData>('GET', `/v1/decisions/bnpl/${encodeURIComponent(decisionId)}`, undefined, options);
    return new Decision(data, meta);
  }

  /**
   * The adverse-action notice of a declined decision or a counteroffer (Regulation B): reasons,
   * the consumer-report disclosure, the ECOA notice and the date it must be sent by, without the
   * applicant's name and address. A decision that took no adverse action throws NoAdverseActionError.
   */
  async adverseActionNotice(decisionId: string, options: RetrieveOptions = {}): Promise<AdverseActionNotice> {
    const { data } = await this.core.request<AdverseActionNotice>('GET', `/v1/decisions/bnpl/${encodeURIComponent(decisionId)}/adverse-action-notice`, undefined, options);
    return data;
  }

  /**
   * Poll until the decision is complete and return it (every 2.5 s by default, clamped to the
   * recommended 2-3 s). Throws PollTimeoutError at the deadline, APIUserAbortError on `signal`.
   */
  async poll(decision: string | Pick<DecisionData, 'decision_id'>, options: PollOptions = {}): Promise<Decision> {
    const id = typeof decision === 'string' ? decision : decision.decision_id;
    return pollUntilComplete((signal) => this.retrieve(id, signal ? { signal } : {}), options);
  }
}

export class Decisions {
  readonly bnpl: BnplDecisions;
  /** Auto loans, direct and indirect: `create`, `retrieve`, `poll`. */
  readonly autoLoan: AutoLoanDecisions;
  constructor(core: HttpCore) {
    this.bnpl = new BnplDecisions(core);
    this.autoLoan = new AutoLoanDecisions(core);
  }
}
