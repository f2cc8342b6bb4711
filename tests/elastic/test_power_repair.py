"""`sync` repairs elastic nodes nothing else would replace (cloud_init/power/repair.py): a node slurmd stopped
answering for, and one the health check drained, are released for a fresh instance and returned to service;
nodes running a job, held by an operator, powering up or down, or short of capacity are left as they are. The same
path on Debian's real slurmctld is in test_power_daemons.py."""

from __future__ import annotations

from datetime import datetime

import pytest

from gpufleet.cloud_init.power.config import GcpApi, GcpGroup, GcpTarget, PowerConfig, PowerGroup
from gpufleet.cloud_init.power.engine import sync
from gpufleet.cloud_init.power.metrics import PowerState
from gpufleet.cloud_init.power.repair import needs_repair
from gpufleet.cloud_init.power.slurm import Node, parse_nodes

from .fake_slurm import FakeSlurm

NOW = datetime.now()  # reasons set just now: a capacity shortage is still inside its retry time
UNHEALTHY = "gpufleet: unhealthy: nvidia-smi lists 7 of 8 GPUs"
# `scontrol show node` of a CLOUD node whose slurmd stopped answering, as Slurm 22.05 prints it.
NOT_RESPONDING_BLOCK = """NodeName=burst-1 Arch=x86_64 CoresPerSocket=1
   CPUAlloc=0 CPUEfctv=8 CPUTot=8 CPULoad=0.01
   AvailableFeatures=g2-standard-8
   ActiveFeatures=g2-standard-8
   Gres=gpu:1
   State=DOWN+CLOUD+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weights=1 Owner=N/A MCS_label=N/A
   Partitions=burst
   Reason=Not responding [slurm@2026-12-07T09:55:00]
"""


def config(tmp_path, retry_s: int = 3600) -> PowerConfig:
    return PowerConfig(cloud="gcp", cluster_id="c0ffee", gcp=GcpApi(project="p"), capacity_retry_s=retry_s,
                       metrics_file=str(tmp_path / "power.prom"), state_dir=str(tmp_path / "state"),
                       groups=(PowerGroup(name="burst", partition="burst", node_prefix="burst-", max_nodes=8,
                                          gcp=GcpGroup(targets=(GcpTarget(instance_template="t", zone="z",
                                                                          machine_type="g2-standard-8"),))),))


def node(name: str, state: str, *flags: str, reason: str = "") -> Node:
    return Node(name=name, state=state, flags=frozenset({"CLOUD", *flags}), reason=reason, reason_time=NOW)


def cluster() -> FakeSlurm:
    slurm = FakeSlurm([])
    for shown in (node("burst-1", "DOWN", "NOT_RESPONDING", reason="Not responding"),
                  node("burst-2", "IDLE", "DRAIN", reason=UNHEALTHY),
                  node("burst-3", "ALLOCATED", "DRAIN", reason=UNHEALTHY),  # draining: its job ends first
                  node("burst-4", "IDLE", "DRAIN", reason="kernel update, back at noon"),  # an operator's drain
                  node("burst-5", "DOWN", "NOT_RESPONDING", reason="reboot for the driver"),  # kept by Slurm
                  node("burst-6", "IDLE", "DRAIN", "POWER_DOWN", reason="gpufleet: spot 2m"),  # slurm/drain's
                  node("burst-7", "DOWN", "POWERED_DOWN", reason="gpufleet capacity: ZONE_RESOURCE_POOL_EXHAUSTED"),
                  node("burst-8", "IDLE", "POWERING_UP")):
        slurm.shown[shown.name] = shown
    return slurm


def test_not_responding_and_unhealthy_nodes_are_released_with_the_old_reason_kept(tmp_path):
    slurm = cluster()
    sync(config(tmp_path), slurm, PowerState(str(tmp_path / "state"), str(tmp_path / "power.prom"), ["burst"]))
    assert slurm.updates == [
        (("burst-1",), "DOWN", "gpufleet repair: Not responding"),
        (("burst-1",), "POWER_DOWN_FORCE", "gpufleet repair: Not responding"),
        (("burst-2",), "DOWN", f"gpufleet repair: {UNHEALTHY}"),
        (("burst-2",), "POWER_DOWN_FORCE", f"gpufleet repair: {UNHEALTHY}")]
    assert 'gpufleet_power_nodes_repaired_total{group="burst"} 2' in (tmp_path / "power.prom").read_text()


def test_a_released_repair_returns_to_service_at_once_while_capacity_waits_its_retry_time(tmp_path):
    slurm = cluster()
    state = PowerState(str(tmp_path / "state"), str(tmp_path / "power.prom"), ["burst"])
    sync(config(tmp_path), slurm, state)  # FakeSlurm powers a POWER_DOWN_FORCE node down at once
    slurm.updates.clear()
    sync(config(tmp_path), slurm, state)
    assert slurm.updates == [(("burst-1", "burst-2"), "RESUME", "")]


def test_an_unhealthy_node_slurm_already_powered_down_is_undrained(tmp_path):
    slurm = FakeSlurm([])
    slurm.shown["burst-1"] = node("burst-1", "IDLE", "DRAIN", "POWERED_DOWN", reason=UNHEALTHY)
    state = PowerState(str(tmp_path / "state"), str(tmp_path / "power.prom"), ["burst"])
    sync(config(tmp_path), slurm, state)
    assert slurm.updates == [(("burst-1",), "RESUME", "")]
    assert 'gpufleet_power_nodes_repaired_total{group="burst"} 1' in (tmp_path / "power.prom").read_text()


def test_scontrols_not_responding_node_is_one_to_repair():
    shown = parse_nodes(NOT_RESPONDING_BLOCK)["burst-1"]
    assert (shown.state, shown.reason) == ("DOWN", "Not responding")
    assert needs_repair(shown)


@pytest.mark.parametrize("flag", ["POWERING_UP", "POWERING_DOWN", "POWERED_DOWN", "POWER_DOWN"])
def test_a_node_on_its_way_up_or_down_is_never_repaired(flag):
    assert not needs_repair(node("burst-1", "DOWN", "NOT_RESPONDING", flag, reason="Not responding"))
    assert not needs_repair(node("burst-2", "IDLE", "DRAIN", flag, reason=UNHEALTHY))


@pytest.mark.parametrize("state", ["ALLOCATED", "MIXED", "COMPLETING"])
def test_a_node_with_a_job_is_never_repaired(state):
    assert not needs_repair(node("burst-1", state, "DRAIN", reason=UNHEALTHY))
