import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CreditSubject } from '../../../src/modules/credit-data/credit-data.types.js';
import {
  SANDBOX_MAGIC_SSN_LAST4,
  SANDBOX_SOURCE,
  SandboxCreditDataConnector,
  sandboxProfileFor,
  syntheticCreditData,
} from '../../../src/modules/credit-data/sandbox-connector.js';
import { decideBnpl, type BnplEngineDecision } from '../../../src/modules/engine/engine.js';
import { defaultBnplDocuments } from '../../../src/modules/engine/engine-documents.js';
import type { BnplPlan, LenderHistory } from '../../../src/modules/engine/features.js';

const docs = defaultBnplDocuments();
const NEW: LenderHistory = { returning: false, priorApprovals: 0, priorDeclines: 0 };
const context = { asOf: new Date('2026-11-02T10:00:00Z'), tenantId: 'tenant-1' };

function subject(overrides: Partial<CreditSubject> = {}): CreditSubject {
  return {
    consumerId: '6f1c3e0a-5b7d-4c1e-9a53-1f1f9d1c2b3a',
    firstName: 'Jordan',
    lastName: 'Sample',
    dob: '1991-04-12',
    ssnLast4: null,
    zip: '94105',
    sandboxProfile: null,
    ...overrides,
  };
}

async function decide(s: CreditSubject, amountCents: number, history = NEW, plan: BnplPlan | null = null): Promise<BnplEngineDecision> {
  const creditData = await new SandboxCreditDataConnector().fetchCreditFile(s, context);
  return decideBnpl({ requestedAmountCents: amountCents, planPreference: plan, history, creditData, asOf: '2026-11-02T10:00:00.000Z' }, docs);
}

const AMOUNTS = [2_500, 20_000, 50_000, 100_000, 250_000, 500_000, 1_500_000, 3_000_000];

describe('sandbox synthetic credit files', () => {
  it('gives the same person the same file, always', () => {
    const a = syntheticCreditData(subject());
    expect(syntheticCreditData(subject())).toEqual(a);
    // Case, spacing, a new consumer id, a moved address or an SSN given later: still the same person.
    expect(syntheticCreditData(subject({ firstName: '  JORDAN ', lastName: 'sample', consumerId: 'other', zip: '10001', ssnLast4: '4321' }))).toEqual(a);
  });

  it('gives different people different files', () => {
    const ids = new Set(Array.from({ length: 50 }, (_, i) => {
      const r = syntheticCreditData(subject({ firstName: `Person${i}` }));
      return r.status === 'ok' ? r.file.fileId : r.status;
    }));
    expect(ids.size).toBe(50);
  });

  it('spreads sandbox traffic across every risk grade and outcome', async () => {
    const grades = new Map<string, number>();
    const outcomes = new Set<string>();
    for (let i = 0; i < 300; i++) {
      const d = await decide(subject({ firstName: `Applicant${i}`, lastName: 'Spread' }), 50_000);
      grades.set(d.riskGrade ?? 'none', (grades.get(d.riskGrade ?? 'none') ?? 0) + 1);
      outcomes.add(d.outcome);
    }
    expect([...grades.keys()].sort()).toEqual(['A', 'B', 'C', 'D', 'E']);
    for (const n of grades.values()) expect(n).toBeGreaterThanOrEqual(5);
    expect([...outcomes].sort()).toEqual(['approved', 'declined', 'referred']);
  });

  it('produces well-formed files for any identity', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), fc.string({ minLength: 10, maxLength: 10 }), (firstName, lastName, dob) => {
        const r = syntheticCreditData(subject({ firstName, lastName, dob }));
        if (r.status !== 'ok') return false;
        const { fileId, source, hasFile, bankruptcy, foreclosureOrRepossession, ...numbers } = r.file;
        expect(fileId).toMatch(/^sbx_[0-9a-f]{16}$/);
        expect(source).toBe(SANDBOX_SOURCE);
        expect([typeof hasFile, typeof bankruptcy, typeof foreclosureOrRepossession]).toEqual(['boolean', 'boolean', 'boolean']);
        for (const n of Object.values(numbers)) expect(Number.isSafeInteger(n) && n >= 0).toBe(true);
        return true;
      }),
    );
  });

  it('names its profiles deterministically', () => {
    expect(sandboxProfileFor(subject())).toBe(sandboxProfileFor(subject({ firstName: 'jordan' })));
  });
});

