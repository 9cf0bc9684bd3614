/**
 * The entry point: `new CreditDecisions({ apiKey, baseUrl })`. The key decides the environment
 * (`svc_test_` sandbox, `svc_live_` live); the address is the same for both.
 */
import { HttpCore, type ClientOptions } from './core/http.js';
import { webhooks, type Webhooks } from './lib/webhooks.js';
import { Decisions } from './resources/decisions.js';
import { Events } from './resources/events.js';
import { Sandbox } from './resources/sandbox.js';

export class CreditDecisions {
  /** Decisions: `decisions.bnpl` and `decisions.autoLoan`, each with `create`, `retrieve`, `poll`. */
  readonly decisions: Decisions;
  /** Sandbox test helpers: `verification.complete(decisionId, 'pass' | 'fail')`. */
  readonly sandbox: Sandbox;
  /** The event history: `list` (a page, or `for await` over every page) and `retrieve`. */
  readonly events: Events;
  /** Webhook signature helpers: `verify`, `generateTestHeader` (no API call; also exported as `webhooks`). */
  readonly webhooks: Webhooks = webhooks;
  /** The service address used. */
  readonly baseUrl: string;

  constructor(options: ClientOptions) {
    const core = new HttpCore(options);
    this.baseUrl = core.baseUrl;
    this.decisions = new Decisions(core);
    this.sandbox = new Sandbox(core);
    this.events = new Events(core);
  }
}
