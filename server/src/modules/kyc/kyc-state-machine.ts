/**
 * The identity-verification state machine of a pending decision, as a pure function.
 *
 * A decision on the enhanced or hard tier waits for its consumer (decisions.md section 5):
 *
 *   enhanced:  awaiting_code ──code ok──▶ matched
 *   hard:      awaiting_code ──code ok──▶ awaiting_identity ──SSN last-4 and DOB match──▶
 *              awaiting_document ──ID document stored──▶ matched
 *   any waiting state ──5th wrong code / 3rd identity mismatch / sandbox "fail"──▶ failed
 *   any waiting state ──expires_at passed──▶ expired
 *   any waiting state ──sandbox "pass" (test helper)──▶ matched
 *
 * The three end states finish the decision (the caller does it, in one transaction with the events):
 *   matched -> `complete`; the engine decides approved/declined/referred; kyc_status `matched`;
 *              events application.kyc_completed, score.*, decision.finalized
 *   failed  -> `complete`, `referred`, AA-24; kyc_status stays `pending`; application.kyc_failed,
 *              decision.finalized
 *   expired -> `complete`, `declined`, AA-01; kyc_status stays `pending`; decision.finalized
 *
 * `transition` never throws for a well-typed input: an event that makes no sense in a state (a code
 * after the consumer finished, say) is `rejected` with the unchanged state, and the page says so.
 */

export type Tier = 'enhanced' | 'hard';

export type KycState =
  | { kind: 'awaiting_code'; codeAttempts: number }
  | { kind: 'awaiting_identity'; identityAttempts: number }
  | { kind: 'awaiting_document' }
  | { kind: 'matched' }
  | { kind: 'failed'; reason: FailureReason }
  | { kind: 'expired' };

/** `sandbox_magic_ssn`: a sandbox consumer whose SSN last four is `2222` always fails (decisions.md section 6); the shell applies it. */
export type FailureReason = 'too_many_code_attempts' | 'identity_mismatch' | 'sandbox_fail' | 'sandbox_magic_ssn';

export type KycEvent =
  | { kind: 'code_checked'; correct: boolean }
  | { kind: 'identity_checked'; matches: boolean }
  | { kind: 'document_stored' }
  | { kind: 'sandbox_result'; result: 'pass' | 'fail' }
  | { kind: 'deadline_passed' };

/** What the caller must do after a transition. */
export type KycEffect = 'none' | 'finalize_matched' | 'finalize_failed' | 'finalize_expired';

export interface TransitionResult {
  state: KycState;
  effect: KycEffect;
  /** False when the event does not apply in this state (nothing changed). */
  accepted: boolean;
}

export const MAX_CODE_ATTEMPTS = 5;
export const MAX_IDENTITY_ATTEMPTS = 3;

export const WAITING_STATES = ['awaiting_code', 'awaiting_identity', 'awaiting_document'] as const;
export const FINAL_STATES = ['matched', 'failed', 'expired'] as const;

export function initialState(): KycState {
  return { kind: 'awaiting_code', codeAttempts: 0 };
}

export function isWaiting(state: KycState): boolean {
  return (WAITING_STATES as readonly string[]).includes(state.kind);
}

const rejected = (state: KycState): TransitionResult => ({ state, effect: 'none', accepted: false });
const to = (state: KycState, effect: KycEffect = 'none'): TransitionResult => ({ state, effect, accepted: true });

/** The transition table. Every (state, event) pair is covered; see the tests for the full matrix. */
export function transition(state: KycState, event: KycEvent, tier: Tier): TransitionResult {
  if (!isWaiting(state)) return rejected(state);
  switch (event.kind) {
    case 'deadline_passed':
      return to({ kind: 'expired' }, 'finalize_expired');
    case 'sandbox_result':
      return event.result === 'pass' ? to({ kind: 'matched' }, 'finalize_matched') : to({ kind: 'failed', reason: 'sandbox_fail' }, 'finalize_failed');
    case 'code_checked': {
      if (state.kind !== 'awaiting_code') return rejected(state);
      if (event.correct) return tier === 'enhanced' ? to({ kind: 'matched' }, 'finalize_matched') : to({ kind: 'awaiting_identity', identityAttempts: 0 });
      const codeAttempts = state.codeAttempts + 1;
      return codeAttempts >= MAX_CODE_ATTEMPTS ? to({ kind: 'failed', reason: 'too_many_code_attempts' }, 'finalize_failed') : to({ kind: 'awaiting_code', codeAttempts });
    }
    case 'identity_checked': {
      if (state.kind !== 'awaiting_identity') return rejected(state);
      if (event.matches) return to({ kind: 'awaiting_document' });
      const identityAttempts = state.identityAttempts + 1;
      return identityAttempts >= MAX_IDENTITY_ATTEMPTS ? to({ kind: 'failed', reason: 'identity_mismatch' }, 'finalize_failed') : to({ kind: 'awaiting_identity', identityAttempts });
    }
    case 'document_stored':
      return state.kind === 'awaiting_document' ? to({ kind: 'matched' }, 'finalize_matched') : rejected(state);
  }
}

/** Tries left before failure, for the page. */
export function attemptsLeft(state: KycState): number | null {
  if (state.kind === 'awaiting_code') return MAX_CODE_ATTEMPTS - state.codeAttempts;
  if (state.kind === 'awaiting_identity') return MAX_IDENTITY_ATTEMPTS - state.identityAttempts;
  return null;
}
