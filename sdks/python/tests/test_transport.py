"""Transport behaviour against a scripted local HTTP server: retries and their bounds, one
Idempotency-Key per call reused on every retry, Retry-After, which answers are never retried,
the exception class of every catalogue code, time-outs, cancellation and polling."""
import json
import re
import threading
import time
import unittest
from decimal import Decimal
from typing import Any, Dict, List

import support  # noqa: F401  (puts ../src on sys.path)
from support import FakeServer, declined_decision, error_body, pending_decision

import cds_client
from cds_client import (
    APIConnectionError,
    APITimeoutError,
    APIUserAbortError,
    AuthenticationError,
    CreditDecisions,
    CreditDecisionsError,
    IdempotencyConflictError,
    InternalServerError,
    InvalidRequestError,
    MethodNotAllowedError,
    NotFoundError,
    PayloadTooLargeError,
    PollTimeoutError,
    ProductNotAvailableError,
    RateLimitError,
    ServiceUnavailableError,
    UnprocessableEntityError,
    UnsupportedMediaTypeError,
)
from cds_client._core.retry import AttemptOutcome, RetryPolicy, backoff_delay, decide_retry
from cds_client._polling import poll_interval
from cds_client.errors import parse_retry_after

ID = "6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10"
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
CONSUMER = {"consumer_id": "11111111-1111-4111-8111-111111111111"}
TRANSACTION = {"amount": "149.97", "currency": "USD", "merchant_name": "Acme", "merchant_category": "furniture"}


