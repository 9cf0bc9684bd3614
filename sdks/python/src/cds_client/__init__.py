"""Python client for the Credit Decisioning Service (standard library only, Python 3.9+).

    from cds_client import CreditDecisions
    client = CreditDecisions(api_key="svc_test_...", base_url="http://127.0.0.1:3000")
    decision = client.decisions.bnpl.create(consumer={...}, transaction={...})
    if decision.is_declined: ...
    if decision.offer is not None: print(decision.offer.apr)
    loan = client.decisions.auto_loan.create(consumer={...}, vehicle={...}, loan={...}, channel="direct")
"""
from . import webhooks
from ._client import CreditDecisions
from ._core.http import ResponseMeta
from ._version import __version__
from .errors import (
    APIConnectionError,
    APITimeoutError,
    APIUserAbortError,
    AuthenticationError,
    CreditDecisionsError,
    IdempotencyConflictError,
    InternalServerError,
    InvalidRequestError,
    MethodNotAllowedError,
    NoAdverseActionError,
    NotFoundError,
    PayloadTooLargeError,
    PollTimeoutError,
    ProductNotAvailableError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
    UnsupportedMediaTypeError,
    WebhookVerificationError,
)
from .models import AutoLoanDecision, AutoLoanOffer, Decision, DeclineReason, Offer, Payment, TilaDisclosure
from .resources.events import EventPage
from .types import TypedEvent, TypedWebhookEvent
from .webhooks import generate_test_header, verify_signature

__all__ = [
    "__version__",
    "CreditDecisions",
    "Decision",
    "AutoLoanDecision",
    "Offer",
    "AutoLoanOffer",
    "DeclineReason",
    "Payment",
    "TilaDisclosure",
    "EventPage",
    "ResponseMeta",
    "TypedEvent",
    "TypedWebhookEvent",
    "webhooks",
    "verify_signature",
    "generate_test_header",
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
]
