"""gpufleet-aws signs Auto Scaling calls as the node, without the AWS CLI: run as a real process against a fake
IMDSv2 and a fake Auto Scaling endpoint, and its signature checked with botocore's own SigV4 signer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest
from botocore.auth import S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from tests.fake_http import LoopbackServer, QuietHandler

from .conftest import node_script

CREDENTIALS = {"AccessKeyId": "ASIAEXAMPLEKEY", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
               "Token": "IQoJb3JpZ2luX2VjEXAMPLE=="}
TOKEN = "imds-token"
BUCKET = "gpufleet-node-config-0a1b2c3"
OBJECT = "#cloud-config\nruncmd: [[true]]\n"


class FakeAws:
    """IMDSv2 (token, region, instance id, role credentials) and an Auto Scaling endpoint that records calls."""

    def __init__(self, status: int = 200):
        self.calls: list[tuple[dict, str]] = []
        fake = self

        class Handler(QuietHandler):
            def do_PUT(self):
                self._send(200, TOKEN if self.path == "/latest/api/token" else "")

            def do_GET(self):
                if self.path.startswith(f"/{BUCKET}/"):
                    fake.calls.append(({k.lower(): v for k, v in self.headers.items()}, self.path))
                    self._send(status, OBJECT if status == 200 else "<Error><Code>AccessDenied</Code></Error>")
                    return
                if self.headers.get("X-aws-ec2-metadata-token") != TOKEN:
                    self._send(401, "")
                    return
                answers = {"/latest/meta-data/placement/region": "us-east-2",
                           "/latest/meta-data/instance-id": "i-0123456789abcdef0",
                           "/latest/meta-data/iam/security-credentials/": "gpufleet-node-role",
                           "/latest/meta-data/iam/security-credentials/gpufleet-node-role": json.dumps(CREDENTIALS)}
                self._send(200, answers[self.path]) if self.path in answers else self._send(404, "")

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                fake.calls.append(({k.lower(): v for k, v in self.headers.items()}, body))
                self._send(status, "<CompleteLifecycleActionResponse/>")

        self.server = LoopbackServer(Handler).start()
        self.url = self.server.url

    def close(self):
        self.server.close()


@pytest.fixture
def run_aws(tmp_path: Path):
    script = node_script(tmp_path, "usr/local/sbin/gpufleet-aws")
    servers = []

    def run(*args: str, status: int = 200):
        fake = FakeAws(status)
        servers.append(fake)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")},
               "GPUFLEET_METADATA_URL": fake.url, "GPUFLEET_AWS_ENDPOINT": fake.url + "/",
               "GPUFLEET_S3_ENDPOINT": fake.url}
        done = subprocess.run([sys.executable, str(script), *args], env=env, capture_output=True, text=True,
                              timeout=30, check=False)
        return done, fake

    yield run
    for fake in servers:
        fake.close()


def botocore_signature(url: str, headers: dict, body: str) -> str:
    """The signature botocore computes for the same request, time and credentials."""
    request = AWSRequest(method="POST", url=url, data=body,
                         headers={"Content-Type": headers["content-type"], "X-Amz-Date": headers["x-amz-date"],
                                  "X-Amz-Security-Token": headers["x-amz-security-token"]})
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(Credentials(CREDENTIALS["AccessKeyId"], CREDENTIALS["SecretAccessKey"], CREDENTIALS["Token"]),
                       "autoscaling", "us-east-2")
    return signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)


def test_complete_lifecycle_action_is_signed_as_botocore_signs_it(run_aws):
    done, fake = run_aws("CompleteLifecycleAction", "LifecycleHookName=gpufleet-drain",
                         "AutoScalingGroupName=train-nodes", "LifecycleActionResult=CONTINUE",
                         "InstanceId={instance-id}")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "<CompleteLifecycleActionResponse/>"
    [(headers, body)] = fake.calls
    assert urllib.parse.parse_qs(body) == {
        "Action": ["CompleteLifecycleAction"], "Version": ["2011-01-01"], "LifecycleHookName": ["gpufleet-drain"],
        "AutoScalingGroupName": ["train-nodes"], "LifecycleActionResult": ["CONTINUE"],
        "InstanceId": ["i-0123456789abcdef0"]}
    assert headers["x-amz-security-token"] == CREDENTIALS["Token"]
    authorization = headers["authorization"]
    assert authorization.startswith(f"AWS4-HMAC-SHA256 Credential={CREDENTIALS['AccessKeyId']}/")
    assert "/us-east-2/autoscaling/aws4_request" in authorization
    assert authorization.endswith("Signature=" + botocore_signature(fake.url + "/", headers, body))


def test_get_object_is_signed_as_botocore_signs_s3_requests(run_aws):
    """The node config bootstrap's S3 GetObject: S3's SigV4 variant (x-amz-content-sha256 signed, no body)."""
    done, fake = run_aws("get-object", BUCKET, "nodes/abc123.yaml")
    assert done.returncode == 0, done.stderr
    assert done.stdout == OBJECT
    [(headers, path)] = fake.calls
    assert path == f"/{BUCKET}/nodes/abc123.yaml"
    request = AWSRequest(method="GET", url=fake.url + path,
                         headers={"X-Amz-Date": headers["x-amz-date"], "X-Amz-Security-Token": CREDENTIALS["Token"],
                                  "X-Amz-Content-SHA256": headers["x-amz-content-sha256"]})
    request.context["timestamp"] = headers["x-amz-date"]
    signer = S3SigV4Auth(Credentials(CREDENTIALS["AccessKeyId"], CREDENTIALS["SecretAccessKey"],
                                     CREDENTIALS["Token"]), "s3", "us-east-2")
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    assert "/us-east-2/s3/aws4_request" in headers["authorization"]
    assert headers["authorization"].endswith("Signature=" + expected)
    assert "content-type" not in headers["authorization"]


def test_a_refused_get_object_exits_1_with_the_error(run_aws):
    done, fake = run_aws("get-object", BUCKET, "nodes/abc123.yaml", status=403)
    assert done.returncode == 1 and "HTTP 403" in done.stderr and "AccessDenied" in done.stderr
    assert done.stdout == ""


def test_an_api_error_is_reported_and_exits_1(run_aws):
    done, fake = run_aws("SetInstanceHealth", "InstanceId={instance-id}", "HealthStatus=Unhealthy", status=403)
    assert done.returncode == 1 and "HTTP 403" in done.stderr
    assert len(fake.calls) == 1


@pytest.mark.parametrize("args", [("SetInstanceHealth", "not-a-pair"), ("get-object", BUCKET),
                                  ("get-object", BUCKET, "key", "extra")])
def test_bad_arguments_exit_2_without_calling_aws(run_aws, args):
    done, fake = run_aws(*args)
    assert done.returncode == 2 and "usage: gpufleet-aws" in done.stderr and fake.calls == []


def test_the_health_reporter_marks_the_node_unhealthy_through_it(tmp_path):
    """gpufleet-report-health on AWS, end to end: IMDSv2, the signed SetInstanceHealth call, no AWS CLI."""
    api = node_script(tmp_path, "usr/local/sbin/gpufleet-aws")
    reporter = node_script(tmp_path, "usr/local/sbin/gpufleet-report-health")
    node_script(tmp_path, "usr/local/lib/gpufleet/common.sh")
    fake = FakeAws()
    try:
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")}, "GPUFLEET_CLOUD": "aws",
               "GPUFLEET_METADATA_URL": fake.url, "GPUFLEET_AWS_ENDPOINT": fake.url + "/",
               "GPUFLEET_AWS_API": str(api), "GPUFLEET_LIB": str(tmp_path / "node/usr/local/lib/gpufleet"),
               "GPUFLEET_ENV_FILE": str(tmp_path / "none.env"), "PATH": "/usr/bin:/bin"}
        done = subprocess.run([str(reporter), "unhealthy"], env=env, capture_output=True, text=True, timeout=30,
                              check=False)
    finally:
        fake.close()
    assert done.returncode == 0, done.stderr
    [(_, body)] = fake.calls
    assert urllib.parse.parse_qs(body)["Action"] == ["SetInstanceHealth"]
    assert urllib.parse.parse_qs(body)["InstanceId"] == ["i-0123456789abcdef0"]
