export { CreditDecisions } from './client.js';
export type { ClientOptions, RequestOptions, ResponseMeta, Fetch } from './core/http.js';
export {
  CreditDecisionsError,
  InvalidRequestError,
  AuthenticationError,
  NotFoundError,
  ProductNotAvailableError,
  NoAdverseActionError,
  MethodNotAllowedError,
  IdempotencyConflictError,
  PayloadTooLargeError,
  UnsupportedMediaTypeError,
  UnprocessableEntityError,
  RateLimitError,
  InternalServerError,
  ServiceUnavailableError,
  APIConnectionError,
  APITimeoutError,
  APIUserAbortError,
  PollTimeoutError,
  WebhookVerificationError,
} from './core/errors.js';
export type { ErrorDetails } from './core/errors.js';
export { Decision } from './lib/decision.js';
export { AutoLoanDecision } from './lib/auto-loan-decision.js';
export type { PollOptions } from './lib/polling.js';
export { POLL_INTERVAL_MS, DEFAULT_POLL_TIMEOUT_MS } from './lib/polling.js';
export { webhooks, verify as verifyWebhook, generateTestHeader, SIGNATURE_HEADER, DEFAULT_TOLERANCE_SECONDS } from './lib/webhooks.js';
export type { Webhooks, VerifyOptions, TestHeaderOptions, RawBody } from './lib/webhooks.js';
export type { BnplDecisions, Decisions, RetrieveOptions } from './resources/decisions.js';
export type { AutoLoanDecisions } from './resources/auto-loans.js';
export type { Sandbox, SandboxVerification } from './resources/sandbox.js';
export { EventPage, EventPagePromise } from './resources/events.js';
export type { Events, EventRequestOptions } from './resources/events.js';
export * from './types.js';
export { VERSION } from './version.js';