class TransportTest(unittest.TestCase):
    fake: FakeServer

    @classmethod
    def setUpClass(cls) -> None:
        cls.fake = FakeServer()

    @classmethod
    def tearDownClass(cls) -> None:
        cls.fake.close()

    def client(self, **options: Any) -> CreditDecisions:
        settings: Dict[str, Any] = {"initial_retry_delay": 0.005, "max_retry_delay": 0.02}
        settings.update(options)
        return CreditDecisions(api_key="svc_test_fake", base_url=self.fake.base_url, **settings)

    def create(self, client: CreditDecisions, **kwargs: Any) -> cds_client.Decision:
        return client.decisions.bnpl.create(consumer=CONSUMER, transaction=TRANSACTION, **kwargs)  # type: ignore[arg-type]

    def keys(self) -> List[Any]:
        return [r.headers.get("idempotency-key") for r in self.fake.requests]

    # -- retries and idempotency keys ------------------------------------------------------

    def test_dropped_connections_are_retried_with_one_generated_key(self) -> None:
        self.fake.script(["drop", "drop", {"status": 200, "body": declined_decision(ID)}])
        decision = self.create(self.client())
        self.assertTrue(decision.is_declined)
        self.assertEqual(len(self.fake.requests), 3)
        keys = self.keys()
        self.assertEqual(len(set(keys)), 1)
        self.assertTrue(keys[0].startswith("cds-python-retry-"))
        self.assertRegex(keys[0][len("cds-python-retry-"):], UUID)
        bodies = {r.body for r in self.fake.requests}
        self.assertEqual(len(bodies), 1)
        self.assertEqual(json.loads(bodies.pop()), {"consumer": CONSUMER, "transaction": TRANSACTION})
        assert decision.last_response is not None
        self.assertEqual(decision.last_response.retries, 2)
        self.assertEqual(decision.last_response.idempotency_key, keys[0])

    def test_callers_key_wins_on_every_attempt(self) -> None:
        self.fake.script([{"status": 500, "body": error_body("internal_error")}, {"status": 200, "body": declined_decision(ID)}])
        self.create(self.client(), idempotency_key="order-1234-attempt")
        self.assertEqual(self.keys(), ["order-1234-attempt", "order-1234-attempt"])

    def test_each_logical_call_gets_its_own_key(self) -> None:
        self.fake.script([{"status": 200, "body": declined_decision(ID)}])
        c = self.client()
        self.create(c)
        self.create(c)
        a, b = self.keys()
        self.assertNotEqual(a, b)

    def test_sandbox_helper_has_a_key_and_get_has_none(self) -> None:
        self.fake.script(["drop", {"status": 200, "body": declined_decision(ID)}])
        self.client().sandbox.verification.complete(ID, "pass")
        self.assertEqual([r.path for r in self.fake.requests], [f"/v1/sandbox/decisions/{ID}/verification"] * 2)
        self.assertEqual(len(set(self.keys())), 1)
        self.assertEqual(json.loads(self.fake.requests[0].body), {"result": "pass"})

        self.fake.script(["drop", {"status": 200, "body": declined_decision(ID)}])
        self.client().decisions.bnpl.retrieve(ID)
        self.assertEqual([r.method for r in self.fake.requests], ["GET", "GET"])
        self.assertEqual(self.keys(), [None, None])

    def test_documented_headers_and_decimal_amounts(self) -> None:
        self.fake.script([{"status": 200, "body": declined_decision(ID)}])
        self.client().decisions.bnpl.create(
            consumer=CONSUMER,  # type: ignore[arg-type]
            order={"amount": Decimal("1500.00"), "currency": "USD", "installment_count": 6},
            plan_preference="pay_in_6",
        )
        r = self.fake.requests[0]
        self.assertEqual(r.headers["authorization"], "Bearer svc_test_fake")
        self.assertEqual(r.headers["content-type"], "application/json")
        self.assertEqual(r.headers["accept"], "application/json")
        self.assertRegex(r.headers["user-agent"], r"^cds-python/\d+\.\d+\.\d+ python/3\.\d+")
        self.assertEqual(
            json.loads(r.body),
            {"consumer": CONSUMER, "order": {"amount": "1500.00", "currency": "USD", "installment_count": 6}, "plan_preference": "pay_in_6"},
        )

    def test_decimal_amounts_lose_only_trailing_zeros(self) -> None:
        sent = []
        for amount in [Decimal("10.00") * Decimal("1.5"), Decimal("149.970"), Decimal("149.975"), Decimal("25")]:
            self.fake.script([{"status": 200, "body": declined_decision(ID)}])
            self.client().decisions.bnpl.create(consumer=CONSUMER, transaction={**TRANSACTION, "amount": amount})  # type: ignore[arg-type]
            sent.append(json.loads(self.fake.requests[0].body)["transaction"]["amount"])
        # 15.0000 and 149.970 are two-decimal amounts; 149.975 is not, and goes as it is for the service to refuse.
        self.assertEqual(sent, ["15.00", "149.97", "149.975", "25.00"])

    def test_an_error_without_the_stable_body_reads_plainly(self) -> None:
        self.fake.script([{"status": 502, "body": "<html>Bad Gateway</html>"}])
        with self.assertRaises(CreditDecisionsError) as caught:
            self.client(max_retries=0).decisions.bnpl.retrieve(ID)
        self.assertEqual(str(caught.exception), "502: <html>Bad Gateway</html> (request_id req_fake0000000000000000)")
        self.fake.script([{"status": 404, "body": error_body("not_found", "No decision.")}])
        with self.assertRaises(NotFoundError) as caught_404:
            self.client(max_retries=0).decisions.bnpl.retrieve(ID)
        self.assertEqual(str(caught_404.exception), "404 not_found: No decision. (request_id req_fake0000000000000000)")

    def test_5xx_is_retried_with_backoff_within_bounds(self) -> None:
        self.fake.script(
            [
                {"status": 500, "body": error_body("internal_error")},
                {"status": 502, "body": "<html>bad gateway</html>"},
                {"status": 200, "body": declined_decision(ID)},
            ]
        )
        decision = self.client(initial_retry_delay=0.04, max_retry_delay=1.0).decisions.bnpl.retrieve(ID)
        self.assertEqual(decision.decision_id, ID)
        a, b, c = (r.at for r in self.fake.requests)
        self.assertGreaterEqual(b - a, 0.028)
        self.assertGreaterEqual(c - b, 0.058)

    def test_gives_up_after_max_retries(self) -> None:
        self.fake.script([{"status": 500, "body": error_body("internal_error")}])
        with self.assertRaises(InternalServerError):
            self.create(self.client())
        self.assertEqual(len(self.fake.requests), 3)

        self.fake.script([{"status": 503, "body": error_body("service_unavailable"), "headers": {"Retry-After": "0"}}])
        with self.assertRaises(ServiceUnavailableError) as caught:
            self.create(self.client(max_retries=1))
        self.assertIsInstance(caught.exception, InternalServerError)
        self.assertEqual(len(self.fake.requests), 2)

        self.fake.script([{"status": 500, "body": error_body("internal_error")}])
        with self.assertRaises(InternalServerError):
            self.create(self.client(max_retries=0))
        self.assertEqual(len(self.fake.requests), 1)

    def test_retry_after_is_honoured_and_an_unreasonable_one_is_not_waited_for(self) -> None:
        self.fake.script(
            [{"status": 503, "body": error_body("service_unavailable"), "headers": {"Retry-After": "1"}}, {"status": 200, "body": declined_decision(ID)}]
        )
        self.create(self.client())
        a, b = (r.at for r in self.fake.requests)
        self.assertGreaterEqual(b - a, 0.98)
        self.assertLess(b - a, 1.8)

        self.fake.script([{"status": 503, "body": error_body("service_unavailable"), "headers": {"Retry-After": "3600"}}])
        with self.assertRaises(ServiceUnavailableError):
            self.create(self.client())
        self.assertEqual(len(self.fake.requests), 1)

    def test_429_is_raised_by_default_and_retried_on_request(self) -> None:
        self.fake.script([{"status": 429, "body": error_body("rate_limited"), "headers": {"Retry-After": "2"}}])
        with self.assertRaises(RateLimitError) as caught:
            self.create(self.client())
        self.assertEqual(caught.exception.retry_after, 2.0)
        self.assertEqual(len(self.fake.requests), 1)

        self.fake.script(
            [{"status": 429, "body": error_body("rate_limited"), "headers": {"Retry-After": "0.2"}}, {"status": 200, "body": declined_decision(ID)}]
        )
        self.assertTrue(self.create(self.client(retry_rate_limited=True)).is_declined)
        a, b = (r.at for r in self.fake.requests)
        self.assertGreaterEqual(b - a, 0.18)
        self.assertEqual(len(set(self.keys())), 1)

    def test_other_4xx_are_never_retried_and_map_to_their_class(self) -> None:
        cases = [
            (400, "invalid_request", InvalidRequestError),
            (401, "invalid_api_key", AuthenticationError),
            (404, "not_found", NotFoundError),
            (404, "product_not_available", ProductNotAvailableError),
            (405, "method_not_allowed", MethodNotAllowedError),
            (409, "idempotency_conflict", IdempotencyConflictError),
            (413, "payload_too_large", PayloadTooLargeError),
            (415, "unsupported_media_type", UnsupportedMediaTypeError),
            (422, "unprocessable_entity", UnprocessableEntityError),
        ]
        for status, code, cls in cases:
            with self.subTest(code=code):
                self.fake.script([{"status": status, "body": error_body(code, f"message for {code}")}])
                with self.assertRaises(cls) as caught:
                    self.create(self.client())
                e = caught.exception
                self.assertIs(type(e), cls)
                self.assertEqual((e.status, e.code, e.message), (status, code, f"message for {code}"))
                self.assertEqual(e.request_id, "req_fake0000000000000000")
                self.assertEqual(e.headers["request-id"], "req_fake0000000000000000")
                self.assertEqual(len(self.fake.requests), 1)
        self.fake.script([{"status": 418, "body": error_body("teapot")}])
        with self.assertRaises(CreditDecisionsError) as caught:
            self.create(self.client())
        self.assertIs(type(caught.exception), CreditDecisionsError)
        self.assertEqual(caught.exception.code, "teapot")

    def test_409_is_retried_only_when_it_answers_a_retry(self) -> None:
        self.fake.script(["drop", {"status": 409, "body": error_body("idempotency_conflict")}, {"status": 200, "body": declined_decision(ID)}])
        self.assertTrue(self.create(self.client()).is_declined)
        self.assertEqual(len(self.fake.requests), 3)
        self.assertEqual(len(set(self.keys())), 1)

    def test_a_2xx_that_is_not_json_is_a_transport_failure(self) -> None:
        self.fake.script([{"status": 200, "body": "<html>captive portal</html>"}, {"status": 200, "body": declined_decision(ID)}])
        self.assertEqual(self.client().decisions.bnpl.retrieve(ID).decision_id, ID)
        self.assertEqual(len(self.fake.requests), 2)

    def test_nothing_listening_is_a_connection_error(self) -> None:
        closed = FakeServer()
        url = closed.base_url
        closed.close()
        with self.assertRaises(APIConnectionError) as caught:
            CreditDecisions(api_key="k", base_url=url, initial_retry_delay=0.001).decisions.bnpl.retrieve(ID)
        self.assertNotIsInstance(caught.exception, APITimeoutError)
        self.assertIsNone(caught.exception.status)

    # -- time-outs and cancellation --------------------------------------------------------

    def test_no_answer_in_time_is_a_timeout(self) -> None:
        self.fake.script(["hang"])
        started = time.monotonic()
        with self.assertRaises(APITimeoutError) as caught:
            self.create(self.client(timeout=0.1, max_retries=0))
        self.assertIsInstance(caught.exception, APIConnectionError)
        self.assertLess(time.monotonic() - started, 1.0)

    def test_a_body_that_stalls_is_a_timeout(self) -> None:
        self.fake.script(["stall-body"])
        with self.assertRaises(APITimeoutError):
            self.client(timeout=0.15, max_retries=0).decisions.bnpl.retrieve(ID)

    def test_a_body_that_trickles_is_a_timeout_too(self) -> None:
        # Every read returns within the socket time-out; the time-out still bounds the whole call.
        self.fake.script(["trickle-body"])
        started = time.monotonic()
        with self.assertRaises(APITimeoutError):
            self.client(timeout=0.3, max_retries=0).decisions.bnpl.retrieve(ID)
        self.assertLess(time.monotonic() - started, 1.5)

    def test_a_redirect_is_not_followed_and_the_key_goes_nowhere_else(self) -> None:
        elsewhere = FakeServer()
        try:
            self.fake.script([{"status": 302, "headers": {"Location": elsewhere.base_url + "/v1/decisions/bnpl"}, "body": ""}])
            elsewhere.script([{"status": 200, "body": declined_decision(ID)}])
            with self.assertRaises(CreditDecisionsError) as caught:
                self.create(self.client())
            self.assertEqual(caught.exception.status, 302)
            self.assertIn("not followed", str(caught.exception))
            self.assertEqual(len(self.fake.requests), 1)  # a 3xx is not retried either
            self.assertEqual(elsewhere.requests, [])
        finally:
            elsewhere.close()

    def test_a_timeout_is_retried_with_the_same_key(self) -> None:
        self.fake.script(["hang", {"status": 200, "body": declined_decision(ID)}])
        self.assertTrue(self.create(self.client(timeout=0.1), idempotency_key="k-timeout").is_declined)
        self.assertEqual(self.keys(), ["k-timeout", "k-timeout"])

    def test_per_call_options_override_the_client(self) -> None:
        self.fake.script(["hang"])
        with self.assertRaises(APITimeoutError):
            self.client(timeout=10).decisions.bnpl.retrieve(ID, timeout=0.08, max_retries=0)
        self.assertEqual(len(self.fake.requests), 1)

    # -- polling ---------------------------------------------------------------------------

    def test_wait_for_completion_returns_the_final_decision(self) -> None:
        self.fake.script(
            [{"status": 200, "body": pending_decision(ID)}, {"status": 200, "body": pending_decision(ID)}, {"status": 200, "body": declined_decision(ID)}]
        )
        seen: List[str] = []
        decision = self.client().decisions.bnpl.wait_for_completion(
            ID, interval=0.03, clamp_interval=False, on_pending=lambda d: seen.append(d.status)
        )
        self.assertTrue(decision.is_declined)
        self.assertEqual(seen, ["needs_consumer_action"] * 2)
        self.assertEqual([r.path for r in self.fake.requests], [f"/v1/decisions/bnpl/{ID}"] * 3)
        self.assertGreaterEqual(self.fake.requests[1].at - self.fake.requests[0].at, 0.025)

    def test_wait_for_completion_stops_at_the_deadline(self) -> None:
        self.fake.script([{"status": 200, "body": pending_decision(ID)}])
        started = time.monotonic()
        with self.assertRaises(PollTimeoutError) as caught:
            self.client().decisions.bnpl.wait_for_completion(ID, interval=0.02, clamp_interval=False, timeout=0.15)
        self.assertEqual(caught.exception.decision.decision_id, ID)
        self.assertGreaterEqual(time.monotonic() - started, 0.14)
        self.assertLess(time.monotonic() - started, 1.0)
        with self.assertRaises(PollTimeoutError):
            self.client().decisions.bnpl.wait_for_completion(ID, deadline=time.time() + 0.05)

    def test_wait_for_completion_never_polls_sooner_than_the_interval(self) -> None:
        self.fake.script([{"status": 200, "body": pending_decision(ID)}])
        # Polls at about 0, 0.2 and 0.4 s; one at the 0.5 s deadline would come 0.1 s after the last.
        with self.assertRaises(PollTimeoutError):
            self.client().decisions.bnpl.wait_for_completion(ID, interval=0.2, clamp_interval=False, timeout=0.5)
        at = [r.at for r in self.fake.requests]
        self.assertGreaterEqual(len(at), 2)
        for i in range(1, len(at)):
            self.assertGreaterEqual(at[i] - at[i - 1], 0.195, f"gap before poll {i + 1}")

    def test_wait_for_completion_is_cancelled_by_its_event(self) -> None:
        self.fake.script([{"status": 200, "body": pending_decision(ID)}])
        cancel = threading.Event()
        threading.Timer(0.12, cancel.set).start()
        started = time.monotonic()
        with self.assertRaises(APIUserAbortError):
            self.client().decisions.bnpl.wait_for_completion(ID, cancel=cancel)
        self.assertLess(time.monotonic() - started, 1.0)
        self.assertEqual(len(self.fake.requests), 1)

    def test_interval_is_clamped_to_two_to_three_seconds(self) -> None:
        self.assertEqual(poll_interval(), 2.5)
        self.assertEqual(poll_interval(0.01), 2.0)
        self.assertEqual(poll_interval(60), 3.0)
        self.assertEqual(poll_interval(2.2), 2.2)
        self.assertEqual(poll_interval(0.01, clamp_interval=False), 0.01)
        with self.assertRaises(ValueError):
            poll_interval(-1)


