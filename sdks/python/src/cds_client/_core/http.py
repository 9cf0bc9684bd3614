"""The transport: one logical call = one ``request()``, which may make several HTTP attempts.

1. A POST gets its Idempotency-Key here, once, before the first attempt: the caller's key, or
   ``cds-python-retry-<uuid4>``. Every retry of the call sends the same key, so a retry after a
   dropped connection gets the stored answer instead of a second decision.
2. Each attempt uses ``urllib`` (standard library only) with a time-out for connecting and for
   each read.
3. After an attempt, ``decide_retry`` (retry.py) says whether to try again and how long to wait.
4. A 2xx returns the parsed body and the response metadata; anything else raises the exception
   class of its code (errors.py).
"""
import http.client
import json
import platform
import random
import re
import socket
import threading
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .._version import __version__
from ..errors import (
    APIConnectionError,
    APITimeoutError,
    APIUserAbortError,
    CreditDecisionsError,
    error_from_response,
)
from .retry import AttemptOutcome, RetryPolicy, decide_retry

DEFAULT_TIMEOUT = 30.0


@dataclass(frozen=True)
class ResponseMeta:
    """What the last HTTP response of a call looked like."""

    status: int
    #: Response headers, names in lower case.
    headers: Dict[str, str] = field(default_factory=lambda: {})
    #: ``Request-Id`` of the response (for a replay: the id of the original request).
    request_id: Optional[str] = None
    #: True when the service replayed a stored answer for this Idempotency-Key.
    idempotent_replayed: bool = False
    #: The Idempotency-Key sent (POST only).
    idempotency_key: Optional[str] = None
    #: Retries it took (0 when the first attempt answered).
    retries: int = 0


def _json_default(value: Any) -> Any:
    # Decimal amounts go out as exact strings ("149.97"), never through binary floating point.
    # Trailing zeros that Decimal arithmetic leaves (Decimal("10.00") * Decimal("1.5") is
    # Decimal("15.0000")) are dropped to two decimals when that changes no digit: the service takes
    # at most two. A value with more digits than that is sent as it is, for the service to refuse.
    if isinstance(value, Decimal):
        try:
            cents = value.quantize(Decimal("0.01"))
        except InvalidOperation:
            return format(value, "f")
        return format(cents if cents == value else value, "f")
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _Failed(Exception):
    def __init__(self, outcome: AttemptOutcome, error: CreditDecisionsError) -> None:
        super().__init__(str(error))
        self.outcome = outcome
        self.error = error


