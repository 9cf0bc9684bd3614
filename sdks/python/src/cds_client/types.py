"""Request and event shapes as TypedDicts, spelled exactly as the REST API spells them.

They follow the served OpenAPI document (``GET /v1/openapi.json``). Amounts are strings with at
most two decimals (``"149.97"``); ``int``, ``float`` and ``decimal.Decimal`` are accepted too
(a ``Decimal`` is sent as its exact string).
"""
from decimal import Decimal
from typing import Any, Dict, List, Literal, Optional, TypedDict, Union

__all__ = [
    "Amount",
    "MerchantCategory",
    "Address",
    "ReturningConsumer",
    "NewConsumer",
    "ConsumerParams",
    "TransactionParams",
    "OrderParams",
    "PlanPreference",
    "SandboxVerificationResult",
    "VehicleCondition",
    "AutoLoanTermMonths",
    "AutoLoanChannel",
    "VehicleParams",
    "AutoLoanTermsParams",
    "DealerParams",
    "WebhookEvent",
    "DecisionFinalizedData",
]

Amount = Union[str, int, float, Decimal]

MerchantCategory = Literal[
    "food_beverage",
    "furniture",
    "electronics",
    "sporting_goods",
    "apparel",
    "beauty",
    "home_garden",
    "travel",
    "health",
    "jewelry",
    "automotive",
    "education",
    "entertainment",
    "general",
]

PlanPreference = Literal["pay_in_4", "pay_in_6", "monthly"]
SandboxVerificationResult = Literal["pass", "fail"]


class _AddressRequired(TypedDict):
    line1: str
    city: str
    state: str  # USPS two-letter code
    zip: str  # 5 digits or ZIP+4


class Address(_AddressRequired, total=False):
    line2: str
    country: Literal["US"]


class ReturningConsumer(TypedDict):
    """A consumer already known to your tenant and environment (e.g. a seeded sandbox consumer)."""

    consumer_id: str


class _NewConsumerRequired(TypedDict):
    first_name: str
    last_name: str
    email: str
    dob: str  # YYYY-MM-DD; at least 18 years old
    address: Address


class NewConsumer(_NewConsumerRequired, total=False):
    """A consumer the service has not seen: stored, and usable by ``consumer_id`` afterwards."""

    phone: str  # E.164
    ssn_last4: str  # required on the enhanced and hard tiers


ConsumerParams = Union[ReturningConsumer, NewConsumer]


class _TransactionRequired(TypedDict):
    amount: Amount
    currency: str  # only USD
    merchant_name: str
    merchant_category: MerchantCategory


class TransactionParams(_TransactionRequired, total=False):
    product_description: str


class _OrderRequired(TypedDict):
    amount: Amount
    currency: str
    installment_count: Literal[3, 4, 6, 12, 18, 24, 36]


class OrderParams(_OrderRequired, total=False):
    """The client-library form: 4 -> pay_in_4, 6 -> pay_in_6, 3..36 above 5,000.00 -> monthly."""

    merchant_name: str
    merchant_category: MerchantCategory
    product_description: str


VehicleCondition = Literal["new", "used"]
AutoLoanTermMonths = Literal[24, 36, 48, 60, 72, 84]
AutoLoanChannel = Literal["direct", "indirect"]


class VehicleParams(TypedDict):
    """The financed vehicle (the loan's collateral)."""

    vin: str  # 17 characters, valid check digit (position 9); position 10 encodes `year`
    year: int
    make: str
    model: str
    mileage: int  # odometer, miles
    condition: VehicleCondition
    value: Amount  # the base of ``ltv``


class _AutoLoanTermsRequired(TypedDict):
    amount: Amount
    down_payment: Amount
    term_months: AutoLoanTermMonths
    currency: str  # only USD


class AutoLoanTermsParams(_AutoLoanTermsRequired, total=False):
    trade_in_value: Amount


class DealerParams(TypedDict):
    """The dealership that arranged an indirect loan (lender portal -> Dealers) and its markup."""

    dealer_id: str  # unknown or disabled: 422
    markup_rate_pct: Amount  # points over the buy rate; capped by policy (1.25 up to 60 months, 1.00 above)


class WebhookEvent(TypedDict):
    """The JSON envelope of every webhook delivery."""

    id: str  # the same on every attempt: deduplicate on it
    type: str
    created: int  # unix seconds
    attempt: int  # 1 for the first try, up to 8
    data: Dict[str, Any]


EventType = Literal[
    "decision.finalized",
    "decision.adjusted",
    "decision.created",
    "application.created",
    "application.kyc_completed",
    "application.kyc_failed",
    "application.documents_requested",
    "application.condition_added",
    "score.completed",
    "score.errored",
    "dealer.added",
    "dealer.removed",
    "webhook.test",
]


class Event(TypedDict):
    """An event of the event history (GET /v1/events): the webhook envelope without ``attempt``."""

    id: str  # the webhook's Svc-Webhook-Id
    type: str
    created: int  # unix seconds
    data: Dict[str, Any]


class DecisionFinalizedData(TypedDict):
    decision_id: str
    application_id: str
    outcome: str
    score: Optional[int]
    confidence: float
    recommended_amount: float
    recommended_rate_pct: float
    risk_grade: Optional[str]
    reason_codes: List[str]  # AA codes: a decline's or referral's; on a counteroffer, why not the full amount; else empty
    engine_version: str
