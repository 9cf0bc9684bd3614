"""``client.decisions.auto_loan`` against the real service, with a tenant set up as a lender sets
one up (signed up in the portal, two dealers added there and one disabled): direct and indirect
approvals with every auto-loan field, a decline, the pending journey through the sandbox helper and
wait_for_completion, the 422s an integration handles (disabled or unknown dealer, markup above the
cap), idempotent replays and a retry after a lost answer carrying the same generated key."""
import json
import threading
import time
import unittest
import urllib.request
from typing import Any, Dict, List

import support
from support import new_consumer, vin

from cds_client import (
    AutoLoanDecision,
    AutoLoanOffer,
    CreditDecisions,
    CreditDecisionsError,
    Decision,
    InvalidRequestError,
    NotFoundError,
    UnprocessableEntityError,
)
from cds_client.types import AutoLoanTermsParams, DealerParams, ReturningConsumer, VehicleParams

ACCORD_VIN = vin("1HGCM8260RA004352")  # position 10 "R": model year 2024
#: A used 2024 Accord worth 15,000.00; 16,000.00 - 2,000.00 down - 1,000.00 trade-in = 13,000.00 financed (soft tier).
VEHICLE: VehicleParams = {"vin": ACCORD_VIN, "year": 2024, "make": "Honda", "model": "Accord", "mileage": 18000, "condition": "used", "value": "15000.00"}
LOAN: AutoLoanTermsParams = {"amount": "16000.00", "down_payment": "2000.00", "trade_in_value": "1000.00", "term_months": 60, "currency": "USD"}
UNKNOWN_ID = "6f1c2a8e-3b7d-4c1e-9a55-1f7b3c2d9e10"


def hundredths(rate: str) -> int:
    return round(float(rate) * 100)


def cents(money: str) -> int:
    return round(float(money) * 100)


