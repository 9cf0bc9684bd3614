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
    "EventType",
    "Event",
    "EVENT_DATA_TYPES",
    "TypedWebhookEvent",
    "TypedEvent",
    "ApplicationCreatedEvent",
    "ApplicationCreatedWebhookEvent",
    "DecisionCreatedEvent",
    "DecisionCreatedWebhookEvent",
    "ScoreCompletedEvent",
    "ScoreCompletedWebhookEvent",
    "ScoreErroredEvent",
    "ScoreErroredWebhookEvent",
    "DecisionFinalizedEvent",
    "DecisionFinalizedWebhookEvent",
    "DecisionAdjustedEvent",
    "DecisionAdjustedWebhookEvent",
    "ApplicationKycCompletedEvent",
    "ApplicationKycCompletedWebhookEvent",
    "ApplicationKycFailedEvent",
    "ApplicationKycFailedWebhookEvent",
    "ApplicationDocumentsRequestedEvent",
    "ApplicationDocumentsRequestedWebhookEvent",
    "ApplicationConditionAddedEvent",
    "ApplicationConditionAddedWebhookEvent",
    "DealerAddedEvent",
    "DealerAddedWebhookEvent",
    "DealerRemovedEvent",
    "DealerRemovedWebhookEvent",
    "WebhookTestEvent",
    "WebhookTestWebhookEvent",
    "ApplicationCreatedData",
    "DecisionCreatedData",
    "ScoreRange",
    "ScoreCompletedData",
    "ScoreErroredData",
    "DecisionFinalizedData",
    "DecisionAdjustedData",
    "ApplicationKycCompletedData",
    "ApplicationKycFailedData",
    "RequestedDocumentType",
    "ApplicationDocumentsRequestedData",
    "ConditionCode",
    "ApplicationConditionAddedData",
    "DealerAddedData",
    "DealerRemovedData",
    "WebhookTestData",
    "NoticeReason",
    "NoticeKeyFactor",
    "NoticeApplication",
    "NoticeCounteroffer",
    "NoticeParty",
    "NoticeScoreRange",
    "NoticeCreditScore",
    "NoticeConsumerReport",
    "NoticePrincipalReasons",
    "NoticeEcoa",
    "AdverseActionNotice",
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


# ---------------------------------------------------------------------------------------------
# Webhook event ``data``, one TypedDict per event type, as docs/webhooks.md ("Event types and their
# ``data``") documents them. Payloads identify people only by opaque ids. Money is a decimal string
# with two decimals plus ``currency``, except in ``decision.finalized``, whose numeric fields the
# interface specification fixes. Timestamps are ISO 8601 strings (UTC). ``verify`` and the events
# API do not check ``data``: cast the event to ``TypedWebhookEvent`` / ``TypedEvent`` (below) once,
# then checking ``event["type"]`` narrows ``event["data"]`` to its TypedDict.


class ApplicationCreatedData(TypedDict):
    """``data`` of ``application.created``: an application entered the pipeline (it passed validation)."""

    application_id: str  # equal to decision_id for a first decision
    decision_id: str  # the decision being made for it
    consumer_id: str  # the applicant (opaque id in your tenant)
    product: Literal["bnpl", "auto_loan"]
    amount: str  # decimal string, e.g. "120.00"; for an auto loan the amount financed
    currency: str  # USD
    kyc_tier: Literal["soft", "enhanced", "hard"]
    merchant_name: str  # auto loans: the dealer's name (indirect) or the lender's (direct)
    merchant_category: MerchantCategory  # "automotive" for auto loans
    channel: Optional[AutoLoanChannel]  # auto loans: direct or indirect; None for BNPL
    dealer_id: Optional[str]  # indirect auto loans: the dealer; None otherwise


class DecisionCreatedData(TypedDict):
    """``data`` of ``decision.created``: a decision record exists, before its final outcome."""

    decision_id: str
    application_id: str
    status: Literal["complete", "needs_consumer_action"]
    kyc_tier: Literal["soft", "enhanced", "hard"]
    kyc_status: Literal["matched", "pending", "skipped"]


