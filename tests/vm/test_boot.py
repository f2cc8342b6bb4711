"""Rendered user data booted for real: a Debian 12 VM (systemd, cloud-init 22.4) under qemu, booted twice from the
same disk. Marked `vm` (minutes under TCG): `.ci/run` runs it after the default suite; locally
`.venv/bin/python -m pytest -m vm tests/vm`. One stack per cloud; the unit-level check of all six stacks is
tests/cloud_init/test_boot_order.py.

What the VM cannot have: a GPU and Ubuntu's archive (no DNS inside). Those install and boot steps must fail fast
and be recorded, and the node must still reach gpufleet-node.target and report itself unhealthy."""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from gpufleet.boot import user_data_for
from gpufleet.cloud_init.s3_bootstrap import node_config_sha256
from tests.cloud_init.conftest import _stack
from tests.cloud_init.metadata_servers import AZURE_EVENT_ID

from .boots import BOOTSTRAPPED, StackBoots, boot_twice

pytestmark = [pytest.mark.vm, pytest.mark.timeout(3600)]  # each boots a VM twice under TCG

# A hang guard per boot, not a speed goal: three TCG guests share the host's cores.
BOOT_TIMEOUT = float(os.environ.get("GPUFLEET_VM_BOOT_TIMEOUT", "1800"))
# One stack per cloud, each with the watcher (spot on AWS and Azure; every GCP node watches host maintenance).
# azure-train, not azure-dev: the ND H100 v5 spot node carries the InfiniBand, Fabric Manager and spot-watcher parts.
# gcp-train: GPUDirect-TCPXO's steps and services, with stand-ins for the A3 Mega and Google's registry (boots.py).
STACKS = [("aws-train", "aws"), ("azure-train", "azure"), ("gcp-dev", "gcp"), ("gcp-train", "gcp")]
# GPUFLEET_VM_STACKS=gcp-dev,aws-train runs a subset (each stack is two boots of 3-6 minutes under TCG).
SELECTED = os.environ.get("GPUFLEET_VM_STACKS", "")
if SELECTED:
    STACKS = [case for case in STACKS if case[0] in SELECTED.split(",")]
# The stacks boot at the same time (each VM's TCG threads share the host's cores): GPUFLEET_VM_PARALLEL caps it.
PARALLEL = int(os.environ.get("GPUFLEET_VM_PARALLEL", "3"))


@pytest.fixture(scope="session")
def booted(image, tmp_path_factory) -> dict[str, StackBoots]:
    """Every selected stack booted twice, the stacks concurrently."""
    with ThreadPoolExecutor(max_workers=max(1, PARALLEL)) as pool:
        futures = {stack: pool.submit(boot_twice, image, tmp_path_factory.mktemp(stack), stack, cloud, BOOT_TIMEOUT)
                   for stack, cloud in STACKS}
        results = {stack: future.result() for stack, future in futures.items()}
    for result in results.values():
        print(f"{result.stack}: boot times {[round(t) for t in result.seconds]} s "
              f"(TCG, {len(results)} VMs at once; a shared machine makes them pessimistic)")
    return results


def assert_clean_boot(report: dict, label: str, first: bool) -> None:
    context = f"{label}: {report.get('console_tail', '')[-1500:]}"
    assert "cloud_init" in report, f"no report from the guest ({label}, qemu rc {report['qemu_rc']}): {context}"
    if first:
        assert "Valid cloud-config" in report["schema"], report["schema"]  # cloud-init accepted the config
    assert report["schema_warnings"] == "0", label
    # No cloud-init module may fail, except on the first boot runcmd's gpufleet-install (scripts_user), which exits
    # non-zero exactly when an install step failed and was recorded (here: no GPU, no Ubuntu archive).
    failures = set(report["module_failures"].split())
    allowed = {"scripts_user"} if first and report["install_failed"].strip() else set()
    assert failures <= allowed, (label, failures, report["cloud_init"])
    assert report["cycles"] == "0", context
    units = report["units"]  # systemctl prints Result, NRestarts, ActiveState (a target: ActiveState only)
    assert units["gpufleet-node.target"][-1] == "active", (units, context)
    assert units["gpufleet-boot.service"][-1] in ("active", "failed"), units  # ran (a no-GPU step fails)
    assert units["gpufleet-health.service"][-1] in ("active", "failed"), units
    health = report["health"]
    assert '"healthy": false' in health and "driver" in health, health
    assert "10-driver" in report["boot_failed"], report  # recorded, not waited out
    if "health_endpoint" in report:  # GCP and Azure: the endpoint read this boot's verdict (no GPU: unhealthy)
        assert report["health_endpoint"].endswith("HTTP 503"), report["health_endpoint"]
        assert '"reason": "acceptance check failed"' in report["health_endpoint"], report["health_endpoint"]
    if first:  # the steps that need a GPU or Ubuntu's archive are recorded
        assert report["install_failed"].strip(), report


@pytest.mark.parametrize("stack, cloud", STACKS)
def test_user_data_boots_twice_cleanly(booted, stack, cloud):
    result = booted[stack]
    assert ("health_endpoint" in result.reports[0]) == (cloud in ("gcp", "azure")), result.reports[0].keys()
    for number, report in enumerate(result.reports, 1):
        assert_clean_boot(report, f"{stack} boot {number}", first=number == 1)
    first, second = result.reports
    assert first["boot_id"] != second["boot_id"]
    # Exporters whose binary never installed must not restart forever.
    for name in ("gpufleet-node-exporter.service", "gpufleet-dcgm-exporter.service"):
        state = second["units"].get(name)
        if state and len(state) == 3:
            assert int(state[1]) <= 5, (name, state)


