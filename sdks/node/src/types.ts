/**
 * Wire types, spelled exactly as the REST API spells them (snake_case), following the served OpenAPI
 * document (`GET /v1/openapi.json`, committed as `docs/openapi.json`). Request objects are sent as
 * given; responses are wrapped in `Decision` (lib/decision.ts), which keeps these names.
 */

/** Merchant category slugs accepted by the service. */
export type MerchantCategory =
  | 'food_beverage'
  | 'furniture'
  | 'electronics'
  | 'sporting_goods'
  | 'apparel'
  | 'beauty'
  | 'home_garden'
  | 'travel'
  | 'health'
  | 'jewelry'
  | 'automotive'
  | 'education'
  | 'entertainment'
  | 'general';

/** A decimal amount: a string with at most two decimals (preferred, exact) or a JSON number. */
export type Amount = string | number;

export interface Address {
  line1: string;
  line2?: string;
  city: string;
  /** USPS two-letter code, e.g. `TX`. */
  state: string;
  /** 5 digits or ZIP+4. */
  zip: string;
  /** Only `US`. */
  country?: 'US';
}

/** A consumer already known to your tenant and environment (e.g. a seeded sandbox consumer). */
export interface ReturningConsumer {
  consumer_id: string;
}

/** A consumer the service has not seen: stored, and usable by `consumer_id` afterwards. */
export interface NewConsumer {
  first_name: string;
  last_name: string;
  email: string;
  /** E.164, e.g. `+14155550123`. */
  phone?: string;
  /** `YYYY-MM-DD`; the applicant must be at least 18. */
  dob: string;
  /** Four digits; required when the amount puts the decision on the enhanced or hard tier. */
  ssn_last4?: string;
  address: Address;
}

export type ConsumerParams = ReturningConsumer | NewConsumer;

export interface TransactionParams {
  amount: Amount;
  /** ISO 4217; only `USD` is supported (anything else is a 422). */
  currency: string;
  merchant_name: string;
  merchant_category: MerchantCategory;
  product_description?: string;
}

/**
 * The client-library form, accepted in place of `transaction`: 4 → pay_in_4, 6 → pay_in_6,
 * 3/6/12/18/24/36 with an amount above 5,000.00 → monthly with that many months. Merchant fields
 * default to the tenant's name and `general`.
 */
export interface OrderParams {
  amount: Amount;
  currency: string;
  installment_count: 3 | 4 | 6 | 12 | 18 | 24 | 36;
  merchant_name?: string;
  merchant_category?: MerchantCategory;
  product_description?: string;
}

export type PlanPreference = 'pay_in_4' | 'pay_in_6' | 'monthly';

interface BnplCreateBase {
  consumer: ConsumerParams;
  /** Omitted: the service picks the best match for the amount. */
  plan_preference?: PlanPreference;
}

/** Body of `POST /v1/decisions/bnpl`: a `transaction` or an `order`, never both. */
export type BnplCreateParams =
  | (BnplCreateBase & { transaction: TransactionParams; order?: never })
  | (BnplCreateBase & { order: OrderParams; transaction?: never });

export type DecisionStatus = 'complete' | 'needs_consumer_action';
export type DecisionOutcome = 'approved' | 'declined' | 'referred';
export type KycTier = 'soft' | 'enhanced' | 'hard';
export type KycStatus = 'matched' | 'pending' | 'skipped';

export interface Payment {
  /** Position, starting at 1. */
  num: number;
  /** `YYYY-MM-DD`. */
  due_date: string;
  /** Two-decimal string. */
  amount: string;
}

export interface TilaDisclosure {
  amount_financed: string;
  finance_charge: string;
  total_of_payments: string;
  apr: string;
  payment_frequency: 'biweekly' | 'monthly';
  /** Indirect auto loans only (a dealer's credit sale): cash down payment plus trade-in. */
  total_down_payment?: string;
  /** Indirect auto loans only: cash price + finance charge, Regulation Z's total sale price (12 CFR 1026.18(j)). */
  total_sale_price?: string;
}

