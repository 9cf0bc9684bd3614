/**
 * Wire schemas of the BNPL endpoints. The request schema decides what is 400 (shape: types, formats,
 * enums, unknown fields); business rules (amount ranges, USD, age, tier needs) are 422 and live in
 * bnpl-request.ts. The response schemas document the four shapes in the OpenAPI document.
 */
export const MERCHANT_CATEGORIES = [
  'food_beverage', 'furniture', 'electronics', 'sporting_goods', 'apparel', 'beauty', 'home_garden',
  'travel', 'health', 'jewelry', 'automotive', 'education', 'entertainment', 'general',
] as const;

/** USPS two-letter codes: states, DC, territories and military post offices. */
export const USPS_STATE_CODES = [
  'AL', 'AK', 'AZ', 'AR', 'CA', 'CO', 'CT', 'DE', 'DC', 'FL', 'GA', 'HI', 'ID', 'IL', 'IN', 'IA', 'KS', 'KY', 'LA', 'ME',
  'MD', 'MA', 'MI', 'MN', 'MS', 'MO', 'MT', 'NE', 'NV', 'NH', 'NJ', 'NM', 'NY', 'NC', 'ND', 'OH', 'OK', 'OR', 'PA', 'RI',
  'SC', 'SD', 'TN', 'TX', 'UT', 'VT', 'VA', 'WA', 'WV', 'WI', 'WY', 'AS', 'GU', 'MP', 'PR', 'VI', 'AA', 'AE', 'AP',
] as const;

const name = { type: 'string', minLength: 1, maxLength: 100, pattern: '\\S', 'x-error': 'must be a string of 1 to 100 characters, not only spaces' } as const;
/** Required text: blank (spaces only) is as empty as "" for an address or a merchant's display name. */
const text = <Max extends number>(maxLength: Max) =>
  ({ type: 'string', minLength: 1, maxLength, pattern: '\\S', 'x-error': `must be a string of 1 to ${maxLength} characters, not only spaces` }) as const;
const money = {
  type: ['string', 'number'],
  description: 'Decimal amount: a string with at most two decimals (preferred) or a JSON number.',
  examples: ['149.97'],
} as const;

export const bnplCreateBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['consumer'],
  properties: {
    consumer: {
      type: 'object',
      additionalProperties: false,
      description: 'Either `consumer_id` alone (returning consumer) or the identity fields (new consumer).',
      properties: {
        consumer_id: { type: 'string', format: 'uuid', 'x-error': 'must be a UUID' },
        first_name: name,
        last_name: name,
        email: { type: 'string', format: 'email', maxLength: 254, 'x-error': 'must be a valid email address' },
        phone: { type: 'string', pattern: '^\\+[1-9][0-9]{6,14}$', 'x-error': 'must be an E.164 phone number such as +14155550123' },
        dob: { type: 'string', format: 'date', 'x-error': 'must be a real calendar date in the form YYYY-MM-DD' },
        ssn_last4: { type: 'string', pattern: '^[0-9]{4}$', 'x-error': 'must be exactly four digits' },
        address: {
          type: 'object',
          additionalProperties: false,
          properties: {
            line1: text(200),
            line2: { type: 'string', maxLength: 200 },
            city: text(100),
            state: { type: 'string', enum: [...USPS_STATE_CODES], 'x-error': 'must be a USPS two-letter state code in capitals, such as CA or NY' },
            zip: { type: 'string', pattern: '^[0-9]{5}(-[0-9]{4})?$', 'x-error': 'must be a 5-digit ZIP code or ZIP+4, such as 73301 or 73301-0001' },
            country: { type: 'string', enum: ['US'], 'x-error': 'must be US (the only country served)' },
          },
        },
      },
    },
    transaction: {
      type: 'object',
      additionalProperties: false,
      required: ['amount', 'currency', 'merchant_name', 'merchant_category'],
      properties: {
        amount: money,
        currency: { type: 'string', pattern: '^[A-Z]{3}$', 'x-error': 'must be an ISO 4217 code such as USD' },
        merchant_name: text(200),
        merchant_category: { type: 'string', enum: [...MERCHANT_CATEGORIES] },
        product_description: { type: 'string', maxLength: 500 },
      },
    },
    order: {
      type: 'object',
      additionalProperties: false,
      description: 'Client-library form, accepted in place of `transaction` (never both).',
      required: ['amount', 'currency', 'installment_count'],
      properties: {
        amount: money,
        currency: { type: 'string', pattern: '^[A-Z]{3}$', 'x-error': 'must be an ISO 4217 code such as USD' },
        installment_count: { type: 'integer', enum: [3, 4, 6, 12, 18, 24, 36] },
        merchant_name: text(200),
        merchant_category: { type: 'string', enum: [...MERCHANT_CATEGORIES] },
        product_description: { type: 'string', maxLength: 500 },
      },
    },
    plan_preference: { type: 'string', enum: ['pay_in_4', 'pay_in_6', 'monthly'] },
  },
} as const;

