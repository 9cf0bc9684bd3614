"""The entry point: ``CreditDecisions(api_key=..., base_url=...)``. The key decides the environment
(``svc_test_`` sandbox, ``svc_live_`` live); the address is the same for both."""
from typing import Mapping, Optional

from ._core.http import DEFAULT_TIMEOUT, HttpCore
from .resources.decisions import Decisions
from .resources.events import Events
from .resources.sandbox import Sandbox
from .webhooks import Webhooks


class CreditDecisions:
    """Client of the Credit Decisioning Service.

    :param api_key: ``svc_test_...`` (sandbox) or ``svc_live_...`` (live).
    :param base_url: the service address, e.g. ``http://127.0.0.1:3000``.
    :param max_retries: retries after the first attempt (2); 0 disables them.
    :param timeout: seconds for connecting and for each read of an attempt (30).
    :param retry_rate_limited: also retry 429 after ``Retry-After`` (False).
    :param initial_retry_delay: first backoff delay in seconds (0.5), doubling per retry.
    :param max_retry_delay: cap of the backoff delay in seconds (8).
    :param max_retry_after: a ``Retry-After`` longer than this (60 s) is not waited for.
    :param default_headers: extra headers on every request.
    """

    def __init__(
        self,
        api_key: str,
        base_url: str,
        *,
        max_retries: int = 2,
        timeout: float = DEFAULT_TIMEOUT,
        retry_rate_limited: bool = False,
        initial_retry_delay: float = 0.5,
        max_retry_delay: float = 8.0,
        max_retry_after: float = 60.0,
        default_headers: Optional[Mapping[str, str]] = None,
    ) -> None:
        core = HttpCore(
            api_key,
            base_url,
            max_retries=max_retries,
            timeout=timeout,
            retry_rate_limited=retry_rate_limited,
            initial_retry_delay=initial_retry_delay,
            max_retry_delay=max_retry_delay,
            max_retry_after=max_retry_after,
            default_headers=default_headers,
        )
        #: The service address used.
        self.base_url: str = core.base_url
        #: Decisions: ``decisions.bnpl`` and ``decisions.auto_loan``, each with ``create / retrieve / wait_for_completion``.
        self.decisions = Decisions(core)
        #: Sandbox test helpers: ``sandbox.verification.complete(decision_id, "pass" | "fail")``.
        self.sandbox = Sandbox(core)
        #: The event history: ``events.list(...)`` (a page; ``.auto_paging_iter()`` for all) and ``events.retrieve(id)``.
        self.events = Events(core)
        #: Webhook signature helpers (no API call): ``verify``, ``generate_test_header``.
        self.webhooks = Webhooks()