/**
 * What an approval offers, every field present: `decision.offer` (null unless approved), so that
 * code inside `if (decision.offer)` needs no `!` or `?.`.
 */
export interface Offer {
  /** Two-decimal string; may be below the requested amount. */
  approved_amount: string;
  currency: string;
  /** Percent, two decimals (`"5.00"` is 5 %). */
  apr: string;
  term_months: number;
  payment_schedule: Payment[];
  tila_disclosure: TilaDisclosure;
  /** ISO 8601: when the offer expires. */
  expires_at: string;
}

export interface DeclineReason {
  /** ECOA adverse-action code `AA-nn`. */
  code: string;
  reason: string;
}

/**
 * Every field a decision can carry. Which ones are present depends on the shape:
 * approved (all but `estimated_completion_seconds`), declined (`decision_id`, `application_id`,
 * `status`, `outcome`, `decline_reasons`), referred (declined plus `kyc_tier`, `kyc_status`,
 * `polling_url`), pending (`needs_consumer_action`: `kyc_tier`, `kyc_status`, `outcome` null,
 * `consumer_complete_url`, `polling_url`, `estimated_completion_seconds`, `expires_at`).
 */
export interface DecisionData {
  decision_id: string;
  application_id: string;
  status: DecisionStatus;
  /** `null` while `status` is `needs_consumer_action`. */
  outcome: DecisionOutcome | null;
  kyc_tier?: KycTier;
  kyc_status?: KycStatus;
  /** Two-decimal string; may be below the requested amount. */
  approved_amount?: string;
  currency?: string;
  /** Percent, two decimals (`"5.00"` is 5 %). */
  apr?: string;
  term_months?: number;
  payment_schedule?: Payment[];
  tila_disclosure?: TilaDisclosure;
  /** Empty on approval; 1-4 reasons when declined or referred. */
  decline_reasons?: DeclineReason[];
  /** The hosted verification page while pending; `null` otherwise. */
  consumer_complete_url?: string | null;
  /** Relative path to poll (`/v1/decisions/bnpl/{id}`). */
  polling_url?: string;
  estimated_completion_seconds?: number;
  /** ISO 8601: when the offer (approved) or the pending state expires. */
  expires_at?: string;
}

export type SandboxVerificationResult = 'pass' | 'fail';

/**
 * The JSON envelope of every webhook delivery. `TData` types `data` and `TType` types `type`; for a
 * union whose `data` narrows on `type`, see `TypedWebhookEvent`.
 */
export interface WebhookEvent<TData = Record<string, unknown>, TType extends string = string> {
  /** Event id: the same on every attempt; deduplicate on it. */
  id: string;
  type: TType;
  /** Unix seconds when the event was committed. */
  created: number;
  /** 1 for the first try of a delivery, up to 8. */
  attempt: number;
  data: TData;
}

// ---------------------------------------------------------------------------------------------
// Webhook event `data`, one interface per event type, as docs/webhooks.md ("Event types and their
// `data`") documents them. Payloads identify people only by opaque ids and never carry personal
// data. Money is a decimal string with two decimals plus `currency`, except in `decision.finalized`,
// whose numeric fields the interface specification fixes. Timestamps are ISO 8601 strings (UTC).

/** `data` of `application.created`: an application entered the pipeline (every BNPL or auto-loan request that passed validation). */
export interface ApplicationCreatedData {
  /** The application (equal to `decision_id` for a first decision). */
  application_id: string;
  /** The decision being made for it. */
  decision_id: string;
  /** The applicant (opaque id in your tenant). */
  consumer_id: string;
  product: 'bnpl' | 'auto_loan';
  /** Requested amount, a decimal string, e.g. `"120.00"`; for an auto loan the amount financed. */
  amount: string;
  /** `USD`. */
  currency: string;
  kyc_tier: KycTier;
  /** The merchant's display name; auto loans: the dealer's name (indirect) or the lender's (direct). */
  merchant_name: string;
  /** The merchant category slug; `automotive` for auto loans. */
  merchant_category: MerchantCategory;
  /** Auto loans: `direct` or `indirect`; null for BNPL. */
  channel: AutoLoanChannel | null;
  /** Indirect auto loans: the dealer; null otherwise. */
  dealer_id: string | null;
}

