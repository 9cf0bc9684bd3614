/**
 * An adverse-action notice for one decision: what the lender sends the applicant after a decline
 * or a counteroffer, on the lines of Regulation B's Sample Form C-1 (12 CFR 1002, Appendix C).
 *
 * How it is put together (pure: the decision, its explanation, the applicant, the tenant's notice
 * settings and the date come in; the notice's content goes out, in the portal's wire shape):
 * - Which decisions have one (`noticeActionOf`, from the decision's row alone): a decline (the
 *   engine's, an underwriter's, or a pending state that expired, AA-01 "Credit application
 *   incomplete"), and a counteroffer: approved for less, or on another plan or term than asked
 *   (1002.2(c)(1)(i); the notice is owed only if the applicant does not take it, 1002.9(a)(1)(iv)).
 *   From the row, not from the counteroffer's reasons: decisions made before reasons were recorded
 *   (ADR 0046) are counteroffers too, and their notice says its reasons are missing. Anything else
 *   is `null`: no adverse action was taken.
 * - Part I, the principal reasons: the decline's reasons, or the counteroffer's (the engine's, or
 *   the underwriter's after an override, ADR 0046), in their order and with the form's wording;
 *   the same lists the API, the webhooks and the decision page carry (reporting `explain`).
 * - Part II, the consumer report (FCRA 615(a), 15 U.S.C. 1681m(a)): only when one was obtained
 *   for the decision (the credit data answered, a file or "no file"). The agency's name, address
 *   and telephone come from the settings; the statement of the applicant's rights (the agency did
 *   not decide, a free copy within 60 days, the right to dispute) is the form's; the credit score
 *   the decision used, its range, date and key factors come from the decision (engine/key-factors.ts)
 *   and only when a score was made from a file.
 * - The ECOA notice (1002.9(b)(1)) in the regulation's words, then the federal agency of the
 *   settings; the creditor's name and address from the settings.
 * - `due_by`: the last day the notice may be sent. A decline: 30 days after the application was
 *   complete (1002.9(a)(1)(i): from receiving the completed application, not from the decline, so
 *   an underwriter's late decline can be overdue at once); we count from the decision's completion,
 *   the earliest the application can have been complete. A counteroffer: 90 days after it was made
 *   (1002.9(a)(1)(iv)). Counted in UTC days less one, so that it is never later than the lender's
 *   own date in any US time zone.
 * - `missing_settings`: what the tenant has not entered yet that this notice needs (the reporting
 *   agency's toll-free number too, which 615(a)(3)(A) requires of a nationwide agency);
 *   `incomplete`: what else the letter lacks (a counteroffer made before its reasons were
 *   recorded). The portal shows the notice anyway, with those places marked, so nobody mails it
 *   incomplete unawares.
 */
import type { DecisionsTable, NoticeSettingsTable } from '../../db/schema.js';
import { formatMoney } from '../../lib/money.js';
import type { CreditScoreDisclosure } from '../reporting/reporting.service.js';

export const DECLINE_NOTICE_DAYS = 30;
export const COUNTEROFFER_NOTICE_DAYS = 90;
const DAY_MS = 86_400_000;

/** The ECOA notice of 12 CFR 1002.9(b)(1), up to the agency's name and address (which follow it). */
export const ECOA_NOTICE =
  'The Federal Equal Credit Opportunity Act prohibits creditors from discriminating against credit applicants on the basis of race, color, religion, national origin, sex, marital status, age (provided the applicant has the capacity to enter into a binding contract); because all or part of the applicant\'s income derives from any public assistance program; or because the applicant has in good faith exercised any right under the Consumer Credit Protection Act. The Federal agency that administers compliance with this law concerning this creditor is:';

/** Part I's heading, Sample Form C-1's. */
export const PART_I_HEADING = 'Principal reason(s) for credit denial, termination, or other action taken concerning credit';

/** Part II's statement of the applicant's rights under FCRA 615(a)(3) and (4), Sample Form C-1's; the last sentence of its reasons differs for a counteroffer. */
export function consumerReportStatement(action: NoticeAction): string {
  const noReasons =
    action === 'declined'
      ? 'The reporting agency played no part in our decision and is unable to supply specific reasons why we have denied credit to you.'
      : 'The reporting agency played no part in our decision and is unable to supply specific reasons why we did not grant the credit you applied for.';
  return [
    'Our credit decision was based in whole or in part on information obtained in a report from the consumer reporting agency listed below.',
    'You have a right under the Fair Credit Reporting Act to know the information contained in your credit file at the consumer reporting agency.',
    noReasons,
    'You also have a right to a free copy of your report from the reporting agency, if you request it no later than 60 days after you receive this notice.',
    'In addition, if you find that any information contained in the report you receive is inaccurate or incomplete, you have the right to dispute the matter with the reporting agency.',
  ].join(' ');
}

