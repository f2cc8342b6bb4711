"""The inference node's metric publisher (triton-metrics), run as the node runs it (the shipped copy, a real
process) against a fake Triton metrics port, fake metadata servers and fake CloudWatch / Cloud Monitoring
endpoints: the AWS calls signed as botocore signs them and shaped as botocore serializes PutMetricData, the GCP
time series written on this gce_instance, and nothing published while Triton does not answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.parse
from pathlib import Path

import botocore.session
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.serialize import create_serializer
from prometheus_client.parser import text_string_to_metric_families

from gpufleet.cloud_init.parts import shipped
from gpufleet.cloud_init.triton import INFERENCE_DIR
from tests.fake_http import LoopbackServer, QuietHandler

REPO = Path(__file__).resolve().parents[2]
FIXTURE = (REPO / "tests/fixtures/inference/triton-metrics.txt").read_text()
PUBLISHER = "usr/local/lib/gpufleet/triton-metrics"
AWS_API = REPO / "cloud_init/files/usr/local/sbin/gpufleet-aws"
CREDENTIALS = {"AccessKeyId": "ASIAEXAMPLEKEY", "SecretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
               "Token": "IQoJb3JpZ2luX2VjEXAMPLE=="}
GROUP = "gpufleet-nodes-1a2b3c"
DESCRIBE_ANSWER = f"""<DescribeAutoScalingInstancesResponse xmlns="http://autoscaling.amazonaws.com/doc/2011-01-01/">
<DescribeAutoScalingInstancesResult><AutoScalingInstances><member><InstanceId>i-0123456789abcdef0</InstanceId>
<AutoScalingGroupName>{GROUP}</AutoScalingGroupName><LifecycleState>InService</LifecycleState></member>
</AutoScalingInstances></DescribeAutoScalingInstancesResult></DescribeAutoScalingInstancesResponse>"""
GCP_METADATA = {"project/project-id": "my-project", "instance/id": "4520031799275829361",
                "instance/zone": "projects/123456789/zones/us-central1-a",
                "instance/service-accounts/default/token": json.dumps({"access_token": "ya29.token"})}


class FakeCloud:
    """Triton's /metrics (request counters grow by `per_read` on every read), IMDSv2, GCE metadata, and the
    Auto Scaling, CloudWatch and Cloud Monitoring endpoints, which record what they receive."""

    def __init__(self, triton_up: bool = True, per_read: int = 600):
        self.posts: list[tuple[str, dict, str]] = []
        self.reads = 0
        fake = self

        class Handler(QuietHandler):
            def do_PUT(self):
                self._send(200, "imds-token")

            def do_GET(self):
                if self.path == "/metrics":
                    if not triton_up:
                        self._send(503, "")
                        return
                    grown = FIXTURE.replace(" 1200\n", f" {1200 + fake.reads * per_read}\n")
                    fake.reads += 1
                    self._send(200, grown)
                    return
                if self.path.startswith("/computeMetadata/v1/"):
                    key = self.path.removeprefix("/computeMetadata/v1/")
                    ok = self.headers.get("Metadata-Flavor") == "Google" and key in GCP_METADATA
                    self._send(200, GCP_METADATA[key]) if ok else self._send(404, "")
                    return
                answers = {"/latest/meta-data/placement/region": "us-east-2",
                           "/latest/meta-data/instance-id": "i-0123456789abcdef0",
                           "/latest/meta-data/iam/security-credentials/": "gpufleet-node-role",
                           "/latest/meta-data/iam/security-credentials/gpufleet-node-role": json.dumps(CREDENTIALS)}
                self._send(200, answers[self.path]) if self.path in answers else self._send(404, "")

            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                fake.posts.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                self._send(200, DESCRIBE_ANSWER if self.path == "/autoscaling/" else "{}")

        self.server = LoopbackServer(Handler).start()
        self.port, self.url = self.server.port, self.server.url

    def close(self):
        self.server.close()


@pytest.fixture
def publish(tmp_path: Path):
    script = tmp_path / "triton-metrics"
    for relative in (PUBLISHER, f"{PUBLISHER}-aws", f"{PUBLISHER}-gcp"):  # the cloud parts lie next to it
        (tmp_path / Path(relative).name).write_text(shipped((INFERENCE_DIR / relative).read_text(), relative))
    api = tmp_path / "gpufleet-aws"
    api.write_text(shipped(AWS_API.read_text(), "usr/local/sbin/gpufleet-aws"))
    fakes = []

    def run(cloud: str, metric: str, rounds: int = 2, **fake_args):
        fake = FakeCloud(**fake_args)
        fakes.append(fake)
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("GPUFLEET_")},
               "GPUFLEET_CLOUD": cloud, "GPUFLEET_CLUSTER": "gpufleet", "GPUFLEET_TRITON_SCALE_METRIC": metric,
               "GPUFLEET_TRITON_METRICS_PORT": str(fake.port), "GPUFLEET_TRITON_PUBLISH_SECONDS": "0.5",
               "GPUFLEET_TRITON_PUBLISH_ROUNDS": str(rounds), "GPUFLEET_METADATA_URL": fake.url,
               "GPUFLEET_AWS_API": str(api), "GPUFLEET_AWS_AUTOSCALING_ENDPOINT": fake.url + "/autoscaling/",
               "GPUFLEET_AWS_MONITORING_ENDPOINT": fake.url + "/monitoring/",
               "GPUFLEET_MONITORING_ENDPOINT": fake.url + "/gcp",
               "GPUFLEET_TRITON_METRIC_NAMESPACE": "gpufleet/Inference",
               "GPUFLEET_TRITON_METRIC_NAME": {"gpu_utilization": "GPUUtilization"}.get(metric, "RequestsPerSecond"),
               "GPUFLEET_TRITON_METRIC_TYPE": f"custom.googleapis.com/gpufleet/triton/{metric}"}
        done = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=60,
                              check=False)
        return done, fake

    yield run
    for fake in fakes:
        fake.close()


def botocore_signature(url: str, headers: dict, body: str, service: str) -> str:
    request = AWSRequest(method="POST", url=url, data=body,
                         headers={"Content-Type": headers["content-type"], "X-Amz-Date": headers["x-amz-date"],
                                  "X-Amz-Security-Token": headers["x-amz-security-token"]})
    request.context["timestamp"] = headers["x-amz-date"]
    signer = SigV4Auth(Credentials(CREDENTIALS["AccessKeyId"], CREDENTIALS["SecretAccessKey"], CREDENTIALS["Token"]),
                       service, "us-east-2")
    return signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)


def botocore_put_metric_data(value: float, name: str, unit: str) -> dict:
    """The form fields botocore's own query serializer writes for the same PutMetricData call."""
    model = botocore.session.get_session().get_service_model("cloudwatch")
    operation = model.operation_model("PutMetricData")
    request = create_serializer("query").serialize_to_request({
        "Namespace": "gpufleet/Inference", "MetricData": [{
            "MetricName": name, "Value": value, "Unit": unit,
            "Dimensions": [{"Name": "AutoScalingGroupName", "Value": GROUP}]}]}, operation)
    return urllib.parse.parse_qs(request["body"] if isinstance(request["body"], str)
                                 else urllib.parse.urlencode(request["body"]))


