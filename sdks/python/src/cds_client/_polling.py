"""Waiting for a pending decision to complete.

The service recommends one poll every 2-3 s, so the interval is clamped to that range (2.5 s by
default); ``clamp_interval=False`` lifts the clamp for tests against a fake server. The loop stops
at the first ``complete`` state, at the deadline (PollTimeoutError carrying the last pending state),
or when ``cancel`` is set (APIUserAbortError). Each poll is an ordinary GET with the client's
retries and time-out. Polls are never closer than 2 s (or the unclamped interval): the last one
before the deadline is made at the deadline only when that is far enough from the one before;
otherwise the loop waits the deadline out and stops with the state it has.
"""
import threading
import time
from typing import Callable, Optional, TypeVar

from ._core.http import sleep
from .errors import APIUserAbortError, PollTimeoutError
from .models import Decision

D = TypeVar("D", bound=Decision)

MIN_INTERVAL = 2.0
DEFAULT_INTERVAL = 2.5
MAX_INTERVAL = 3.0
#: Default overall limit: the hard tier estimates 600 s; longer, the caller waits again.
DEFAULT_TIMEOUT = 15 * 60.0


def poll_interval(interval: float = DEFAULT_INTERVAL, clamp_interval: bool = True) -> float:
    if interval < 0:
        raise ValueError("interval must be a non-negative number of seconds.")
    if not clamp_interval:
        return float(interval)
    return min(MAX_INTERVAL, max(MIN_INTERVAL, float(interval)))


def wait_until_complete(
    fetch_once: Callable[[], D],
    *,
    interval: float = DEFAULT_INTERVAL,
    timeout: Optional[float] = DEFAULT_TIMEOUT,
    deadline: Optional[float] = None,
    clamp_interval: bool = True,
    cancel: Optional[threading.Event] = None,
    on_pending: Optional[Callable[[D], None]] = None,
) -> D:
    wait = poll_interval(interval, clamp_interval)
    # The least time between two polls: the service's 2 s, or the interval a test asked for.
    min_gap = MIN_INTERVAL if clamp_interval else wait
    if deadline is not None:
        # ``deadline`` is wall-clock (time.time()); the loop measures with the monotonic clock.
        ends_at = time.monotonic() + (deadline - time.time())
    else:
        ends_at = time.monotonic() + (DEFAULT_TIMEOUT if timeout is None else timeout)
    while True:
        if cancel is not None and cancel.is_set():
            raise APIUserAbortError("Cancelled.")
        decision = fetch_once()
        if not decision.is_pending:
            return decision
        if on_pending is not None:
            on_pending(decision)
        remaining = ends_at - time.monotonic()
        if remaining < min_gap:
            if remaining > 0:
                sleep(remaining, cancel)
            raise PollTimeoutError(f"Decision {decision.decision_id} is still pending at the polling deadline.", decision)
        sleep(min(wait, remaining), cancel)
