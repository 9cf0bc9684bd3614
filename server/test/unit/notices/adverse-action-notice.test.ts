/**
 * The adverse-action notice's content (modules/notices/adverse-action-notice.ts), as a pure
 * function: which decisions have one, which reasons it gives, when Part II (FCRA 615(a)) and its
 * credit score appear, the send-by dates of 12 CFR 1002.9(a)(1), and what is missing.
 */
import { describe, expect, it } from 'vitest';
import {
  buildAdverseActionNotice,
  CREDIT_SCORE_STATEMENT,
  ECOA_NOTICE,
  PART_I_HEADING,
  consumerReportStatement,
  type NoticeInput,
  type NoticeSettings,
} from '../../../src/modules/notices/adverse-action-notice.js';

const SETTINGS: NoticeSettings = {
  creditor_name: 'Acme Lending, Inc.',
  creditor_address: '100 Main Street\r\n  Suite 5\n\nAustin, TX 78701',
  creditor_phone: '1-800-555-0100',
  agency: 'Federal Trade Commission\nConsumer Response Center\n600 Pennsylvania Avenue NW\nWashington, DC 20580',
  cra_name: 'Example Credit Bureau',
  cra_address: 'P.O. Box 1000\nAtlanta, GA 30348',
  cra_phone: '1-888-555-0199',
};

const DECLINED: NoticeInput['row'] = {
  id: '7c1d0f5e-6f3a-4a39-9d57-0d0c6d2c1a10',
  environment: 'live',
  product: 'bnpl',
  status: 'complete',
  outcome: 'declined',
  currency: 'USD',
  requested_amount_cents: 125_000,
  requested_plan: 'pay_in_6',
  requested_term_months: null,
  approved_amount_cents: null,
  plan: null,
  term_months: null,
  apr: null,
  created_at: Date.parse('2026-11-30T23:59:00.000Z'),
  completed_at: Date.parse('2026-11-30T23:59:01.000Z'),
};

function input(overrides: Partial<NoticeInput> = {}): NoticeInput {
  return {
    row: DECLINED,
    reasons: [
      { code: 'AA-21', reason: 'Bankruptcy' },
      { code: 'AA-17', reason: 'Delinquent past or present credit obligations with others' },
    ],
    counterofferReasons: [],
    consumerReportUsed: true,
    creditScore: {
      score: 512,
      range: { min: 300, max: 850 },
      scoredAt: '2026-11-30T23:59:00.000Z',
      scorecard: 'bnpl-sc-2026.11.1',
      creditFileSource: 'gateway:bureau.example',
      keyFactors: [
        { code: 'AA-17', reason: 'Delinquent past or present credit obligations with others' },
        { code: 'AA-09', reason: 'Excessive obligations in relation to income' },
      ],
    },
    actionAt: new Date('2026-11-30T23:59:01.000Z'),
    applicant: { firstName: 'Dana', lastName: 'Decline', address: { line1: '9 Elm Street', line2: 'Apt 2', city: 'Denver', state: 'CO', zip: '80202', country: 'US' } },
    settings: SETTINGS,
    today: new Date('2026-12-03T10:00:00.000Z'),
    ...overrides,
  };
}

