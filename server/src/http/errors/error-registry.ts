/**
 * The error catalogue: every `error` code the API can return, its HTTP status and its public
 * message. docs/errors.md documents exactly these codes (a test keeps the two in step both ways).
 * Codes are a public contract: add new ones, never rename or repurpose one. `portal`: answered by
 * the portal's session API only, never under /v1 (the OpenAPI document leaves them out).
 */
export const ERROR_REGISTRY = {
  invalid_request: { status: 400, message: 'The request is malformed or a required field is missing or invalid.' },
  invalid_api_key: { status: 401, message: 'The API key is missing, malformed, unknown or revoked.' },
  not_authenticated: { status: 401, message: 'Sign in to the lender portal first; the session is missing, expired or ended.', portal: true },
  invalid_credentials: { status: 401, message: 'The email address or password is not correct.', portal: true },
  forbidden: { status: 403, message: 'Your role does not allow this action.', portal: true },
  invalid_csrf_token: { status: 403, message: 'The request did not carry this session\'s CSRF token; reload the page and try again.', portal: true },
  not_found: { status: 404, message: 'The requested resource does not exist.' },
  product_not_available: { status: 404, message: 'This product is not available yet.' },
  no_adverse_action: { status: 404, message: 'This decision took no adverse action, so it has no adverse-action notice.' },
  method_not_allowed: { status: 405, message: 'This method is not allowed on this path.' },
  idempotency_conflict: { status: 409, message: 'This Idempotency-Key was already used with a different request, or that request is still in progress.' },
  decision_version_conflict: { status: 409, message: 'This decision was changed by someone else since you loaded it; reload to see the new state.', portal: true },
  settings_version_conflict: { status: 409, message: 'These settings were changed by someone else since you loaded them; reload to see them.', portal: true },
  endpoint_version_conflict: { status: 409, message: 'This webhook endpoint was changed by someone else since you loaded it; reload to see its current settings.', portal: true },
  dealer_version_conflict: { status: 409, message: 'This dealer was changed by someone else since you loaded it; reload to see its current details.', portal: true },
  payload_too_large: { status: 413, message: 'The request body is larger than 64 KiB.' },
  unsupported_media_type: { status: 415, message: 'Request bodies must be JSON (Content-Type: application/json).' },
  unprocessable_entity: { status: 422, message: 'The request is well-formed but breaks a business rule.' },
  invalid_policy: { status: 422, message: 'The credit policy document did not pass validation.', portal: true },
  rate_limited: { status: 429, message: 'Too many requests; retry after the time given in Retry-After.' },
  internal_error: { status: 500, message: 'Something went wrong on our side. It has been logged; retry with the same Idempotency-Key.' },
  service_unavailable: { status: 503, message: 'The service is temporarily unavailable; retry after the time given in Retry-After.' },
} as const satisfies Record<string, { status: number; message: string; portal?: true }>;

export type ErrorCode = keyof typeof ERROR_REGISTRY;

/** The one error type route code throws; the error handler turns it into the stable body. */
export class ApiError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message ?? ERROR_REGISTRY[code].message);
    this.name = 'ApiError';
    this.status = ERROR_REGISTRY[code].status;
  }
}

/** The stable error body: exactly these three fields, in this order. */
export function errorBody(code: ErrorCode, message: string, requestId: string): string {
  return JSON.stringify({ error: code, message, request_id: requestId });
}
