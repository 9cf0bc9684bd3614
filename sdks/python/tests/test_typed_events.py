"""``TypedWebhookEvent`` and ``TypedEvent`` narrow on ``event["type"]``, as the README shows.

This file is also a type test: pyright checks it (tests/pyrightconfig.json, ``npm run typecheck``).
Each branch of ``describe_delivery`` and ``describe`` assigns ``event["data"]`` to a variable annotated
with that event type's data TypedDict and reads its fields, which type-checks only when the check on
``event["type"]`` narrowed the union to that one member; ``_exhausted`` takes ``NoReturn``, so the
final ``else`` type-checks only when every member was narrowed away (each ``type`` its own literal).
``_static_only`` holds the accesses that must fail before narrowing (an unneeded ``pyright: ignore``
is an error in this file), so the unions cannot silently become ``Any``. At run time the same
functions read a signed, verified sample of every event type (docs/webhooks.md), and the unions are
checked against ``EVENT_DATA_TYPES``, ``EventType`` and the ``WebhookEvent`` / ``Event`` envelopes.
"""
# pyright: reportUnnecessaryTypeIgnoreComment=true
import json
import os
import unittest
from typing import Any, Dict, List, Literal, NoReturn, cast, get_args, get_type_hints

import support  # noqa: F401  (puts ../src on sys.path)

from cds_client import types, webhooks
from cds_client.types import (
    ApplicationConditionAddedData,
    ApplicationCreatedData,
    ApplicationDocumentsRequestedData,
    ApplicationKycCompletedData,
    ApplicationKycFailedData,
    DealerAddedData,
    DealerRemovedData,
    DecisionAdjustedData,
    DecisionCreatedData,
    DecisionFinalizedData,
    ScoreCompletedData,
    ScoreErroredData,
    TypedEvent,
    TypedWebhookEvent,
    WebhookTestData,
)

SECRET = "whsec_typed_events_test"
NOW = 1769428800


def _exhausted(event: NoReturn) -> str:
    """Reached only by a type this file does not know; type-checks only on a fully narrowed union."""
    raise AssertionError(f"unhandled event type: {event!r}")


def describe_delivery(event: TypedWebhookEvent) -> str:
    """One line per event type, from fields only that type's ``data`` has."""
    attempt = event["attempt"]  # on every delivery
    if event["type"] == "application.created":
        created: ApplicationCreatedData = event["data"]
        return f"{attempt} {created['product']} {created['amount']} {created['merchant_category']} {created['channel']}"
    elif event["type"] == "decision.created":
        decision: DecisionCreatedData = event["data"]
        return f"{attempt} {decision['status']} {decision['kyc_status']}"
    elif event["type"] == "score.completed":
        scored: ScoreCompletedData = event["data"]
        score_max = scored["score_range"]["max"] if scored["score_range"] is not None else None
        return f"{attempt} {scored['score']} {score_max} {','.join(scored['key_factor_codes'])} {scored['credit_file_source']}"
    elif event["type"] == "score.errored":
        errored: ScoreErroredData = event["data"]
        return f"{attempt} {errored['reason']}"
    elif event["type"] == "decision.finalized":
        finalized: DecisionFinalizedData = event["data"]
        return f"{attempt} {finalized['outcome']} {finalized['recommended_amount']:.2f} {finalized['recommended_rate_pct']}"
    elif event["type"] == "decision.adjusted":
        adjusted: DecisionAdjustedData = event["data"]
        return f"{attempt} {adjusted['previous_outcome']}->{adjusted['outcome']} {adjusted['approved_amount']} {adjusted['adjusted_by']}"
    elif event["type"] == "application.kyc_completed":
        verified: ApplicationKycCompletedData = event["data"]
        return f"{attempt} {verified['kyc_tier']} {verified['kyc_status']}"
    elif event["type"] == "application.kyc_failed":
        failed: ApplicationKycFailedData = event["data"]
        return f"{attempt} {failed['kyc_tier']} {failed['reason_code']}"
    elif event["type"] == "application.documents_requested":
        requested: ApplicationDocumentsRequestedData = event["data"]
        return f"{attempt} {','.join(requested['document_types'])} {requested['upload_url']}"
    elif event["type"] == "application.condition_added":
        condition: ApplicationConditionAddedData = event["data"]
        return f"{attempt} {condition['code']} {condition['added_by']}"
    elif event["type"] == "dealer.added":
        added: DealerAddedData = event["data"]
        return f"{attempt} {added['dealer_name']} {added['status']}"
    elif event["type"] == "dealer.removed":
        removed: DealerRemovedData = event["data"]
        return f"{attempt} {removed['dealer_name']} {removed['status']}"
    elif event["type"] == "webhook.test":
        test: WebhookTestData = event["data"]
        return f"{attempt} {test['endpoint_id']} {test['message']}"
    else:
        return _exhausted(event)


