"""``decision.offer`` built from fixture decisions (no service): the approval's fields with none
Optional, None on every other shape, a ValueError naming the field when an approval lacks one, and
never a wire field (``to_dict()`` gives back exactly what was received)."""
import copy
import dataclasses
import typing
import unittest
from typing import Any, Dict, List

import support  # noqa: F401  (puts ../src on sys.path)
from support import declined_decision, pending_decision

import cds_client
from cds_client import AutoLoanDecision, AutoLoanOffer, Decision, Offer, Payment, TilaDisclosure
from cds_client._core.http import ResponseMeta

ID = "7f3e2a10-5b6c-4d8e-9f01-23456789abcd"

#: A pay-in-4 approval as the service sends it.
APPROVED: Dict[str, Any] = {
    "decision_id": ID,
    "application_id": ID,
    "status": "complete",
    "kyc_tier": "soft",
    "kyc_status": "skipped",
    "outcome": "approved",
    "approved_amount": "149.97",
    "currency": "USD",
    "apr": "0.00",
    "term_months": 2,
    "payment_schedule": [
        {"num": 1, "due_date": "2026-03-15", "amount": "37.50"},
        {"num": 2, "due_date": "2026-03-29", "amount": "37.49"},
        {"num": 3, "due_date": "2026-04-12", "amount": "37.49"},
        {"num": 4, "due_date": "2026-04-26", "amount": "37.49"},
    ],
    "tila_disclosure": {"amount_financed": "149.97", "finance_charge": "0.00", "total_of_payments": "149.97", "apr": "0.00", "payment_frequency": "biweekly"},
    "decline_reasons": [],
    "consumer_complete_url": None,
    "polling_url": f"/v1/decisions/bnpl/{ID}",
    "expires_at": "2026-04-14T15:00:00.000Z",
}

#: A direct auto-loan approval (docs/auto-loan.md, example 1).
AUTO_APPROVED: Dict[str, Any] = dict(
    APPROVED,
    approved_amount="13000.00",
    apr="6.99",
    term_months=60,
    payment_schedule=[{"num": 1, "due_date": "2026-04-15", "amount": "257.35"}],
    tila_disclosure={"amount_financed": "13000.00", "finance_charge": "2441.29", "total_of_payments": "15441.29", "apr": "6.99", "payment_frequency": "monthly"},
    polling_url=f"/v1/decisions/auto-loan/{ID}",
    buy_rate="6.99",
    contract_rate="6.99",
    dealer_reserve="0.00",
    ltv="86.67",
)

REFERRED: Dict[str, Any] = dict(declined_decision(ID), outcome="referred", kyc_tier="enhanced", kyc_status="pending", polling_url=f"/v1/decisions/bnpl/{ID}")
OFFER_KEYS = ["approved_amount", "currency", "apr", "term_months", "payment_schedule", "tila_disclosure", "expires_at"]
AUTO_LOAN_KEYS = ["buy_rate", "contract_rate", "dealer_reserve", "ltv"]
META = ResponseMeta(status=200, headers={}, request_id="req_abc123", idempotent_replayed=False, idempotency_key=None, retries=0)


def without(data: Dict[str, Any], key: str) -> Dict[str, Any]:
    copied = copy.deepcopy(data)
    del copied[key]
    return copied


