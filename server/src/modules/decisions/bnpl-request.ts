/**
 * From a schema-valid request body to a normalised BNPL application, applying the rules the schema
 * cannot express. The split is decisions.md section 2: shape problems (a missing field, a bad
 * format) are 400 `invalid_request`; well-formed requests that break a business rule (amount
 * outside every plan, currency other than USD, under 18, a plan the amount does not allow) are 422
 * `unprocessable_entity`. The rules that need stored data (unknown consumer_id, ssn_last4 needed
 * by the tier) are checked by the service.
 */
import { ApiError } from '../../http/errors/error-registry.js';
import { allowedValuesMessage, formatCentsGrouped, formatCentsPlain, moneyOutOfRangeMessage, moneyRangeText } from '../../http/errors/messages.js';
import { MONEY_FORMAT_RULE, parseMoney, type Cents } from '../../lib/money.js';
import type { ConsumerAddress, NewConsumerIdentity } from '../consumers/consumers.service.js';
import { planAllowsAmount, PLAN_RULES, type Plan } from '../offers/schedule.js';

interface MoneyFields {
  amount: string | number;
  currency: string;
  merchant_name?: string;
  merchant_category?: string;
  product_description?: string;
}

export interface BnplCreateBody {
  consumer: {
    consumer_id?: string;
    first_name?: string;
    last_name?: string;
    email?: string;
    phone?: string;
    dob?: string;
    ssn_last4?: string;
    address?: Partial<ConsumerAddress>;
  };
  transaction?: MoneyFields & { merchant_name: string; merchant_category: string };
  order?: MoneyFields & { installment_count: number };
  plan_preference?: Plan;
}

export type ApplicantRef = { kind: 'existing'; consumerId: string } | { kind: 'new'; identity: NewConsumerIdentity };

export interface BnplApplication {
  applicant: ApplicantRef;
  amountCents: Cents;
  currency: 'USD';
  /** The plan the caller asked for; null lets the service choose. */
  requestedPlan: Plan | null;
  /** order.installment_count for a monthly plan. */
  requestedTermMonths: number | null;
  merchantName: string;
  merchantCategory: string;
}

export interface MerchantDefaults {
  merchantName: string;
  merchantCategory: string;
}

const MINIMUM_AGE_YEARS = 18;
const MAXIMUM_AGE_YEARS = 120;

export function normalizeBnplRequest(body: BnplCreateBody, merchantDefaults: MerchantDefaults, asOf: Date): BnplApplication {
  if (body.transaction && body.order) throw new ApiError('invalid_request', 'transaction and order cannot both be sent; send either transaction or order (the client-library form), not both.');
  const money = body.transaction ?? body.order;
  if (!money) throw new ApiError('invalid_request', 'transaction is required (or order, the client-library form).');

  const amountCents = parseMoney(money.amount);
  const field = body.transaction ? 'transaction' : 'order';
  if (amountCents === null) {
    throw new ApiError('invalid_request', `${field}.amount must be ${MONEY_FORMAT_RULE}, such as "149.97".`);
  }
  const applicant = normalizeApplicant(body.consumer, asOf);

  // Business rules from here on: 422.
  if (money.currency !== 'USD') throw new ApiError('unprocessable_entity', allowedValuesMessage(`${field}.currency ${money.currency}`, 'is not supported', ['USD']));
  const minimum = Math.min(...Object.values(PLAN_RULES).map((r) => r.minCents));
  const maximum = Math.max(...Object.values(PLAN_RULES).map((r) => r.maxCents));
  if (amountCents < minimum || amountCents > maximum) {
    throw new ApiError('unprocessable_entity', moneyOutOfRangeMessage(`${field}.amount`, amountCents, minimum, maximum, ` for BNPL plans (${planRangesText()})`));
  }

  const { plan, termMonths } = requestedPlanOf(body, amountCents);
  if (plan !== null && !planAllowsAmount(plan, amountCents)) {
    const subject = body.order ? `order.installment_count ${body.order.installment_count} (plan ${plan})` : `plan_preference ${plan}`;
    const fitting = (Object.keys(PLAN_RULES) as Plan[]).filter((p) => planAllowsAmount(p, amountCents));
    // Each form is told what it can send: with order, plan_preference is refused (400).
    const offered = body.order
      ? `installment_count offered for this amount: ${installmentCountsText(amountCents)}.`
      : `Plans offered for this amount: ${fitting.join(', ')} (or omit plan_preference to let the service choose).`;
    throw new ApiError(
      'unprocessable_entity',
      `${subject} is not offered for ${formatCentsPlain(amountCents)} USD; ${plan} allows ${moneyRangeText(PLAN_RULES[plan].minCents, PLAN_RULES[plan].maxCents)}. ${offered}`,
    );
  }
  return {
    applicant,
    amountCents,
    currency: 'USD',
    requestedPlan: plan,
    requestedTermMonths: termMonths,
    merchantName: money.merchant_name ?? merchantDefaults.merchantName,
    merchantCategory: money.merchant_category ?? merchantDefaults.merchantCategory,
  };
}