/** `data` of `decision.created`: a decision record exists, before its final outcome (it may be pending verification). */
export interface DecisionCreatedData {
  decision_id: string;
  application_id: string;
  status: DecisionStatus;
  kyc_tier: KycTier;
  kyc_status: KycStatus;
}

/** `score_range` of `score.completed`: the range of possible scores, e.g. `{ min: 300, max: 850 }`. */
export interface ScoreRange {
  min: number;
  max: number;
}

/** `data` of `score.completed`: the scorecard ran on the applicant's credit data. */
export interface ScoreCompletedData {
  decision_id: string;
  application_id: string;
  /** Integer, 300-850. */
  score: number;
  /** 0-1. */
  confidence: number;
  /** `A`-`E`. */
  risk_grade: string;
  /** Scorecard and policy versions that decided. */
  engine_version: string;
  /** The range of possible scores, `{ min: 300, max: 850 }`. */
  score_range: ScoreRange | null;
  /**
   * The key factors that adversely affected the score (adverse-action codes), most important first:
   * the score's own ranking (no knock-out rules, only characteristics the file had data for), four
   * at most, `AA-22` (inquiries) added as a fifth when inquiries lowered the score but are not among
   * the four; empty without a credit file. With `score`, `score_range`, `credit_file_source` and the
   * event's `created` date, what the FCRA 615(a) credit score disclosure needs when the score is
   * used in adverse action.
   */
  key_factor_codes: string[];
  /** Who provided the credit file the score was built on (`sandbox-synthetic`, `gateway:<host>`); null without a file. */
  credit_file_source: string | null;
}

/** `data` of `score.errored`: scoring could not run (credit data unavailable); the decision is referred with AA-25. */
export interface ScoreErroredData {
  decision_id: string;
  application_id: string;
  /** `magic_value` is the sandbox's `3333`. */
  reason: 'timeout' | 'error' | 'circuit_open' | 'magic_value';
  engine_version: string;
}

/**
 * `data` of `decision.finalized`: a decision reached its outcome, by the engine or by policy (failed
 * verification, expiry). Exactly the fields of the interface specification; money here is numbers.
 */
export interface DecisionFinalizedData {
  decision_id: string;
  application_id: string;
  outcome: DecisionOutcome;
  /** Integer, 300-850; null when nothing was scored (policy path). */
  score: number | null;
  /** 0-1 (0 when nothing was scored). */
  confidence: number;
  /** Dollars, a number, e.g. `120` or `87.5`; on a counteroffer the approved amount. */
  recommended_amount: number;
  /** Percentage, a number, e.g. `0` or `14.99`. */
  recommended_rate_pct: number;
  /** `A`-`E`; null when nothing was scored. */
  risk_grade: string | null;
  /** AA codes, most important first: a decline's or referral's; on a counteroffer, why not the full amount; else empty. */
  reason_codes: string[];
  /** Scorecard and policy versions that decided. */
  engine_version: string;
}

/**
 * `data` of `decision.adjusted`: an underwriter overrode a referred decision in the portal; the next
 * poll returns the new state (`decision.finalized` is not sent again).
 */
export interface DecisionAdjustedData {
  decision_id: string;
  application_id: string;
  previous_outcome: 'referred';
  outcome: 'approved' | 'declined';
  /** Decimal string on approval (auto loans: the amount financed); null on decline. */
  approved_amount: string | null;
  /** `USD`. */
  currency: string;
  /** `pay_in_4`, `pay_in_6` or `monthly` on a BNPL approval; null for an auto loan (it has no plan) and on decline. */
  plan: PlanPreference | null;
  /** On approval (auto loans: the term the underwriter approved, 24-84); null otherwise. */
  term_months: number | null;
  /** Disclosed APR on approval, a decimal string, e.g. `"0.00"`; null otherwise. */
  apr: string | null;
  /**
   * Adverse-action codes: the ones given with a decline. On an approval for less than requested (a
   * counteroffer) the underwriter's principal reasons the full amount was not approved, one to four;
   * on the requested amount on another plan or term, the reasons the underwriter chose to give
   * (possibly none); empty on an approval of what was asked.
   */
  reason_codes: string[];
  /** When the underwriter decided (ISO 8601, UTC). */
  adjusted_at: string;
  /** The portal user who decided (an id, never a name or email). */
  adjusted_by: string;
}