class ScoreRange(TypedDict):
    """The range of possible scores, ``{"min": 300, "max": 850}``."""

    min: int
    max: int


class ScoreCompletedData(TypedDict):
    """``data`` of ``score.completed``: the scorecard ran on the applicant's credit data."""

    decision_id: str
    application_id: str
    score: int  # 300-850
    confidence: float  # 0-1
    risk_grade: str  # A-E
    engine_version: str  # scorecard and policy versions that decided
    score_range: Optional[ScoreRange]
    # Adverse-action codes of the key factors that lowered the score, most important first: four at
    # most, AA-22 (inquiries) as a fifth when inquiries lowered it but are not among the four; empty
    # without a credit file. With score, score_range, credit_file_source and the event's created
    # date: the FCRA 615(a) credit score disclosure.
    key_factor_codes: List[str]
    credit_file_source: Optional[str]  # who provided the credit file; None without a file


class ScoreErroredData(TypedDict):
    """``data`` of ``score.errored``: scoring could not run; the decision is referred with AA-25."""

    decision_id: str
    application_id: str
    reason: Literal["timeout", "error", "circuit_open", "magic_value"]  # magic_value: the sandbox's 3333
    engine_version: str


class DecisionFinalizedData(TypedDict):
    """``data`` of ``decision.finalized``: a decision reached its outcome (by the engine or by policy).

    Exactly the fields of the interface specification; money here is numbers.
    """

    decision_id: str
    application_id: str
    outcome: str  # approved, declined or referred
    score: Optional[int]  # 300-850; None when nothing was scored (policy path)
    confidence: float  # 0-1 (0 when nothing was scored)
    recommended_amount: float  # dollars, e.g. 120 or 87.5; on a counteroffer the approved amount
    recommended_rate_pct: float  # percentage, e.g. 0 or 14.99
    risk_grade: Optional[str]  # A-E; None when nothing was scored
    reason_codes: List[str]  # AA codes: a decline's or referral's; on a counteroffer, why not the full amount; else empty
    engine_version: str  # scorecard and policy versions that decided


class DecisionAdjustedData(TypedDict):
    """``data`` of ``decision.adjusted``: an underwriter overrode a referred decision in the portal."""

    decision_id: str
    application_id: str
    previous_outcome: Literal["referred"]
    outcome: Literal["approved", "declined"]
    approved_amount: Optional[str]  # decimal string on approval (auto loans: the amount financed)
    currency: str  # USD
    plan: Optional[PlanPreference]  # on a BNPL approval; None for an auto loan and on decline
    term_months: Optional[int]  # on approval (auto loans: 24-84)
    apr: Optional[str]  # disclosed APR on approval, decimal string, e.g. "0.00"
    # A decline's adverse-action codes; on a counteroffer (approved for less) the principal reasons the
    # full amount was not approved (one to four); on another plan or term, those the underwriter gave
    # (possibly none); empty on an approval of what was asked.
    reason_codes: List[str]
    adjusted_at: str  # ISO 8601, UTC
    adjusted_by: str  # the portal user who decided (an id)


class ApplicationKycCompletedData(TypedDict):
    """``data`` of ``application.kyc_completed``: identity verification succeeded."""

    application_id: str
    decision_id: str
    consumer_id: str
    kyc_tier: Literal["soft", "enhanced", "hard"]  # soft when checked inline
    kyc_status: Literal["matched"]


class ApplicationKycFailedData(TypedDict):
    """``data`` of ``application.kyc_failed``: identity verification failed; referred with AA-24."""

    application_id: str
    decision_id: str
    consumer_id: str
    kyc_tier: Literal["soft", "enhanced", "hard"]
    reason_code: str  # AA-24 ("Unable to verify identity")


RequestedDocumentType = Literal["government_id", "proof_of_income", "proof_of_address", "bank_statement", "other"]


class ApplicationDocumentsRequestedData(TypedDict):
    """``data`` of ``application.documents_requested``: an underwriter asked for more documents."""

    application_id: str
    decision_id: str
    request_id: str  # this request for documents
    document_types: List[RequestedDocumentType]
    upload_url: str  # the hosted upload page to send the applicant: single use, its own token
    expires_at: str  # when the upload link stops working (14 days)
    requested_at: str
    requested_by: str  # the portal user (an id)