/** "pay_in_4 25.00-2,000.00 USD, pay_in_6 ..., monthly ..." for range messages. */
function planRangesText(): string {
  return (Object.keys(PLAN_RULES) as Plan[]).map((p) => `${p} ${moneyRangeText(PLAN_RULES[p].minCents, PLAN_RULES[p].maxCents)}`).join(', ');
}

/** decisions.md section 1: installment_count 4 -> pay_in_4, 6 -> pay_in_6 (monthly above its range), N -> monthly. */
function requestedPlanOf(body: BnplCreateBody, amountCents: Cents): { plan: Plan | null; termMonths: number | null } {
  if (body.order) {
    if (body.plan_preference) throw new ApiError('invalid_request', 'plan_preference cannot be sent with order; with order, order.installment_count chooses the plan (send plan_preference with transaction instead).');
    const n = body.order.installment_count;
    if (n === 4) return { plan: 'pay_in_4', termMonths: null };
    if (n === 6 && amountCents <= PLAN_RULES.pay_in_6.maxCents) return { plan: 'pay_in_6', termMonths: null };
    if (amountCents > PLAN_RULES.pay_in_6.maxCents) return { plan: 'monthly', termMonths: n };
    throw new ApiError(
      'unprocessable_entity',
      `order.installment_count ${n} is offered only above ${formatCentsGrouped(PLAN_RULES.pay_in_6.maxCents)} USD (monthly plan, up to ${formatCentsGrouped(PLAN_RULES.monthly.maxCents)} USD); for ${formatCentsPlain(amountCents)} USD send ${installmentCountsText(amountCents)}.`,
    );
  }
  return { plan: body.plan_preference ?? null, termMonths: null };
}

/** The installment counts the `order` form can send for an amount (4 and 6 where their plans allow it, else the monthly counts), for messages. */
function installmentCountsText(amountCents: Cents): string {
  if (amountCents > PLAN_RULES.pay_in_6.maxCents) return '3, 6, 12, 18, 24 or 36 (monthly)';
  const counts = [planAllowsAmount('pay_in_4', amountCents) ? '4' : null, planAllowsAmount('pay_in_6', amountCents) ? '6' : null].filter((c) => c !== null);
  return counts.length > 0 ? counts.join(' or ') : 'none (no plan offers this amount)';
}

export function normalizeApplicant(consumer: BnplCreateBody['consumer'], asOf: Date): ApplicantRef {
  // interface.md: with consumer_id, the other consumer fields are skipped.
  if (consumer.consumer_id !== undefined) return { kind: 'existing', consumerId: consumer.consumer_id.toLowerCase() };
  for (const name of ['first_name', 'last_name', 'email', 'dob', 'address'] as const) {
    if (consumer[name] === undefined) throw new ApiError('invalid_request', `consumer.${name} is required for a new consumer (or send consumer_id).`);
  }
  const address = consumer.address!;
  for (const name of ['line1', 'city', 'state', 'zip'] as const) {
    if (address[name] === undefined) throw new ApiError('invalid_request', `consumer.address.${name} is required for a new consumer.`);
  }
  const age = ageInYears(consumer.dob!, asOf);
  if (age < MINIMUM_AGE_YEARS) throw new ApiError('unprocessable_entity', 'consumer.dob gives an age under 18; the applicant must be at least 18 years old.');
  if (age > MAXIMUM_AGE_YEARS) throw new ApiError('unprocessable_entity', 'consumer.dob gives an age above 120 years; check the date of birth.');
  return {
    kind: 'new',
    identity: {
      firstName: consumer.first_name!.trim(),
      lastName: consumer.last_name!.trim(),
      email: consumer.email!,
      phone: consumer.phone ?? null,
      dob: consumer.dob!,
      ssnLast4: consumer.ssn_last4 ?? null,
      // Object.assign keeps the fields' order without `{ ...x, y }` (docs/performance.md, "objects built by spreading").
      address: Object.assign(
        { line1: address.line1! },
        address.line2 !== undefined ? { line2: address.line2 } : null,
        { city: address.city!, state: address.state!, zip: address.zip! },
        address.country !== undefined ? { country: address.country } : null,
      ),
    },
  };
}

/** Whole years between a YYYY-MM-DD birth date and `asOf` (UTC calendar). */
export function ageInYears(dob: string, asOf: Date): number {
  const [y, m, d] = dob.split('-').map(Number) as [number, number, number];
  const years = asOf.getUTCFullYear() - y;
  const beforeBirthday = asOf.getUTCMonth() + 1 < m || (asOf.getUTCMonth() + 1 === m && asOf.getUTCDate() < d);
  return beforeBirthday ? years - 1 : years;
}
