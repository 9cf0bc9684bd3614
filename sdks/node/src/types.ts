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

/** The JSON envelope of every webhook delivery. */
export interface WebhookEvent<TData = Record<string, unknown>> {
  /** Event id: the same on every attempt; deduplicate on it. */
  id: string;
  type: string;
  /** Unix seconds when the event was committed. */
  created: number;
  /** 1 for the first try of a delivery, up to 8. */
  attempt: number;
  data: TData;
}

/** `data` of `decision.finalized`. */
export interface DecisionFinalizedData {
  decision_id: string;
  application_id: string;
  outcome: DecisionOutcome;
  score: number | null;
  confidence: number;
  recommended_amount: number;
  recommended_rate_pct: number;
  risk_grade: string | null;
  /** AA codes, most important first: a decline's or referral's; on a counteroffer, why not the full amount; else empty. */
  reason_codes: string[];
  engine_version: string;
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
export type Event<TData = Record<string, unknown>> = Omit<WebhookEvent<TData>, 'attempt'>;

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
export interface EventListData {
  object: 'list';
  data: Event[];
  has_more: boolean;
  next_cursor: string | null;
}