class OfferTest(unittest.TestCase):
    def test_every_field_is_set_and_typed_without_optional(self) -> None:
        d = Decision.from_dict(APPROVED)
        offer = d.offer
        assert offer is not None
        self.assertIsInstance(offer, Offer)
        # What mypy and pyright read: no Optional on any field of either offer.
        for cls in (Offer, AutoLoanOffer):
            for name, hint in typing.get_type_hints(cls).items():
                self.assertNotIn(type(None), typing.get_args(hint), f"{cls.__name__}.{name} is Optional")
        self.assertEqual([f.name for f in dataclasses.fields(Offer)], OFFER_KEYS)
        self.assertEqual((offer.approved_amount, offer.currency, offer.apr, offer.term_months, offer.expires_at), ("149.97", "USD", "0.00", 2, "2026-04-14T15:00:00.000Z"))
        self.assertEqual(offer.payment_schedule, d.payment_schedule)
        self.assertIsInstance(offer.payment_schedule[0], Payment)
        self.assertIsInstance(offer.tila_disclosure, TilaDisclosure)
        self.assertEqual(offer.tila_disclosure.total_of_payments, "149.97")
        with self.assertRaises(dataclasses.FrozenInstanceError):
            offer.apr = "1.00"  # type: ignore[misc]

    def test_none_on_a_decline_a_referral_and_a_pending_decision(self) -> None:
        declined = Decision.from_dict(declined_decision(ID))
        referred = Decision.from_dict(REFERRED)
        pending = Decision.from_dict(pending_decision(ID))
        self.assertEqual((declined.is_declined, referred.is_referred, pending.is_pending), (True, True, True))
        self.assertEqual((declined.offer, referred.offer, pending.offer), (None, None, None))
        self.assertIsNotNone(pending.expires_at)  # the pending state's expiry, not an offer

    def test_raises_naming_the_field_when_an_approval_lacks_one(self) -> None:
        for key in OFFER_KEYS:
            d = Decision.from_dict(without(APPROVED, key), META)
            self.assertTrue(d.is_approved)
            with self.assertRaises(ValueError) as caught:
                d.offer
            self.assertEqual(str(caught.exception), f"Approved decision {ID} has no {key}: the service sent an incomplete offer (request req_abc123)")
        with self.assertRaisesRegex(ValueError, r"has no apr: the service sent an incomplete offer$"):
            Decision.from_dict(dict(APPROVED, apr=None)).offer

    def test_not_a_wire_field(self) -> None:
        d = Decision.from_dict(APPROVED)
        self.assertIsNotNone(d.offer)
        self.assertEqual(d.to_dict(), APPROVED)
        self.assertNotIn("offer", [f.name for f in dataclasses.fields(d)])
        self.assertNotIn("offer", dataclasses.asdict(d))
        # A wire field of that name cannot replace it either.
        d2 = Decision.from_dict(dict(APPROVED, offer="from the wire"))
        self.assertIsInstance(d2.offer, Offer)

    def test_exported(self) -> None:
        for name in ("Offer", "AutoLoanOffer"):
            self.assertIn(name, cds_client.__all__)
        self.assertIs(cds_client.Offer, Offer)


class AutoLoanOfferTest(unittest.TestCase):
    def test_the_rates_the_reserve_and_the_ltv_are_set(self) -> None:
        d = AutoLoanDecision.from_dict(AUTO_APPROVED)
        offer = d.offer
        assert offer is not None
        self.assertIsInstance(offer, AutoLoanOffer)
        self.assertIsInstance(offer, Offer)
        self.assertEqual([f.name for f in dataclasses.fields(AutoLoanOffer)], OFFER_KEYS + AUTO_LOAN_KEYS)
        rates: List[str] = [offer.buy_rate, offer.contract_rate, offer.dealer_reserve, offer.ltv]
        self.assertEqual(rates, ["6.99", "6.99", "0.00", "86.67"])
        self.assertEqual((offer.approved_amount, offer.apr, offer.term_months), ("13000.00", "6.99", 60))
        self.assertEqual(d.to_dict(), AUTO_APPROVED)

    def test_none_unless_approved_and_raises_naming_a_missing_rate(self) -> None:
        self.assertIsNone(AutoLoanDecision.from_dict(declined_decision(ID)).offer)
        self.assertIsNone(AutoLoanDecision.from_dict(pending_decision(ID)).offer)
        self.assertIsNone(AutoLoanDecision.from_dict(REFERRED).offer)
        for key in OFFER_KEYS + AUTO_LOAN_KEYS:
            with self.assertRaisesRegex(ValueError, rf"^Approved decision {ID} has no {key}: the service sent an incomplete offer$"):
                AutoLoanDecision.from_dict(without(AUTO_APPROVED, key)).offer


if __name__ == "__main__":
    unittest.main()
