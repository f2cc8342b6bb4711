"""A monitoring server's real user data booted twice in the Debian 12 VM (marker `vm`): the boot order the unit
test (tests/cloud_init/test_boot_order.py) checks with `systemd-analyze verify` holds in a booted system too. With
the setup unit ordered After=cloud-final.service, the second boot logged an ordering cycle and systemd deleted a job.

GPUFLEET_VM_SERVER_STACKS selects the stacks (default gcp-train; only GCP's data-disk naming is emulated)."""

from __future__ import annotations

import os

import pytest

from .server_boots import DATA_DISK_SERIAL, SETUP_UNIT, ServerBoots, boot_server_twice

pytestmark = [pytest.mark.vm, pytest.mark.timeout(3600)]

BOOT_TIMEOUT = float(os.environ.get("GPUFLEET_VM_BOOT_TIMEOUT", "1800"))
SERVER_STACKS = [(stack, stack.split("-")[0]) for stack in
                 os.environ.get("GPUFLEET_VM_SERVER_STACKS", "gcp-train").split(",") if stack]
# First boot: no package archive in the VM, so cloud-init's package module fails, and runcmd's
# `systemctl enable --now` reports the setup unit's failure (it stops where it needs the `prometheus` user).
FIRST_BOOT_FAILURES = {"package_update_upgrade_install", "scripts_user"}


@pytest.fixture(scope="module")
def server_boots(image, tmp_path_factory) -> dict[str, ServerBoots]:
    results = {}
    for stack, cloud in SERVER_STACKS:
        assert cloud in DATA_DISK_SERIAL, f"{stack}: the VM emulates only GCP's data-disk name"
        results[stack] = boot_server_twice(image, tmp_path_factory.mktemp(f"{stack}-server"), stack, cloud,
                                           BOOT_TIMEOUT)
        print(f"{stack} monitoring server: boot times {[round(t) for t in results[stack].seconds]} s (TCG)")
    return results


@pytest.mark.parametrize("stack, cloud", SERVER_STACKS)
def test_monitoring_server_boots_twice_without_an_ordering_cycle(server_boots, stack, cloud):
    result = server_boots[stack]
    for number, report in enumerate(result.reports, 1):
        label = f"{stack} server boot {number}"
        context = f"{label}: {report.get('console_tail', '')[-1500:]}"
        assert "cloud_init" in report, f"no report from the guest ({label}, qemu rc {report['qemu_rc']}): {context}"
        if number == 1:
            assert "Valid cloud-config" in report["schema"], report["schema"]
        assert report["schema_warnings"] == "0", label
        failures = set(report["module_failures"].split())
        assert failures <= (FIRST_BOOT_FAILURES if number == 1 else set()), (label, failures, report["cloud_init"])
        assert report["cycles"] == "0", context
        # It ran at this boot: started by runcmd on the first, by multi-user.target on the second.
        assert report["units"][SETUP_UNIT][-1] in ("active", "failed"), (label, report["units"][SETUP_UNIT])
        assert "gpufleet-monitoring" in report["setup_log"] or "Starting" in report["setup_log"], report["setup_log"]
        # The data disk was formatted on the first boot and is Prometheus' data directory on both.
        assert report["data_mount"].split() == ["/dev/vdb", "ext4"], (label, report["data_mount"], report["setup_log"])