ConditionCode = Literal["proof_of_income", "proof_of_identity", "down_payment", "co_applicant", "reduced_amount", "other"]


class ApplicationConditionAddedData(TypedDict):
    """``data`` of ``application.condition_added``: an underwriter attached a condition to an approval."""

    application_id: str
    decision_id: str
    condition_id: str
    code: ConditionCode
    added_at: str
    added_by: str  # the portal user (an id)


class DealerAddedData(TypedDict):
    """``data`` of ``dealer.added``: a dealer joined the lender's network (auto-loan tenants)."""

    dealer_id: str  # the id used in indirect auto-loan requests
    dealer_name: str  # the dealership's business name
    status: Literal["active"]


class DealerRemovedData(TypedDict):
    """``data`` of ``dealer.removed``: a dealer was soft-disabled; indirect requests naming it get 422."""

    dealer_id: str
    dealer_name: str
    status: Literal["disabled"]


class WebhookTestData(TypedDict):
    """``data`` of ``webhook.test``: sent by "Send test event" in the portal to that one endpoint."""

    endpoint_id: str  # the endpoint tested
    message: str


#: Each event type's ``data`` TypedDict, by type (for run-time use; for the type checker, narrow a
#: ``TypedWebhookEvent`` or ``TypedEvent`` on ``event["type"]``).
EVENT_DATA_TYPES: Dict[str, Any] = {
    "application.created": ApplicationCreatedData,
    "decision.created": DecisionCreatedData,
    "score.completed": ScoreCompletedData,
    "score.errored": ScoreErroredData,
    "decision.finalized": DecisionFinalizedData,
    "decision.adjusted": DecisionAdjustedData,
    "application.kyc_completed": ApplicationKycCompletedData,
    "application.kyc_failed": ApplicationKycFailedData,
    "application.documents_requested": ApplicationDocumentsRequestedData,
    "application.condition_added": ApplicationConditionAddedData,
    "dealer.added": DealerAddedData,
    "dealer.removed": DealerRemovedData,
    "webhook.test": WebhookTestData,
}


# ---------------------------------------------------------------------------------------------
# Typed envelopes: one per event type, whose ``type`` is that type's literal and whose ``data`` is its
# TypedDict above, and the unions of them, ``TypedWebhookEvent`` (a delivery) and ``TypedEvent`` (the
# event history), which mypy and pyright narrow on ``event["type"]``. ``XxxEvent`` is the event
# history's shape (``Event``: id, type, created, data); ``XxxWebhookEvent`` adds the delivery's
# ``attempt`` (``WebhookEvent``), so every ``TypedWebhookEvent`` is also a ``TypedEvent``.


class _EventEnvelope(TypedDict):
    id: str  # the same on every attempt: deduplicate on it (the webhook's Svc-Webhook-Id)
    created: int  # unix seconds


class ApplicationCreatedEvent(_EventEnvelope):
    """``application.created`` in the event history; ``data`` is :class:`ApplicationCreatedData`."""

    type: Literal["application.created"]
    data: ApplicationCreatedData


class ApplicationCreatedWebhookEvent(ApplicationCreatedEvent):
    """A webhook delivery of ``application.created``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class DecisionCreatedEvent(_EventEnvelope):
    """``decision.created`` in the event history; ``data`` is :class:`DecisionCreatedData`."""

    type: Literal["decision.created"]
    data: DecisionCreatedData


class DecisionCreatedWebhookEvent(DecisionCreatedEvent):
    """A webhook delivery of ``decision.created``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class ScoreCompletedEvent(_EventEnvelope):
    """``score.completed`` in the event history; ``data`` is :class:`ScoreCompletedData`."""

    type: Literal["score.completed"]
    data: ScoreCompletedData