/**
 * What FCRA 615(a)(2) has the notice say of a credit score the decision used. Ours is not the
 * agency's score: the lender's scorecard made it from the agency's report, and the statement says so.
 */
export const CREDIT_SCORE_STATEMENT =
  'We also used a credit score in making our credit decision. We calculated it from the information in the consumer report named above. A credit score is a number that reflects the information in your consumer report; it can change as that information changes.';

export type NoticeAction = 'declined' | 'counteroffer';

export type NoticeSettings = Pick<NoticeSettingsTable, 'creditor_name' | 'creditor_address' | 'creditor_phone' | 'agency' | 'cra_name' | 'cra_address' | 'cra_phone'>;

export interface NoticeApplicant {
  firstName: string;
  lastName: string;
  address: { line1: string; line2?: string | null; city: string; state: string; zip: string; country?: string | null } | null;
}

export interface NoticeInput {
  row: Pick<
    DecisionsTable,
    'id' | 'environment' | 'product' | 'status' | 'outcome' | 'currency' | 'requested_amount_cents' | 'requested_plan' | 'requested_term_months' | 'approved_amount_cents' | 'plan' | 'term_months' | 'apr' | 'created_at' | 'completed_at'
  >;
  /** The decline's reasons, as reporting's explanation gives them. */
  reasons: ReadonlyArray<{ code: string; reason: string }>;
  /** The counteroffer's reasons; empty unless the approval is a counteroffer. */
  counterofferReasons: ReadonlyArray<{ code: string; reason: string }>;
  /** The credit data answered for this decision (a file or "no file"): a consumer report was used. */
  consumerReportUsed: boolean;
  creditScore: CreditScoreDisclosure | null;
  /** When the adverse action was taken: the underwriter's action, else the decision's completion (`row.completed_at`). */
  actionAt: Date;
  applicant: NoticeApplicant | null;
  settings: NoticeSettings | null;
  /** The notice's own date. */
  today: Date;
}

/** The notice as the portal returns it (docs/portal.md, "Adverse-action notices"). */
export interface AdverseActionNotice {
  decision_id: string;
  environment: 'sandbox' | 'live';
  product: 'bnpl' | 'auto_loan';
  action: NoticeAction;
  action_taken_at: string;
  notice_date: string;
  due_by: string;
  applicant: { name: string; address_lines: string[] } | null;
  /**
   * What was applied for: the letter says "`product` of `amount`, `terms`" ("a buy now, pay later
   * loan of $1,250.00, in 6 monthly payments"), writing the amount its own way.
   */
  application: { amount: string; currency: string; plan: string | null; term_months: number | null; product: string; terms: string | null; applied_on: string };
  /** What is offered instead, in the same parts; its `terms` end with the APR. */
  counteroffer: { amount: string; currency: string; plan: string | null; term_months: number | null; apr: string | null; product: string; terms: string | null } | null;
  principal_reasons: { heading: string; reasons: Array<{ code: string; reason: string }> };
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
  /** What the letter lacks that is not a setting: `principal_reasons` (a counteroffer made before its reasons were recorded). */
  incomplete: string[];
}

/** The adverse action a decision took, if any: a decline, or an approval that is a counteroffer. */
export function noticeActionOf(row: Pick<DecisionsTable, 'status' | 'outcome' | 'requested_amount_cents' | 'approved_amount_cents' | 'requested_plan' | 'plan' | 'requested_term_months' | 'term_months'>): NoticeAction | null {
  if (row.status !== 'complete') return null;
  if (row.outcome === 'declined') return 'declined';
  if (row.outcome !== 'approved') return null;
  // The rule of ADR 0046 (underwriting.service approve): less than asked, or another plan or term than the request named.
  const less = row.approved_amount_cents !== null && row.approved_amount_cents < row.requested_amount_cents;
  const otherPlan = row.requested_plan !== null && row.plan !== row.requested_plan;
  const otherTerm = row.requested_term_months !== null && row.term_months !== row.requested_term_months;
  return less || otherPlan || otherTerm ? 'counteroffer' : null;
}

/**
 * The last day to send the notice (`due_by`, above): a decline counts from the decision's
 * completion, a counteroffer from when it was made (`actionAt`: the underwriter's approval, or the
 * completion for one the engine made). The notice and the portal's CSV both take it from here.
 */
export function noticeDueBy(action: NoticeAction, completedAt: number | null, actionAt: Date): string {
  return action === 'counteroffer' ? lastDay(actionAt, COUNTEROFFER_NOTICE_DAYS) : lastDay(new Date(completedAt ?? actionAt.getTime()), DECLINE_NOTICE_DAYS);
}

