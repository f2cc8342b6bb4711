"""Each train stack with `monitoring.server=true`: the server's REAL user data (as the plan declares it) passes
cloud-init schema and promtool, and the shipped dashboards match the generator."""

from __future__ import annotations

import base64
import gzip
import subprocess
from pathlib import Path

import pytest

from gpufleet.monitoring.dashboards import SHIPPED, shipped_dashboards
from gpufleet.monitoring.server import paths
from gpufleet.plan.userdata import decode_user_data
from tests.conftest import cached_plan, of_type
from tests.validators import cloud_config_problems, require_tool
from tests.yaml_reader import read_yaml

TRAIN_STACKS = ("aws-train", "azure-train", "gcp-train")
SERVER = {"aws": "aws:ec2/instance:Instance", "azure": "azure-native:compute:VirtualMachine",
          "gcp": "gcp:compute/instance:Instance"}


def server_user_data(stack: str) -> str:
    from gpufleet.plan.stackfile import read_stack_config
    spec = {**read_stack_config(stack)["gpufleet:cluster"], "monitoring": {"server": True}}
    server = next(r.inputs for r in of_type(cached_plan(spec), SERVER[spec["cloud"]]) if "monitoring" in r.name)
    if spec["cloud"] == "aws":
        return gzip.decompress(base64.b64decode(server["userDataBase64"])).decode()
    if spec["cloud"] == "azure":
        return decode_user_data(server["osProfile"]["customData"])
    return server["metadata"]["user-data"]


@pytest.fixture(scope="module")
def schema_problems(tmp_path_factory) -> dict[str, str]:
    """cloud-init's schema verdict on every train stack's server user data, in one process: {stack: problem}."""
    folder = tmp_path_factory.mktemp("server-user-data")
    for stack in TRAIN_STACKS:
        (folder / stack).write_text(server_user_data(stack))
    return {Path(path).name: problem for path, problem in cloud_config_problems(*(folder / s for s in TRAIN_STACKS)).items()}


@pytest.mark.parametrize("stack", TRAIN_STACKS)
def test_declared_server_user_data_passes_cloud_init_schema_and_promtool(stack, tmp_path, schema_problems):
    assert stack not in schema_problems, schema_problems[stack]
    text = server_user_data(stack)
    files = {item["path"]: item["content"] for item in read_yaml(text)["write_files"]}
    (tmp_path / "alerts.yml").write_text(files[paths.ALERT_RULES])
    (tmp_path / "prometheus.yml").write_text(files[paths.PROMETHEUS_CONFIG].replace(paths.ALERT_RULES, "alerts.yml"))
    promtool = require_tool("promtool", "install it with `apt-get install -y prometheus`")
    result = subprocess.run([promtool, "check", "config", "prometheus.yml"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stdout + result.stderr


def test_shipped_dashboards_are_what_the_generator_makes():
    shipped = {path.name: path.read_text() for path in sorted(Path(SHIPPED).glob("gpufleet-*.json"))}
    assert shipped == shipped_dashboards(), "run `.venv/bin/python -m gpufleet.monitoring.dashboards --write`"
