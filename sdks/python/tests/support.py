"""Shared test helpers: the real service and a scripted fake server.

The real service comes from the environment when the vitest wrapper
(sdks/node/test/python-sdk.test.ts) started it (CDS_TEST_BASE_URL, CDS_TEST_SANDBOX_KEY, ...);
otherwise the first test that needs it starts ``node server/dist/cli/main.js serve`` itself (build
the repository first). The library is imported from ../src unless CDS_TEST_USE_INSTALLED=1 (the
test then uses whatever ``cds_client`` is importable, e.g. one installed with pip).
"""
import atexit
import json
import os
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Union

HERE = os.path.dirname(os.path.abspath(__file__))
SDK_ROOT = os.path.dirname(HERE)
REPO_ROOT = os.path.dirname(os.path.dirname(SDK_ROOT))
CLI_PATH = os.path.join(REPO_ROOT, "server", "dist", "cli", "main.js")

if os.environ.get("CDS_TEST_USE_INSTALLED") != "1":
    sys.path.insert(0, os.path.join(SDK_ROOT, "src"))

from cds_client.types import NewConsumer, TransactionParams  # noqa: E402


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    def __init__(self, base_url: str, sandbox_key: str, live_key: str, consumers: Dict[str, str]) -> None:
        self.base_url = base_url
        self.sandbox_key = sandbox_key
        self.live_key = live_key
        self.consumers = consumers
        self.process: Optional["subprocess.Popen[bytes]"] = None
        self.data_dir: Optional[str] = None

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
        if self.data_dir:
            shutil.rmtree(self.data_dir, ignore_errors=True)


_service: Optional[Service] = None


def service() -> Service:
    """The real service (started once per test process when the environment gives none)."""
    global _service
    if _service is not None:
        return _service
    env = os.environ
    if env.get("CDS_TEST_BASE_URL"):
        _service = Service(
            env["CDS_TEST_BASE_URL"],
            env["CDS_TEST_SANDBOX_KEY"],
            env["CDS_TEST_LIVE_KEY"],
            {
                "soft": env["CDS_TEST_SOFT_CONSUMER_ID"],
                "enhanced": env["CDS_TEST_ENHANCED_CONSUMER_ID"],
                "hard": env["CDS_TEST_HARD_CONSUMER_ID"],
            },
        )
        return _service
    _service = _start_service()
    atexit.register(_service.stop)
    return _service