class HttpCore:
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
        if not isinstance(api_key, str) or not api_key:
            raise ValueError("CreditDecisions: api_key is required (svc_test_... or svc_live_...).")
        # A key with a space or a non-ASCII character (a pasted placeholder, say) could never be sent.
        if not _PRINTABLE_KEY.match(api_key):
            raise ValueError(
                "CreditDecisions: api_key must be the key as the portal showed it (printable ASCII, no spaces): svc_test_... or svc_live_..."
            )
        if not isinstance(base_url, str) or not (base_url.startswith("http://") or base_url.startswith("https://")):
            raise ValueError('CreditDecisions: base_url is required, e.g. "http://127.0.0.1:3000".')
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._timeout = timeout
        self._policy = RetryPolicy(
            max_retries=max_retries,
            initial_delay=initial_retry_delay,
            max_delay=max_retry_delay,
            max_retry_after=max_retry_after,
            retry_rate_limited=retry_rate_limited,
        )
        self._default_headers = dict(default_headers or {})
        # The service never redirects. urllib would follow one and send the key (and a POST's body,
        # turned into a GET) wherever it points; a 3xx is answered as an error instead.
        self._opener = urllib.request.build_opener(_NoRedirects())

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        idempotency_key: Optional[str] = None,
        timeout: Optional[float] = None,
        max_retries: Optional[int] = None,
        retry_rate_limited: Optional[bool] = None,
        cancel: Optional[threading.Event] = None,
    ) -> Tuple[Any, ResponseMeta]:
        policy = RetryPolicy(
            max_retries=self._policy.max_retries if max_retries is None else max_retries,
            initial_delay=self._policy.initial_delay,
            max_delay=self._policy.max_delay,
            max_retry_after=self._policy.max_retry_after,
            retry_rate_limited=self._policy.retry_rate_limited if retry_rate_limited is None else retry_rate_limited,
        )
        attempt_timeout = self._timeout if timeout is None else timeout
        key: Optional[str] = None
        if method == "POST":
            key = idempotency_key if idempotency_key is not None else f"cds-python-retry-{uuid.uuid4()}"
            if not _IDEMPOTENCY_KEY.match(key):
                raise ValueError("CreditDecisions: idempotency_key must be 1 to 255 printable ASCII characters.")
        headers: Dict[str, str] = dict(self._default_headers)
        headers.update(
            {
                "Accept": "application/json",
                "Authorization": f"Bearer {self._api_key}",
                "User-Agent": f"cds-python/{__version__} python/{platform.python_version()}",
            }
        )
        data: Optional[bytes] = None
        if body is not None:
            data = json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=_json_default).encode("utf-8")
            headers["Content-Type"] = "application/json"
        if key is not None:
            headers["Idempotency-Key"] = key
        url = self.base_url + path

        attempt = 0
        while True:
            _check_cancel(cancel)
            try:
                status, response_headers, payload = self._attempt(method, url, headers, data, attempt_timeout)
            except _Failed as failed:
                retry, delay = decide_retry(failed.outcome, attempt, method, policy, random.random())
                if not retry:
                    raise failed.error from None
                sleep(delay, cancel)
                attempt += 1
                continue
            meta = ResponseMeta(
                status=status,
                headers=response_headers,
                request_id=response_headers.get("request-id"),
                idempotent_replayed=response_headers.get("idempotent-replayed") == "true",
                idempotency_key=key,
                retries=attempt,
            )
            return payload, meta

    def _attempt(
        self, method: str, url: str, headers: Mapping[str, str], data: Optional[bytes], timeout: float
    ) -> Tuple[int, Dict[str, str], Any]:
        request = urllib.request.Request(url, data=data, headers=dict(headers), method=method)
        # Set before anything can fail, so both branches below have it: the whole body (an error's
        # too) must arrive within ``timeout`` of the attempt's start.
        deadline = time.monotonic() + timeout
        try:
            try:
                with self._opener.open(request, timeout=timeout) as response:
                    status = int(response.status)
                    response_headers = {k.lower(): v for k, v in response.headers.items()}
                    body = _read_until(response, deadline)
            except urllib.error.HTTPError as http_error:
                status = int(http_error.code)
                response_headers = {k.lower(): v for k, v in (http_error.headers or {}).items()}
                try:
                    body = _read_until(http_error, deadline)
                finally:
                    http_error.close()
        except urllib.error.URLError as error:
            if isinstance(error.reason, (socket.timeout, TimeoutError)):
                raise _Failed(AttemptOutcome("timeout"), APITimeoutError(f"Request timed out after {timeout} s.")) from error
            raise _Failed(AttemptOutcome("connection"), APIConnectionError(f"Connection error: {error.reason}")) from error
        except (socket.timeout, TimeoutError) as error:
            raise _Failed(AttemptOutcome("timeout"), APITimeoutError(f"Request timed out after {timeout} s.")) from error
        except (http.client.HTTPException, OSError) as error:
            raise _Failed(AttemptOutcome("connection"), APIConnectionError(f"Connection error: {error!r}")) from error

        if 200 <= status < 300:
            try:
                return status, response_headers, json.loads(body.decode("utf-8"))
            except ValueError as error:
                # A 2xx that is not JSON came from something between us and the service: a
                # transport failure (retrying is safe: same Idempotency-Key).
                failure = APIConnectionError(
                    f"Invalid JSON in a {status} response.",
                    status=status,
                    headers=response_headers,
                    request_id=response_headers.get("request-id"),
                    body=body.decode("utf-8", errors="replace"),
                )
                raise _Failed(AttemptOutcome("connection"), failure) from error
        api_error = error_from_response(status, response_headers, body)
        raise _Failed(AttemptOutcome("response", status, api_error.code, response_headers), api_error)


_PRINTABLE_KEY = re.compile(r"[\x21-\x7e]+\Z")
_IDEMPOTENCY_KEY = re.compile(r"[\x20-\x7e]{1,255}\Z")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        return None  # urllib then raises HTTPError for the 3xx, answered like any other status


def _read_until(response: Union[http.client.HTTPResponse, urllib.error.HTTPError], deadline: float) -> bytes:
    """The whole body, or a time-out once ``deadline`` passes: the socket's time-out bounds each
    read only, so a body trickling in a byte at a time would otherwise never time out."""
    chunks: List[bytes] = []
    while True:
        if time.monotonic() > deadline:
            raise socket.timeout("the response body did not arrive in time")
        chunk = response.read1(65536)  # what has arrived, up to 64 KiB (HTTPError hands this to its response)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def _check_cancel(cancel: Optional[threading.Event]) -> None:
    if cancel is not None and cancel.is_set():
        raise APIUserAbortError("Cancelled.")


def sleep(seconds: float, cancel: Optional[threading.Event] = None) -> None:
    """Wait, or raise APIUserAbortError as soon as ``cancel`` is set."""
    if cancel is None:
        time.sleep(max(0.0, seconds))
        return
    if cancel.wait(max(0.0, seconds)):
        raise APIUserAbortError("Cancelled.")


