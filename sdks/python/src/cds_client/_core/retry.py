"""When to retry, and how long to wait: pure functions of the attempt's outcome, the attempt
number and the policy (randomness passed in), so the rules are tested without a network or a clock.

- Connection errors and time-outs: retried (a POST carries the same Idempotency-Key on every
  attempt, so the service does the work at most once).
- 5xx: retried; nothing was committed and 5xx answers are never stored with a key.
- 429: retried only when the caller opts in (``retry_rate_limited``), after ``Retry-After``.
- 409 ``idempotency_conflict`` on a *retry* of a POST: our own earlier attempt is still running on
  the service (the body is identical on every attempt, so it cannot be a different request); the
  service's docs say to retry it with the same key. A 409 on the first attempt is never retried.
- Every other 4xx: never retried; the request must be fixed.

Delay before retry n (1, 2, ...): ``Retry-After`` when the answer has one (exactly; an answer asking
for more than ``max_retry_after`` is not retried), else
min(initial_delay * 2 ** (n - 1), max_delay) scaled by a random factor in (0.75, 1].
"""
from dataclasses import dataclass
from typing import Mapping, Optional, Tuple

from ..errors import parse_retry_after


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 2
    initial_delay: float = 0.5
    max_delay: float = 8.0
    #: A ``Retry-After`` longer than this (seconds) is not waited for: the error is raised instead.
    max_retry_after: float = 60.0
    retry_rate_limited: bool = False


@dataclass(frozen=True)
class AttemptOutcome:
    """``kind`` is ``connection``, ``timeout`` or ``response`` (then status, code and headers)."""

    kind: str
    status: Optional[int] = None
    code: Optional[str] = None
    headers: Optional[Mapping[str, str]] = None


def backoff_delay(retry: int, policy: RetryPolicy, random_value: float) -> float:
    """Backoff (without ``Retry-After``) before retry number ``retry`` (1-based); random in [0, 1)."""
    base: float = min(policy.initial_delay * float(2 ** (retry - 1)), policy.max_delay)
    return base * (1.0 - 0.25 * random_value)


def decide_retry(
    outcome: AttemptOutcome,
    attempt: int,
    method: str,
    policy: RetryPolicy,
    random_value: float,
    now: Optional[float] = None,
) -> Tuple[bool, float]:
    """(retry?, delay in seconds) after attempt number ``attempt`` (0 = the first)."""
    if attempt >= policy.max_retries:
        return False, 0.0
    backoff = backoff_delay(attempt + 1, policy, random_value)
    if outcome.kind != "response":
        return True, backoff
    status = outcome.status or 0
    retryable = (
        status >= 500
        or (status == 429 and policy.retry_rate_limited)
        or (status == 409 and outcome.code == "idempotency_conflict" and method == "POST" and attempt >= 1)
    )
    if not retryable:
        return False, 0.0
    retry_after = parse_retry_after((outcome.headers or {}).get("retry-after"), now)
    if retry_after is None:
        return True, backoff
    if retry_after > policy.max_retry_after:
        return False, 0.0
    return True, retry_after
