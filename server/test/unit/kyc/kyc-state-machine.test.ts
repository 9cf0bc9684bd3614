import { describe, expect, it } from 'vitest';
import {
  FINAL_STATES,
  MAX_CODE_ATTEMPTS,
  MAX_IDENTITY_ATTEMPTS,
  initialState,
  transition,
  type KycEvent,
  type KycState,
  type Tier,
} from '../../../src/modules/kyc/kyc-state-machine.js';

const STATES: KycState[] = [
  { kind: 'awaiting_code', codeAttempts: 0 },
  { kind: 'awaiting_code', codeAttempts: MAX_CODE_ATTEMPTS - 1 },
  { kind: 'awaiting_identity', identityAttempts: 0 },
  { kind: 'awaiting_identity', identityAttempts: MAX_IDENTITY_ATTEMPTS - 1 },
  { kind: 'awaiting_document' },
  { kind: 'matched' },
  { kind: 'failed', reason: 'sandbox_fail' },
  { kind: 'expired' },
];
const EVENTS: KycEvent[] = [
  { kind: 'code_checked', correct: true },
  { kind: 'code_checked', correct: false },
  { kind: 'identity_checked', matches: true },
  { kind: 'identity_checked', matches: false },
  { kind: 'document_stored' },
  { kind: 'sandbox_result', result: 'pass' },
  { kind: 'sandbox_result', result: 'fail' },
  { kind: 'deadline_passed' },
];

/** The whole table, written out: [tier, state, event] -> [next state kind | 'rejected', effect]. */
function expected(tier: Tier, state: KycState, event: KycEvent): [string, string] {
  if ((FINAL_STATES as readonly string[]).includes(state.kind)) return ['rejected', 'none'];
  if (event.kind === 'deadline_passed') return ['expired', 'finalize_expired'];
  if (event.kind === 'sandbox_result') return event.result === 'pass' ? ['matched', 'finalize_matched'] : ['failed', 'finalize_failed'];
  if (state.kind === 'awaiting_code' && event.kind === 'code_checked') {
    if (event.correct) return tier === 'enhanced' ? ['matched', 'finalize_matched'] : ['awaiting_identity', 'none'];
    return state.codeAttempts + 1 >= MAX_CODE_ATTEMPTS ? ['failed', 'finalize_failed'] : ['awaiting_code', 'none'];
  }
  if (state.kind === 'awaiting_identity' && event.kind === 'identity_checked') {
    if (event.matches) return ['awaiting_document', 'none'];
    return state.identityAttempts + 1 >= MAX_IDENTITY_ATTEMPTS ? ['failed', 'finalize_failed'] : ['awaiting_identity', 'none'];
  }
  if (state.kind === 'awaiting_document' && event.kind === 'document_stored') return ['matched', 'finalize_matched'];
  return ['rejected', 'none'];
}

describe('KYC state machine', () => {
  for (const tier of ['enhanced', 'hard'] as const) {
    for (const state of STATES) {
      for (const event of EVENTS) {
        it(`${tier}: ${JSON.stringify(state)} + ${JSON.stringify(event)}`, () => {
          const result = transition(state, event, tier);
          const [next, effect] = expected(tier, state, event);
          if (next === 'rejected') {
            expect(result.accepted).toBe(false);
            expect(result.state).toBe(state);
          } else {
            expect(result.accepted).toBe(true);
            expect(result.state.kind).toBe(next);
          }
          expect(result.effect).toBe(effect);
        });
      }
    }
  }

  it('walks the hard journey: code, identity, document, matched', () => {
    let s = initialState();
    s = transition(s, { kind: 'code_checked', correct: true }, 'hard').state;
    expect(s.kind).toBe('awaiting_identity');
    s = transition(s, { kind: 'identity_checked', matches: true }, 'hard').state;
    expect(s.kind).toBe('awaiting_document');
    const done = transition(s, { kind: 'document_stored' }, 'hard');
    expect(done.state.kind).toBe('matched');
    expect(done.effect).toBe('finalize_matched');
  });

  it('fails on the fifth wrong code, not before', () => {
    let s = initialState();
    for (let i = 1; i < MAX_CODE_ATTEMPTS; i++) {
      const r = transition(s, { kind: 'code_checked', correct: false }, 'enhanced');
      expect(r.effect).toBe('none');
      s = r.state;
    }
    const last = transition(s, { kind: 'code_checked', correct: false }, 'enhanced');
    expect(last.state).toEqual({ kind: 'failed', reason: 'too_many_code_attempts' });
    expect(last.effect).toBe('finalize_failed');
  });
});
