"""The boot order of every shipped stack, checked the way systemd sees a booted node: our units beside the
distribution's cloud-init units and the generator's cloud-init.target link (`systemd-analyze verify --root`).
Without cloud-init's units in the root, the cycle gpufleet-boot -> cloud-final -> multi-user -> gpufleet-node.target
was invisible; systemd then deletes one of our jobs on every boot after the first."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpufleet.plan.stackfile import stack_names
from tests.validators import require_tool

from .boot_order_root import CLOUD_INIT_HINT, build_root, cloud_init_units_present
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


@pytest.mark.parametrize("stack", stack_names())
def test_shipped_stack_boots_without_an_ordering_cycle(stack, rendered, tmp_path):
    user_data = rendered[f"stack-{stack}"][1]
    names = unit_root(tmp_path, user_data)
    assert "/etc/systemd/system/gpufleet-node.target" in names
    done = verify(tmp_path, names)
    output = done.stdout + done.stderr
    assert cycle_lines(output) == [], output
    assert done.returncode == 0, output


def test_the_check_sees_a_unit_ordered_after_cloud_final(rendered, tmp_path):
    """The check itself: a unit of ours ordered after cloud-final (as gpufleet-boot was) is reported as a cycle."""
    user_data = rendered["stack-aws-dev"][1]
    names = unit_root(tmp_path, user_data)
    unit = tmp_path / "etc/systemd/system/gpufleet-boot.service"
    unit.write_text(unit.read_text().replace("After=network-online.target",
                                             "After=network-online.target cloud-final.service", 1))
    output = verify(tmp_path, names)
    assert cycle_lines(output.stdout + output.stderr), output.stdout + output.stderr
