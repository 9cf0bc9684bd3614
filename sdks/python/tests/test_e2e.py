"""The Python library against the real service: approvals, declines, the pending journey through
the sandbox helper and wait_for_completion, the ``order`` form, idempotent replays and every
exception class from a real answer."""
import datetime
import json
import socket
import struct
import threading
import time
import unittest
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List

import support
from support import furniture, new_consumer

from cds_client.types import ReturningConsumer, TransactionParams
from cds_client import (
    AuthenticationError,
    CreditDecisions,
    CreditDecisionsError,
    Decision,
    DeclineReason,
    EventPage,
    IdempotencyConflictError,
    InvalidRequestError,
    NoAdverseActionError,
    NotFoundError,
    Offer,
    Payment,
    TilaDisclosure,
    UnprocessableEntityError,
)

UNKNOWN_ID = "6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10"


class EndToEndTest(unittest.TestCase):
    service: support.Service
    client: CreditDecisions
    soft: ReturningConsumer
    enhanced: ReturningConsumer

    @classmethod
    def setUpClass(cls) -> None:
        cls.service = support.service()
        cls.client = CreditDecisions(api_key=cls.service.sandbox_key, base_url=cls.service.base_url)
        cls.soft = ReturningConsumer(consumer_id=cls.service.consumers["soft"])
        cls.enhanced = ReturningConsumer(consumer_id=cls.service.consumers["enhanced"])

    def raw_get(self, decision_id: str, below: str = "") -> Dict[str, Any]:
        """What an independent client (plain urllib) sees for the same decision (or a path below it)."""
        request = urllib.request.Request(
            f"{self.service.base_url}/v1/decisions/bnpl/{decision_id}{below}", headers={"Authorization": f"Bearer {self.service.sandbox_key}"}
        )
        with urllib.request.urlopen(request, timeout=10) as r:
            result: Dict[str, Any] = json.loads(r.read())
            return result

    def test_soft_approval_with_every_field_typed(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("149.97"))
        self.assertIsInstance(d, Decision)
        self.assertEqual((d.is_approved, d.is_declined, d.is_referred, d.is_pending), (True, False, False, False))
        self.assertEqual((d.status, d.outcome, d.kyc_tier), ("complete", "approved", "soft"))
        self.assertEqual((d.approved_amount, d.currency), ("149.97", "USD"))
        self.assertRegex(d.apr or "", r"^\d+\.\d{2}$")
        self.assertIsInstance(d.term_months, int)
        assert d.payment_schedule is not None and d.tila_disclosure is not None
        self.assertEqual(len(d.payment_schedule), 4)
        self.assertIsInstance(d.payment_schedule[0], Payment)
        self.assertEqual(d.payment_schedule[0].num, 1)
        self.assertRegex(d.payment_schedule[0].due_date, r"^\d{4}-\d{2}-\d{2}$")
        self.assertIsInstance(d.tila_disclosure, TilaDisclosure)
        self.assertEqual(d.tila_disclosure.payment_frequency, "biweekly")
        self.assertEqual(d.tila_disclosure.total_of_payments, "149.97")
        self.assertEqual(d.decline_reasons, [])
        self.assertIsNone(d.consumer_complete_url)
        self.assertEqual(d.polling_url, f"/v1/decisions/bnpl/{d.decision_id}")
        assert d.last_response is not None
        self.assertEqual(d.last_response.status, 200)
        self.assertRegex(d.last_response.request_id or "", r"^req_")
        self.assertTrue((d.last_response.idempotency_key or "").startswith("cds-python-retry-"))
        self.assertFalse(d.last_response.idempotent_replayed)
        # The offer: the same fields, all set (and not a wire field: the comparison below).
        offer = d.offer
        self.assertIsInstance(offer, Offer)
        assert offer is not None
        fields = ("approved_amount", "currency", "apr", "term_months", "payment_schedule", "tila_disclosure", "expires_at")
        self.assertEqual([getattr(offer, f) for f in fields], [getattr(d, f) for f in fields])
        self.assertEqual(offer.approved_amount, "149.97")
        self.assertEqual(d.to_dict(), self.raw_get(d.decision_id))
        self.assertEqual(self.client.decisions.bnpl.retrieve(d.decision_id).to_dict(), d.to_dict())

    def test_decline_is_a_decision_not_an_error(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=new_consumer("0000", "Dana"), transaction=furniture("149.97"))
        self.assertEqual((d.is_approved, d.is_declined, d.is_referred, d.is_pending), (False, True, False, False))
        assert d.decline_reasons is not None
        self.assertEqual(d.decline_reasons[0], DeclineReason(code="AA-21", reason="Bankruptcy"))
        self.assertIsNone(d.payment_schedule)
        self.assertIsNone(d.offer)
        self.assertEqual(d.to_dict(), self.raw_get(d.decision_id))

    def test_adverse_action_notice_of_a_decline_and_none_for_an_approval(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=new_consumer("0000", "Dana"), transaction=furniture("149.97"))
        notice = self.client.decisions.bnpl.adverse_action_notice(d.decision_id)
        self.assertEqual(
            (notice["decision_id"], notice["product"], notice["action"], notice["counteroffer"]), (d.decision_id, "bnpl", "declined", None)
        )
        assert d.decline_reasons is not None
        self.assertEqual(notice["principal_reasons"]["reasons"], [{"code": r.code, "reason": r.reason} for r in d.decline_reasons])
        self.assertRegex(notice["due_by"], r"^\d{4}-\d{2}-\d{2}$")
        self.assertNotIn("applicant", notice)
        self.assertNotIn("Dana", json.dumps(notice))
        self.assertEqual(notice, self.raw_get(d.decision_id, "/adverse-action-notice"))

        approved = self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("149.97"))
        with self.assertRaises(NoAdverseActionError) as caught:
            self.client.decisions.bnpl.adverse_action_notice(approved.decision_id)
        self.assertIsInstance(caught.exception, NotFoundError)
        self.check(caught.exception, 404, "no_adverse_action")
        with self.assertRaises(NotFoundError) as other:
            self.client.decisions.auto_loan.adverse_action_notice(d.decision_id)
        self.check(other.exception, 404, "not_found")

    def test_referral(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=new_consumer("1111", "Remy"), transaction=furniture("120.00"))
        self.assertTrue(d.is_referred)

    def test_pending_then_sandbox_helper_then_wait_at_the_default_interval(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=self.enhanced, transaction=furniture("1500.00"))
        self.assertTrue(d.is_pending)
        self.assertIsNone(d.outcome)
        self.assertEqual((d.kyc_tier, d.kyc_status, d.estimated_completion_seconds), ("enhanced", "pending", 120))
        self.assertRegex(d.consumer_complete_url or "", r"^https?://.+/verify/")
        completions: List[Decision] = []

        def on_pending(_: Decision) -> None:
            if not completions:
                completions.append(self.client.sandbox.verification.complete(d.decision_id, "pass"))

        started = time.monotonic()
        final = self.client.decisions.bnpl.wait_for_completion(d, on_pending=on_pending)
        self.assertGreaterEqual(time.monotonic() - started, 1.9)  # one wait at the clamped 2-3 s interval
        self.assertTrue(final.is_approved)
        self.assertEqual((final.kyc_status, final.approved_amount), ("matched", "1500.00"))
        self.assertTrue(completions[0].is_approved)

    def test_sandbox_fail_is_referred_and_idempotent(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=self.enhanced, transaction=furniture("900.00"))
        failed = self.client.sandbox.verification.complete(d.decision_id, "fail")
        self.assertTrue(failed.is_referred)
        assert failed.decline_reasons is not None
        self.assertEqual(failed.decline_reasons[0].code, "AA-24")
        self.assertEqual(self.client.sandbox.verification.complete(d.decision_id, "pass").to_dict(), failed.to_dict())
        polled = self.client.decisions.bnpl.wait_for_completion(d.decision_id, interval=0.05, clamp_interval=False)
        self.assertTrue(polled.is_referred)

    def test_wait_in_a_thread_while_the_consumer_verifies(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=self.enhanced, order={"amount": "1500.00", "currency": "USD", "installment_count": 6})
        self.assertTrue(d.is_pending)
        result: List[Decision] = []
        polled_pending = threading.Event()
        waiter = threading.Thread(
            target=lambda: result.append(
                self.client.decisions.bnpl.wait_for_completion(d.decision_id, interval=0.05, clamp_interval=False, on_pending=lambda _d: polled_pending.set())
            )
        )
        waiter.start()
        # The waiter has seen the pending state before the consumer verifies: a sync point, not a sleep.
        self.assertTrue(polled_pending.wait(15))
        self.assertTrue(waiter.is_alive())
        self.client.sandbox.verification.complete(d.decision_id, "pass")
        waiter.join(15)
        self.assertFalse(waiter.is_alive())
        self.assertTrue(result[0].is_approved)
        assert result[0].payment_schedule is not None
        self.assertEqual(len(result[0].payment_schedule), 6)
        self.assertEqual(result[0].term_months, 6)

    def test_order_form(self) -> None:
        d = self.client.decisions.bnpl.create(consumer=self.soft, order={"amount": "149.97", "currency": "USD", "installment_count": 4})
        self.assertTrue(d.is_approved)
        assert d.payment_schedule is not None
        self.assertEqual(len(d.payment_schedule), 4)

    def test_replay_with_the_same_key_and_own_key_per_call(self) -> None:
        key = f"sdk-python-{time.time_ns()}"
        first = self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("60.00"), idempotency_key=key)
        second = self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("60.00"), idempotency_key=key)
        self.assertEqual(second.decision_id, first.decision_id)
        assert second.last_response is not None and first.last_response is not None
        self.assertTrue(second.last_response.idempotent_replayed)
        self.assertEqual(second.last_response.request_id, first.last_response.request_id)
        a = self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("60.00"))
        b = self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("60.00"))
        self.assertNotEqual(a.decision_id, b.decision_id)

    def test_connection_dropped_after_the_work_is_retried_into_the_stored_answer(self) -> None:
        """A proxy forwards the request, lets the service commit and answer, then drops the
        client's connection: the retry (same key) must get the stored decision, never a second."""
        upstream = self.service.base_url
        state: Dict[str, Any] = {"drop": 0, "dropped": [], "forwarded": 0}

        class Proxy(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection", "content-length")}
                request = urllib.request.Request(upstream + self.path, data=body, headers=headers, method="POST")
                try:
                    with urllib.request.urlopen(request, timeout=10) as r:
                        status, answer, answer_headers = r.status, r.read(), dict(r.headers.items())
                except urllib.error.HTTPError as e:
                    status, answer, answer_headers = e.code, e.read(), dict(e.headers.items())
                state["forwarded"] += 1
                if state["drop"] > 0:
                    state["drop"] -= 1
                    state["dropped"].append(json.loads(answer))
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    return
                self.send_response(status)
                for k, v in answer_headers.items():
                    if k.lower() not in ("content-length", "connection", "keep-alive", "transfer-encoding", "date"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            via_proxy = CreditDecisions(
                api_key=self.service.sandbox_key, base_url=f"http://127.0.0.1:{server.server_address[1]}", initial_retry_delay=0.01
            )
            state["drop"] = 2
            d = via_proxy.decisions.bnpl.create(consumer=self.soft, transaction=furniture("77.70"))
            self.assertEqual(state["forwarded"], 3)
            assert d.last_response is not None
            self.assertEqual(d.last_response.retries, 2)
            self.assertTrue(d.last_response.idempotent_replayed)
            self.assertEqual(d.decision_id, state["dropped"][0]["decision_id"])
            self.assertEqual(state["dropped"][1], state["dropped"][0])
        finally:
            server.shutdown()
            server.server_close()

    # -- errors from real answers ------------------------------------------------------------

    def check(self, error: CreditDecisionsError, status: int, code: str) -> None:
        self.assertEqual((error.status, error.code), (status, code))
        self.assertRegex(error.request_id or "", r"^req_")
        self.assertEqual(error.headers["request-id"], error.request_id)
        self.assertEqual(error.body, {"error": code, "message": error.message, "request_id": error.request_id})

    def test_400(self) -> None:
        with self.assertRaises(InvalidRequestError) as caught:
            self.client.decisions.bnpl.create(consumer=self.soft, transaction={"amount": "10.00", "currency": "USD"})  # type: ignore[arg-type]
        self.check(caught.exception, 400, "invalid_request")
        self.assertIn("merchant_name", caught.exception.message)
        with self.assertRaises(InvalidRequestError):
            self.client.decisions.bnpl.create(
                consumer=self.soft, transaction=furniture("10.00"), order={"amount": "10.00", "currency": "USD", "installment_count": 4}  # type: ignore[arg-type]
            )
        with self.assertRaises(InvalidRequestError):
            self.client.decisions.bnpl.retrieve("not-a-uuid")

    def test_401(self) -> None:
        bad = CreditDecisions(api_key="svc_test_wrong", base_url=self.service.base_url)
        with self.assertRaises(AuthenticationError) as caught:
            bad.decisions.bnpl.retrieve(UNKNOWN_ID)
        self.check(caught.exception, 401, "invalid_api_key")

    def test_404(self) -> None:
        with self.assertRaises(NotFoundError) as caught:
            self.client.decisions.bnpl.retrieve(UNKNOWN_ID)
        self.check(caught.exception, 404, "not_found")
        live = CreditDecisions(api_key=self.service.live_key, base_url=self.service.base_url)
        with self.assertRaises(NotFoundError):
            live.sandbox.verification.complete(UNKNOWN_ID, "pass")

    def test_409(self) -> None:
        key = f"sdk-python-conflict-{time.time_ns()}"
        self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("70.00"), idempotency_key=key)
        with self.assertRaises(IdempotencyConflictError) as caught:
            self.client.decisions.bnpl.create(consumer=self.soft, transaction=furniture("71.00"), idempotency_key=key)
        self.check(caught.exception, 409, "idempotency_conflict")

    def test_422_replayed_with_the_same_key(self) -> None:
        key = f"sdk-python-422-{time.time_ns()}"
        eur: TransactionParams = furniture("149.97")
        eur["currency"] = "EUR"
        with self.assertRaises(UnprocessableEntityError) as first:
            self.client.decisions.bnpl.create(consumer=self.soft, transaction=eur, idempotency_key=key)
        self.check(first.exception, 422, "unprocessable_entity")
        with self.assertRaises(UnprocessableEntityError) as second:
            self.client.decisions.bnpl.create(consumer=self.soft, transaction=eur, idempotency_key=key)
        self.assertEqual(second.exception.headers.get("idempotent-replayed"), "true")
        self.assertEqual(second.exception.request_id, first.exception.request_id)


class EventHistoryTest(unittest.TestCase):
    """client.events.list / retrieve against the real service, with auto-pagination."""

    service: support.Service
    client: CreditDecisions

    @classmethod
    def setUpClass(cls) -> None:
        cls.service = support.service()
        cls.client = CreditDecisions(api_key=cls.service.sandbox_key, base_url=cls.service.base_url)

    def raw_all(self, query: str) -> List[Dict[str, Any]]:
        """Every page a plain urllib client gets, for comparison."""
        out: List[Dict[str, Any]] = []
        cursor = None
        while True:
            url = f"{self.service.base_url}/v1/events?{query}" + (f"&starting_after={cursor}" if cursor else "")
            request = urllib.request.Request(url, headers={"Authorization": f"Bearer {self.service.sandbox_key}"})
            with urllib.request.urlopen(request, timeout=10) as r:
                page = json.loads(r.read())
            out.extend(page["data"])
            if not page["has_more"]:
                return out
            cursor = page["next_cursor"]

    def test_pages_auto_pagination_filters_and_retrieve(self) -> None:
        since = int(time.time()) - 1
        soft = ReturningConsumer(consumer_id=self.service.consumers["soft"])
        ids = [self.client.decisions.bnpl.create(consumer=soft, transaction=furniture(a)).decision_id for a in ("51.00", "52.00", "53.00")]

        page = self.client.events.list(created_gte=since, limit=2)
        self.assertIsInstance(page, EventPage)
        self.assertEqual(len(page.data), 2)
        self.assertTrue(page.has_more)
        self.assertEqual(page.next_cursor, page.data[1]["id"])
        self.assertEqual(page.last_response.status, 200)
        self.assertEqual([e["id"] for e in page], [e["id"] for e in page.data])

        every = list(self.client.events.list(created_gte=datetime.datetime.fromtimestamp(since, datetime.timezone.utc), limit=2).auto_paging_iter())
        # Other suites may add events meanwhile: compare the events of this test's decisions, in order.
        mine = lambda events: [e["id"] for e in events if e["data"].get("decision_id") in ids]  # noqa: E731
        self.assertEqual(mine(every), mine(self.raw_all(f"created_gte={since}&limit=2")))
        self.assertEqual(len(mine(every)), 12)
        for decision_id in ids:
            types = sorted(e["type"] for e in every if e["data"].get("decision_id") == decision_id)
            self.assertEqual(types, ["application.created", "decision.created", "decision.finalized", "score.completed"])
        self.assertEqual(list(every[0].keys()), ["id", "type", "created", "data"])

        finalized = list(self.client.events.list(created_gte=since, type=["decision.finalized"], limit=1).auto_paging_iter())
        self.assertTrue(all(e["type"] == "decision.finalized" for e in finalized))
        self.assertTrue(set(ids) <= {e["data"]["decision_id"] for e in finalized})
        self.assertEqual(self.client.events.retrieve(finalized[0]["id"]), finalized[0])

        with self.assertRaises(NotFoundError):
            self.client.events.retrieve(UNKNOWN_ID)
        with self.assertRaises(InvalidRequestError) as caught:
            self.client.events.list(type="decision.approved")
        self.assertRegex(str(caught.exception.message), r'^type "decision\.approved" is not an event type; allowed:')
        with self.assertRaises(TypeError):
            self.client.events.list(created_gte=datetime.datetime(2026, 1, 1))  # naive: refused, not guessed


if __name__ == "__main__":
    unittest.main()
