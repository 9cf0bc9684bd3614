"""Webhook signatures checked against headers built independently here with ``hmac``, never with
the library's own signer; plus a real delivery of the service when the wrapper captured one."""
import base64
import hashlib
import hmac
import json
import os
import time
import unittest
from typing import Union

import support  # noqa: F401  (puts ../src on sys.path)

from cds_client import CreditDecisions, WebhookVerificationError, generate_test_header, verify_signature, webhooks

SECRET = "whsec_" + base64.b64encode(bytes([7]) * 32).decode()
OLD_SECRET = "whsec_" + base64.b64encode(bytes([9]) * 32).decode()
BODY = json.dumps(
    {
        "id": "8d0e7f2a-4b9c-4c1e-9a55-1f7b3c2d9e10",
        "type": "decision.finalized",
        "created": 1769428800,
        "attempt": 1,
        "data": {"decision_id": "d", "outcome": "approved", "note": "naïve ✓"},
    },
    ensure_ascii=False,
).encode("utf-8")


def hmac_hex(secret: str, t: int, body: Union[bytes, str]) -> str:
    raw = body.encode("utf-8") if isinstance(body, str) else body
    return hmac.new(secret.encode("utf-8"), str(t).encode() + b"." + raw, hashlib.sha256).hexdigest()


def header(t: int, *sigs: str) -> str:
    return ",".join([f"t={t}"] + [f"v1={s}" for s in sigs])


class VerifyTest(unittest.TestCase):
    def test_valid_signature_returns_the_event(self) -> None:
        t = int(time.time())
        event = webhooks.verify(BODY, header(t, hmac_hex(SECRET, t, BODY)), SECRET)
        self.assertEqual(event["id"], "8d0e7f2a-4b9c-4c1e-9a55-1f7b3c2d9e10")
        self.assertEqual(event["type"], "decision.finalized")
        self.assertEqual(event["data"]["note"], "naïve ✓")
        # str bodies, bytearray, memoryview and the documented alias
        self.assertEqual(webhooks.verify(BODY.decode("utf-8"), header(t, hmac_hex(SECRET, t, BODY)), SECRET)["attempt"], 1)
        self.assertEqual(webhooks.verify(bytearray(BODY), header(t, hmac_hex(SECRET, t, BODY)), SECRET)["attempt"], 1)
        self.assertEqual(verify_signature(memoryview(BODY), header(t, hmac_hex(SECRET, t, BODY)), [SECRET])["attempt"], 1)

    def test_rotation_headers(self) -> None:
        t = int(time.time())
        h = header(t, hmac_hex(SECRET, t, BODY), hmac_hex(OLD_SECRET, t, BODY))
        self.assertTrue(webhooks.verify(BODY, h, SECRET))
        self.assertTrue(webhooks.verify(BODY, h, OLD_SECRET))
        self.assertTrue(webhooks.verify(BODY, h, [OLD_SECRET, SECRET]))
        with self.assertRaisesRegex(WebhookVerificationError, "No signature matches"):
            webhooks.verify(BODY, header(t, hmac_hex(OLD_SECRET, t, BODY)), SECRET)
        self.assertTrue(webhooks.verify(BODY, header(t, hmac_hex(SECRET, t, BODY)), (OLD_SECRET, SECRET)))

    def test_timestamps_outside_the_tolerance(self) -> None:
        n = 1_800_000_000

        def at(t: int) -> str:
            return header(t, hmac_hex(SECRET, t, BODY))

        self.assertTrue(webhooks.verify(BODY, at(n - 300), SECRET, now=n))
        with self.assertRaisesRegex(WebhookVerificationError, "301 s old"):
            webhooks.verify(BODY, at(n - 301), SECRET, now=n)
        with self.assertRaisesRegex(WebhookVerificationError, "replay"):
            webhooks.verify(BODY, at(n - 86400), SECRET, now=n)
        with self.assertRaisesRegex(WebhookVerificationError, "future"):
            webhooks.verify(BODY, at(n + 301), SECRET, now=n)
        self.assertTrue(webhooks.verify(BODY, at(n - 500), SECRET, tolerance=600, now=n))

    def test_tampering(self) -> None:
        t = int(time.time())
        h = header(t, hmac_hex(SECRET, t, BODY))
        for body, hdr, secret in [
            (BODY.replace(b"approved", b"declined"), h, SECRET),
            (BODY, h, "whsec_wrong"),
            (json.dumps(json.loads(BODY), indent=2).encode(), h, SECRET),
            (BODY, header(t, hmac_hex(SECRET, t, BODY).upper()), SECRET),
            (BODY, header(t + 1, hmac_hex(SECRET, t, BODY)), SECRET),
        ]:
            with self.assertRaisesRegex(WebhookVerificationError, "No signature"):
                webhooks.verify(body, hdr, secret)

    def test_missing_and_malformed(self) -> None:
        t = int(time.time())
        sig = hmac_hex(SECRET, t, BODY)
        for hdr, pattern in [(None, "Missing"), ("", "Missing"), (f"v1={sig}", "Malformed"), (f"t={t}", "Malformed"), (f"t=abc,v1={sig}", "Malformed")]:
            with self.assertRaisesRegex(WebhookVerificationError, pattern):
                webhooks.verify(BODY, hdr, SECRET)
        with self.assertRaisesRegex(WebhookVerificationError, "raw request body"):
            webhooks.verify(json.loads(BODY), header(t, sig), SECRET)  # type: ignore[arg-type]
        with self.assertRaises(ValueError):
            webhooks.verify(BODY, header(t, sig), [])
        with self.assertRaisesRegex(WebhookVerificationError, "not JSON"):
            webhooks.verify(b"not json", header(t, hmac_hex(SECRET, t, b"not json")), SECRET)

    def test_unknown_schemes_are_ignored(self) -> None:
        t = int(time.time())
        self.assertTrue(webhooks.verify(BODY, f"t={t},v0=deadbeef,v1={hmac_hex(SECRET, t, BODY)}", SECRET))