describe('adverse-action notice', () => {
  it('a decline: the decline reasons in order, Part II with the score, the ECOA notice, sent within 30 days', () => {
    const n = buildAdverseActionNotice(input())!;
    expect(n.action).toBe('declined');
    expect(n.notice_date).toBe('2026-12-03');
    expect(n.action_taken_at).toBe('2026-11-30T23:59:01.000Z');
    // 30 days after 30 November (UTC), less the day a US lender's own date can be behind it.
    expect(n.due_by).toBe('2026-12-29');
    expect(n.applicant).toEqual({ name: 'Dana Decline', address_lines: ['9 Elm Street', 'Apt 2', 'Denver, CO 80202'] });
    expect(n.application).toEqual({
      amount: '1250.00',
      currency: 'USD',
      plan: 'pay_in_6',
      term_months: null,
      product: 'a buy now, pay later loan',
      terms: 'in 6 monthly payments',
      applied_on: '2026-11-30',
    });
    expect(n.counteroffer).toBeNull();
    expect(n.principal_reasons).toEqual({ heading: PART_I_HEADING, reasons: input().reasons });
    expect(n.consumer_report).toEqual({
      statement: consumerReportStatement('declined'),
      agency: { name: 'Example Credit Bureau', address_lines: ['P.O. Box 1000', 'Atlanta, GA 30348'], phone: '1-888-555-0199' },
      credit_score: {
        statement: CREDIT_SCORE_STATEMENT,
        score: 512,
        range: { min: 300, max: 850 },
        scored_on: '2026-11-30',
        key_factors: input().creditScore!.keyFactors,
      },
    });
    expect(n.consumer_report!.statement).toMatch(/^Our credit decision was based in whole or in part on information obtained in a report from the consumer reporting agency listed below\./);
    expect(n.consumer_report!.statement).toMatch(/why we have denied credit to you\./);
    expect(n.consumer_report!.statement).toMatch(/no later than 60 days after you receive this notice/);
    // The multi-line settings as their non-empty lines, trimmed.
    expect(n.creditor).toEqual({ name: 'Acme Lending, Inc.', address_lines: ['100 Main Street', 'Suite 5', 'Austin, TX 78701'], phone: '1-800-555-0100' });
    expect(n.ecoa_notice).toEqual({ statement: ECOA_NOTICE, agency_lines: ['Federal Trade Commission', 'Consumer Response Center', '600 Pennsylvania Avenue NW', 'Washington, DC 20580'] });
    // 12 CFR 1002.9(b)(1), written out here rather than read from the constant.
    expect(ECOA_NOTICE).toBe(
      "The Federal Equal Credit Opportunity Act prohibits creditors from discriminating against credit applicants on the basis of race, color, religion, national origin, sex, marital status, age (provided the applicant has the capacity to enter into a binding contract); because all or part of the applicant's income derives from any public assistance program; or because the applicant has in good faith exercised any right under the Consumer Credit Protection Act. The Federal agency that administers compliance with this law concerning this creditor is:",
    );
    expect(n.missing_settings).toEqual([]);
    expect(n.incomplete).toEqual([]);
  });

  it('a counteroffer: the counteroffer reasons (not the decline list), the terms offered, sent within 90 days', () => {
    const row = { ...DECLINED, outcome: 'approved' as const, requested_plan: null, approved_amount_cents: 90_000, plan: 'monthly', term_months: 12, apr: '29.99', product: 'bnpl' as const };
    const n = buildAdverseActionNotice(input({ row, reasons: [], counterofferReasons: [{ code: 'AA-08', reason: 'Income insufficient for amount of credit requested' }], actionAt: new Date('2026-12-01T08:00:00.000Z') }))!;
    expect(n.action).toBe('counteroffer');
    // 90 days after the counteroffer (not the application), less a day.
    expect(n.due_by).toBe('2027-02-28');
    expect(n.application).toMatchObject({ amount: '1250.00', product: 'a buy now, pay later loan', terms: null });
    expect(n.counteroffer).toEqual({
      amount: '900.00',
      currency: 'USD',
      plan: 'monthly',
      term_months: 12,
      apr: '29.99',
      product: 'a buy now, pay later loan',
      terms: 'repaid monthly over 12 months, annual percentage rate 29.99%',
    });
    expect(n.principal_reasons.reasons).toEqual([{ code: 'AA-08', reason: 'Income insufficient for amount of credit requested' }]);
    expect(n.consumer_report!.statement).toMatch(/why we did not grant the credit you applied for\./);
    expect(n.consumer_report!.statement).not.toMatch(/denied credit/);
  });

  it("an underwriter's late decline is due 30 days after the application was complete, not after the decline", () => {
    const n = buildAdverseActionNotice(input({ actionAt: new Date('2026-12-20T09:00:00.000Z') }))!;
    expect(n.action_taken_at).toBe('2026-12-20T09:00:00.000Z');
    expect(n.due_by).toBe('2026-12-29');
    // Worked 35 days after completion: already overdue on the day it is made.
    expect(buildAdverseActionNotice(input({ actionAt: new Date('2027-01-04T09:00:00.000Z'), today: new Date('2027-01-04T10:00:00.000Z') }))!.due_by < '2027-01-04').toBe(true);
  });

  it('a counteroffer is told from the row: the same amount on another plan or term counts; one made before reasons were recorded says they are missing', () => {
    const base = { ...DECLINED, outcome: 'approved' as const, approved_amount_cents: 125_000, plan: 'pay_in_6' };
    expect(buildAdverseActionNotice(input({ row: base }))).toBeNull();
    expect(buildAdverseActionNotice(input({ row: { ...base, plan: 'monthly', term_months: 12 }, counterofferReasons: [{ code: 'AA-09', reason: 'Excessive obligations in relation to income' }] }))!.action).toBe('counteroffer');
    const monthly = { ...base, requested_plan: 'monthly', requested_term_months: 12, plan: 'monthly', term_months: 12 };
    expect(buildAdverseActionNotice(input({ row: monthly }))).toBeNull();
    expect(buildAdverseActionNotice(input({ row: { ...monthly, term_months: 18 }, counterofferReasons: [{ code: 'AA-08', reason: 'Income insufficient for amount of credit requested' }] }))!.action).toBe('counteroffer');
    // No plan asked for: whatever plan the service chose is no counteroffer.
    expect(buildAdverseActionNotice(input({ row: { ...base, requested_plan: null, plan: 'pay_in_4', term_months: 2 } }))).toBeNull();
    const legacy = buildAdverseActionNotice(input({ row: { ...base, approved_amount_cents: 100_000 }, counterofferReasons: [] }))!;
    expect(legacy.action).toBe('counteroffer');
    expect(legacy.principal_reasons.reasons).toEqual([]);
    expect(legacy.incomplete).toEqual(['principal_reasons']);
  });

  it('an auto loan names its term', () => {
    const row = { ...DECLINED, product: 'auto_loan' as const, requested_plan: null, requested_term_months: 72, requested_amount_cents: 2_450_000 };
    expect(buildAdverseActionNotice(input({ row }))!.application).toMatchObject({ amount: '24500.00', product: 'an auto loan', terms: 'repaid monthly over 72 months' });
  });

  it('no notice without adverse action: approved as asked, referred, pending', () => {
    const approved = { ...DECLINED, outcome: 'approved' as const, approved_amount_cents: 125_000, plan: 'pay_in_6' };
    // Even with reasons passed in: whether there is a notice is the row's to say.
    expect(buildAdverseActionNotice(input({ row: approved, counterofferReasons: [{ code: 'AA-08', reason: 'Income insufficient for amount of credit requested' }] }))).toBeNull();
    expect(buildAdverseActionNotice(input({ row: { ...DECLINED, outcome: 'referred' } }))).toBeNull();
    expect(buildAdverseActionNotice(input({ row: { ...DECLINED, status: 'needs_consumer_action', outcome: null } }))).toBeNull();
  });

  it('Part II only when a consumer report was used; its score only when one was made from a file', () => {
    // No file at the agency ("No credit file"): the report was used, there is no score to disclose.
    const noFile = buildAdverseActionNotice(input({ reasons: [{ code: 'AA-14', reason: 'No credit file' }], creditScore: null }))!;
    expect(noFile.consumer_report).not.toBeNull();
    expect(noFile.consumer_report!.credit_score).toBeNull();
    // An application left incomplete (a pending state that expired, AA-01) never reached the agency.
    const incomplete = buildAdverseActionNotice(input({ reasons: [{ code: 'AA-01', reason: 'Credit application incomplete' }], consumerReportUsed: false, creditScore: null }))!;
    expect(incomplete.consumer_report).toBeNull();
    expect(incomplete.principal_reasons.reasons).toEqual([{ code: 'AA-01', reason: 'Credit application incomplete' }]);
  });

  it('names what the tenant has not entered: the creditor and agency always, the reporting agency when Part II is there', () => {
    const bare = buildAdverseActionNotice(input({ settings: null }))!;
    expect(bare.missing_settings).toEqual(['creditor_name', 'creditor_address', 'agency', 'cra_name', 'cra_address', 'cra_phone']);
    expect(bare.creditor).toEqual({ name: null, address_lines: [], phone: null });
    expect(bare.ecoa_notice.agency_lines).toEqual([]);
    const noReport = buildAdverseActionNotice(input({ settings: null, consumerReportUsed: false, creditScore: null }))!;
    expect(noReport.missing_settings).toEqual(['creditor_name', 'creditor_address', 'agency']);
    const noAgency = buildAdverseActionNotice(input({ settings: { ...SETTINGS, cra_name: null, cra_address: null, cra_phone: null } }))!;
    expect(noAgency.missing_settings).toEqual(['cra_name', 'cra_address', 'cra_phone']);
    // A nationwide agency's toll-free number is required (FCRA 615(a)(3)(A)): named when absent.
    expect(buildAdverseActionNotice(input({ settings: { ...SETTINGS, cra_phone: null } }))!.missing_settings).toEqual(['cra_phone']);
    expect(noAgency.consumer_report!.agency).toEqual({ name: null, address_lines: [], phone: null });
  });

  it('an applicant without an address on file is named alone; a foreign country is a line of its own', () => {
    expect(buildAdverseActionNotice(input({ applicant: { firstName: 'Ann', lastName: 'Lee', address: null } }))!.applicant).toEqual({ name: 'Ann Lee', address_lines: [] });
    const abroad = buildAdverseActionNotice(input({ applicant: { firstName: 'Ann', lastName: 'Lee', address: { line1: '1 Rue X', city: 'Paris', state: 'IDF', zip: '75001', country: 'FR' } } }))!;
    expect(abroad.applicant!.address_lines).toEqual(['1 Rue X', 'Paris, IDF 75001', 'FR']);
    expect(buildAdverseActionNotice(input({ applicant: null }))!.applicant).toBeNull();
  });
});