def _start_service() -> Service:
    node = shutil.which("node")
    if node is None or not os.path.exists(CLI_PATH):
        raise RuntimeError(f"need node and {CLI_PATH}: run `npm run build` at the repository root first")
    data_dir = tempfile.mkdtemp(prefix="cds-py-")
    port = free_port()
    child_env = {
        "PATH": os.environ.get("PATH", ""),
        "HOME": os.environ.get("HOME", data_dir),
        "PORT": str(port),
        "HOST": "127.0.0.1",
        "CDS_DATA_DIR": data_dir,
        "DATA_ENCRYPTION_KEY": "6b" * 32,
        "RATE_LIMIT_SANDBOX_PER_S": "1000",
        "RATE_LIMIT_LIVE_PER_S": "1000",
        "LOG_LEVEL": "warn",
    }
    out = subprocess.run(
        [node, CLI_PATH, "tenants", "create", "--name", "Python SDK Test", "--json"],
        env=child_env, cwd=data_dir, capture_output=True, check=True, timeout=30,
    )
    tenant = json.loads(out.stdout)
    process = subprocess.Popen([node, CLI_PATH, "serve"], env=child_env, cwd=data_dir, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(base_url + "/healthz", timeout=1) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            process.kill()
            raise RuntimeError("cds serve did not become healthy")
        time.sleep(0.05)
    consumers = {c["tier"]: c["consumer_id"] for c in tenant["sandbox"]["consumers"]}
    s = Service(base_url, tenant["sandbox"]["api_key"], tenant["live"]["api_key"], consumers)
    s.process = process
    s.data_dir = data_dir
    return s


# --------------------------------------------------------------------------------------------
# Dealers live in the lender portal, not in /v1 (decisions.md section 11): the auto-loan tests set
# their tenant up as a lender does, signed up in the portal (which provisions the sandbox with its
# seeded consumers and shows the sandbox key once), with dealers added there and one disabled.


class PortalSession:
    """A small cookie-keeping client of the portal's JSON API, sending the CSRF header the web app sends."""

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url
        self.cookies: Dict[str, str] = {}
        self.csrf = ""

    def request(self, method: str, path: str, body: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
        headers = {"Accept": "application/json"}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if method != "GET":
            headers["X-CSRF-Token"] = self.csrf
        data = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            data = json.dumps(body).encode()
        request = urllib.request.Request(f"{self.base_url}/portal/api{path}", data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as r:
                for cookie in r.headers.get_all("Set-Cookie") or []:
                    name, _, rest = cookie.partition("=")
                    self.cookies[name.strip()] = rest.split(";", 1)[0].strip()
                payload: Dict[str, Any] = json.loads(r.read() or b"{}")
        except urllib.error.HTTPError as e:
            raise RuntimeError(f"{method} /portal/api{path} answered {e.code}: {e.read()!r}") from None
        if isinstance(payload.get("csrf_token"), str):
            self.csrf = payload["csrf_token"]
        return payload


class AutoLoanTenant:
    def __init__(self, sandbox_key: str, consumers: Dict[str, str], active_dealer: Dict[str, Any], disabled_dealer: Dict[str, Any]) -> None:
        self.sandbox_key = sandbox_key
        self.consumers = consumers
        self.active_dealer = active_dealer
        self.disabled_dealer = disabled_dealer


_auto_loan_tenant: Optional[AutoLoanTenant] = None


def auto_loan_tenant() -> AutoLoanTenant:
    """A tenant signed up in the portal of the real service, with two sandbox dealers: one active,
    one disabled (made once per test process)."""
    global _auto_loan_tenant
    if _auto_loan_tenant is not None:
        return _auto_loan_tenant
    portal = PortalSession(service().base_url)
    portal.request("GET", "/session")
    signed_up = portal.request(
        "POST",
        "/signup",
        {"company_name": "Python SDK Auto Finance", "name": "Sam Integrator", "email": f"py-{time.time_ns()}@auto-finance.example.com", "password": "a long sandbox passphrase"},
    )
    seeded = portal.request("GET", "/sandbox/consumers?seeded=true")["data"]
    active = portal.request("POST", "/dealers/sandbox/dealers", {"name": "Lone Star Motors", "license_number": "TX-DLR-20417", "state": "TX"})
    closed = portal.request("POST", "/dealers/sandbox/dealers", {"name": "Closed Lot Cars", "state": "OK"})
    disabled = portal.request("POST", f"/dealers/sandbox/dealers/{closed['id']}/disable", {})
    _auto_loan_tenant = AutoLoanTenant(signed_up["sandbox_api_key"], {c["tier"]: c["id"] for c in seeded}, active, disabled)
    return _auto_loan_tenant


_VIN_VALUES = {c: v for c, v in zip("ABCDEFGHJKLMNPRSTUVWXYZ", [1, 2, 3, 4, 5, 6, 7, 8, 1, 2, 3, 4, 5, 7, 9, 2, 3, 4, 5, 6, 7, 8, 9])}
_VIN_WEIGHTS = [8, 7, 6, 5, 4, 3, 2, 10, 0, 9, 8, 7, 6, 5, 4, 3, 2]


def vin(seventeen: str) -> str:
    """The VIN with its check digit (position 9) computed as 49 CFR 565 says."""
    chars = seventeen.upper()
    total = sum((int(c) if c.isdigit() else _VIN_VALUES[c]) * w for c, w in zip(chars, _VIN_WEIGHTS))
    check = "X" if total % 11 == 10 else str(total % 11)
    return chars[:8] + check + chars[9:]


def new_consumer(ssn_last4: str, first_name: str = "Ada") -> "NewConsumer":
    return {
        "first_name": first_name,
        "last_name": "Lovelace",
        "email": f"{first_name.lower()}@example.com",
        "dob": "1990-12-10",
        "ssn_last4": ssn_last4,
        "address": {"line1": "1 Main St", "city": "Austin", "state": "TX", "zip": "73301"},
    }


def furniture(amount: str) -> "TransactionParams":
    return {"amount": amount, "currency": "USD", "merchant_name": "Acme Furniture", "merchant_category": "furniture"}


# --------------------------------------------------------------------------------------------
# A scripted fake server: each request takes the next step (the last one repeats).

Step = Union[Dict[str, Any], str]  # {"status", "headers"?, "body"?, "delay"?} | "drop" | "hang" | "stall-body" | "trickle-body"


def error_body(code: str, message: Optional[str] = None) -> Dict[str, str]:
    return {"error": code, "message": message or f"fake {code}", "request_id": "req_fake0000000000000000"}


def pending_decision(decision_id: str) -> Dict[str, Any]:
    return {
        "decision_id": decision_id,
        "application_id": decision_id,
        "status": "needs_consumer_action",
        "kyc_tier": "enhanced",
        "kyc_status": "pending",
        "outcome": None,
        "consumer_complete_url": "http://127.0.0.1/verify/x",
        "polling_url": f"/v1/decisions/bnpl/{decision_id}",
        "estimated_completion_seconds": 120,
        "expires_at": "2030-01-01T00:00:00.000Z",
    }


def declined_decision(decision_id: str) -> Dict[str, Any]:
    return {
        "decision_id": decision_id,
        "application_id": decision_id,
        "status": "complete",
        "outcome": "declined",
        "decline_reasons": [{"code": "AA-21", "reason": "Bankruptcy"}],
    }


class Recorded:
    def __init__(self, method: str, path: str, headers: Dict[str, str], body: bytes, at: float) -> None:
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.at = at


class FakeServer:
    def __init__(self) -> None:
        self.steps: List[Step] = []
        self.index = 0
        self.requests: List[Recorded] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                with fake.lock:
                    fake.requests.append(
                        Recorded(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body, time.monotonic())
                    )
                    step = fake.steps[min(fake.index, len(fake.steps) - 1)] if fake.steps else {"status": 500, "body": error_body("internal_error")}
                    fake.index += 1
                if step == "drop":
                    self.close_connection = True
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.connection.close()
                    return
                if step == "hang":
                    fake.release.wait(30)
                    self.close_connection = True
                    return
                if step == "trickle-body":
                    # A byte every 50 ms for about 3 s: each read is quick, the whole body is not.
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "60")
                    self.end_headers()
                    for _ in range(60):
                        if fake.release.wait(0.05):
                            break
                        try:
                            self.wfile.write(b" ")
                            self.wfile.flush()
                        except OSError:
                            break
                    self.close_connection = True
                    return
                if step == "stall-body":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", "1000")
                    self.end_headers()
                    self.wfile.write(b'{"decision_id":')
                    self.wfile.flush()
                    fake.release.wait(30)
                    self.close_connection = True
                    return
                assert isinstance(step, dict)
                spec: Dict[str, Any] = step
                if spec.get("delay"):
                    time.sleep(float(spec["delay"]))
                payload = spec.get("body", {})
                data = payload.encode("utf-8") if isinstance(payload, str) else json.dumps(payload).encode("utf-8")
                self.send_response(int(spec["status"]))
                headers = {"Content-Type": "application/json", "Request-Id": "req_fake0000000000000000"}
                headers.update(spec.get("headers", {}))
                for k, v in headers.items():
                    self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = _handle
            do_POST = _handle

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def script(self, steps: List[Step]) -> None:
        with self.lock:
            self.release.set()  # let any hanging handler of the previous test go
            self.release = threading.Event()
            self.steps = steps
            self.index = 0
            self.requests = []

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