def checked(health: str, name: str) -> bool | None:
    """One check's verdict in health.json as the report carries it (newlines removed: still JSON)."""
    verdicts = [check["ok"] for check in json.loads(health)["checks"] if check["check"] == name]
    return verdicts[0] if verdicts else None


@pytest.mark.parametrize("stack", sorted({"gcp-train"} & {stack for stack, _ in STACKS}))
def test_tcpxo_services_start_in_order_and_do_not_loop(booted, stack):
    """GPUDirect-TCPXO inside the VM: the install and device steps that need an A3 Mega and Google's repository fail
    and are recorded; the plugin installer then RxDM start (the stand-in docker), neither restarts; the acceptance
    check reports the missing import helper and aperture devices and sees the plugin and RxDM ready."""
    for number, report in enumerate(booted[stack].reports, 1):
        units = report["units"]
        assert units["gpufleet-tcpxo-plugin.service"][-1] == "active", (number, units)
        assert units["gpufleet-rxdm.service"][-1] == "active" and units["gpufleet-rxdm.service"][1] == "0", (
            number, units)
        # The boot steps, then the installer, then RxDM until ready, then the check: each starts once the one before
        # is done (active, or failed for a oneshot that never became active).
        started = report["started"]  # unit -> (activating, active, last state change), monotonic µs
        order = ["gpufleet-boot.service", "gpufleet-tcpxo-plugin.service", "gpufleet-rxdm.service",
                 "gpufleet-health.service"]
        assert all(started[unit][0] > 0 for unit in order), (number, started)
        done = {unit: started[unit][1] or started[unit][2] for unit in order}
        assert all(done[before] <= started[after][0] for before, after in zip(order, order[1:], strict=False)), (
            number, started)
        assert "08-tcpxo-devices" in report["boot_failed"], (number, report["boot_failed"])
        health = report["health"]
        assert checked(health, "tcpxo_import_helper") is False and checked(health, "tcpxo_aperture_devices") is False
        assert checked(health, "tcpxo_plugin") is True and checked(health, "tcpxo_rxdm") is True, health
    assert "63-gcp-tcpxo" in booted[stack].reports[0]["install_failed"]


@pytest.mark.parametrize("stack, cloud", STACKS)
def test_watcher_drains_on_the_clouds_notice_inside_the_vm(booted, stack, cloud):
    """Second boot: the host announced a notice through the fake metadata service once the watcher polled; the
    drain hook ran to completion, and on Azure the event was acknowledged."""
    result = booted[stack]
    second = result.reports[1]
    assert second["units"]["gpufleet-watcher.service"][-1] == "active", second["units"]
    assert result.notice_kind, ("the watcher never polled the metadata service", result.requests[-10:])
    assert f'"kind": "{result.notice_kind}"' in second["drained"], (second["drained"], second["watcher_log"])
    assert '"outcome": "exit 0"' in second["drained"], (second["drained"], second["watcher_log"])
    if cloud == "azure":
        assert {"StartRequests": [{"EventId": AZURE_EVENT_ID}]} in result.azure_acks, (result.azure_acks,
                                                                                      second["watcher_log"])


@pytest.mark.parametrize("stack, cloud", STACKS)
def test_job_view_node_side_inside_the_vm(booted, stack, cloud):
    """tests/vm/guest/gpufleet-vm-report starts a gpufleet-run job: it is in the GPU -> job file while it runs, in
    the job-metrics textfile from its real cgroup, and out of the file once it stops (nodes with the job view)."""
    if "gpufleet-job-metrics.timer" not in user_data_for(_stack(stack), "gpufleet-vm"):
        pytest.skip(f"{stack} has no job view")
    for number, report in enumerate(booted[stack].reports, 1):
        assert report["units"]["gpufleet-job-metrics.timer"][-1] == "active", (number, report["units"])
        assert report["job_map"].split() == ["vm-job"], (number, report)
        for name in ("gpufleet_job_cpu_seconds_total", "gpufleet_job_memory_bytes", "gpufleet_job_tasks"):
            assert f'{name}{{hpc_job="vm-job"}} ' in report["job_metrics"], (number, name, report["job_metrics"])
        assert report["job_map_after"].split() == [], (number, report["job_map_after"])


@pytest.mark.parametrize("stack, cloud", STACKS)
def test_first_poweroff_drained_through_the_shutdown_unit(booted, stack, cloud):
    """The first boot ended in a poweroff, not a reboot, and no notice came: gpufleet-shutdown-drain.service ran the
    drain hook on the way down (read from the first boot's journal on the second)."""
    drain_log = booted[stack].reports[1]["last_shutdown_drain"]
    assert "shutdown notice" in drain_log and "running drain hook" in drain_log, drain_log
    assert "drain hook exited" in drain_log and "timed out" not in drain_log, drain_log


@pytest.mark.parametrize("stack", sorted(BOOTSTRAPPED & {stack for stack, _ in STACKS}))
def test_the_s3_bootstrap_installs_the_config_once(booted, stack):
    """A node whose user data is the boothook: the first boot fetched the config from (fake) S3, signed, and
    cloud-init ran it in that same boot (the clean-boot test above holds for it); the second fetched nothing."""
    result = booted[stack]
    first, second = result.reports
    expected = node_config_sha256(user_data_for(_stack(stack), "gpufleet-vm"))
    assert first["node_config"] == second["node_config"] == expected, (first["node_config"], first["bootstrap_log"])
    assert "installed as /etc/cloud/cloud.cfg.d/90-gpufleet-node.cfg" in first["bootstrap_log"], first["bootstrap_log"]
    assert "already in place" in second["bootstrap_log"], second["bootstrap_log"]
    assert result.s3_gets == 1
