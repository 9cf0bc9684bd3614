"""Webhook signatures.

Every delivery carries ``Svc-Signature: t=<unix seconds>,v1=<hex>`` where ``v1`` is the lowercase
hex HMAC-SHA256, keyed with the endpoint's signing secret as written (the UTF-8 bytes of the whole
``whsec_...`` string), of ``<t>.<raw body>``. During a secret rotation the header carries one ``v1``
per secret.

``verify`` accepts the request when any ``v1`` matches the HMAC of any trusted secret (compared in
constant time) and ``t`` is within ``tolerance`` (300) seconds of now, in either direction: an old
``t`` is a replay, and one far in the future cannot come from the service. It returns the parsed
event, or raises WebhookVerificationError. ``generate_test_header`` signs a payload the same way,
so you can test your own receiver.
"""
import hashlib
import hmac
import json
import re
import time
from typing import List, Optional, Sequence, Tuple, Union, cast

from .errors import WebhookVerificationError
from .types import WebhookEvent

__all__ = [
    "SIGNATURE_HEADER",
    "DEFAULT_TOLERANCE",
    "verify",
    "verify_signature",
    "generate_test_header",
    "compute_signature",
    "parse_signature_header",
    "Webhooks",
]

SIGNATURE_HEADER = "Svc-Signature"
DEFAULT_TOLERANCE = 300

RawBody = Union[bytes, bytearray, memoryview, str]
Secrets = Union[str, Sequence[str]]

_TIMESTAMP = re.compile(r"^\d{1,15}$")


def _to_bytes(body: RawBody) -> bytes:
    if isinstance(body, str):
        return body.encode("utf-8")
    if isinstance(body, (bytes, bytearray, memoryview)):
        return bytes(body)
    raise WebhookVerificationError(
        "The webhook body must be the raw request body (bytes or str), not a parsed object: "
        "read the body before any JSON parsing (e.g. request.get_data() in Flask)."
    )


def _secret_list(secrets: Secrets) -> List[str]:
    items = [secrets] if isinstance(secrets, str) else list(secrets)
    if not items or any(not isinstance(s, str) or not s for s in items):
        raise ValueError("webhooks: at least one non-empty signing secret (whsec_...) is required.")
    return items


def compute_signature(body: RawBody, secret: str, timestamp: int) -> str:
    """The hex ``v1`` signature of ``body`` at ``timestamp`` with ``secret``."""
    message = f"{timestamp}.".encode("utf-8") + _to_bytes(body)
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def parse_signature_header(header: str) -> Tuple[Optional[int], List[str]]:
    """Parse ``t=...,v1=...[,v1=...]`` into (timestamp, signatures); other schemes are ignored."""
    timestamp: Optional[int] = None
    signatures: List[str] = []
    for part in header.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            continue
        if key == "t" and _TIMESTAMP.match(value):
            timestamp = int(value)
        elif key == "v1" and value:
            signatures.append(value)
    return timestamp, signatures


def verify(
    raw_body: RawBody,
    header: Optional[str],
    secrets: Secrets,
    tolerance: int = DEFAULT_TOLERANCE,
    now: Optional[int] = None,
) -> WebhookEvent:
    """Verify a delivery and return its event (the parsed JSON envelope).

    ``raw_body`` must be the bytes as received (a re-serialised body does not verify); ``header`` is
    the ``Svc-Signature`` value; ``secrets`` one secret or several (rotation overlap).
    """
    secret_list = _secret_list(secrets)
    body = _to_bytes(raw_body)
    if not isinstance(header, str) or not header:
        raise WebhookVerificationError(f"Missing {SIGNATURE_HEADER} header.")
    timestamp, signatures = parse_signature_header(header)
    if timestamp is None or not signatures:
        raise WebhookVerificationError(f"Malformed {SIGNATURE_HEADER} header: expected t=<unix seconds>,v1=<hex>.")
    current = int(time.time()) if now is None else int(now)
    if abs(current - timestamp) > tolerance:
        if current > timestamp:
            raise WebhookVerificationError(
                f"Signature timestamp is {current - timestamp} s old (more than {tolerance} s): possible replay."
            )
        raise WebhookVerificationError(f"Signature timestamp is {timestamp - current} s in the future (more than {tolerance} s).")
    matched = False
    for secret in secret_list:
        expected = compute_signature(body, secret, timestamp)
        for candidate in signatures:
            # Every pair is compared (no early exit), each in constant time.
            if hmac.compare_digest(candidate.encode("utf-8"), expected.encode("utf-8")):
                matched = True
    if not matched:
        raise WebhookVerificationError("No signature matches the payload with the given secret(s).")
    try:
        return cast(WebhookEvent, json.loads(body.decode("utf-8")))
    except ValueError as error:
        raise WebhookVerificationError("The signed payload is not JSON.") from error


#: The same as ``verify`` (the name used in the service's documentation).
verify_signature = verify


def generate_test_header(payload: RawBody, secret: Secrets, timestamp: Optional[int] = None) -> str:
    """A ``Svc-Signature`` value for ``payload``, as the service would send it (one ``v1`` per secret)."""
    t = int(time.time()) if timestamp is None else int(timestamp)
    parts = [f"v1={compute_signature(payload, s, t)}" for s in _secret_list(secret)]
    return ",".join([f"t={t}"] + parts)


class Webhooks:
    """The webhook helpers as one object (``client.webhooks``); the module functions are the same."""

    SIGNATURE_HEADER = SIGNATURE_HEADER
    DEFAULT_TOLERANCE = DEFAULT_TOLERANCE
    verify = staticmethod(verify)
    verify_signature = staticmethod(verify)
    generate_test_header = staticmethod(generate_test_header)
    compute_signature = staticmethod(compute_signature)
    parse_signature_header = staticmethod(parse_signature_header)
