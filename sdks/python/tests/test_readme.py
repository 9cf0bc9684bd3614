"""The README's examples run as written against the real service, with the library importable the
way an installed one is (from ../src; or, with CDS_TEST_PIP_INSTALL=1, from a real
``pip install`` of this folder into a temporary target, which needs the setuptools build backend
from a package index and takes ~10 s)."""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
from typing import Dict, Optional

import support

README = os.path.join(support.SDK_ROOT, "README.md")


def examples() -> Dict[str, str]:
    with open(README, encoding="utf-8") as f:
        text = f.read()
    return {m.group(1): m.group(2) for m in re.finditer(r'```python title="([^"]+)"\n(.*?)```', text, re.S)}


class ReadmeTest(unittest.TestCase):
    service: support.Service
    project: str
    library_path: str

    @classmethod
    def setUpClass(cls) -> None:
        cls.service = support.service()
        cls.project = tempfile.mkdtemp(prefix="cds-py-user-")
        for name, code in examples().items():
            with open(os.path.join(cls.project, name), "w", encoding="utf-8") as f:
                f.write(code)
        cls.library_path = os.path.join(support.SDK_ROOT, "src")
        if os.environ.get("CDS_TEST_PIP_INSTALL") == "1":
            cls.library_path = cls.pip_install()

    @classmethod
    def pip_install(cls) -> str:
        source = os.path.join(cls.project, "_source")
        shutil.copytree(support.SDK_ROOT, source, ignore=shutil.ignore_patterns("tests", "__pycache__", "build", "*.egg-info"))
        target = os.path.join(cls.project, "_site")
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--no-deps", "--disable-pip-version-check", "-q", "--target", target, source],
            check=True, capture_output=True, timeout=180,
        )
        return target

    @classmethod
    def tearDownClass(cls) -> None:
        shutil.rmtree(cls.project, ignore_errors=True)

    def env(self, **extra: str) -> Dict[str, str]:
        env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": self.library_path, "PYTHONDONTWRITEBYTECODE": "1"}
        env.update(extra)
        return env

    def run_example(self, name: str, **extra: str) -> "subprocess.CompletedProcess[str]":
        return subprocess.run(
            [sys.executable, name], cwd=self.project, env=self.env(**extra), capture_output=True, text=True, timeout=60
        )

    def test_has_the_runnable_examples(self) -> None:
        self.assertEqual(list(examples()), ["quickstart.py", "auto_loan.py", "webhook_receiver.py", "send_test_webhook.py", "recover_missed_events.py"])

    def test_recover_missed_events_runs_as_written(self) -> None:
        from cds_client import CreditDecisions

        client = CreditDecisions(api_key=self.service.sandbox_key, base_url=self.service.base_url)
        ids = [
            client.decisions.bnpl.create(
                consumer={"consumer_id": self.service.consumers["soft"]}, transaction=support.furniture(f"{60 + i}.00")
            ).decision_id
            for i in range(22)
        ]
        result = self.run_example("recover_missed_events.py", CDS_BASE_URL=self.service.base_url, CDS_API_KEY=self.service.sandbox_key)
        self.assertEqual(result.stderr, "")
        self.assertEqual(result.returncode, 0)
        # More than one page (20 by default): auto-pagination found every one.
        for decision_id in ids:
            self.assertRegex(result.stdout, rf"(?m)^decision\.finalized [0-9a-f-]{{36}} {decision_id}$")
        count = int(re.search(r"(?m)^recovered (\d+) events$", result.stdout).group(1))  # type: ignore[union-attr]
        self.assertGreaterEqual(count, len(ids))

    def test_quickstart_runs_as_written(self) -> None:
        result = self.run_example(
            "quickstart.py",
            CDS_BASE_URL=self.service.base_url,
            CDS_API_KEY=self.service.sandbox_key,
            CDS_SOFT_CONSUMER_ID=self.service.consumers["soft"],
            CDS_ENHANCED_CONSUMER_ID=self.service.consumers["enhanced"],
        )
        self.assertEqual(result.stderr, "")
        self.assertEqual(result.returncode, 0)
        out = result.stdout
        self.assertRegex(out, r"(?m)^1\. approved: True 149\.97 APR \d+\.\d{2}%$")
        self.assertEqual(len(re.findall(r"(?m)^ {3}payment \d: ", out)), 4)
        self.assertRegex(out, r"(?m)^2\. declined: True AA-21 Bankruptcy")
        self.assertRegex(out, r"(?m)^3\. pending: True send the consumer to https?://\S+/verify/\S+$")
        self.assertRegex(out, r"(?m)^ {3}completed: approved 1500\.00 \d+ months$")
        self.assertRegex(out, r"(?m)^4\. error: UnprocessableEntityError 422 unprocessable_entity req_\w+$")
        self.assertRegex(out, r"(?m)^5\. webhook verified: decision\.finalized True$")

    def test_auto_loan_example_runs_as_written_with_a_portal_tenant_and_its_dealer(self) -> None:
        tenant = support.auto_loan_tenant()
        result = self.run_example(
            "auto_loan.py",
            CDS_BASE_URL=self.service.base_url,
            CDS_API_KEY=tenant.sandbox_key,
            CDS_SOFT_CONSUMER_ID=tenant.consumers["soft"],
            CDS_ENHANCED_CONSUMER_ID=tenant.consumers["enhanced"],
            CDS_DEALER_ID=tenant.active_dealer["id"],
        )
        self.assertEqual(result.stderr, "")
        self.assertEqual(result.returncode, 0)
        out = result.stdout
        direct = re.search(r"(?m)^1\. direct: approved 13000\.00 buy (\d+\.\d{2})% contract (\d+\.\d{2})% APR \d+\.\d{2}% LTV 86\.67%$", out)
        assert direct is not None, out
        self.assertEqual(direct.group(2), direct.group(1))
        indirect = re.search(r"(?m)^2\. indirect: approved buy (\d+\.\d{2})% contract (\d+\.\d{2})% dealer reserve (\d+\.\d{2})$", out)
        assert indirect is not None, out
        self.assertEqual(indirect.group(1), direct.group(1))
        self.assertEqual(round(float(indirect.group(2)) * 100), round(float(indirect.group(1)) * 100) + 100)
        self.assertGreater(float(indirect.group(3)), 0)
        self.assertRegex(out, r"(?m)^ {3}60 payments of \d+\.\d{2}, first due \d{4}-\d{2}-\d{2}$")
        self.assertRegex(out, r"(?m)^ {3}total sale price \d+\.\d{2}, including 3000\.00 down$")
        self.assertRegex(out, r"(?m)^3\. pending: True send the consumer to https?://\S+/verify/\S+$")
        self.assertRegex(out, r"(?m)^ {3}completed: approved 20000\.00 48 months at \d+\.\d{2}%$")
        self.assertRegex(out, r"(?m)^4\. refused: 422 unprocessable_entity dealer\.markup_rate_pct 1\.50 is above the cap of 1\.25")

    def test_webhook_receiver_accepts_signed_refuses_forged_and_deduplicates(self) -> None:
        port = str(support.free_port())
        secret = "whsec_readme_receiver_secret"
        receiver = subprocess.Popen(
            [sys.executable, "webhook_receiver.py"],
            cwd=self.project, env=self.env(PORT=port, CDS_WEBHOOK_SECRET=secret), stdout=subprocess.PIPE, text=True,
        )
        try:
            assert receiver.stdout is not None
            self.assertEqual(receiver.stdout.readline().strip(), "listening")
            sent = self.run_example("send_test_webhook.py", PORT=port, CDS_WEBHOOK_SECRET=secret)
            self.assertEqual(sent.stdout.strip(), "204", sent.stderr)
            again = self.run_example("send_test_webhook.py", PORT=port, CDS_WEBHOOK_SECRET=secret)
            self.assertEqual(again.stdout.strip(), "204")
            forged = self.run_example("send_test_webhook.py", PORT=port, CDS_WEBHOOK_SECRET="whsec_not_the_secret")
            self.assertEqual(forged.stdout.strip(), "400")
            line: Optional[str] = receiver.stdout.readline()
            self.assertEqual((line or "").strip(), "received webhook.test")
        finally:
            receiver.kill()
            receiver.wait(5)
        assert receiver.stdout is not None
        rest = receiver.stdout.read()
        receiver.stdout.close()
        self.assertNotIn("received", rest)  # the duplicate was not processed twice
        time.sleep(0)


if __name__ == "__main__":
    unittest.main()
