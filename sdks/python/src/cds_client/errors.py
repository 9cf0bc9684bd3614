"""One exception class per failure kind.

Exceptions are raised only for transport failures (no answer) and API failures (a non-2xx
answer). A declined applicant is a successful decision (``decision.is_declined``), never an error.

    CreditDecisionsError                 base: status, code, message, request_id, headers, body
    ├─ InvalidRequestError               400 invalid_request
    ├─ AuthenticationError               401 invalid_api_key
    ├─ NotFoundError                     404 not_found
    │  ├─ ProductNotAvailableError       404 product_not_available
    │  └─ NoAdverseActionError           404 no_adverse_action
    ├─ MethodNotAllowedError             405 method_not_allowed
    ├─ IdempotencyConflictError          409 idempotency_conflict
    ├─ PayloadTooLargeError              413 payload_too_large
    ├─ UnsupportedMediaTypeError         415 unsupported_media_type
    ├─ UnprocessableEntityError          422 unprocessable_entity
    ├─ RateLimitError                    429 rate_limited (retry_after)
    ├─ InternalServerError               500 internal_error and any other 5xx
    │  └─ ServiceUnavailableError        503 service_unavailable
    ├─ APIConnectionError                no response (refused, reset, DNS, malformed answer)
    │  └─ APITimeoutError                no response within the time-out
    ├─ APIUserAbortError                 the caller's cancel event was set
    ├─ PollTimeoutError                  wait_for_completion() reached its deadline
    └─ WebhookVerificationError          webhooks.verify() refused a request
"""
import email.utils
import json
import re
import time
from typing import Any, Dict, Mapping, Optional, Type, cast

__all__ = [
    "CreditDecisionsError",
    "InvalidRequestError",
    "AuthenticationError",
    "NotFoundError",
    "ProductNotAvailableError",
    "NoAdverseActionError",
    "MethodNotAllowedError",
    "IdempotencyConflictError",
    "PayloadTooLargeError",
    "UnsupportedMediaTypeError",
    "UnprocessableEntityError",
    "RateLimitError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIConnectionError",
    "APITimeoutError",
    "APIUserAbortError",
    "PollTimeoutError",
    "WebhookVerificationError",
    "error_from_response",
    "parse_retry_after",
]


class CreditDecisionsError(Exception):
    """Base of every error of this library."""

    def __init__(
        self,
        message: str,
        *,
        status: Optional[int] = None,
        code: Optional[str] = None,
        request_id: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        body: Any = None,
    ) -> None:
        super().__init__(message)
        self.message: str = message
        #: HTTP status; None when there was no response.
        self.status: Optional[int] = status
        #: The ``error`` field of the response body (``invalid_request``...); None without a response.
        self.code: Optional[str] = code
        #: ``request_id`` of the response (also its ``Request-Id`` header): quote it to support.
        self.request_id: Optional[str] = request_id
        #: Response headers, names in lower case.
        self.headers: Dict[str, str] = dict(headers or {})
        #: The parsed error body, when there was one.
        self.body: Any = body

    def __str__(self) -> str:
        if self.status is None:
            return self.message
        suffix = f" (request_id {self.request_id})" if self.request_id else ""
        head = f"{self.status} {self.code}" if self.code else str(self.status)
        message = self.message
        # A body that is not the stable error body gave "HTTP <status>: ..." as the message already.
        if message.startswith(f"HTTP {self.status}: "):
            message = message[len(f"HTTP {self.status}: "):]
        return f"{head}: {message}{suffix}"


class InvalidRequestError(CreditDecisionsError):
    pass


class AuthenticationError(CreditDecisionsError):
    pass


class NotFoundError(CreditDecisionsError):
    pass


class ProductNotAvailableError(NotFoundError):
    pass


class NoAdverseActionError(NotFoundError):
    """The decision took no adverse action (approved as requested, pending or referred): it has no notice."""


class MethodNotAllowedError(CreditDecisionsError):
    pass


class IdempotencyConflictError(CreditDecisionsError):
    pass


class PayloadTooLargeError(CreditDecisionsError):
    pass


class UnsupportedMediaTypeError(CreditDecisionsError):
    pass


class UnprocessableEntityError(CreditDecisionsError):
    pass


class RateLimitError(CreditDecisionsError):
    @property
    def retry_after(self) -> Optional[float]:
        """Seconds the service asked us to wait (``Retry-After``), when it said."""
        return parse_retry_after(self.headers.get("retry-after"))


class InternalServerError(CreditDecisionsError):
    pass


class ServiceUnavailableError(InternalServerError):
    pass


class APIConnectionError(CreditDecisionsError):
    pass


class APITimeoutError(APIConnectionError):
    pass


class APIUserAbortError(CreditDecisionsError):
    pass


class PollTimeoutError(CreditDecisionsError):
    def __init__(self, message: str, decision: Any) -> None:
        super().__init__(message)
        #: The last state seen (still pending).
        self.decision = decision


class WebhookVerificationError(CreditDecisionsError):
    pass


_BY_CODE: Dict[str, Type[CreditDecisionsError]] = {
    "invalid_request": InvalidRequestError,
    "invalid_api_key": AuthenticationError,
    "not_found": NotFoundError,
    "product_not_available": ProductNotAvailableError,
    "no_adverse_action": NoAdverseActionError,
    "method_not_allowed": MethodNotAllowedError,
    "idempotency_conflict": IdempotencyConflictError,
    "payload_too_large": PayloadTooLargeError,
    "unsupported_media_type": UnsupportedMediaTypeError,
    "unprocessable_entity": UnprocessableEntityError,
    "rate_limited": RateLimitError,
    "internal_error": InternalServerError,
    "service_unavailable": ServiceUnavailableError,
}

# A code this version does not know yet (the catalogue may grow) still gets the class of its status.
_BY_STATUS: Dict[int, Type[CreditDecisionsError]] = {
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
}


def error_from_response(status: int, headers: Mapping[str, str], body: bytes) -> CreditDecisionsError:
    """The exception for a non-2xx response."""
    text = body.decode("utf-8", errors="replace")
    try:
        parsed: Any = json.loads(text)
    except ValueError:
        parsed = None
    # A JSON object: its keys are strings; each value is checked before it is used.
    fields: Dict[str, object] = cast(Dict[str, object], parsed) if isinstance(parsed, dict) else {}
    error_field, id_field, message_field = fields.get("error"), fields.get("request_id"), fields.get("message")
    code: Optional[str] = error_field if isinstance(error_field, str) else None
    request_id: Optional[str] = id_field if isinstance(id_field, str) else headers.get("request-id")
    if isinstance(message_field, str):
        message: str = message_field
    elif 300 <= status < 400:
        location = headers.get("location")
        where = f" to {location}" if location else ""
        message = f"HTTP {status}: a redirect{where}, not followed (the service never redirects: check base_url, e.g. http against https)."
    else:
        message = f"HTTP {status}: {text[:200]}"
    cls = (_BY_CODE.get(code) if code is not None else None) or _BY_STATUS.get(status)
    if cls is None:
        cls = InternalServerError if status >= 500 else CreditDecisionsError
    return cls(message, status=status, code=code, request_id=request_id, headers=headers, body=parsed if parsed is not None else text)


_SECONDS = re.compile(r"^\d+(\.\d+)?$")


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """``Retry-After`` in seconds: delay-seconds (a decimal is tolerated) or an HTTP-date."""
    if value is None:
        return None
    text = value.strip()
    if _SECONDS.match(text):
        return float(text)
    try:
        parsed = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if parsed is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, parsed.timestamp() - current)