class AutoLoanTest(unittest.TestCase):
    tenant: support.AutoLoanTenant
    client: CreditDecisions
    soft: ReturningConsumer

    @classmethod
    def setUpClass(cls) -> None:
        cls.tenant = support.auto_loan_tenant()
        cls.client = CreditDecisions(api_key=cls.tenant.sandbox_key, base_url=support.service().base_url)
        cls.soft = ReturningConsumer(consumer_id=cls.tenant.consumers["soft"])

    def dealer(self, markup: str, dealer_id: str = "") -> DealerParams:
        return {"dealer_id": dealer_id or self.tenant.active_dealer["id"], "markup_rate_pct": markup}

    def raw_get(self, decision_id: str) -> Dict[str, Any]:
        request = urllib.request.Request(
            f"{support.service().base_url}/v1/decisions/auto-loan/{decision_id}", headers={"Authorization": f"Bearer {self.tenant.sandbox_key}"}
        )
        with urllib.request.urlopen(request, timeout=10) as r:
            result: Dict[str, Any] = json.loads(r.read())
            return result

    def failure(self, call: Any) -> CreditDecisionsError:
        with self.assertRaises(CreditDecisionsError) as caught:
            call()
        e = caught.exception
        self.assertRegex(e.request_id or "", r"^req_")
        return e

    def test_direct_approval_with_every_auto_loan_field(self) -> None:
        d = self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="direct")
        self.assertIsInstance(d, AutoLoanDecision)
        self.assertIsInstance(d, Decision)
        self.assertEqual((d.is_approved, d.is_declined, d.is_referred, d.is_pending), (True, False, False, False))
        self.assertEqual((d.kyc_tier, d.approved_amount, d.currency, d.term_months), ("soft", "13000.00", "USD", 60))
        self.assertEqual(d.ltv, "86.67")
        self.assertRegex(d.buy_rate or "", r"^\d+\.\d{2}$")
        self.assertEqual(d.contract_rate, d.buy_rate)
        self.assertEqual(d.dealer_reserve, "0.00")
        assert d.payment_schedule is not None and d.tila_disclosure is not None
        self.assertEqual(len(d.payment_schedule), 60)
        self.assertEqual(d.tila_disclosure.payment_frequency, "monthly")
        self.assertEqual(d.tila_disclosure.amount_financed, "13000.00")
        self.assertIsNone(d.tila_disclosure.total_sale_price)  # a direct loan is not a credit sale
        self.assertLessEqual(abs(float(d.apr or 0) - float(d.contract_rate or 0)), 0.01)
        self.assertEqual(d.polling_url, f"/v1/decisions/auto-loan/{d.decision_id}")
        assert d.last_response is not None
        self.assertTrue((d.last_response.idempotency_key or "").startswith("cds-python-retry-"))
        # The offer carries the auto-loan fields too, every one set.
        offer = d.offer
        self.assertIsInstance(offer, AutoLoanOffer)
        assert offer is not None
        self.assertEqual((offer.approved_amount, offer.term_months, offer.apr, offer.expires_at), ("13000.00", 60, d.apr, d.expires_at))
        self.assertEqual((offer.buy_rate, offer.contract_rate, offer.dealer_reserve, offer.ltv), (d.buy_rate, d.buy_rate, "0.00", "86.67"))
        self.assertEqual(d.to_dict(), self.raw_get(d.decision_id))
        again = self.client.decisions.auto_loan.retrieve(d.decision_id)
        self.assertIsInstance(again, AutoLoanDecision)
        self.assertEqual(again.to_dict(), d.to_dict())
        self.assertEqual(again, d)

    def test_indirect_approval_marks_the_rate_up_and_pays_a_reserve(self) -> None:
        plain = self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="direct")
        d = self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="indirect", dealer=self.dealer("1.00"))
        self.assertTrue(d.is_approved)
        self.assertEqual(d.buy_rate, plain.buy_rate)
        self.assertEqual(hundredths(d.contract_rate or ""), hundredths(d.buy_rate or "") + 100)
        assert d.tila_disclosure is not None and plain.tila_disclosure is not None
        extra = cents(d.tila_disclosure.finance_charge) - cents(plain.tila_disclosure.finance_charge)
        self.assertGreater(extra, 0)
        self.assertGreater(cents(d.dealer_reserve or ""), 0)
        self.assertLess(cents(d.dealer_reserve or ""), extra)  # a share of the extra finance charge
        # The dealer's credit sale: 3,000.00 down (cash and trade-in), total sale price = cash price + finance charge.
        self.assertEqual(d.tila_disclosure.total_down_payment, "3000.00")
        self.assertEqual(cents(d.tila_disclosure.total_sale_price or ""), cents("16000.00") + cents(d.tila_disclosure.finance_charge))
        self.assertEqual(d.to_dict(), self.raw_get(d.decision_id))

    def test_decline_is_a_decision_without_rates(self) -> None:
        d = self.client.decisions.auto_loan.create(consumer=new_consumer("0000", "Dana"), vehicle=VEHICLE, loan=LOAN, channel="direct")
        self.assertEqual((d.is_approved, d.is_declined, d.is_referred, d.is_pending), (False, True, False, False))
        assert d.decline_reasons is not None
        self.assertEqual((d.decline_reasons[0].code, d.decline_reasons[0].reason), ("AA-21", "Bankruptcy"))
        self.assertIsNone(d.buy_rate)
        self.assertIsNone(d.dealer_reserve)
        self.assertIsNone(d.offer)

    def test_pending_then_sandbox_helper_then_wait_for_completion(self) -> None:
        d = self.client.decisions.auto_loan.create(
            consumer=ReturningConsumer(consumer_id=self.tenant.consumers["enhanced"]),
            vehicle={**VEHICLE, "vin": vin("1HGCM8260TA004352"), "value": "25000.00", "condition": "new", "year": 2026, "mileage": 12},
            loan={"amount": "22000.00", "down_payment": "2000.00", "term_months": 48, "currency": "USD"},
            channel="indirect",
            dealer=self.dealer("0.50"),
        )
        self.assertTrue(d.is_pending)
        self.assertEqual(d.kyc_tier, "enhanced")
        self.assertEqual(d.polling_url, f"/v1/decisions/auto-loan/{d.decision_id}")
        self.assertIsNone(d.buy_rate)
        result: List[AutoLoanDecision] = []
        seen: List[AutoLoanDecision] = []
        polled_pending = threading.Event()

        def on_pending(decision: AutoLoanDecision) -> None:
            seen.append(decision)
            polled_pending.set()

        waiter = threading.Thread(
            target=lambda: result.append(
                self.client.decisions.auto_loan.wait_for_completion(d.decision_id, interval=0.05, clamp_interval=False, on_pending=on_pending)
            )
        )
        waiter.start()
        # The waiter has seen the pending state before the consumer verifies: a sync point, not a sleep.
        self.assertTrue(polled_pending.wait(15))
        self.assertTrue(waiter.is_alive())
        self.client.sandbox.verification.complete(d.decision_id, "pass")
        waiter.join(15)
        self.assertFalse(waiter.is_alive())
        self.assertIsInstance(seen[0], AutoLoanDecision)
        final = result[0]
        self.assertIsInstance(final, AutoLoanDecision)
        self.assertTrue(final.is_approved)
        self.assertEqual((final.approved_amount, final.ltv), ("20000.00", "80.00"))
        self.assertEqual(hundredths(final.contract_rate or ""), hundredths(final.buy_rate or "") + 50)
        self.assertGreater(cents(final.dealer_reserve or ""), 0)

    def test_replay_with_the_same_key_and_own_key_per_call(self) -> None:
        key = f"sdk-python-auto-{time.time_ns()}"
        first = self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="direct", idempotency_key=key)
        second = self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="direct", idempotency_key=key)
        self.assertEqual(second.decision_id, first.decision_id)
        assert second.last_response is not None
        self.assertTrue(second.last_response.idempotent_replayed)
        a = self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="direct")
        b = self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="direct")
        self.assertNotEqual(a.decision_id, b.decision_id)

    def test_a_lost_answer_is_retried_with_the_same_generated_key(self) -> None:
        """The service does the work and answers, the answer is lost once (the connection drops):
        the retry carries the same Idempotency-Key and gets the stored decision, not a second one."""
        sent: List[str] = []
        answers: List[Dict[str, Any]] = []
        flaky = CreditDecisions(api_key=self.tenant.sandbox_key, base_url=support.service().base_url, initial_retry_delay=0.01)
        core = flaky.decisions.auto_loan._core
        real_opener = core._opener

        class LosingOpener:
            """Sends every request for real; the first answer is read, then 'lost' (reset)."""

            def open(self, request: urllib.request.Request, timeout: float) -> Any:
                sent.append(request.get_header("Idempotency-key") or "")
                if len(sent) == 1:
                    with real_opener.open(request, timeout=timeout) as r:
                        answers.append(json.loads(r.read()))
                    raise ConnectionResetError(104, "Connection reset by peer")
                return real_opener.open(request, timeout=timeout)

        core._opener = LosingOpener()  # type: ignore[assignment]
        d = flaky.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="indirect", dealer=self.dealer("1.25"))
        self.assertEqual(len(sent), 2)
        self.assertRegex(sent[0], r"^cds-python-retry-")
        self.assertEqual(sent[1], sent[0])
        assert d.last_response is not None
        self.assertEqual(d.last_response.retries, 1)
        self.assertTrue(d.last_response.idempotent_replayed)
        self.assertEqual(d.decision_id, answers[0]["decision_id"])

    def test_422_for_a_disabled_or_unknown_dealer_and_a_markup_above_the_cap(self) -> None:
        disabled = self.failure(
            lambda: self.client.decisions.auto_loan.create(
                consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="indirect", dealer=self.dealer("1.00", self.tenant.disabled_dealer["id"])
            )
        )
        self.assertIsInstance(disabled, UnprocessableEntityError)
        self.assertEqual((disabled.status, disabled.code), (422, "unprocessable_entity"))
        self.assertRegex(str(disabled), r"(?i)dealer")
        unknown = self.failure(
            lambda: self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="indirect", dealer=self.dealer("1.00", UNKNOWN_ID))
        )
        self.assertIsInstance(unknown, UnprocessableEntityError)
        too_much = self.failure(
            lambda: self.client.decisions.auto_loan.create(consumer=self.soft, vehicle=VEHICLE, loan=LOAN, channel="indirect", dealer=self.dealer("1.26"))
        )
        self.assertIsInstance(too_much, UnprocessableEntityError)
        self.assertRegex(str(too_much), r"markup_rate_pct.*1\.25")

    def test_400_for_a_bad_vin_and_404_for_an_id_that_is_not_an_auto_loan(self) -> None:
        wrong = ACCORD_VIN[:8] + ("2" if ACCORD_VIN[8] == "1" else "1") + ACCORD_VIN[9:]
        e = self.failure(lambda: self.client.decisions.auto_loan.create(consumer=self.soft, vehicle={**VEHICLE, "vin": wrong}, loan=LOAN, channel="direct"))
        self.assertIsInstance(e, InvalidRequestError)
        self.assertIn("vehicle.vin", str(e))
        self.assertIsInstance(self.failure(lambda: self.client.decisions.auto_loan.retrieve(UNKNOWN_ID)), NotFoundError)
        bnpl = self.client.decisions.bnpl.create(consumer=self.soft, transaction=support.furniture("120.00"))
        self.assertIsInstance(self.failure(lambda: self.client.decisions.auto_loan.retrieve(bnpl.decision_id)), NotFoundError)


if __name__ == "__main__":
    unittest.main()