export const decisionIdParamsSchema = {
  type: 'object',
  required: ['decision_id'],
  additionalProperties: false,
  properties: { decision_id: { type: 'string', format: 'uuid', 'x-error': 'must be a UUID' } },
} as const;

export const moneyOut = { type: 'string', pattern: '^-?[0-9]+\\.[0-9]{2}$', examples: ['149.97'] } as const;
const reasons = {
  type: 'array',
  maxItems: 4,
  items: {
    type: 'object',
    required: ['code', 'reason'],
    additionalProperties: false,
    properties: { code: { type: 'string', pattern: '^AA-[0-9]{2}$' }, reason: { type: 'string' } },
  },
} as const;

/** One schema for every shape; `oneOf` would make the document harder to read for little gain. */
export const decisionResponseSchema = {
  type: 'object',
  description:
    'A BNPL decision. Approved: every field but `estimated_completion_seconds`. Declined: `decision_id`, `application_id`, ' +
    '`status`, `outcome`, `decline_reasons`. Referred: as declined plus `kyc_tier`, `kyc_status`, `polling_url`. ' +
    'Pending (`needs_consumer_action`): `decision_id`, `application_id`, `status`, `kyc_tier`, `kyc_status`, `outcome` (null), ' +
    '`consumer_complete_url`, `polling_url`, `estimated_completion_seconds`, `expires_at`.',
  required: ['decision_id', 'application_id', 'status', 'outcome'],
  additionalProperties: false,
  properties: {
    decision_id: { type: 'string', format: 'uuid' },
    application_id: { type: 'string', format: 'uuid' },
    status: { type: 'string', enum: ['complete', 'needs_consumer_action'] },
    kyc_tier: { type: 'string', enum: ['soft', 'enhanced', 'hard'] },
    kyc_status: { type: 'string', enum: ['matched', 'pending', 'skipped'] },
    outcome: { type: ['string', 'null'], enum: ['approved', 'declined', 'referred', null] },
    approved_amount: moneyOut,
    currency: { type: 'string', enum: ['USD'] },
    apr: { type: 'string', pattern: '^[0-9]+\\.[0-9]{2}$', description: 'Annual percentage rate in percent (Regulation Z Appendix J).' },
    term_months: { type: 'integer' },
    payment_schedule: {
      type: 'array',
      items: {
        type: 'object',
        required: ['num', 'due_date', 'amount'],
        additionalProperties: false,
        properties: { num: { type: 'integer', minimum: 1 }, due_date: { type: 'string', format: 'date' }, amount: moneyOut },
      },
    },
    tila_disclosure: {
      type: 'object',
      required: ['amount_financed', 'finance_charge', 'total_of_payments', 'apr', 'payment_frequency'],
      additionalProperties: false,
      properties: {
        amount_financed: moneyOut,
        finance_charge: moneyOut,
        total_of_payments: moneyOut,
        apr: { type: 'string', pattern: '^[0-9]+\\.[0-9]{2}$' },
        payment_frequency: { type: 'string', enum: ['biweekly', 'monthly'] },
      },
    },
    decline_reasons: reasons,
    consumer_complete_url: { type: ['string', 'null'], format: 'uri' },
    polling_url: { type: 'string' },
    estimated_completion_seconds: { type: 'integer' },
    expires_at: { type: 'string', format: 'date-time' },
  },
} as const;
