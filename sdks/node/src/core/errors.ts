/**
 * One error class per failure kind. Errors are raised only for transport failures (no answer) and
 * API failures (a non-2xx answer); a declined applicant is a successful decision
 * (`decision.isDeclined`), never an error.
 *
 *   CreditDecisionsError                 base: status, code, message, requestId, headers
 *   ├─ InvalidRequestError               400 invalid_request
 *   ├─ AuthenticationError               401 invalid_api_key
 *   ├─ NotFoundError                     404 not_found
 *   │  ├─ ProductNotAvailableError       404 product_not_available
 *   │  └─ NoAdverseActionError           404 no_adverse_action
 *   ├─ MethodNotAllowedError             405 method_not_allowed
 *   ├─ IdempotencyConflictError          409 idempotency_conflict
 *   ├─ PayloadTooLargeError              413 payload_too_large
 *   ├─ UnsupportedMediaTypeError         415 unsupported_media_type
 *   ├─ UnprocessableEntityError          422 unprocessable_entity
 *   ├─ RateLimitError                    429 rate_limited (retryAfterSeconds)
 *   ├─ InternalServerError               500 internal_error and any other 5xx
 *   │  └─ ServiceUnavailableError        503 service_unavailable
 *   ├─ APIConnectionError                no response (refused, reset, DNS, malformed answer)
 *   │  └─ APITimeoutError                no response within timeoutMs
 *   ├─ APIUserAbortError                 the caller's AbortSignal fired
 *   ├─ PollTimeoutError                  poll() reached its deadline while still pending
 *   └─ WebhookVerificationError          webhooks.verify() refused a request
 */

export interface ErrorDetails {
  status?: number;
  code?: string;
  requestId?: string;
  headers?: Record<string, string>;
  body?: unknown;
  cause?: unknown;
}

export class CreditDecisionsError extends Error {
  /** HTTP status; undefined when there was no response. */
  readonly status: number | undefined;
  /** The `error` field of the response body (`invalid_request`, ...); undefined without a response. */
  readonly code: string | undefined;
  /** The `request_id` of the response (also its `Request-Id` header): quote it to support. */
  readonly requestId: string | undefined;
  /** Response headers, names in lower case. */
  readonly headers: Record<string, string>;
  /** The parsed error body, when there was one. */
  readonly body: unknown;

  constructor(message: string, details: ErrorDetails = {}) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = new.target.name;
    this.status = details.status;
    this.code = details.code;
    this.requestId = details.requestId;
    this.headers = details.headers ?? {};
    this.body = details.body;
  }
}

export class InvalidRequestError extends CreditDecisionsError {}
export class AuthenticationError extends CreditDecisionsError {}
export class NotFoundError extends CreditDecisionsError {}
export class ProductNotAvailableError extends NotFoundError {}
/** The decision took no adverse action (approved as requested, pending or referred): it has no notice. */
export class NoAdverseActionError extends NotFoundError {}
export class MethodNotAllowedError extends CreditDecisionsError {}
export class IdempotencyConflictError extends CreditDecisionsError {}
export class PayloadTooLargeError extends CreditDecisionsError {}
export class UnsupportedMediaTypeError extends CreditDecisionsError {}
export class UnprocessableEntityError extends CreditDecisionsError {}

export class RateLimitError extends CreditDecisionsError {
  /** Seconds the service asked us to wait (`Retry-After`), when it said. */
  get retryAfterSeconds(): number | undefined {
    const ms = parseRetryAfter(this.headers['retry-after']);
    return ms === undefined ? undefined : ms / 1000;
  }
}

export class InternalServerError extends CreditDecisionsError {}
export class ServiceUnavailableError extends InternalServerError {}

export class APIConnectionError extends CreditDecisionsError {
  constructor(message = 'Connection error.', details: ErrorDetails = {}) {
    super(message, details);
  }
}

export class APITimeoutError extends APIConnectionError {
  constructor(message = 'Request timed out.', details: ErrorDetails = {}) {
    super(message, details);
  }
}

export class APIUserAbortError extends CreditDecisionsError {
  constructor(message = 'Request was aborted.', details: ErrorDetails = {}) {
    super(message, details);
  }
}

export class PollTimeoutError extends CreditDecisionsError {
  /** The last state seen (still pending). */
  readonly decision: unknown;
  constructor(message: string, decision: unknown) {
    super(message);
    this.decision = decision;
  }
}

export class WebhookVerificationError extends CreditDecisionsError {}

type ErrorClass = new (message: string, details: ErrorDetails) => CreditDecisionsError;

const BY_CODE: Record<string, ErrorClass> = {
  invalid_request: InvalidRequestError,
  invalid_api_key: AuthenticationError,
  not_found: NotFoundError,
  product_not_available: ProductNotAvailableError,
  no_adverse_action: NoAdverseActionError,
  method_not_allowed: MethodNotAllowedError,
  idempotency_conflict: IdempotencyConflictError,
  payload_too_large: PayloadTooLargeError,
  unsupported_media_type: UnsupportedMediaTypeError,
  unprocessable_entity: UnprocessableEntityError,
  rate_limited: RateLimitError,
  internal_error: InternalServerError,
  service_unavailable: ServiceUnavailableError,
};

// A code this version does not know yet (the catalogue may grow) still gets the class of its status.
const BY_STATUS: Record<number, ErrorClass> = {
  400: InvalidRequestError,
  401: AuthenticationError,
  404: NotFoundError,
  405: MethodNotAllowedError,
  409: IdempotencyConflictError,
  413: PayloadTooLargeError,
  415: UnsupportedMediaTypeError,
  422: UnprocessableEntityError,
  429: RateLimitError,
  503: ServiceUnavailableError,
};

/** The error for a non-2xx response. `body` is the response text. */
export function errorFromResponse(status: number, headers: Record<string, string>, body: string): CreditDecisionsError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    parsed = undefined;
  }
  const fields = parsed !== null && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : {};
  const code = typeof fields.error === 'string' ? fields.error : undefined;
  const requestId = typeof fields.request_id === 'string' ? fields.request_id : headers['request-id'];
  const message =
    typeof fields.message === 'string'
      ? fields.message
      : status >= 300 && status < 400
        ? `HTTP ${status}: a redirect${headers.location ? ` to ${headers.location}` : ''}, not followed (the service never redirects: check baseUrl, e.g. http against https).`
        : `HTTP ${status}${body ? `: ${body.slice(0, 200)}` : ''}`;
  const Class = (code !== undefined ? BY_CODE[code] : undefined) ?? BY_STATUS[status] ?? (status >= 500 ? InternalServerError : CreditDecisionsError);
  return new Class(message, { status, code, requestId, headers, body: parsed ?? body });
}

/**
 * `Retry-After` in milliseconds: delay-seconds (a decimal is tolerated) or an HTTP-date
 * (RFC 9110 section 10.2.3). Undefined when absent or malformed.
 */
export function parseRetryAfter(value: string | undefined, now: number = Date.now()): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}
