"""The collection's filters and the gpu_health module's verdict, as plain functions (the playbooks run them in
tests/ansible/test_rolling_playbooks.py)."""

from __future__ import annotations

import importlib.util
import json
import os
import time
from pathlib import Path

import pytest

from tests.inventory.ansible_tools import COLLECTION, ROOT
from tests.yaml_reader import read_yaml


def load(relative: str, name: str):
    spec = importlib.util.spec_from_file_location(name, COLLECTION / relative)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


day2 = load("plugins/filter/day2.py", "gpufleet_day2_filters")

SIMULATION = """\
NOTE: This is only a simulation!
Inst libc6 [2.39-0ubuntu8.3] (2.39-0ubuntu8.4 Ubuntu:24.04/noble-updates, Ubuntu:24.04/noble-security [amd64])
Inst openssl [3.0.13-0ubuntu3.4] (3.0.13-0ubuntu3.5 Ubuntu:24.04/noble-security [amd64])
Inst intel-microcode [3.20240910.0ubuntu0.24.04.1] (3.20250211.0ubuntu0.24.04.1 Ubuntu:24.04/noble-updates [amd64])
Inst vim [2:9.1.0016-1ubuntu7.5] (2:9.1.0016-1ubuntu7.6 Ubuntu:24.04/noble-updates [amd64])
Inst libnvidia-compute-570-server [570.133.20-0ubuntu0.24.04.1] (570.172.08-0ubuntu0.24.04.1 Ubuntu:24.04/noble-security [amd64])
Inst linux-modules-nvidia-570-server-aws [6.8.0-1024.26] (6.8.0-1029.31 Ubuntu:24.04/noble-security [amd64])
Inst linux-image-6.8.0-1029-aws (6.8.0-1029.31 Ubuntu:24.04/noble-security [amd64])
Conf openssl (3.0.13-0ubuntu3.5 Ubuntu:24.04/noble-security [amd64])
"""


def test_security_updates_are_pinned_and_leave_the_nvidia_stack_alone():
    excluded = day2.apt_blacklist((ROOT / "cloud_init/files/etc/apt/apt.conf.d/51gpufleet-nvidia-hold").read_text())
    assert day2.security_upgrades(SIMULATION, excluded) == [
        "intel-microcode=3.20250211.0ubuntu0.24.04.1",  # microcode from any pocket
        "libc6=2.39-0ubuntu8.4",
        "linux-modules-nvidia-570-server-aws=6.8.0-1029.31",  # kernel modules must follow the kernel
        "openssl=3.0.13-0ubuntu3.5",
    ]


def test_the_roles_fallback_exclusions_are_the_nodes_hold_list():
    hold = day2.apt_blacklist((ROOT / "cloud_init/files/etc/apt/apt.conf.d/51gpufleet-nvidia-hold").read_text())
    defaults = read_yaml((COLLECTION / "roles/security_updates/defaults/main.yml").read_text())
    assert hold == defaults["security_updates_default_excluded"] == [
        "nvidia-", "libnvidia-", "cuda-", "libcuda", "libnccl", "datacenter-gpu-manager"]


def test_outdated_packages_compare_the_upstream_version():
    installed = {"nvidia-utils-570-server": [{"version": "570.172.08-0ubuntu0.24.04.1"}],
                 "nvidia-fabricmanager-570": [{"version": "570.133.20-1"}]}
    names = ["nvidia-utils-570-server", "nvidia-fabricmanager-570", "nvidia-compute-utils-570-server"]
    assert day2.outdated_packages(names, installed, "570.172.08") == ["nvidia-fabricmanager-570",
                                                                      "nvidia-compute-utils-570-server"]
    assert day2.outdated_packages(names[:1], installed, "570.172.0") == names[:1]  # no prefix match on 570.172.08


def test_node_env_reads_the_nodes_parameters():
    assert day2.node_env("# header\nGPUFLEET_NVSWITCH=1\nGPUFLEET_DRIVER_FLAVOR='open'\n\nBROKEN\n") == {
        "GPUFLEET_NVSWITCH": "1", "GPUFLEET_DRIVER_FLAVOR": "open"}


def test_enabled_units_keep_the_dependency_order():
    services = {"nvidia-dcgm.service": {"status": "enabled"}, "nvidia-persistenced.service": {"status": "enabled"},
                "nvidia-fabricmanager.service": {"status": "disabled"}, "gpufleet-mps.service": {"status": "static"}}
    order = ["nvidia-persistenced.service", "nvidia-fabricmanager.service", "gpufleet-mps.service",
             "nvidia-dcgm.service", "gpufleet-dcgm-exporter.service"]
    assert day2.enabled_units(order, services) == ["nvidia-persistenced.service", "gpufleet-mps.service",
                                                   "nvidia-dcgm.service"]


def test_the_health_table_lists_unhealthy_and_unreachable_nodes_first():
    hostvars = {"b": {"gpufleet_health": {"healthy": True, "reason": "", "checked_at": "t1"}},
                "a": {"gpufleet_health": {"healthy": False, "reason": "failed xid: XID 79", "checked_at": "t2"}},
                "c": {}}
    lines = day2.health_table(["a", "b", "c"], hostvars)
    assert lines[0].split() == ["NODE", "HEALTH", "CHECKED", "AT", "DETAIL"]
    assert [line.split()[:2] for line in lines[1:]] == [["a", "FAIL"], ["c", "FAIL"], ["b", "ok"]]
    assert lines[2].endswith("no result: unreachable, or the check could not run")


@pytest.fixture
def health():
    return load("plugins/modules/gpu_health.py", "gpufleet_gpu_health")


def write_report(folder: Path, healthy: bool, mtime: float | None = None) -> None:
    checks = [{"check": "gpu_count", "ok": healthy, "detail": "8 GPU(s), expected 8" if healthy else "7 GPU(s)"}]
    path = folder / "health.json"
    path.write_text(json.dumps({"healthy": healthy, "checked_at": "2026-12-04T17:00:00Z", "checks": checks}))
    if mtime is not None:
        os.utime(path, (mtime, mtime))


def test_a_result_from_this_boot_counts(health, tmp_path):
    write_report(tmp_path, True)
    assert health.verdict(str(tmp_path), time.time() - 60)["healthy"] is True
    write_report(tmp_path, False)
    result = health.verdict(str(tmp_path), time.time() - 60)
    assert (result["healthy"], result["current"], result["failed_checks"]) == (False, True, ["gpu_count"])
    assert result["reason"] == "failed gpu_count: 7 GPU(s)"


def test_a_result_from_before_this_boot_or_none_does_not(health, tmp_path):
    assert health.verdict(str(tmp_path), time.time())["reason"] == "the acceptance check has not run yet"
    write_report(tmp_path, True, mtime=time.time() - 3600)
    result = health.verdict(str(tmp_path), time.time() - 60)
    assert (result["healthy"], result["current"]) == (False, False)
    assert result["reason"] == "the acceptance check has not run since this boot"
    (tmp_path / "health.json").write_text("{not json")
    assert health.verdict(str(tmp_path), 0)["reason"].startswith("health.json unreadable")