def describe(event: TypedEvent) -> str:
    """The same for the event history's events (no ``attempt``); a delivery is one too."""
    if event["type"] == "application.created":
        created: ApplicationCreatedData = event["data"]
        return f"{created['product']} {created['amount']} {created['merchant_category']} {created['channel']}"
    elif event["type"] == "decision.created":
        decision: DecisionCreatedData = event["data"]
        return f"{decision['status']} {decision['kyc_status']}"
    elif event["type"] == "score.completed":
        scored: ScoreCompletedData = event["data"]
        score_max = scored["score_range"]["max"] if scored["score_range"] is not None else None
        return f"{scored['score']} {score_max} {','.join(scored['key_factor_codes'])} {scored['credit_file_source']}"
    elif event["type"] == "score.errored":
        errored: ScoreErroredData = event["data"]
        return f"{errored['reason']}"
    elif event["type"] == "decision.finalized":
        finalized: DecisionFinalizedData = event["data"]
        return f"{finalized['outcome']} {finalized['recommended_amount']:.2f} {finalized['recommended_rate_pct']}"
    elif event["type"] == "decision.adjusted":
        adjusted: DecisionAdjustedData = event["data"]
        return f"{adjusted['previous_outcome']}->{adjusted['outcome']} {adjusted['approved_amount']} {adjusted['adjusted_by']}"
    elif event["type"] == "application.kyc_completed":
        verified: ApplicationKycCompletedData = event["data"]
        return f"{verified['kyc_tier']} {verified['kyc_status']}"
    elif event["type"] == "application.kyc_failed":
        failed: ApplicationKycFailedData = event["data"]
        return f"{failed['kyc_tier']} {failed['reason_code']}"
    elif event["type"] == "application.documents_requested":
        requested: ApplicationDocumentsRequestedData = event["data"]
        return f"{','.join(requested['document_types'])} {requested['upload_url']}"
    elif event["type"] == "application.condition_added":
        condition: ApplicationConditionAddedData = event["data"]
        return f"{condition['code']} {condition['added_by']}"
    elif event["type"] == "dealer.added":
        added: DealerAddedData = event["data"]
        return f"{added['dealer_name']} {added['status']}"
    elif event["type"] == "dealer.removed":
        removed: DealerRemovedData = event["data"]
        return f"{removed['dealer_name']} {removed['status']}"
    elif event["type"] == "webhook.test":
        test: WebhookTestData = event["data"]
        return f"{test['endpoint_id']} {test['message']}"
    else:
        return _exhausted(event)


def _static_only(delivery: TypedWebhookEvent, event: TypedEvent) -> None:
    """Never called: what the type checker must refuse (each ignore is needed, or pyright fails)."""
    delivery["data"]["decision_id"]  # pyright: ignore[reportGeneralTypeIssues]
    narrowed_too_early: DecisionAdjustedData = delivery["data"]  # pyright: ignore[reportAssignmentType]
    event["attempt"]  # pyright: ignore[reportGeneralTypeIssues]
    as_history: TypedEvent = delivery  # a delivery is a history event: no ignore needed
    del narrowed_too_early, as_history