class GenerateTestHeaderTest(unittest.TestCase):
    def test_matches_an_independent_signature(self) -> None:
        t = 1_769_428_800
        self.assertEqual(generate_test_header(BODY, SECRET, timestamp=t), header(t, hmac_hex(SECRET, t, BODY)))
        self.assertEqual(
            generate_test_header(BODY, [SECRET, OLD_SECRET], timestamp=t), header(t, hmac_hex(SECRET, t, BODY), hmac_hex(OLD_SECRET, t, BODY))
        )
        fresh = generate_test_header(BODY, SECRET)
        self.assertEqual(webhooks.verify(BODY, fresh, SECRET)["type"], "decision.finalized")

    def test_available_on_the_client(self) -> None:
        client = CreditDecisions(api_key="svc_test_x", base_url="http://127.0.0.1:1")
        h = client.webhooks.generate_test_header(BODY, SECRET)
        self.assertEqual(client.webhooks.verify(BODY, h, SECRET)["attempt"], 1)


@unittest.skipUnless(os.environ.get("CDS_TEST_WEBHOOK_BODY_FILE"), "needs a delivery captured by sdks/node/test/python-sdk.test.ts")
class RealDeliveryTest(unittest.TestCase):
    """A delivery the real service signed and sent to an HTTPS receiver of the wrapper."""

    def setUp(self) -> None:
        with open(os.environ["CDS_TEST_WEBHOOK_BODY_FILE"], "rb") as f:
            self.body = f.read()
        self.header = os.environ["CDS_TEST_WEBHOOK_HEADER"]
        self.secret = os.environ["CDS_TEST_WEBHOOK_SECRET"]
        self.sent_at = int(os.environ["CDS_TEST_WEBHOOK_RECEIVED_AT"])

    def test_verifies_with_the_endpoint_secret(self) -> None:
        event = webhooks.verify(self.body, self.header, self.secret)
        self.assertEqual(event["type"], "decision.finalized")
        self.assertEqual(event["id"], os.environ["CDS_TEST_WEBHOOK_ID"])
        self.assertIn(event["data"]["outcome"], ("approved", "declined", "referred"))
        self.assertEqual(webhooks.verify(self.body, self.header, ["whsec_other", self.secret])["id"], event["id"])

    def test_refuses_tampering_and_staleness(self) -> None:
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(self.body + b" ", self.header, self.secret)
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(self.body, self.header, "whsec_other")
        with self.assertRaises(WebhookVerificationError):
            webhooks.verify(self.body, self.header, self.secret, now=self.sent_at + 301 + 5)


if __name__ == "__main__":
    unittest.main()