class ScoreCompletedWebhookEvent(ScoreCompletedEvent):
    """A webhook delivery of ``score.completed``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class ScoreErroredEvent(_EventEnvelope):
    """``score.errored`` in the event history; ``data`` is :class:`ScoreErroredData`."""

    type: Literal["score.errored"]
    data: ScoreErroredData


class ScoreErroredWebhookEvent(ScoreErroredEvent):
    """A webhook delivery of ``score.errored``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class DecisionFinalizedEvent(_EventEnvelope):
    """``decision.finalized`` in the event history; ``data`` is :class:`DecisionFinalizedData`."""

    type: Literal["decision.finalized"]
    data: DecisionFinalizedData


class DecisionFinalizedWebhookEvent(DecisionFinalizedEvent):
    """A webhook delivery of ``decision.finalized``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class DecisionAdjustedEvent(_EventEnvelope):
    """``decision.adjusted`` in the event history; ``data`` is :class:`DecisionAdjustedData`."""

    type: Literal["decision.adjusted"]
    data: DecisionAdjustedData


class DecisionAdjustedWebhookEvent(DecisionAdjustedEvent):
    """A webhook delivery of ``decision.adjusted``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class ApplicationKycCompletedEvent(_EventEnvelope):
    """``application.kyc_completed`` in the event history; ``data`` is :class:`ApplicationKycCompletedData`."""

    type: Literal["application.kyc_completed"]
    data: ApplicationKycCompletedData


class ApplicationKycCompletedWebhookEvent(ApplicationKycCompletedEvent):
    """A webhook delivery of ``application.kyc_completed``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class ApplicationKycFailedEvent(_EventEnvelope):
    """``application.kyc_failed`` in the event history; ``data`` is :class:`ApplicationKycFailedData`."""

    type: Literal["application.kyc_failed"]
    data: ApplicationKycFailedData


class ApplicationKycFailedWebhookEvent(ApplicationKycFailedEvent):
    """A webhook delivery of ``application.kyc_failed``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class ApplicationDocumentsRequestedEvent(_EventEnvelope):
    """``application.documents_requested`` in the event history; ``data`` is :class:`ApplicationDocumentsRequestedData`."""

    type: Literal["application.documents_requested"]
    data: ApplicationDocumentsRequestedData


class ApplicationDocumentsRequestedWebhookEvent(ApplicationDocumentsRequestedEvent):
    """A webhook delivery of ``application.documents_requested``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class ApplicationConditionAddedEvent(_EventEnvelope):
    """``application.condition_added`` in the event history; ``data`` is :class:`ApplicationConditionAddedData`."""

    type: Literal["application.condition_added"]
    data: ApplicationConditionAddedData


class ApplicationConditionAddedWebhookEvent(ApplicationConditionAddedEvent):
    """A webhook delivery of ``application.condition_added``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class DealerAddedEvent(_EventEnvelope):
    """``dealer.added`` in the event history; ``data`` is :class:`DealerAddedData`."""

    type: Literal["dealer.added"]
    data: DealerAddedData


class DealerAddedWebhookEvent(DealerAddedEvent):
    """A webhook delivery of ``dealer.added``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class DealerRemovedEvent(_EventEnvelope):
    """``dealer.removed`` in the event history; ``data`` is :class:`DealerRemovedData`."""

    type: Literal["dealer.removed"]
    data: DealerRemovedData


class DealerRemovedWebhookEvent(DealerRemovedEvent):
    """A webhook delivery of ``dealer.removed``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


class WebhookTestEvent(_EventEnvelope):
    """``webhook.test`` in the event history; ``data`` is :class:`WebhookTestData`."""

    type: Literal["webhook.test"]
    data: WebhookTestData


class WebhookTestWebhookEvent(WebhookTestEvent):
    """A webhook delivery of ``webhook.test``: the event-history shape plus ``attempt``."""

    attempt: int  # 1 for the first try, up to 8


#: A webhook delivery as a union discriminated by ``type``: checking ``event["type"]`` narrows
#: ``event["data"]`` to that type's TypedDict. ``verify`` does not check the shape of ``data`` and
#: returns a ``WebhookEvent``, so cast once: ``event = cast(TypedWebhookEvent, webhooks.verify(...))``.
#: An endpoint subscribed to ``*`` also receives types added later: keep an ``else`` branch.
TypedWebhookEvent = Union[
    ApplicationCreatedWebhookEvent,
    DecisionCreatedWebhookEvent,
    ScoreCompletedWebhookEvent,
    ScoreErroredWebhookEvent,
    DecisionFinalizedWebhookEvent,
    DecisionAdjustedWebhookEvent,
    ApplicationKycCompletedWebhookEvent,
    ApplicationKycFailedWebhookEvent,
    ApplicationDocumentsRequestedWebhookEvent,
    ApplicationConditionAddedWebhookEvent,
    DealerAddedWebhookEvent,
    DealerRemovedWebhookEvent,
    WebhookTestWebhookEvent,
]

