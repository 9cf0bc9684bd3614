/**
 * The wire schema of the adverse-action notice as `/v1` returns it (notices-v1.routes.ts), one shared
 * component of the OpenAPI document (http/openapi.ts registers it; the routes refer to it by id).
 */
import { moneyOut } from '../decisions/bnpl.schemas.js';

const text = { type: 'string' } as const;
const nullableText = { type: ['string', 'null'] } as const;
const lines = { type: 'array', items: text } as const;
const day = { type: 'string', format: 'date', examples: ['2026-12-31'] } as const;
const reason = { type: 'object', additionalProperties: false, required: ['code', 'reason'], properties: { code: text, reason: text } } as const;

/** What was applied for, or offered instead, in the parts the letter writes ("a buy now, pay later loan of $1,250.00, in 6 monthly payments"). */
const terms = (extra: Record<string, unknown>, required: string[]) =>
  ({
    type: 'object',
    additionalProperties: false,
    required: ['amount', 'currency', 'plan', 'term_months', 'product', 'terms', ...required],
    properties: {
      amount: moneyOut,
      currency: { type: 'string', enum: ['USD'] },
      plan: { ...nullableText, description: 'The BNPL plan, or null.' },
      term_months: { type: ['integer', 'null'] },
      product: { ...text, description: 'The product as the letter names it, e.g. "a buy now, pay later loan".' },
      terms: { ...nullableText, description: 'The repayment terms as the letter writes them; an offer\'s end with its APR.' },
      ...extra,
    },
  }) as const;

/** Registered once with the OpenAPI document's shared schemas (http/openapi.ts); the routes refer to it. */
export const ADVERSE_ACTION_NOTICE_SCHEMA_ID = 'AdverseActionNotice';

export const adverseActionNoticeSchema = {
  type: 'object',
  additionalProperties: false,
  description:
    'The content of the written notice Regulation B (12 CFR 1002.9) requires after a decline, or after a counteroffer the applicant did not accept, laid out as Sample Form C-1 (Part I reasons, Part II consumer report when one was used, the ECOA notice). ' +
    'Without the applicant: address it from your own records. `missing_settings` names what the tenant has not entered in the portal\'s notice settings; `incomplete`, what else the letter lacks.',
  required: [
    'decision_id', 'environment', 'product', 'action', 'action_taken_at', 'notice_date', 'due_by', 'application', 'counteroffer', 'principal_reasons', 'consumer_report',
    'ecoa_notice', 'creditor', 'missing_settings', 'incomplete',
  ],
  properties: {
    decision_id: { type: 'string', format: 'uuid' },
    environment: { type: 'string', enum: ['sandbox', 'live'] },
    product: { type: 'string', enum: ['bnpl', 'auto_loan'] },
    action: { type: 'string', enum: ['declined', 'counteroffer'] },
    action_taken_at: { type: 'string', format: 'date-time', description: 'When the adverse action was taken: an underwriter\'s action, else the decision\'s completion.' },
    notice_date: { ...day, description: 'The notice\'s own date (today, UTC).' },
    due_by: { ...day, description: 'The last day the notice may be sent: 30 days after the completed application for a decline, 90 days after a counteroffer; UTC days less one.' },
    application: terms({ applied_on: day }, ['applied_on']),
    counteroffer: { anyOf: [terms({ apr: { type: ['string', 'null'] } }, ['apr']), { type: 'null' }] },
    principal_reasons: {
      type: 'object',
      additionalProperties: false,
      required: ['heading', 'reasons'],
      properties: { heading: text, reasons: { type: 'array', items: reason } },
    },
    consumer_report: {
      anyOf: [
        {
          type: 'object',
          additionalProperties: false,
          required: ['statement', 'agency', 'credit_score'],
          properties: {
            statement: text,
            agency: { type: 'object', additionalProperties: false, required: ['name', 'address_lines', 'phone'], properties: { name: nullableText, address_lines: lines, phone: nullableText } },
            credit_score: {
              anyOf: [
                {
                  type: 'object',
                  additionalProperties: false,
                  required: ['statement', 'score', 'range', 'scored_on', 'key_factors'],
                  properties: {
                    statement: text,
                    score: { type: 'integer' },
                    range: { anyOf: [{ type: 'object', additionalProperties: false, required: ['min', 'max'], properties: { min: { type: 'integer' }, max: { type: 'integer' } } }, { type: 'null' }] },
                    scored_on: { anyOf: [day, { type: 'null' }] },
                    key_factors: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['code', 'reason'], properties: { code: text, reason: nullableText } } },
                  },
                },
                { type: 'null' },
              ],
            },
          },
        },
        { type: 'null' },
      ],
    },
    ecoa_notice: { type: 'object', additionalProperties: false, required: ['statement', 'agency_lines'], properties: { statement: text, agency_lines: lines } },
    creditor: { type: 'object', additionalProperties: false, required: ['name', 'address_lines', 'phone'], properties: { name: nullableText, address_lines: lines, phone: nullableText } },
    missing_settings: { type: 'array', items: text },
    incomplete: { type: 'array', items: text },
  },
} as const;
