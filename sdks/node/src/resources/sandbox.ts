/**
 * `client.sandbox.verification`: the sandbox test helper
 * POST /v1/sandbox/decisions/{decision_id}/verification. Sandbox keys only (404 with a live key).
 */
import type { HttpCore, RequestOptions } from '../core/http.js';
import { Decision } from '../lib/decision.js';
import type { DecisionData, SandboxVerificationResult } from '../types.js';

export class SandboxVerification {
  constructor(private readonly core: HttpCore) {}

  /**
   * Pass or fail the identity verification of a pending sandbox decision, as if the consumer had
   * done it on the hosted page. Returns the decision in its new state (`pass`: the engine decides;
   * `fail`: referred with AA-24). On a decision that is no longer pending nothing changes.
   */
  async complete(decisionId: string, result: SandboxVerificationResult, options: RequestOptions = {}): Promise<Decision> {
    const path = `/v1/sandbox/decisions/${encodeURIComponent(decisionId)}/verification`;
    const { data, meta } = await this.core.request<DecisionData>('POST', path, { result }, options);
    return new Decision(data, meta);
  }
}

export class Sandbox {
  readonly verification: SandboxVerification;
  constructor(core: HttpCore) {
    this.verification = new SandboxVerification(core);
  }
}