/** The notice, or null when the decision took no adverse action (approved as asked, referred, pending). */
export function buildAdverseActionNotice(input: NoticeInput): AdverseActionNotice | null {
  const action = noticeActionOf(input.row);
  if (action === null) return null;
  const { row, settings } = input;
  const product = productName(row.product);
  const missing: string[] = [];
  if (!settings) missing.push('creditor_name', 'creditor_address', 'agency');
  const consumerReport = input.consumerReportUsed
    ? {
        statement: consumerReportStatement(action),
        agency: { name: settings?.cra_name ?? null, address_lines: lines(settings?.cra_address), phone: settings?.cra_phone ?? null },
        credit_score: input.creditScore
          ? {
              statement: CREDIT_SCORE_STATEMENT,
              score: input.creditScore.score,
              range: input.creditScore.range,
              scored_on: input.creditScore.scoredAt ? input.creditScore.scoredAt.slice(0, 10) : null,
              key_factors: input.creditScore.keyFactors.map((f) => ({ code: f.code, reason: f.reason })),
            }
          : null,
      }
    : null;
  if (consumerReport && !settings?.cra_name) missing.push('cra_name');
  if (consumerReport && !settings?.cra_address) missing.push('cra_address');
  if (consumerReport && !settings?.cra_phone) missing.push('cra_phone');
  const approved = action === 'counteroffer';
  const reasons = approved ? input.counterofferReasons : input.reasons;
  const dueBy = noticeDueBy(action, row.completed_at, input.actionAt);
  const offeredTerms = [termsText(row.product, row.plan, row.term_months), row.apr ? `annual percentage rate ${row.apr}%` : null].filter((t) => t !== null).join(', ') || null;
  return {
    decision_id: row.id,
    environment: row.environment,
    product: row.product,
    action,
    action_taken_at: input.actionAt.toISOString(),
    notice_date: isoDay(input.today),
    due_by: dueBy,
    applicant: input.applicant ? { name: `${input.applicant.firstName} ${input.applicant.lastName}`, address_lines: addressLines(input.applicant.address) } : null,
    application: {
      amount: formatMoney(row.requested_amount_cents),
      currency: row.currency,
      plan: row.requested_plan,
      term_months: row.requested_term_months,
      product,
      terms: termsText(row.product, row.requested_plan, row.requested_term_months),
      applied_on: isoDay(new Date(row.created_at)),
    },
    counteroffer:
      approved && row.approved_amount_cents !== null
        ? {
            amount: formatMoney(row.approved_amount_cents),
            currency: row.currency,
            plan: row.plan,
            term_months: row.term_months,
            apr: row.apr,
            product,
            terms: offeredTerms,
          }
        : null,
    principal_reasons: { heading: PART_I_HEADING, reasons: reasons.map((r) => ({ code: r.code, reason: r.reason })) },
    consumer_report: consumerReport,
    ecoa_notice: { statement: ECOA_NOTICE, agency_lines: lines(settings?.agency) },
    creditor: { name: settings?.creditor_name ?? null, address_lines: lines(settings?.creditor_address), phone: settings?.creditor_phone ?? null },
    missing_settings: missing,
    incomplete: reasons.length === 0 ? ['principal_reasons'] : [],
  };
}

/**
 * The last day to send: `days` after `from`, as a UTC date less one day. A US lender's own date of
 * `from` is the UTC date or the day before, so this is never later than its own count.
 */
function lastDay(from: Date, days: number): string {
  return isoDay(new Date(from.getTime() + (days - 1) * DAY_MS));
}

function productName(product: 'bnpl' | 'auto_loan'): string {
  return product === 'auto_loan' ? 'an auto loan' : 'a buy now, pay later loan';
}

/** "in 4 payments every two weeks" and the like; null when no plan or term was asked for. */
function termsText(product: 'bnpl' | 'auto_loan', plan: string | null, termMonths: number | null): string | null {
  if (product === 'auto_loan') return termMonths ? `repaid monthly over ${termMonths} months` : null;
  if (plan === 'pay_in_4') return 'in 4 payments every two weeks';
  if (plan === 'pay_in_6') return 'in 6 monthly payments';
  if (plan === 'monthly') return termMonths ? `repaid monthly over ${termMonths} months` : 'repaid monthly';
  return null;
}

/** A multi-line setting as its non-empty lines. */
function lines(text: string | null | undefined): string[] {
  return (text ?? '')
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l.length > 0);
}

function addressLines(a: NoticeApplicant['address']): string[] {
  if (!a) return [];
  const out = [a.line1];
  if (a.line2) out.push(a.line2);
  out.push(`${a.city}, ${a.state} ${a.zip}`);
  if (a.country && a.country !== 'US') out.push(a.country);
  return out;
}

function isoDay(d: Date): string {
  return d.toISOString().slice(0, 10);
}