/** `data` of `application.kyc_completed`: identity verification succeeded (hosted page, or inline on the soft tier). */
export interface ApplicationKycCompletedData {
  application_id: string;
  decision_id: string;
  consumer_id: string;
  /** `enhanced` or `hard`, or `soft` when checked inline. */
  kyc_tier: KycTier;
  kyc_status: 'matched';
}

/** `data` of `application.kyc_failed`: identity verification failed; the decision is referred with AA-24 for the lender's review. */
export interface ApplicationKycFailedData {
  application_id: string;
  decision_id: string;
  consumer_id: string;
  kyc_tier: KycTier;
  /** `AA-24` ("Unable to verify identity"). */
  reason_code: string;
}

/** A document an underwriter can ask for (`application.documents_requested`). */
export type RequestedDocumentType = 'government_id' | 'proof_of_income' | 'proof_of_address' | 'bank_statement' | 'other';

/**
 * `data` of `application.documents_requested`: an underwriter asked the applicant for more documents.
 * The decision stays `referred`; the underwriter's note is not sent.
 */
export interface ApplicationDocumentsRequestedData {
  application_id: string;
  decision_id: string;
  /** This request for documents. */
  request_id: string;
  document_types: RequestedDocumentType[];
  /** The hosted upload page `{public_base_url}/verify/{token}` to send the applicant: single use, its own token (not the verification link). */
  upload_url: string;
  /** When the upload link stops working (14 days), ISO 8601. */
  expires_at: string;
  /** ISO 8601. */
  requested_at: string;
  /** The portal user (an id). */
  requested_by: string;
}

/** A condition an underwriter can attach to an approval (`application.condition_added`). */
export type ConditionCode = 'proof_of_income' | 'proof_of_identity' | 'down_payment' | 'co_applicant' | 'reduced_amount' | 'other';

/**
 * `data` of `application.condition_added`: an underwriter attached a condition to an approval (while
 * the decision is `referred`; its note stays in the portal).
 */
export interface ApplicationConditionAddedData {
  application_id: string;
  decision_id: string;
  condition_id: string;
  code: ConditionCode;
  /** ISO 8601. */
  added_at: string;
  /** The portal user (an id). */
  added_by: string;
}

/** `data` of `dealer.added`: a dealer joined the lender's network (auto-loan tenants). */
export interface DealerAddedData {
  /** The id used in indirect auto-loan requests. */
  dealer_id: string;
  /** The dealership's business name. */
  dealer_name: string;
  status: 'active';
}

/** `data` of `dealer.removed`: a dealer was soft-disabled; indirect requests naming it are refused with 422. */
export interface DealerRemovedData {
  dealer_id: string;
  dealer_name: string;
  status: 'disabled';
}

/** `data` of `webhook.test`: sent by "Send test event" in the portal to that one endpoint, whatever it subscribes to. */
export interface WebhookTestData {
  /** The endpoint tested. */
  endpoint_id: string;
  /** `This is a test event sent from the lender portal.` */
  message: string;
}

// ---------------------------------------------------------------------------------------------
// Auto loans (`POST /v1/decisions/auto-loan`, docs/auto-loan.md)

export type VehicleCondition = 'new' | 'used';
export type AutoLoanTermMonths = 24 | 36 | 48 | 60 | 72 | 84;
export type AutoLoanChannel = 'direct' | 'indirect';

export interface VehicleParams {
  /** 17 characters with a valid check digit (position 9); its 10th character must encode `year`. */
  vin: string;
  year: number;
  make: string;
  model: string;
  /** Odometer reading in miles. */
  mileage: number;
  condition: VehicleCondition;
  /** The vehicle's value (collateral), the base of `ltv`. */
  value: Amount;
}