class RetryRulesTest(unittest.TestCase):
    """The pure retry rules, without a network."""

    def test_backoff_is_exponential_with_jitter_inside_the_capped_base(self) -> None:
        policy = RetryPolicy()
        for retry, base in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 4.0), (5, 8.0), (6, 8.0)]:
            self.assertEqual(backoff_delay(retry, policy, 0.0), base)
            self.assertGreater(backoff_delay(retry, policy, 0.999999), base * 0.75)

    def test_what_is_retried(self) -> None:
        p = RetryPolicy()

        def response(status: int, headers: Any = None, code: Any = None) -> AttemptOutcome:
            return AttemptOutcome("response", status, code, headers or {})

        self.assertEqual(decide_retry(AttemptOutcome("connection"), 0, "POST", p, 0.0), (True, 0.5))
        self.assertEqual(decide_retry(AttemptOutcome("timeout"), 1, "GET", p, 0.0), (True, 1.0))
        self.assertFalse(decide_retry(AttemptOutcome("connection"), 2, "POST", p, 0.0)[0])
        self.assertTrue(decide_retry(response(500), 0, "POST", p, 0.0)[0])
        self.assertEqual(decide_retry(response(503, {"retry-after": "7"}), 0, "POST", p, 0.0), (True, 7.0))
        self.assertFalse(decide_retry(response(503, {"retry-after": "61"}), 0, "POST", p, 0.0)[0])
        self.assertFalse(decide_retry(response(429, {"retry-after": "1"}), 0, "POST", p, 0.0)[0])
        self.assertEqual(decide_retry(response(429, {"retry-after": "1"}), 0, "POST", RetryPolicy(retry_rate_limited=True), 0.0), (True, 1.0))
        for status in (400, 401, 404, 405, 413, 415, 422):
            self.assertFalse(decide_retry(response(status), 0, "POST", p, 0.0)[0])
        self.assertFalse(decide_retry(response(409, code="idempotency_conflict"), 0, "POST", p, 0.0)[0])
        self.assertTrue(decide_retry(response(409, code="idempotency_conflict"), 1, "POST", p, 0.0)[0])

    def test_retry_after_parsing(self) -> None:
        now = 1767225600.0  # 2026-01-01T00:00:00Z
        self.assertEqual(parse_retry_after("3", now), 3.0)
        self.assertEqual(parse_retry_after("0", now), 0.0)
        self.assertEqual(parse_retry_after("Thu, 01 Jan 2026 00:00:05 GMT", now), 5.0)
        self.assertIsNone(parse_retry_after("soon", now))
        self.assertIsNone(parse_retry_after(None, now))

    def test_client_requires_key_and_address(self) -> None:
        with self.assertRaises(ValueError):
            CreditDecisions(api_key="", base_url="http://x")
        with self.assertRaises(ValueError):
            CreditDecisions(api_key="k", base_url="x")
        # A pasted placeholder could never be sent as a header: told at once, not as a connection error.
        for bad in ["svc_test_\u2026", "svc_test_ab cd"]:
            with self.assertRaises(ValueError):
                CreditDecisions(api_key=bad, base_url="http://x")
        client = CreditDecisions(api_key="svc_test_k", base_url="http://127.0.0.1:9")
        with self.assertRaises(ValueError):
            client.decisions.bnpl.create(consumer=CONSUMER, transaction=TRANSACTION, idempotency_key="caf\u00e9")  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
