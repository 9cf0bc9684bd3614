"""A decision as the service returned it.

Every wire field is an attribute under its wire name (``None`` when the shape does not carry it),
plus ``is_approved`` / ``is_declined`` / ``is_referred`` / ``is_pending`` and ``offer`` (the
approval's fields, none Optional). ``to_dict()`` gives back exactly the fields received; the HTTP
details of the call are in ``last_response``.
"""
import copy
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional, Type, TypedDict, TypeVar, cast

from ._core.http import ResponseMeta

__all__ = ["Decision", "AutoLoanDecision", "Offer", "AutoLoanOffer", "Payment", "TilaDisclosure", "DeclineReason", "ResponseMeta"]


@dataclass(frozen=True)
class Payment:
    num: int  # position, from 1
    due_date: str  # YYYY-MM-DD
    amount: str  # two-decimal string


@dataclass(frozen=True)
class TilaDisclosure:
    amount_financed: str
    finance_charge: str
    total_of_payments: str
    apr: str
    payment_frequency: str  # "biweekly" or "monthly"
    # Indirect auto loans only (a dealer's credit sale), None otherwise: cash down payment plus
    # trade-in, and Regulation Z's total sale price (cash price + finance charge, 12 CFR 1026.18(j)).
    total_down_payment: Optional[str] = None
    total_sale_price: Optional[str] = None


@dataclass(frozen=True)
class DeclineReason:
    code: str  # ECOA adverse-action code AA-nn
    reason: str


@dataclass(frozen=True)
class Offer:
    """What an approval offers, every field set: ``decision.offer`` (None unless approved), so code
    under ``if decision.offer is not None`` needs no Optional checks."""

    approved_amount: str  # two decimals; may be below the requested amount
    currency: str
    apr: str  # percent, two decimals
    term_months: int
    payment_schedule: List[Payment]
    tila_disclosure: TilaDisclosure
    expires_at: str  # ISO 8601: when the offer expires


@dataclass(frozen=True)
class AutoLoanOffer(Offer):
    """An auto-loan approval's offer: the ``Offer`` plus the rates, the dealer's reserve and the LTV."""

    buy_rate: str
    contract_rate: str
    dealer_reserve: str
    ltv: str


_O = TypeVar("_O", bound=Offer)


def _offer_of(decision: "Decision", cls: Type[_O]) -> _O:
    """``cls`` built from an approved decision, each field checked present. A missing one is a
    service defect: naming it here beats handing out an object whose type promises a field it lacks."""
    values: Dict[str, Any] = {}
    for f in fields(cls):
        value = getattr(decision, f.name)
        if value is None:
            request_id = decision.last_response.request_id if decision.last_response else None
            raise ValueError(
                f"Approved decision {decision.decision_id} has no {f.name}: the service sent an incomplete offer"
                + (f" (request {request_id})" if request_id else "")
            )
        values[f.name] = value
    return cls(**values)


@dataclass(frozen=True)
class Decision:
    """Shapes: approved (all but ``estimated_completion_seconds``); declined (``decision_id``,
    ``application_id``, ``status``, ``outcome``, ``decline_reasons``); referred (declined plus
    ``kyc_tier``, ``kyc_status``, ``polling_url``); pending (``needs_consumer_action``:
    ``kyc_tier``, ``kyc_status``, ``outcome`` None, ``consumer_complete_url``, ``polling_url``,
    ``estimated_completion_seconds``, ``expires_at``)."""

    decision_id: str
    application_id: str
    status: str  # "complete" or "needs_consumer_action"
    outcome: Optional[str]  # "approved", "declined", "referred"; None while pending
    kyc_tier: Optional[str] = None  # "soft", "enhanced", "hard"
    kyc_status: Optional[str] = None  # "matched", "pending", "skipped"
    approved_amount: Optional[str] = None
    currency: Optional[str] = None
    apr: Optional[str] = None  # percent, two decimals
    term_months: Optional[int] = None
    payment_schedule: Optional[List[Payment]] = None
    tila_disclosure: Optional[TilaDisclosure] = None
    decline_reasons: Optional[List[DeclineReason]] = None
    consumer_complete_url: Optional[str] = None
    polling_url: Optional[str] = None
    estimated_completion_seconds: Optional[int] = None
    expires_at: Optional[str] = None  # ISO 8601
    #: The JSON object exactly as received.
    raw: Dict[str, Any] = field(default_factory=lambda: {}, repr=False, compare=False)
    #: Status, headers, request id, replay flag and retries of the response this came from.
    last_response: Optional[ResponseMeta] = field(default=None, repr=False, compare=False)

    @property
    def is_approved(self) -> bool:
        """Complete and approved: the offer (schedule, APR, TILA block) is on the decision."""
        return self.status == "complete" and self.outcome == "approved"

    @property
    def is_declined(self) -> bool:
        """Complete and declined: ``decline_reasons`` carries the adverse-action reasons. Not an error."""
        return self.status == "complete" and self.outcome == "declined"

    @property
    def is_referred(self) -> bool:
        """Complete and referred to your underwriters (may still change)."""
        return self.status == "complete" and self.outcome == "referred"

    @property
    def is_pending(self) -> bool:
        """Waiting for the consumer: send them to ``consumer_complete_url``, then poll."""
        return self.status == "needs_consumer_action"

    @property
    def offer(self) -> Optional[Offer]:
        """The approval's offer with every field set, None unless ``is_approved``: unlike the
        properties above it narrows, so under ``if d.offer is not None`` ``d.offer.apr`` is a ``str``.
        Raises ``ValueError`` when an approval lacks a field (a service defect). Not in ``to_dict()``."""
        return _offer_of(self, Offer) if self.is_approved else None

    def to_dict(self) -> Dict[str, Any]:
        """The fields exactly as received."""
        return copy.deepcopy(self.raw)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], last_response: Optional[ResponseMeta] = None) -> "Decision":
        return cls(
            decision_id=data["decision_id"],
            application_id=data["application_id"],
            status=data["status"],
            outcome=data.get("outcome"),
            kyc_tier=data.get("kyc_tier"),
            kyc_status=data.get("kyc_status"),
            approved_amount=data.get("approved_amount"),
            currency=data.get("currency"),
            apr=data.get("apr"),
            term_months=data.get("term_months"),
            payment_schedule=_payment_schedule_of(data.get("payment_schedule")),
            tila_disclosure=_tila_disclosure_of(data.get("tila_disclosure")),
            decline_reasons=_decline_reasons_of(data.get("decline_reasons")),
            consumer_complete_url=data.get("consumer_complete_url"),
            polling_url=data.get("polling_url"),
            estimated_completion_seconds=data.get("estimated_completion_seconds"),
            expires_at=data.get("expires_at"),
            raw=copy.deepcopy(dict(data)),
            last_response=last_response,
        )


