"""Loopback emulators of the three clouds' metadata services, for the watcher tests and benchmark.

Each serves the endpoints gpufleet-watcher and gpufleet-report-health use, answers like the real service (IMDSv2
tokens, GCP's Metadata-Flavor header, Azure's Metadata header) and records what it was asked. `notice()` starts an
interruption; `rebalance()` an AWS rebalance recommendation; `terminate()` turns AWS's target lifecycle state to
Terminated (the group's termination hook). The AWS emulator also answers the instance role's credentials and, at
POST /, the Auto Scaling Query API (DescribeAutoScalingInstances, CompleteLifecycleAction) that gpufleet-aws calls:
the first `asg_failures` CompleteLifecycleAction calls fail with HTTP 500, and `asg_hang_seconds` holds every answer that long.
`answer_seconds` holds every answer that long (a node whose CPUs a training job saturates), each answer reading the
state at the time it is sent; `answered` counts the answers sent, `arrivals` keeps each request's arrival time.
It also serves path-style S3 GetObject for the objects in `s3_objects` ("/bucket/key" -> bytes), signed requests only;
the first `s3_failures` answers are HTTP 403.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse

from tests.fake_http import LoopbackServer, QuietHandler

AWS_TOKEN = "AQAEAFake-token=="
AZURE_EVENT_ID = "602d9444-d2cd-49c7-8624-8643e7171297"
AZURE_VM_NAME = "gpufleet_vmss_1"
AZURE_TOKEN = "eyJ0eXAiOiJKV1QifakeToken"
AWS_GROUP = "gpufleet-test-nodes-0a1b2c3"
AWS_CREDENTIALS = {"AccessKeyId": "ASIAEXAMPLEKEY", "SecretAccessKey": "wJalrXUtnFEMIEXAMPLEKEY", "Token": "IQoJEXAMPLE"}


class MetadataServer:
    """One cloud's metadata service on 127.0.0.1, in a background thread."""

    def __init__(self, cloud: str, broken: bool = False, azure_event_for: str = AZURE_VM_NAME,
                 azure_name_failures: int = 0, trickle_seconds: float = 0.0, trickle_path: str = "",
                 aws_token_uses: int = 0,
                 azure_event_type: str = "Preempt", asg_failures: int = 0, asg_hang_seconds: float = 0.0,
                 answer_seconds: float = 0.0):
        self.cloud, self.broken, self.azure_event_for = cloud, broken, azure_event_for
        self.azure_name_failures = azure_name_failures  # the first N answers for this VM's name are HTTP 500
        self.trickle_seconds = trickle_seconds  # pause between bytes of the whole answer to trickle_path
        self.trickle_path = trickle_path
        self.aws_token_uses = aws_token_uses  # each token expires after this many uses of it (0: never)
        self.answer_seconds = answer_seconds
        self.azure_event_type = azure_event_type
        self.asg_failures, self.asg_hang_seconds = asg_failures, asg_hang_seconds
        self.asg_calls: list[dict] = []  # every Auto Scaling call, its form fields parsed
        self.s3_objects: dict[str, bytes] = {}
        # Azure: the VM's tags (IMDS tagsList), and Key Vault secrets ("/vault/secrets/NAME" -> value) answered to
        # the managed identity's token, which the Slurm join and controller setup read (tests/vm/slurm_boots.py).
        self.azure_tags: dict[str, str] = {}
        self.vault_secrets: dict[str, str] = {}
        self.s3_failures = 0
        self.s3_gets: list[dict] = []  # the headers of every S3 GetObject, lower-cased names
        self.lifecycle_state: str | None = None
        self.token_generation = 0
        self.token_uses: dict[str, int] = {}
        self.maintenance_event = "NONE"
        self.instance_action: str | None = None  # a raw instance-action body, valid or not
        self.aws_scheduled_events: str | None = None  # events/maintenance/scheduled body; None answers 404
        self.notice_at: float | None = None
        # When the noticed action takes effect, as the notice says: AWS's instance-action `time` two minutes on;
        # Azure's NotBefore at least 30 s on for a Preempt, 5 to 15 minutes for the others (15 here).
        self.notice_lead_seconds: float | None = None  # None: those usual leads
        self.notice_wall: float | None = None
        self.rebalance_at: float | None = None
        self.acks: list[dict] = []
        self.requests: list[str] = []
        self.arrivals: list[float] = []  # time.monotonic() of each request in `requests`
        self.answered = 0
        self.lock = threading.Lock()
        server = self

        class Handler(QuietHandler):
            def do_GET(self):
                server._handle(self, "GET")

            def do_PUT(self):
                server._handle(self, "PUT")

            def do_POST(self):
                server._handle(self, "POST")

        self.server = LoopbackServer(Handler)
        self.url = self.server.url

    def __enter__(self):
        self.server.start()
        return self

    def __exit__(self, *exc):
        self.server.close()

    def notice(self) -> float:
        self.notice_wall = time.time()
        self.notice_at = time.monotonic()
        return self.notice_at

    def notice_time(self, pattern: str) -> str:
        """The noticed action's time in the cloud's own format (UTC)."""
        lead = self.notice_lead_seconds
        if lead is None:
            lead = 120.0 if self.cloud == "aws" else 30.0 if self.azure_event_type == "Preempt" else 900.0
        return time.strftime(pattern, time.gmtime((self.notice_wall or time.time()) + lead))

    def rebalance(self) -> float:
        self.rebalance_at = time.monotonic()
        return self.rebalance_at

    def terminate(self) -> float:
        self.lifecycle_state = "Terminated"
        return time.monotonic()

    def completions(self) -> list[dict]:
        with self.lock:
            return [c for c in self.asg_calls if c.get("Action") == "CompleteLifecycleAction"]

    def _reply(self, handler, status: int, body: str = "", content_type: str = "text/plain"):
        data = body.encode()
        try:
            if self.trickle_seconds and handler.path == self.trickle_path:
                head = (f"HTTP/1.0 {status} OK\r\nContent-Type: {content_type}\r\n"
                        f"Content-Length: {len(data)}\r\n\r\n").encode()
                for index, _ in enumerate(head + data):
                    handler.wfile.write((head + data)[index:index + 1])
                    handler.wfile.flush()
                    time.sleep(self.trickle_seconds)
                return
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            handler.end_headers()
            handler.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the watcher under test was stopped mid-request

    def _handle(self, handler, method: str):
        with self.lock:
            self.requests.append(f"{method} {handler.path}")
            self.arrivals.append(time.monotonic())
        time.sleep(self.answer_seconds)
        if self.broken:
            self._reply(handler, 404 if self.cloud != "azure" else 500, "not here")
        else:
            getattr(self, f"_{self.cloud}")(handler, method, handler.path)
        with self.lock:
            self.answered += 1

    def _autoscaling(self, handler):
        length = int(handler.headers.get("Content-Length") or 0)
        call = {k: v[0] for k, v in urllib.parse.parse_qs(handler.rfile.read(length).decode()).items()}
        action = call.get("Action")
        with self.lock:
            self.asg_calls.append(call)
            failing = action == "CompleteLifecycleAction" and self.asg_failures > 0
            self.asg_failures -= failing
        time.sleep(self.asg_hang_seconds)
        if failing or "authorization" not in {k.lower() for k in handler.headers}:
            return self._reply(handler, 500, "<ErrorResponse><Error><Code>InternalFailure</Code></Error></ErrorResponse>")
        if action == "DescribeAutoScalingInstances":
            return self._reply(handler, 200, "<DescribeAutoScalingInstancesResponse><DescribeAutoScalingInstancesResult>"
                               f"<AutoScalingInstances><member><AutoScalingGroupName>{AWS_GROUP}</AutoScalingGroupName>"
                               "</member></AutoScalingInstances></DescribeAutoScalingInstancesResult>"
                               "</DescribeAutoScalingInstancesResponse>", "text/xml")
        return self._reply(handler, 200, f"<{action}Response/>", "text/xml")

    def _s3(self, handler, path):
        headers = {k.lower(): v for k, v in handler.headers.items()}
        with self.lock:
            self.s3_gets.append(headers)
            failing = self.s3_failures > 0
            self.s3_failures -= failing
        if failing or not headers.get("authorization", "").startswith("AWS4-HMAC-SHA256 "):
            return self._reply(handler, 403, "<Error><Code>AccessDenied</Code></Error>", "application/xml")
        data = self.s3_objects[path]
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    def _aws(self, handler, method, path):
        if method == "POST" and path == "/":
            return self._autoscaling(handler)
        if method == "GET" and path in self.s3_objects:
            return self._s3(handler, path)
        if method == "PUT" and path == "/latest/api/token":
            if not handler.headers.get("X-aws-ec2-metadata-token-ttl-seconds"):
                return self._reply(handler, 400)
            with self.lock:
                self.token_generation += 1
                token = f"{AWS_TOKEN}{self.token_generation}"
                self.token_uses[token] = 0
            return self._reply(handler, 200, token)
        with self.lock:
            # Every token issued stays valid until its own expiry, as on EC2 (the watcher and gpufleet-aws each hold
            # one, and the watcher's sources may renew theirs at once).
            given = handler.headers.get("X-aws-ec2-metadata-token") or ""
            valid = given in self.token_uses
            if valid:
                self.token_uses[given] += 1
            expired = bool(self.aws_token_uses) and valid and self.token_uses[given] > self.aws_token_uses
        if not valid or expired:
            return self._reply(handler, 401)
        if path == "/latest/meta-data/spot/instance-action" and self.instance_action is not None:
            return self._reply(handler, 200, self.instance_action)
        if path == "/latest/meta-data/spot/instance-action" and self.notice_at is not None:
            return self._reply(handler, 200, json.dumps({"action": "terminate", "time": self.notice_time("%Y-%m-%dT%H:%M:%SZ")}),
                               "application/json")
        if path == "/latest/meta-data/events/recommendations/rebalance" and self.rebalance_at is not None:
            return self._reply(handler, 200, json.dumps({"noticeTime": "2026-12-02T11:00:00Z"}), "application/json")
        if path == "/latest/meta-data/events/maintenance/scheduled" and self.aws_scheduled_events is not None:
            return self._reply(handler, 200, self.aws_scheduled_events, "application/json")
        if path == "/latest/meta-data/autoscaling/target-lifecycle-state":
            return self._reply(handler, 200, self.lifecycle_state or "InService")
        answers = {"/latest/meta-data/instance-id": "i-0123456789abcdef0",
                   "/latest/meta-data/placement/region": "us-east-2",
                   "/latest/meta-data/iam/security-credentials/": "gpufleet-node-role",
                   "/latest/meta-data/iam/security-credentials/gpufleet-node-role": json.dumps(AWS_CREDENTIALS)}
        if path in answers:
            return self._reply(handler, 200, answers[path])
        return self._reply(handler, 404)

    def _gcp(self, handler, method, path):
        if handler.headers.get("Metadata-Flavor") != "Google":
            return self._reply(handler, 403)
        answers = {"/computeMetadata/v1/instance/preempted": "TRUE" if self.notice_at is not None else "FALSE",
                   "/computeMetadata/v1/instance/maintenance-event": self.maintenance_event,
                   "/computeMetadata/v1/instance/name": "gpufleet-test-node-1",
                   "/computeMetadata/v1/instance/zone": "projects/123456/zones/us-central1-a"}
        if path in answers:
            return self._reply(handler, 200, answers[path])
        return self._reply(handler, 404)

    def _azure(self, handler, method, path):
        if path.split("?")[0] in self.vault_secrets:
            if handler.headers.get("Authorization") != f"Bearer {AZURE_TOKEN}":
                return self._reply(handler, 401)
            return self._reply(handler, 200, json.dumps({"value": self.vault_secrets[path.split("?")[0]]}),
                               "application/json")
        if handler.headers.get("Metadata") != "true":
            return self._reply(handler, 400)
        if path.startswith("/metadata/scheduledevents"):
            if method == "POST":
                length = int(handler.headers.get("Content-Length") or 0)
                with self.lock:
                    self.acks.append(json.loads(handler.rfile.read(length) or b"{}"))
                return self._reply(handler, 200)
            events = [] if self.notice_at is None else [{
                "EventId": AZURE_EVENT_ID, "EventStatus": "Scheduled", "EventType": self.azure_event_type,
                "ResourceType": "VirtualMachine", "Resources": [self.azure_event_for], "NotBefore":
                self.notice_time("%a, %d %b %Y %H:%M:%S GMT"), "Description": "", "EventSource": "Platform",
                "DurationInSeconds": -1}]
            return self._reply(handler, 200, json.dumps({"DocumentIncarnation": 1 + bool(events), "Events": events}),
                               "application/json")
        if path.startswith("/metadata/instance/compute/tagsList"):
            return self._reply(handler, 200, json.dumps([{"name": k, "value": v} for k, v in self.azure_tags.items()]),
                               "application/json")
        if path.startswith("/metadata/identity/oauth2/token") and self.vault_secrets:
            return self._reply(handler, 200, json.dumps({"access_token": AZURE_TOKEN}), "application/json")
        if path.startswith("/metadata/instance/compute/name"):
            with self.lock:
                self.azure_name_failures -= 1
                failing = self.azure_name_failures >= 0
            return self._reply(handler, 500 if failing else 200, "" if failing else AZURE_VM_NAME)
        if path.startswith("/metadata/instance/compute/resourceId"):
            return self._reply(handler, 200, "/subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/"
                                             "virtualMachineScaleSets/gpufleet/virtualMachines/1")
        return self._reply(handler, 404)