export interface AutoLoanTermsParams {
  /** The amount to finance. */
  amount: Amount;
  down_payment: Amount;
  trade_in_value?: Amount;
  term_months: AutoLoanTermMonths;
  /** ISO 4217; only `USD` is supported (anything else is a 422). */
  currency: string;
}

/** The dealership that arranged an indirect loan, and its markup over the buy rate. */
export interface DealerParams {
  /** A dealer of your network (lender portal → Dealers); unknown or disabled is a 422. */
  dealer_id: string;
  /**
   * Points added to the buy rate (`"1.00"` is one point). Capped by policy (by default 1.25 up to
   * 60 months, 1.00 above); more is a 422.
   */
  markup_rate_pct: Amount;
}

interface AutoLoanCreateBase {
  consumer: ConsumerParams;
  vehicle: VehicleParams;
  loan: AutoLoanTermsParams;
}

/** Body of `POST /v1/decisions/auto-loan`: direct (no dealer) or indirect (through a dealer). */
export type AutoLoanCreateParams =
  | (AutoLoanCreateBase & { channel: 'direct'; dealer?: never })
  | (AutoLoanCreateBase & { channel: 'indirect'; dealer: DealerParams });

/**
 * An auto-loan decision: every field of `DecisionData` (the same four shapes), and on an approval
 * also the rates, the dealer's reserve and the loan-to-value. `approved_amount` is the amount
 * financed (`loan.amount - down_payment - trade_in_value`); `apr` is the Appendix J APR of the
 * monthly schedule at the contract rate.
 */
export interface AutoLoanDecisionData extends DecisionData {
  /** The lender's risk-based rate, percent with two decimals (`"6.49"`). Approvals only. */
  buy_rate?: string;
  /** The schedule's note rate: buy rate + dealer markup (= `buy_rate` for direct loans), percent. */
  contract_rate?: string;
  /** Dealer participation in the markup's finance charge, money (`"0.00"` for direct loans). */
  dealer_reserve?: string;
  /** Loan-to-value: amount financed / vehicle value x 100, percent with two decimals. */
  ltv?: string;
}

/** An auto-loan approval's offer (`autoLoanDecision.offer`): the `Offer` plus the rates, the reserve and the LTV. */
export interface AutoLoanOffer extends Offer {
  buy_rate: string;
  contract_rate: string;
  dealer_reserve: string;
  ltv: string;
}

/** Every event type the service emits (new ones are added over time). */
export type EventType =
  | 'decision.finalized'
  | 'decision.adjusted'
  | 'decision.created'
  | 'application.created'
  | 'application.kyc_completed'
  | 'application.kyc_failed'
  | 'application.documents_requested'
  | 'application.condition_added'
  | 'score.completed'
  | 'score.errored'
  | 'dealer.added'
  | 'dealer.removed'
  | 'webhook.test';

/**
 * An event read from the event history (`GET /v1/events`): the webhook envelope without
 * `attempt`, which belongs to a delivery. `id` is the webhook's `Svc-Webhook-Id`.
 */
export type Event<TData = Record<string, unknown>, TType extends string = string> = Omit<WebhookEvent<TData, TType>, 'attempt'>;

/** Each event type's `data` (docs/webhooks.md, "Event types and their `data`"). */
export interface EventDataByType {
  'application.created': ApplicationCreatedData;
  'decision.created': DecisionCreatedData;
  'score.completed': ScoreCompletedData;
  'score.errored': ScoreErroredData;
  'decision.finalized': DecisionFinalizedData;
  'decision.adjusted': DecisionAdjustedData;
  'application.kyc_completed': ApplicationKycCompletedData;
  'application.kyc_failed': ApplicationKycFailedData;
  'application.documents_requested': ApplicationDocumentsRequestedData;
  'application.condition_added': ApplicationConditionAddedData;
  'dealer.added': DealerAddedData;
  'dealer.removed': DealerRemovedData;
  'webhook.test': WebhookTestData;
}