# The wire shapes of a decision's nested objects, as the service sends them (docs/openapi.json).


class _PaymentJson(TypedDict):
    num: int
    due_date: str
    amount: str


class _TilaDisclosureJsonRequired(TypedDict):
    amount_financed: str
    finance_charge: str
    total_of_payments: str
    apr: str
    payment_frequency: str


class _TilaDisclosureJson(_TilaDisclosureJsonRequired, total=False):
    total_down_payment: str  # indirect auto loans only
    total_sale_price: str


class _DeclineReasonJson(TypedDict):
    code: str
    reason: str


# Each takes the field as parsed from the service's JSON: an array (or object) as documented
# above, else None (a shape without it).


def _payment_schedule_of(value: object) -> Optional[List[Payment]]:
    if not isinstance(value, list):
        return None
    return [Payment(num=p["num"], due_date=p["due_date"], amount=p["amount"]) for p in cast(List[_PaymentJson], value)]


def _tila_disclosure_of(value: object) -> Optional[TilaDisclosure]:
    if not isinstance(value, dict):
        return None
    tila = cast(_TilaDisclosureJson, value)
    return TilaDisclosure(
        amount_financed=tila["amount_financed"],
        finance_charge=tila["finance_charge"],
        total_of_payments=tila["total_of_payments"],
        apr=tila["apr"],
        payment_frequency=tila["payment_frequency"],
        total_down_payment=tila.get("total_down_payment"),
        total_sale_price=tila.get("total_sale_price"),
    )


def _decline_reasons_of(value: object) -> Optional[List[DeclineReason]]:
    if not isinstance(value, list):
        return None
    return [DeclineReason(code=r["code"], reason=r["reason"]) for r in cast(List[_DeclineReasonJson], value)]


@dataclass(frozen=True)
class AutoLoanDecision(Decision):
    """An auto-loan decision: the same shapes and helpers as ``Decision``; an approval also carries
    the rates, the dealer's reserve and the loan-to-value (``None`` on the other shapes).
    ``approved_amount`` is the amount financed (``loan.amount - down_payment - trade_in_value``) and
    ``apr`` the Appendix J APR of the monthly schedule at the contract rate."""

    buy_rate: Optional[str] = None  # the lender's risk-based rate, percent ("6.49")
    contract_rate: Optional[str] = None  # buy rate + dealer markup (= buy_rate for direct loans), percent
    dealer_reserve: Optional[str] = None  # money, "0.00" for direct loans
    ltv: Optional[str] = None  # amount financed / vehicle value x 100, percent

    @property
    def offer(self) -> Optional[AutoLoanOffer]:
        """``Decision.offer`` plus the rates, the dealer's reserve and the LTV, every one set."""
        return _offer_of(self, AutoLoanOffer) if self.is_approved else None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], last_response: Optional[ResponseMeta] = None) -> "AutoLoanDecision":
        base = Decision.from_dict(data, last_response)
        shared = {f.name: getattr(base, f.name) for f in fields(Decision)}
        return cls(
            **shared,
            buy_rate=data.get("buy_rate"),
            contract_rate=data.get("contract_rate"),
            dealer_reserve=data.get("dealer_reserve"),
            ltv=data.get("ltv"),
        )
