"""``client.decisions.bnpl``: POST /v1/decisions/bnpl, GET /v1/decisions/bnpl/{decision_id},
``wait_for_completion`` built on the GET, and the decision's adverse-action notice."""
import threading
import urllib.parse
from typing import Any, Callable, Dict, Optional, Union, cast

from .._core.http import HttpCore
from .._polling import DEFAULT_INTERVAL, DEFAULT_TIMEOUT, wait_until_complete
from ..models import Decision
from ..types import AdverseActionNotice, ConsumerParams, OrderParams, PlanPreference, TransactionParams
from .auto_loans import AutoLoanDecisions


class BnplDecisions:
    def __init__(self, core: HttpCore) -> None:
        self._core = core

    def create(
        self,
        *,
        consumer: ConsumerParams,
        transaction: Optional[TransactionParams] = None,
        order: Optional[OrderParams] = None,
        plan_preference: Optional[PlanPreference] = None,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
    ) -> Decision:
        """Request a BNPL decision (``transaction`` or ``order``, never both).

        Returns the decision whatever the outcome: approved, declined (``is_declined``), referred,
        or pending verification (``is_pending``). Retries carry the same Idempotency-Key (yours, or
        one generated for this call).
        """
        body: Dict[str, Any] = {"consumer": consumer}
        if transaction is not None:
            body["transaction"] = transaction
        if order is not None:
            body["order"] = order
        if plan_preference is not None:
            body["plan_preference"] = plan_preference
        data, meta = self._core.request(
            "POST",
            "/v1/decisions/bnpl",
            body,
            idempotency_key=idempotency_key,
            timeout=timeout,
            max_retries=max_retries,
            retry_rate_limited=retry_rate_limited,
        )
        return Decision.from_dict(data, meta)

    def retrieve(
        self,
        decision_id: str,
        *,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
    ) -> Decision:
        """The decision in its current state."""
        path = f"/v1/decisions/bnpl/{urllib.parse.quote(decision_id, safe='')}"
        data, meta = self._core.request(
            "GET", path, timeout=timeout, max_retries=max_retries, retry_rate_limited=retry_rate_limited, cancel=cancel
        )
        return Decision.from_dict(data, meta)

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
        path = f"/v1/decisions/bnpl/{urllib.parse.quote(decision_id, safe='')}/adverse-action-notice"
        data, _meta = self._core.request(
            "GET", path, timeout=timeout, max_retries=max_retries, retry_rate_limited=retry_rate_limited, cancel=cancel
        )
        return cast(AdverseActionNotice, data)

    def wait_for_completion(
        self,
        decision: Union[str, Decision],
        *,
        interval: float = DEFAULT_INTERVAL,
        timeout: Optional[float] = DEFAULT_TIMEOUT,
        deadline: Optional[float] = None,
        clamp_interval: bool = True,
        cancel: Optional[threading.Event] = None,
        on_pending: Optional[Callable[[Decision], None]] = None,
    ) -> Decision:
        """Poll until the decision is complete and return it.

        ``interval`` seconds between polls (2.5; clamped to the recommended 2-3 s unless
        ``clamp_interval=False``); gives up after ``timeout`` seconds (15 minutes) or at
        ``deadline`` (a ``time.time()`` value) with PollTimeoutError; ``cancel`` (a
        ``threading.Event``) stops it with APIUserAbortError.
        """
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


class Decisions:
    def __init__(self, core: HttpCore) -> None:
        #: BNPL decisions: ``create``, ``retrieve``, ``wait_for_completion``.
        self.bnpl = BnplDecisions(core)
        #: Auto loans, direct and indirect: ``create``, ``retrieve``, ``wait_for_completion``.
        self.auto_loan = AutoLoanDecisions(core)
