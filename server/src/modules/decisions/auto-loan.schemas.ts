/**
 * Wire schemas of the auto-loan endpoints (decisions.md section 10). Shape rules only (400); the
 * business rules are in auto-loan-request.ts. The consumer object and the decision shapes are
 * BNPL's; an approval adds `buy_rate`, `contract_rate`, `dealer_reserve` and `ltv`, and an indirect
 * approval's TILA block the credit-sale lines (`total_down_payment`, `total_sale_price`).
 */
import { bnplCreateBodySchema, decisionResponseSchema, moneyOut } from './bnpl.schemas.js';

const money = {
  type: ['string', 'number'],
  description: 'Decimal amount: a string with at most two decimals (preferred) or a JSON number.',
  examples: ['25000.00'],
} as const;

export const autoLoanCreateBodySchema = {
  type: 'object',
  additionalProperties: false,
  required: ['consumer', 'vehicle', 'loan', 'channel'],
  properties: {
    consumer: bnplCreateBodySchema.properties.consumer,
    vehicle: {
      type: 'object',
      additionalProperties: false,
      required: ['vin', 'year', 'make', 'model', 'mileage', 'condition', 'value'],
      properties: {
        vin: { type: 'string', description: '17 characters, no I, O or Q, valid check digit (position 9), model-year code (position 10) matching `year`. Case-insensitive.', examples: ['1HGCM8262RA004352'] },
        year: { type: 'integer', description: 'Model year, 1981 to next year; the year the VIN\'s position 10 encodes.' },
        make: { type: 'string', minLength: 1, maxLength: 50, pattern: '\\S', 'x-error': 'must be a string of 1 to 50 characters, not only spaces' },
        model: { type: 'string', minLength: 1, maxLength: 50, pattern: '\\S', 'x-error': 'must be a string of 1 to 50 characters, not only spaces' },
        mileage: { type: 'integer', minimum: 0, maximum: 2_000_000, description: 'Odometer reading in miles.' },
        condition: { type: 'string', enum: ['new', 'used'] },
        value: { ...money, description: 'Value of the vehicle the loan-to-value is measured against (book value or, for new vehicles, invoice).' },
      },
    },
    loan: {
      type: 'object',
      additionalProperties: false,
      required: ['amount', 'down_payment', 'term_months', 'currency'],
      properties: {
        amount: { ...money, description: 'Cash price of the purchase plus the other amounts financed (taxes, fees, add-ons, negative trade-in equity), before down payment and trade-in; no finance charges.' },
        down_payment: { ...money, description: 'Cash down payment; may be 0.' },
        trade_in_value: { ...money, description: 'Net trade-in value (after any payoff); optional, 0 when absent.' },
        term_months: { type: 'integer', enum: [24, 36, 48, 60, 72, 84] },
        currency: { type: 'string', pattern: '^[A-Z]{3}$', 'x-error': 'must be an ISO 4217 code such as USD' },
      },
    },
    channel: { type: 'string', enum: ['direct', 'indirect'], description: '`direct`: the lender lends to the consumer. `indirect`: through a dealer of the lender\'s network, who may mark the rate up.' },
    dealer: {
      type: 'object',
      additionalProperties: false,
      required: ['dealer_id', 'markup_rate_pct'],
      description: 'Indirect loans only: an active dealer of this tenant and environment, and its markup over the buy rate.',
      properties: {
        dealer_id: { type: 'string', format: 'uuid', 'x-error': 'must be a UUID' },
        markup_rate_pct: {
          type: ['string', 'number'],
          description: 'Percentage points over the buy rate, at most two decimals (e.g. "1.25"). Capped by policy: 1.25 for terms up to 60 months, 1.00 above.',
          examples: ['1.00'],
        },
      },
    },
  },
} as const;

const rate = { type: 'string', pattern: '^[0-9]+\\.[0-9]{2}$' } as const;

export const autoLoanDecisionResponseSchema = {
  ...decisionResponseSchema,
  description:
    'An auto-loan decision: the BNPL shapes (approved, declined, referred, pending), monthly schedule. An approval also carries ' +
    '`buy_rate`, `contract_rate` (buy rate + dealer markup), `dealer_reserve` and `ltv`; `apr` is the Appendix J APR of the contract-rate schedule.',
  properties: {
    ...decisionResponseSchema.properties,
    tila_disclosure: {
      ...decisionResponseSchema.properties.tila_disclosure,
      description:
        'The Truth in Lending block. An indirect loan is a credit sale by the dealer, so it also carries the total sale price of ' +
        '12 CFR 1026.18(j) and the downpayment included in it; a direct loan does not.',
      properties: {
        ...decisionResponseSchema.properties.tila_disclosure.properties,
        total_down_payment: { ...moneyOut, examples: ['3000.00'], description: 'Indirect loans only: cash down payment plus trade-in (1026.2(a)(18)), i.e. loan.amount - amount financed.' },
        total_sale_price: { ...moneyOut, examples: ['18905.32'], description: 'Indirect loans only: loan.amount (cash price + other amounts financed) + finance charge, i.e. total of payments + total_down_payment (1026.18(j)).' },
      },
    },
    buy_rate: { ...rate, description: 'The lender\'s risk-based rate, percent (e.g. "6.49").' },
    contract_rate: { ...rate, description: 'The note rate of the schedule: buy rate + dealer markup (equal to buy_rate for direct loans), percent.' },
    dealer_reserve: { type: 'string', pattern: '^[0-9]+\\.[0-9]{2}$', description: 'Dealer participation: share x (finance charge at contract rate - at buy rate); "0.00" for direct loans. See docs/auto-loan.md.' },
    ltv: { ...rate, description: 'Loan-to-value: amount financed / vehicle value x 100, percent.' },
  },
} as const;
