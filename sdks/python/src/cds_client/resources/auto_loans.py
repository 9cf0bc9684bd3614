"""``client.decisions.auto_loan``: POST /v1/decisions/auto-loan, GET /v1/decisions/auto-loan/{decision_id},
and ``wait_for_completion`` built on the GET.

The same envelope, errors, idempotency and tiers as BNPL: a decline is a decision (``is_declined``),
an amount on the enhanced or hard tier may come back pending (``is_pending``) until the consumer
verifies, and every create carries one Idempotency-Key (yours, or one generated for the call)
across its retries.
"""
import threading
import urllib.parse
from typing import Any, Callable, Dict, Optional, Union, cast

from .._core.http import HttpCore
from .._polling import DEFAULT_INTERVAL, DEFAULT_TIMEOUT, wait_until_complete
from ..models import AutoLoanDecision
from ..types import AdverseActionNotice, AutoLoanChannel, AutoLoanTermsParams, ConsumerParams, DealerParams, VehicleParams

_PATH = "/v1/decisions/auto-loan"


class AutoLoanDecisions:
    def __init__(self, core: HttpCore) -> None:
        self._core = core

    def create(
        self,
        *,
        consumer: ConsumerParams,
        vehicle: VehicleParams,
        loan: AutoLoanTermsParams,
        channel: AutoLoanChannel,
        dealer: Optional[DealerParams] = None,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
    ) -> AutoLoanDecision:
        """Request an auto-loan decision: ``channel="direct"``, or ``"indirect"`` with ``dealer``
        (a dealer of your network and its markup).

        Returns the decision whatever the outcome. An unknown or disabled dealer, a markup above
        the cap or an amount outside policy raises UnprocessableEntityError (422).
        """
        body: Dict[str, Any] = {"consumer": consumer, "vehicle": vehicle, "loan": loan, "channel": channel}
        if dealer is not None:
            body["dealer"] = dealer
        data, meta = self._core.request(
            "POST",
            _PATH,
            body,
            idempotency_key=idempotency_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_rate_limited=retry_rate_limited,
        )
        return AutoLoanDecision.from_dict(data, meta)

    def retrieve(
        self,
        decision_id: str,
        *,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
    ) -> AutoLoanDecision:
        """The decision in its current state."""
        path = f"{_PATH}/{urllib.parse.quote(decision_id, safe='')}"
        data, meta = self._core.request(
            "GET", path, timeout=timeout, max_retries=max_retries, retry_rate_limited=retry_rate_limited, cancel=cancel
        )
        return AutoLoanDecision.from_dict(data, meta)

    def adverse_action_notice(
        self,
        decision_id: str,
        *,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
    ) -> AdverseActionNotice:
        """The adverse-action notice of a declined decision or a counteroffer (Regulation B).

        Reasons, the consumer-report disclosure, the ECOA notice and the date it must be sent by,
        without the applicant's name and address. A decision that took no adverse action raises
        NoAdverseActionError.
        """
        path = f"{_PATH}/{urllib.parse.quote(decision_id, safe='')}/adverse-action-notice"
        data, _meta = self._core.request(
            "GET", path, timeout=timeout, max_retries=max_retries, retry_rate_limited=retry_rate_limited, cancel=cancel
        )
        return cast(AdverseActionNotice, data)

    def wait_for_completion(
        self,
        decision: Union[str, AutoLoanDecision],
        *,
        interval: float = DEFAULT_INTERVAL,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        deadline: Optional[float] = None,
        clamp_interval: bool = True,
        cancel: Optional[threading.Event] = None,
        on_pending: Optional[Callable[[AutoLoanDecision], None]] = None,
    ) -> AutoLoanDecision:
        """Poll until the decision is complete and return it (the same options as
        ``decisions.bnpl.wait_for_completion``: 2.5 s between polls, clamped to 2-3 s; 15 minutes)."""
        decision_id = decision if isinstance(decision, str) else decision.decision_id
        return wait_until_complete(
            lambda: self.retrieve(decision_id, cancel=cancel),
            interval=interval,
            timeout=timeout,
            deadline=deadline,
            clamp_interval=clamp_interval,
            cancel=cancel,
            on_pending=on_pending,
        )