def load_publisher():
    namespace: dict = {"__name__": "triton_metrics"}
    exec(compile((INFERENCE_DIR / PUBLISHER).read_text(), PUBLISHER, "exec"), namespace)
    return namespace


def test_the_parser_reads_what_the_reference_parser_reads():
    samples = load_publisher()["parse_samples"](FIXTURE)
    reference: dict[str, list[float]] = {}
    for family in text_string_to_metric_families(FIXTURE):
        for sample in family.samples:
            reference.setdefault(sample.name, []).append(sample.value)
    reference = {k.removesuffix("_total"): v for k, v in reference.items()}
    assert samples == reference


def test_aws_gpu_utilisation_is_put_as_botocore_would_put_it(publish):
    done, fake = publish("aws", "gpu_utilization", rounds=1)
    assert done.returncode == 0, done.stdout + done.stderr
    describe, put = fake.posts
    assert describe[0] == "/autoscaling/"
    assert urllib.parse.parse_qs(describe[2]) == {"Action": ["DescribeAutoScalingInstances"], "Version": ["2011-01-01"],
                                                  "InstanceIds.member.1": ["i-0123456789abcdef0"]}
    path, headers, body = put
    assert path == "/monitoring/" and "/us-east-2/monitoring/aws4_request" in headers["authorization"]
    assert headers["authorization"].endswith(
        "Signature=" + botocore_signature(fake.url + "/monitoring/", headers, body, "monitoring"))
    assert urllib.parse.parse_qs(body) == botocore_put_metric_data(70.0, "GPUUtilization", "Percent")


def test_aws_requests_per_second_come_from_the_counters_growth(publish):
    done, fake = publish("aws", "requests_per_node", rounds=3)
    assert done.returncode == 0, done.stdout + done.stderr
    puts = [urllib.parse.parse_qs(body) for path, _, body in fake.posts if path == "/monitoring/"]
    describes = [p for p in fake.posts if p[0] == "/autoscaling/"]
    assert len(describes) == 1 and len(puts) == 2  # the group is asked once; the first read has no rate yet
    for put in puts:
        rate = float(put["MetricData.member.1.Value"][0])
        assert 600 / 2.0 < rate < 600 / 0.4  # 600 more requests every ~0.5 s
        assert put["MetricData.member.1.Unit"] == ["Count/Second"]
        assert put["MetricData.member.1.Dimensions.member.1.Value"] == [GROUP]


def test_gcp_writes_a_time_series_on_this_instance(publish):
    done, fake = publish("gcp", "gpu_utilization", rounds=1)
    assert done.returncode == 0, done.stdout + done.stderr
    [(path, headers, body)] = fake.posts
    assert path == "/gcp/v3/projects/my-project/timeSeries" and headers["authorization"] == "Bearer ya29.token"
    [series] = json.loads(body)["timeSeries"]
    assert series["metric"] == {"type": "custom.googleapis.com/gpufleet/triton/gpu_utilization"}
    assert series["resource"] == {"type": "gce_instance", "labels": {
        "project_id": "my-project", "instance_id": "4520031799275829361", "zone": "us-central1-a"}}
    assert series["points"][0]["value"] == {"doubleValue": 70.0}


def test_nothing_is_published_while_triton_does_not_answer(publish):
    done, fake = publish("gcp", "gpu_utilization", rounds=2, triton_up=False)
    assert done.returncode == 0 and fake.posts == []
    assert "do not answer yet" in done.stdout


def test_an_unknown_target_exits_without_publishing(publish):
    done, fake = publish("azure", "gpu_utilization", rounds=1)
    assert done.returncode == 2 and fake.posts == []
