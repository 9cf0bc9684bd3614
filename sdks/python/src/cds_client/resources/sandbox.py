"""``client.sandbox.verification``: the sandbox test helper
POST /v1/sandbox/decisions/{decision_id}/verification (sandbox keys only; 404 with a live key)."""
import urllib.parse
from typing import Optional

from .._core.http import HttpCore
from ..models import Decision
from ..types import SandboxVerificationResult


class SandboxVerification:
    def __init__(self, core: HttpCore) -> None:
        self._core = core

    def complete(
        self,
        decision_id: str,
        result: SandboxVerificationResult,
        *,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
    ) -> Decision:
        """Pass or fail the identity verification of a pending sandbox decision, as if the consumer
        had done it on the hosted page. Returns the decision in its new state (``pass``: the engine
        decides; ``fail``: referred with AA-24). On a decision no longer pending nothing changes."""
        path = f"/v1/sandbox/decisions/{urllib.parse.quote(decision_id, safe='')}/verification"
        data, meta = self._core.request(
            "POST", path, {"result": result}, idempotency_key=idempotency_key, timeout=timeout, max_retries=max_retries
        )
        return Decision.from_dict(data, meta)


class Sandbox:
    def __init__(self, core: HttpCore) -> None:
        #: ``complete(decision_id, "pass" | "fail")``.
        self.verification = SandboxVerification(core)