# One delivery of every event type, with the fields docs/webhooks.md ("Event types and their
# `data`") documents. Typed, so pyright also checks them against the TypedDicts.
DECISION = "0195f3a2-7c41-7d2e-9b1a-3f5e6d7c8b90"
SAMPLES: List[TypedWebhookEvent] = [
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000001",
        "type": "application.created",
        "created": NOW,
        "attempt": 1,
        "data": {
            "application_id": DECISION,
            "decision_id": DECISION,
            "consumer_id": "5b1e8c1a-2f0d-4c43-9d7e-6a1f2b3c4d5e",
            "product": "auto_loan",
            "amount": "23500.00",
            "currency": "USD",
            "kyc_tier": "soft",
            "merchant_name": "Riverside Motors",
            "merchant_category": "automotive",
            "channel": "indirect",
            "dealer_id": "7c9d2e4f-1a3b-4c5d-8e6f-0a1b2c3d4e5f",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000002",
        "type": "decision.created",
        "created": NOW,
        "attempt": 1,
        "data": {
            "decision_id": DECISION,
            "application_id": DECISION,
            "status": "needs_consumer_action",
            "kyc_tier": "enhanced",
            "kyc_status": "pending",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000003",
        "type": "score.completed",
        "created": NOW,
        "attempt": 2,
        "data": {
            "decision_id": DECISION,
            "application_id": DECISION,
            "score": 712,
            "confidence": 0.87,
            "risk_grade": "B",
            "engine_version": "engine-1.4.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1",
            "score_range": {"min": 300, "max": 850},
            "key_factor_codes": ["AA-03", "AA-07", "AA-22"],
            "credit_file_source": "sandbox-synthetic",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000004",
        "type": "score.errored",
        "created": NOW,
        "attempt": 1,
        "data": {
            "decision_id": DECISION,
            "application_id": DECISION,
            "reason": "magic_value",
            "engine_version": "engine-1.4.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000005",
        "type": "decision.finalized",
        "created": NOW,
        "attempt": 1,
        "data": {
            "decision_id": DECISION,
            "application_id": DECISION,
            "outcome": "approved",
            "score": 712,
            "confidence": 0.87,
            "recommended_amount": 87.5,
            "recommended_rate_pct": 0,
            "risk_grade": "B",
            "reason_codes": ["AA-03"],
            "engine_version": "engine-1.4.0+bnpl-sc-2026.11.1+bnpl-policy-2026.11.1",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000006",
        "type": "decision.adjusted",
        "created": NOW,
        "attempt": 1,
        "data": {
            "decision_id": DECISION,
            "application_id": DECISION,
            "previous_outcome": "referred",
            "outcome": "approved",
            "approved_amount": "80.00",
            "currency": "USD",
            "plan": "pay_in_4",
            "term_months": 2,
            "apr": "0.00",
            "reason_codes": ["AA-03"],
            "adjusted_at": "2026-01-26T12:00:00Z",
            "adjusted_by": "2d4f6a8c-0e1b-4d3f-8a5c-7e9b1d3f5a7c",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000007",
        "type": "application.kyc_completed",
        "created": NOW,
        "attempt": 1,
        "data": {
            "application_id": DECISION,
            "decision_id": DECISION,
            "consumer_id": "5b1e8c1a-2f0d-4c43-9d7e-6a1f2b3c4d5e",
            "kyc_tier": "hard",
            "kyc_status": "matched",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000008",
        "type": "application.kyc_failed",
        "created": NOW,
        "attempt": 1,
        "data": {
            "application_id": DECISION,
            "decision_id": DECISION,
            "consumer_id": "5b1e8c1a-2f0d-4c43-9d7e-6a1f2b3c4d5e",
            "kyc_tier": "enhanced",
            "reason_code": "AA-24",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-000000000009",
        "type": "application.documents_requested",
        "created": NOW,
        "attempt": 1,
        "data": {
            "application_id": DECISION,
            "decision_id": DECISION,
            "request_id": "9e8d7c6b-5a49-4382-9170-6f5e4d3c2b1a",
            "document_types": ["proof_of_income", "government_id"],
            "upload_url": "https://lender.example/verify/tok_upload",
            "expires_at": "2026-02-09T12:00:00Z",
            "requested_at": "2026-01-26T12:00:00Z",
            "requested_by": "2d4f6a8c-0e1b-4d3f-8a5c-7e9b1d3f5a7c",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-00000000000a",
        "type": "application.condition_added",
        "created": NOW,
        "attempt": 1,
        "data": {
            "application_id": DECISION,
            "decision_id": DECISION,
            "condition_id": "3c5e7a9b-1d2f-4e6a-8b0c-2d4f6a8c0e1b",
            "code": "down_payment",
            "added_at": "2026-01-26T12:00:00Z",
            "added_by": "2d4f6a8c-0e1b-4d3f-8a5c-7e9b1d3f5a7c",
        },
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-00000000000b",
        "type": "dealer.added",
        "created": NOW,
        "attempt": 1,
        "data": {"dealer_id": "7c9d2e4f-1a3b-4c5d-8e6f-0a1b2c3d4e5f", "dealer_name": "Riverside Motors", "status": "active"},
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-00000000000c",
        "type": "dealer.removed",
        "created": NOW,
        "attempt": 1,
        "data": {"dealer_id": "7c9d2e4f-1a3b-4c5d-8e6f-0a1b2c3d4e5f", "dealer_name": "Riverside Motors", "status": "disabled"},
    },
    {
        "id": "0195f3a2-7c41-7d2e-9b1a-00000000000d",
        "type": "webhook.test",
        "created": NOW,
        "attempt": 1,
        "data": {
            "endpoint_id": "4a6c8e0a-2b4d-4f6a-8c0e-2a4c6e8a0c2e",
            "message": "This is a test event sent from the lender portal.",
        },
    },
]

#: What ``describe`` prints for each sample (``describe_delivery`` puts the attempt first).
EXPECTED = {
    "application.created": "auto_loan 23500.00 automotive indirect",
    "decision.created": "needs_consumer_action pending",
    "score.completed": "712 850 AA-03,AA-07,AA-22 sandbox-synthetic",
    "score.errored": "magic_value",
    "decision.finalized": "approved 87.50 0",
    "decision.adjusted": "referred->approved 80.00 2d4f6a8c-0e1b-4d3f-8a5c-7e9b1d3f5a7c",
    "application.kyc_completed": "hard matched",
    "application.kyc_failed": "enhanced AA-24",
    "application.documents_requested": "proof_of_income,government_id https://lender.example/verify/tok_upload",
    "application.condition_added": "down_payment 2d4f6a8c-0e1b-4d3f-8a5c-7e9b1d3f5a7c",
    "dealer.added": "Riverside Motors active",
    "dealer.removed": "Riverside Motors disabled",
    "webhook.test": "4a6c8e0a-2b4d-4f6a-8c0e-2a4c6e8a0c2e This is a test event sent from the lender portal.",
}


def deliver(sample: TypedWebhookEvent) -> TypedWebhookEvent:
    """The sample as a receiver gets it: serialised, signed, verified, then cast once."""
    body = json.dumps(sample).encode("utf-8")
    header = webhooks.generate_test_header(body, SECRET, timestamp=NOW)
    return cast(TypedWebhookEvent, webhooks.verify(body, header, SECRET, now=NOW))


class NarrowingTest(unittest.TestCase):
    def test_every_event_type_has_a_sample(self) -> None:
        self.assertEqual(sorted(s["type"] for s in SAMPLES), sorted(types.EVENT_DATA_TYPES))
        self.assertEqual(sorted(EXPECTED), sorted(types.EVENT_DATA_TYPES))

    def test_a_verified_delivery_narrows_on_its_type(self) -> None:
        for sample in SAMPLES:
            with self.subTest(type=sample["type"]):
                event = deliver(sample)
                self.assertEqual(event, sample)
                self.assertEqual(describe_delivery(event), f"{sample['attempt']} {EXPECTED[sample['type']]}")
                self.assertEqual(describe(event), EXPECTED[sample["type"]])  # a delivery is a TypedEvent too

    def test_an_event_history_event_narrows_on_its_type(self) -> None:
        for sample in SAMPLES:
            with self.subTest(type=sample["type"]):
                listed: Dict[str, Any] = {k: v for k, v in json.loads(json.dumps(sample)).items() if k != "attempt"}
                self.assertEqual(describe(cast(TypedEvent, listed)), EXPECTED[sample["type"]])

    def test_an_unknown_type_reaches_the_else_branch(self) -> None:
        future = cast(TypedWebhookEvent, {"id": "e", "type": "decision.reopened", "created": NOW, "attempt": 1, "data": {}})
        with self.assertRaisesRegex(AssertionError, "unhandled event type"):
            describe_delivery(future)


class UnionShapeTest(unittest.TestCase):
    """The unions as the run time sees them: one member per event type, each the envelope exactly."""

    def check_union(self, union: Any, envelope: Any) -> None:
        envelope_hints = get_type_hints(envelope)
        seen: List[str] = []
        for member in get_args(union):
            hints = get_type_hints(member)
            (event_type,) = get_args(hints["type"])
            seen.append(event_type)
            with self.subTest(member=member.__name__):
                self.assertEqual(hints["type"], Literal[event_type])
                self.assertIs(hints["data"], types.EVENT_DATA_TYPES[event_type])
                self.assertEqual(sorted(hints), sorted(envelope_hints))
                for field in envelope_hints:
                    if field not in ("type", "data"):
                        self.assertEqual(hints[field], envelope_hints[field], field)
                self.assertEqual(set(member.__required_keys__), set(envelope_hints))
                self.assertIn(member.__name__, types.__all__)
                self.assertIs(getattr(types, member.__name__), member)
        self.assertEqual(sorted(seen), sorted(set(seen)))  # each type once
        self.assertEqual(sorted(seen), sorted(get_args(types.EventType)))

    def test_typed_webhook_event_is_the_webhook_envelope_per_type(self) -> None:
        self.check_union(TypedWebhookEvent, types.WebhookEvent)

    def test_typed_event_is_the_event_history_envelope_per_type(self) -> None:
        self.check_union(TypedEvent, types.Event)

    def test_exported(self) -> None:
        self.assertIn("TypedWebhookEvent", types.__all__)
        self.assertIn("TypedEvent", types.__all__)
        # Also from the package itself, beside CreditDecisions and webhooks: the same objects.
        import cds_client

        self.assertIn("TypedWebhookEvent", cds_client.__all__)
        self.assertIn("TypedEvent", cds_client.__all__)
        self.assertIs(cds_client.TypedWebhookEvent, TypedWebhookEvent)
        self.assertIs(cds_client.TypedEvent, TypedEvent)


@unittest.skipUnless(os.environ.get("CDS_TEST_WEBHOOK_BODY_FILE"), "needs a delivery captured by sdks/node/test/python-sdk.test.ts")
class RealDeliveryNarrowingTest(unittest.TestCase):
    """The delivery the real service signed (decision.finalized) narrows to DecisionFinalizedData."""

    def test_narrows_to_the_finalized_data(self) -> None:
        with open(os.environ["CDS_TEST_WEBHOOK_BODY_FILE"], "rb") as f:
            body = f.read()
        raw = webhooks.verify(
            body, os.environ["CDS_TEST_WEBHOOK_HEADER"], os.environ["CDS_TEST_WEBHOOK_SECRET"],
            now=int(os.environ["CDS_TEST_WEBHOOK_RECEIVED_AT"]),
        )
        event = cast(TypedWebhookEvent, raw)
        if event["type"] == "decision.finalized":
            finalized: DecisionFinalizedData = event["data"]
            self.assertEqual(sorted(finalized), sorted(get_type_hints(DecisionFinalizedData)))
            self.assertIn(finalized["outcome"], ("approved", "declined", "referred"))
            self.assertIsInstance(finalized["recommended_amount"], (int, float))
        else:
            self.fail(f"expected decision.finalized, got {event['type']}")


if __name__ == "__main__":
    unittest.main()