#: An event of the event history (``client.events.list()`` / ``retrieve()``) as a union discriminated
#: by ``type``, like ``TypedWebhookEvent`` without ``attempt``: ``cast(TypedEvent, event)``. A
#: ``TypedWebhookEvent`` is also a ``TypedEvent``, so one handler taking ``TypedEvent`` serves both.
TypedEvent = Union[
    ApplicationCreatedEvent,
    DecisionCreatedEvent,
    ScoreCompletedEvent,
    ScoreErroredEvent,
    DecisionFinalizedEvent,
    DecisionAdjustedEvent,
    ApplicationKycCompletedEvent,
    ApplicationKycFailedEvent,
    ApplicationDocumentsRequestedEvent,
    ApplicationConditionAddedEvent,
    DealerAddedEvent,
    DealerRemovedEvent,
    WebhookTestEvent,
]


# The adverse-action notice (``GET /v1/decisions/{bnpl|auto-loan}/{decision_id}/adverse-action-notice``).


class NoticeReason(TypedDict):
    """A line of the notice's reasons: a stable code and the sentence the letter prints."""

    code: str
    reason: str


class NoticeKeyFactor(TypedDict):
    code: str
    reason: Optional[str]


class NoticeApplication(TypedDict):
    """What was applied for, in the parts a letter writes ("a buy now, pay later loan of $1,250.00")."""

    amount: str
    currency: Literal["USD"]
    plan: Optional[str]
    term_months: Optional[int]
    product: str
    terms: Optional[str]
    applied_on: str


class NoticeCounteroffer(TypedDict):
    """What is offered instead; ``terms`` end with the APR."""

    amount: str
    currency: Literal["USD"]
    plan: Optional[str]
    term_months: Optional[int]
    product: str
    terms: Optional[str]
    apr: Optional[str]


class NoticeParty(TypedDict):
    """The consumer reporting agency, or the creditor: as the tenant entered them in the portal."""

    name: Optional[str]
    address_lines: List[str]
    phone: Optional[str]


class NoticeScoreRange(TypedDict):
    min: int
    max: int


class NoticeCreditScore(TypedDict):
    statement: str
    score: int
    range: Optional[NoticeScoreRange]
    scored_on: Optional[str]
    key_factors: List[NoticeKeyFactor]


class NoticeConsumerReport(TypedDict):
    """Part II (FCRA 615(a)): only when a consumer report was used for the decision."""

    statement: str
    agency: NoticeParty
    credit_score: Optional[NoticeCreditScore]


class NoticePrincipalReasons(TypedDict):
    heading: str
    reasons: List[NoticeReason]


class NoticeEcoa(TypedDict):
    statement: str
    agency_lines: List[str]


class AdverseActionNotice(TypedDict):
    """The content of the written notice Regulation B (12 CFR 1002.9) requires after a decline, or
    after a counteroffer the applicant did not accept, laid out as Sample Form C-1. It never names
    the applicant: address the letter from your own records. ``missing_settings`` lists what the
    tenant has not entered in the portal's notice settings; ``incomplete``, what else it lacks."""

    decision_id: str
    environment: Literal["sandbox", "live"]
    product: Literal["bnpl", "auto_loan"]
    action: Literal["declined", "counteroffer"]
    action_taken_at: str
    notice_date: str
    due_by: str
    application: NoticeApplication
    counteroffer: Optional[NoticeCounteroffer]
    principal_reasons: NoticePrincipalReasons
    consumer_report: Optional[NoticeConsumerReport]
    ecoa_notice: NoticeEcoa
    creditor: NoticeParty
    missing_settings: List[str]
    incomplete: List[str]