/**
 * A webhook delivery as a union discriminated by `type` (by default of every event type, or of the
 * types `T`): checking `event.type` narrows `event.data`.
 *
 *   const event = webhooks.verify(rawBody, header, secrets) as TypedWebhookEvent;
 *   if (event.type === 'decision.adjusted') console.log(event.data.reason_codes);
 *
 * `verify` does not check the shape of `data`, so this is an assertion, like `verify<TData>()`.
 * An endpoint subscribed to `*` also receives types added later: give a `switch` a `default`.
 */
export type TypedWebhookEvent<T extends EventType = EventType> = { [K in T]: WebhookEvent<EventDataByType[K], K> }[T];

/**
 * An event of the event history as a union discriminated by `type`, like `TypedWebhookEvent`
 * without `attempt`: `client.events.list<TypedEvent>(…)` and `client.events.retrieve<TypedEvent>(id)`.
 */
export type TypedEvent<T extends EventType = EventType> = { [K in T]: Event<EventDataByType[K], K> }[T];

/** Parameters of `client.events.list()`. */
export interface EventListParams {
  /** Page size, 1 to 100 (default 20). */
  limit?: number;
  /** Only these types. */
  type?: EventType | readonly EventType[];
  /** Only events created at or after this time (a Date, or unix seconds). */
  created_gte?: Date | number;
  /** Only events created before this time (a Date, or unix seconds). */
  created_lt?: Date | number;
  /** Start below this event id (the previous page's `next_cursor`). */
  starting_after?: string;
}

/** One page of `GET /v1/events`, as the API sends it. */
export interface EventListData<TEvent extends Event<unknown> = Event> {
  object: 'list';
  data: TEvent[];
  has_more: boolean;
  next_cursor: string | null;
}

/** A line of the notice's reasons or key factors: a stable code and the sentence the letter prints. */
export interface NoticeReason {
  code: string;
  reason: string;
}

/** What was applied for, or offered instead, in the parts a letter writes ("a buy now, pay later loan of $1,250.00, in 6 monthly payments"). */
export interface NoticeTerms {
  /** Two-decimal string. */
  amount: string;
  currency: 'USD';
  plan: string | null;
  term_months: number | null;
  /** The product as the letter names it, e.g. "a buy now, pay later loan". */
  product: string;
  /** The repayment terms as the letter writes them; an offer's end with its APR. */
  terms: string | null;
}

/**
 * `GET /v1/decisions/{bnpl|auto-loan}/{decision_id}/adverse-action-notice`: the content of the
 * written notice Regulation B (12 CFR 1002.9) requires after a decline, or after a counteroffer the
 * applicant did not accept, laid out as Sample Form C-1. It never names the applicant: address the
 * letter from your own records. Settings the tenant has not entered in the portal are listed in
 * `missing_settings`; what else the letter lacks, in `incomplete`.
 */
export interface AdverseActionNotice {
  decision_id: string;
  environment: 'sandbox' | 'live';
  product: 'bnpl' | 'auto_loan';
  action: 'declined' | 'counteroffer';
  /** When the adverse action was taken (an underwriter's action, else the decision's completion), ISO 8601. */
  action_taken_at: string;
  /** The notice's own date (today, UTC), YYYY-MM-DD. */
  notice_date: string;
  /** The last day the notice may be sent, YYYY-MM-DD: 30 days after the completed application for a decline, 90 after a counteroffer. */
  due_by: string;
  application: NoticeTerms & { applied_on: string };
  counteroffer: (NoticeTerms & { apr: string | null }) | null;
  principal_reasons: { heading: string; reasons: NoticeReason[] };
  /** Part II (FCRA 615(a)): only when a consumer report was used for the decision. */
  consumer_report: {
    statement: string;
    agency: { name: string | null; address_lines: string[]; phone: string | null };
    credit_score: {
      statement: string;
      score: number;
      range: { min: number; max: number } | null;
      scored_on: string | null;
      key_factors: Array<{ code: string; reason: string | null }>;
    } | null;
  } | null;
  ecoa_notice: { statement: string; agency_lines: string[] };
  creditor: { name: string | null; address_lines: string[]; phone: string | null };
  missing_settings: string[];
  incomplete: string[];
}
