"""A Slurm cluster with the monitoring server: the controller's node_exporter port is opened to the monitoring server
only, the controller boots with the metrics timer, and the server's prometheus.yml scrapes the controller (promtool).
Without the monitoring server none of it is declared."""

from __future__ import annotations

import base64
import gzip
import subprocess

import pytest
import yaml

from gpufleet.cloud_init.slurm_controller import METRICS_PATH
from gpufleet.monitoring.scrape import SLURM_JOB
from gpufleet.monitoring.server import paths
from gpufleet.plan.stackfile import read_stack_config
from tests.conftest import cached_plan, of_type
from tests.validators import require_tool

from .test_plans import MOCK_ADDRESS

STACKS = {"aws": "aws-train", "gcp": "gcp-train", "azure": "azure-train"}
PORT = SLURM_JOB[1]


def plan(cloud: str, monitoring: bool):
    spec = {**read_stack_config(STACKS[cloud])["gpufleet:cluster"], "scheduler": {"kind": "slurm"}}
    spec["monitoring"] = {**spec.get("monitoring", {}), "server": monitoring}
    return cached_plan(spec)


def aws_user_data(resources, name_part: str) -> str:
    instance = next(r.inputs for r in of_type(resources, "aws:ec2/instance:Instance") if name_part in r.name)
    return gzip.decompress(base64.b64decode(instance["userDataBase64"])).decode()


def test_aws_opens_node_exporter_on_the_controller_to_the_monitoring_server_only(tmp_path):
    resources = plan("aws", monitoring=True)
    into_controller = [r.inputs for r in of_type(resources, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
                       if r.inputs["securityGroupId"] == "gpufleet-slurm-sg-id"]  # the plan's mock id: name + "-id"
    opened = {(r["fromPort"], r["toPort"], r["referencedSecurityGroupId"]) for r in into_controller}
    assert (PORT, PORT, "gpufleet-monitoring-sg-id") in opened
    assert all(r["referencedSecurityGroupId"] == "gpufleet-sg-id" for r in into_controller if r["fromPort"] != PORT)
    assert all("cidrIpv4" not in r for r in into_controller) and len(into_controller) == 3
    controller = yaml.safe_load(aws_user_data(resources, "slurm-controller"))
    assert METRICS_PATH in {f["path"] for f in controller["write_files"]}
    server = yaml.safe_load(aws_user_data(resources, "monitoring-server"))
    files = {f["path"]: f["content"] for f in server["write_files"]}
    config = yaml.safe_load(files[paths.PROMETHEUS_CONFIG])
    [job] = [j for j in config["scrape_configs"] if j["job_name"] == SLURM_JOB[0]]
    assert job["static_configs"][0]["targets"] == [f"{MOCK_ADDRESS}:{PORT}"]
    (tmp_path / "alerts.yml").write_text(files[paths.ALERT_RULES])
    (tmp_path / "prometheus.yml").write_text(files[paths.PROMETHEUS_CONFIG].replace(paths.ALERT_RULES, "alerts.yml"))
    promtool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    done = subprocess.run([promtool, "check", "config", "prometheus.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("cloud", ["aws"])
def test_a_slurm_cluster_without_the_monitoring_server_declares_no_metrics(cloud):
    resources = plan(cloud, monitoring=False)
    assert not [r for r in resources.resources if "monitoring" in r.name]
    assert METRICS_PATH not in aws_user_data(resources, "slurm-controller")
