"""The boot order of every cloud-config each shipped stack declares (GPU and inference nodes, the monitoring server,
any machine added later: tests/cloud_init/stack_configs.py finds them in the plan), checked the way systemd sees a
booted machine: our units beside the distribution's cloud-init units and the generator's cloud-init.target link
(`systemd-analyze verify --root`). Without cloud-init's units in the root, the cycles gpufleet-boot -> cloud-final
-> multi-user -> gpufleet-node.target and gpufleet-monitoring-setup -> cloud-final -> multi-user were invisible;
systemd then deletes one of the jobs on every boot after the first."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpufleet.monitoring.secrets import server_wanted
from gpufleet.pipeline import plan_node_groups
from gpufleet.plan.stackfile import CLUSTER_KEY, read_stack_config
from gpufleet.spec import parse_cluster_spec
from tests.validators import require_tool
from tests.yaml_reader import read_yaml

from .boot_order_root import CLOUD_INIT_HINT, build_root, cloud_init_units_present, enabled_units
from .stack_configs import SHIPPED_STACKS, TRAIN_STACKS, slurm_cloud_configs, stack_cloud_configs
from .test_lint import SYSTEMD_HINT


def unit_root(root: Path, user_data: str) -> list[str]:
    """The root to verify, once the tools it needs are known to be here: it copies cloud-init's installed units."""
    require_tool("systemd-analyze", SYSTEMD_HINT)
    if not cloud_init_units_present():
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(CLOUD_INIT_HINT + " (required in CI)")
        pytest.skip(CLOUD_INIT_HINT)
    return build_root(root, user_data)


def verify(root: Path, names: list[str]) -> subprocess.CompletedProcess:
    tool = require_tool("systemd-analyze", SYSTEMD_HINT)
    return subprocess.run([tool, "verify", "--man=no", f"--root={root}", *names], capture_output=True, text=True,
                          timeout=120)


def cycle_lines(output: str) -> list[str]:
    return [line for line in output.splitlines()
            if "ordering cycle" in line or "deleted to break" in line or "cyclic" in line]


# The machine each gpufleet cloud-config boots, told by the unit it enables that starts the rest.
ENTRY_UNITS = {"gpufleet-node.target": "GPU node", "gpufleet-monitoring-setup.service": "monitoring server",
               # With the monitoring server, the controller's one unit: the Slurm metrics timer (runcmd enables it).
               "gpufleet-slurm-metrics.timer": "Slurm controller"}


# Machines that enable no unit of ours: cloud-init's runcmd (cloud-final, once) runs their setup, which starts the
# distribution's own services; nothing of ours is ordered against cloud-init's units there.
ENTRY_COMMANDS = {"/usr/local/sbin/gpufleet-slurm-controller-setup": "Slurm controller"}


def machine(user_data: str) -> str:
    runcmd = [str(entry[0] if isinstance(entry, list) else entry) for entry in read_yaml(user_data).get("runcmd", [])]
    kinds = [kind for unit, kind in ENTRY_UNITS.items() if unit in enabled_units(user_data)]
    kinds += [kind for command, kind in ENTRY_COMMANDS.items() if command in runcmd and not enabled_units(user_data)]
    assert len(kinds) == 1, f"a cloud-config that enables {enabled_units(user_data)}: add its machine to ENTRY_UNITS"
    return kinds[0]


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_every_cloud_config_of_a_shipped_stack_is_found(stack):
    """The plan's nodes always, and the monitoring server where the stack has one (train and infer stacks)."""
    plans = plan_node_groups(parse_cluster_spec(read_stack_config(stack)[CLUSTER_KEY]))
    kinds = sorted(machine(text) for text in stack_cloud_configs(stack).values())
    slurm = plans.spec.scheduler.kind == "slurm"
    expected = ["GPU node"] * len(plans.groups) + (["monitoring server"] if server_wanted(plans) else []) + (
        ["Slurm controller"] if slurm else [])
    assert kinds == sorted(expected), kinds


def assert_no_ordering_cycle(stack: str, configs: dict[str, str], tmp_path: Path) -> None:
    assert configs, f"{stack} declares no cloud-config"
    for resource, user_data in configs.items():
        if machine(user_data) in ENTRY_COMMANDS.values():
            continue  # nothing of ours to order: its setup runs once from runcmd
        root = tmp_path / resource
        names = unit_root(root, user_data)
        assert len(names) > 1, f"{resource}: no unit of ours is enabled"
        done = verify(root, names)
        output = done.stdout + done.stderr
        assert cycle_lines(output) == [], f"{stack} {resource} ({machine(user_data)}): {output}"
        assert done.returncode == 0, f"{stack} {resource}: {output}"


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_shipped_stack_boots_without_an_ordering_cycle(stack, tmp_path):
    assert_no_ordering_cycle(stack, stack_cloud_configs(stack), tmp_path)


@pytest.mark.parametrize("stack", TRAIN_STACKS)
def test_a_slurm_cluster_boots_without_an_ordering_cycle(stack, tmp_path):
    """With `scheduler.kind: slurm` the nodes also enable gpufleet-slurmd.service, and the plan gains a controller."""
    configs = slurm_cloud_configs(stack)
    assert sorted(machine(text) for text in configs.values()) == ["GPU node", "Slurm controller", "monitoring server"]
    assert any("gpufleet-slurmd.service" in enabled_units(text) for text in configs.values())
    assert_no_ordering_cycle(stack, configs, tmp_path)


def test_the_check_sees_the_monitoring_servers_old_cloud_final_ordering(tmp_path):
    """The server's setup unit as it was (After=cloud-final.service, WantedBy=multi-user.target) is a cycle."""
    configs = stack_cloud_configs("aws-train")
    user_data = next(text for text in configs.values() if machine(text) == "monitoring server")
    names = unit_root(tmp_path, user_data)
    unit = tmp_path / "etc/systemd/system/gpufleet-monitoring-setup.service"
    unit.write_text(unit.read_text().replace("After=network-online.target",
                                             "After=network-online.target cloud-final.service", 1))
    output = verify(tmp_path, names)
    assert cycle_lines(output.stdout + output.stderr), output.stdout + output.stderr


def test_the_check_sees_a_unit_ordered_after_cloud_final(rendered, tmp_path):
    """The check itself: a unit of ours ordered after cloud-final (as gpufleet-boot was) is reported as a cycle."""
    user_data = rendered["stack-aws-dev"][1]
    names = unit_root(tmp_path, user_data)
    unit = tmp_path / "etc/systemd/system/gpufleet-boot.service"
    unit.write_text(unit.read_text().replace("After=network-online.target",
                                             "After=network-online.target cloud-final.service", 1))
    output = verify(tmp_path, names)
    assert cycle_lines(output.stdout + output.stderr), output.stdout + output.stderr
