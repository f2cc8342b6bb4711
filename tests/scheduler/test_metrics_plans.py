"""A Slurm cluster with the monitoring server, on each cloud: the controller's node_exporter port is opened to the
monitoring server only, the controller boots with the metrics timer, and the server's prometheus.yml scrapes the
controller (promtool check config). Without the monitoring server none of it is declared."""

from __future__ import annotations

import base64
import gzip
import json
import subprocess

import pytest

from gpufleet.cloud_init.slurm_controller import METRICS_PATH
from gpufleet.monitoring.scrape import SLURM_JOB
from gpufleet.monitoring.server import paths
from gpufleet.plan.stackfile import read_stack_config
from gpufleet.plan.userdata import decode_user_data
from tests.conftest import cached_plan, of_type
from tests.validators import require_tool
from tests.yaml_reader import read_yaml

from ..monitoring.test_slurm_dashboard import SLURM_ROW
from .test_plans import MOCK_ADDRESS

STACKS = {"aws": "aws-train", "gcp": "gcp-train", "azure": "azure-train"}
VM = {"aws": "aws:ec2/instance:Instance", "azure": "azure-native:compute:VirtualMachine",
      "gcp": "gcp:compute/instance:Instance"}
PORT = SLURM_JOB[1]


def plan(cloud: str, monitoring: bool):
    spec = {**read_stack_config(STACKS[cloud])["gpufleet:cluster"], "scheduler": {"kind": "slurm"}}
    spec["monitoring"] = {**spec.get("monitoring", {}), "server": monitoring}
    return cached_plan(spec)


def user_data(resources, cloud: str, name_part: str) -> str:
    inputs = next(r.inputs for r in of_type(resources, VM[cloud]) if name_part in r.name)
    if cloud == "aws":
        return gzip.decompress(base64.b64decode(inputs["userDataBase64"])).decode()
    if cloud == "azure":
        return decode_user_data(inputs["osProfile"]["customData"])
    return inputs["metadata"]["user-data"]


def metrics_openings(resources, cloud: str) -> list[tuple[str, str]]:
    """(source, target) of every rule that opens node_exporter's port on the controller."""
    if cloud == "aws":
        return [(r.inputs["referencedSecurityGroupId"], r.inputs["securityGroupId"])
                for r in of_type(resources, "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule")
                if r.inputs["securityGroupId"] == "gpufleet-slurm-sg-id"
                and r.inputs.get("fromPort", 0) <= PORT <= r.inputs.get("toPort", 65535)]  # the plan's mock ids: name + "-id"
    if cloud == "gcp":
        controller = "gpufleet-test-slurm@example-project.iam.gserviceaccount.com"
        return [(source, controller) for r in of_type(resources, "gcp:compute/firewall:Firewall")
                if controller in r.inputs.get("targetServiceAccounts", [])
                and any(str(PORT) in a.get("ports", []) for a in r.inputs["allows"])
                for source in r.inputs.get("sourceServiceAccounts", r.inputs.get("sourceRanges", []))]
    [nsg] = of_type(resources, "azure-native:network:NetworkSecurityGroup")
    return [(g["id"], "gpufleet-slurm-asg-id") for rule in nsg.inputs["securityRules"]
            if rule["access"] == "Allow" and {"id": "gpufleet-slurm-asg-id"} in
            rule.get("destinationApplicationSecurityGroups", [])
            and str(PORT) in [rule.get("destinationPortRange"), *rule.get("destinationPortRanges", [])]
            for g in rule.get("sourceApplicationSecurityGroups", [{"id": "not an ASG"}])]


MONITORING_IDENTITY = {"aws": "gpufleet-monitoring-sg-id", "azure": "gpufleet-monitoring-asg-id",
                       "gcp": "gpufleet-test-mon@example-project.iam.gserviceaccount.com"}


@pytest.mark.parametrize("cloud", STACKS)
def test_the_controllers_node_exporter_is_open_to_the_monitoring_server_only_and_scraped(cloud, tmp_path):
    resources = plan(cloud, monitoring=True)
    [(source, _)] = metrics_openings(resources, cloud)
    assert source == MONITORING_IDENTITY[cloud]
    controller = read_yaml(user_data(resources, cloud, "slurm-controller"))
    assert METRICS_PATH in {f["path"] for f in controller["write_files"]}
    server = read_yaml(user_data(resources, cloud, "monitoring"))
    files = {f["path"]: f["content"] for f in server["write_files"]}
    config = read_yaml(files[paths.PROMETHEUS_CONFIG])
    [job] = [j for j in config["scrape_configs"] if j["job_name"] == SLURM_JOB[0]]
    assert job["static_configs"][0]["targets"] == [f"{MOCK_ADDRESS}:{PORT}"]
    jobs_board = json.loads(files[f"{paths.GRAFANA_DASHBOARDS}/gpufleet-jobs.json"])
    assert SLURM_ROW in {p.get("title") for p in jobs_board["panels"]}
    assert config["rule_files"] == [paths.ALERT_RULES, paths.SLURM_ALERT_RULES]
    (tmp_path / "alerts.yml").write_text(files[paths.ALERT_RULES])
    (tmp_path / "slurm-alerts.yml").write_text(files[paths.SLURM_ALERT_RULES])
    (tmp_path / "prometheus.yml").write_text(files[paths.PROMETHEUS_CONFIG].replace(
        paths.SLURM_ALERT_RULES, "slurm-alerts.yml").replace(paths.ALERT_RULES, "alerts.yml"))
    promtool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    done = subprocess.run([promtool, "check", "config", "prometheus.yml"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("cloud", STACKS)
def test_a_slurm_cluster_without_the_monitoring_server_opens_and_writes_no_metrics(cloud):
    resources = plan(cloud, monitoring=False)
    assert metrics_openings(resources, cloud) == []
    assert METRICS_PATH not in user_data(resources, cloud, "slurm-controller")
    assert SLURM_ROW not in resources.outputs["grafana_dashboards"]["gpufleet-jobs.json"]