describe('sandbox magic ssn_last4 values', () => {
  it('0000: a bankruptcy the default policy declines with AA-21 first', async () => {
    const s = subject({ ssnLast4: SANDBOX_MAGIC_SSN_LAST4.declined });
    const r = syntheticCreditData(s);
    expect(r.status === 'ok' && r.file.bankruptcy).toBe(true);
    for (const amount of AMOUNTS) {
      const d = await decide(s, amount);
      expect(d.outcome).toBe('declined');
      expect(d.reasons[0]).toEqual({ code: 'AA-21', reason: 'Bankruptcy' });
    }
  });

  it('1111: a file in the referral band for every amount, plan and history', async () => {
    const s = subject({ ssnLast4: SANDBOX_MAGIC_SSN_LAST4.referred });
    const histories: LenderHistory[] = [NEW, { returning: true, priorApprovals: 5, priorDeclines: 0 }, { returning: true, priorApprovals: 0, priorDeclines: 3 }];
    for (const amount of AMOUNTS) {
      for (const history of histories) {
        for (const plan of [null, 'pay_in_4', 'pay_in_6', 'monthly'] as const) {
          const d = await decide(s, amount, history, plan);
          expect(d.outcome).toBe('referred');
          expect(d.riskGrade).toBe('D');
          expect(d.score).toBeGreaterThanOrEqual(560);
          expect(d.score).toBeLessThanOrEqual(599);
          expect(d.reasons.length).toBeGreaterThan(0);
          expect(d.creditDataUnavailable).toBe(false);
        }
      }
    }
  });

  it('2222: an ordinary good file (the identity module fails verification, not this connector)', async () => {
    const s = subject({ ssnLast4: SANDBOX_MAGIC_SSN_LAST4.verificationFails });
    expect(syntheticCreditData(s).status).toBe('ok');
    const d = await decide(s, 50_000);
    expect(d.outcome).toBe('approved');
    expect(d.riskGrade).toBe('A');
  });

  it('3333: credit data unavailable, so the engine refers with AA-25 and flags score.errored', async () => {
    const s = subject({ ssnLast4: SANDBOX_MAGIC_SSN_LAST4.creditDataUnavailable });
    expect(syntheticCreditData(s)).toEqual({
      status: 'unavailable',
      reason: 'magic_value',
      detail: 'sandbox magic value: credit data unavailable',
      latencyMs: 0,
    });
    const d = await decide(s, 50_000);
    expect(d).toMatchObject({ outcome: 'referred', creditDataUnavailable: true, reasons: [{ code: 'AA-25' }] });
  });
});

describe('seeded sandbox consumers', () => {
  const seeded = (profile: 'soft' | 'enhanced' | 'hard', ssnLast4: string | null = '4821') =>
    subject({ sandboxProfile: profile, ssnLast4, firstName: profile, lastName: 'Seeded' });

  it.each([
    ['soft', [2_500, 10_000, 20_000], { returning: true, priorApprovals: 2, priorDeclines: 0 }],
    ['enhanced', [50_000, 100_000, 250_000, 499_999], NEW],
    ['hard', [500_000, 1_000_000, 2_500_000, 3_000_000], NEW],
  ] as const)('%s approves its whole basket range in full', async (profile, amounts, history) => {
    for (const amount of amounts) {
      const d = await decide(seeded(profile), amount, history);
      expect(d).toMatchObject({ outcome: 'approved', riskGrade: 'A', approvedAmountCents: amount, counteroffer: false, reasons: [] });
    }
  });

  it('ignores magic values: a seeded consumer always gets the prime file', () => {
    for (const magic of Object.values(SANDBOX_MAGIC_SSN_LAST4)) {
      const r = syntheticCreditData(seeded('enhanced', magic));
      expect(r.status).toBe('ok');
      expect(r.status === 'ok' && r.file.bankruptcy).toBe(false);
    }
  });

  it('is a CreditDataConnector named sandbox-synthetic', async () => {
    const connector = new SandboxCreditDataConnector();
    expect(connector.name).toBe('sandbox-synthetic');
    await expect(connector.fetchCreditFile(seeded('soft'), context)).resolves.toMatchObject({ status: 'ok', file: { source: 'sandbox-synthetic' } });
  });
});
