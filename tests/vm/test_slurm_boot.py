"""Slurm over booted VMs (marker `vm`): a controller and three GPU nodes of azure-train with `scheduler.kind: slurm`
and two node groups (`train`, two nodes on spot, the default partition; `debug`, one on demand), booted at once from
their rendered user data on Debian 12's Slurm (tests/vm/slurm_boots.py). The nodes join as dynamic nodes, each in
its group's partition, and are idle; `srun -p debug` runs on the debug node, `srun -N2` runs in train, a two-node
MPI all-reduce (Debian's Open MPI and mpi4py) launched by
`srun --mpi=pmix` passes, a spot notice through one node's metadata service drains it in Slurm and requeues the
batch job running there, which finishes, and that node's second boot brings it back idle."""

from __future__ import annotations

import os

import pytest

from .conftest import require_vm_tools
from .image import SERVICE_PACKAGES, build_image
from .slurm_boots import GROUPS, NODES, SlurmBoots, boot_cluster

pytestmark = [pytest.mark.vm, pytest.mark.timeout(5400)]

# A hang guard for the whole scenario, not a speed goal (four TCG guests share the host's cores).
TIMEOUT = float(os.environ.get("GPUFLEET_VM_SLURM_TIMEOUT", "3600"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> SlurmBoots:
    require_vm_tools()
    folder = tmp_path_factory.mktemp("slurm")
    with (folder / "image-build.log").open("w") as log:
        image = build_image(log, SERVICE_PACKAGES)
    result = boot_cluster(image, folder, TIMEOUT)
    print(f"Slurm cluster scenario: {round(result.seconds)} s (TCG, four VMs at once)")
    return result


def context(result: SlurmBoots) -> str:
    return f"{result.controller}\n" + "\n".join(f"--- {name}\n{text}" for name, text in result.consoles.items())


TRAIN = sorted(name for name, group in GROUPS.items() if group == "train")
DEBUG = next(name for name, group in GROUPS.items() if group == "debug")


def test_every_node_joins_idle_in_its_groups_partition_and_srun_runs_there(cluster):
    report = cluster.controller
    assert report.get("slurmctld") == "active", context(cluster)
    states = dict(line.split()[:2] for line in report.get("sinfo", "").split("|") if line.strip())
    assert states == {name: "idle" for name in NODES}, context(cluster)
    assert "gpu:8" in report["sinfo"], report["sinfo"]  # the nodes registered their GPUs as GRES
    partitions = {line.split()[0]: line.split()[1:] for line in report["partitions"].split("|") if line.strip()}
    assert partitions == {"train*": ["2", "gpufleet-vm-node-[1-2]"], "debug": ["1", DEBUG]}, report["partitions"]
    assert report["srun_debug"] == f"{DEBUG} debug", report["srun_debug"]
    assert report["srun_hostname"].split("|") == TRAIN, report["srun_hostname"]


def test_two_node_mpi_allreduce_launched_by_srun(cluster):
    lines = sorted(line for line in cluster.controller.get("allreduce", "").split("|") if line.startswith("allreduce"))
    assert lines == ["allreduce rank=0 size=2 sum=3", "allreduce rank=1 size=2 sum=3"], context(cluster)


def test_spot_notice_drains_in_slurm_and_the_job_is_requeued_and_finishes(cluster):
    report = cluster.controller
    node = report.get("first_node")
    assert node in TRAIN and cluster.noticed_node == node, context(cluster)
    drained = cluster.node_reports.get(node, {}).get("drained", "")
    assert '"kind": "interruption"' in drained and '"outcome": "exit 0"' in drained, cluster.node_reports
    # Slurm heard of it: the notice as the node's reason in slurmctld's own log, and DRAIN seen by the controller,
    # unless the hook had already deleted the node (its job requeued and gone) before a sample could show it.
    assert "reason set to: gpufleet: interruption" in report["slurmctld_log"], report["slurmctld_log"]
    seen = report["drained_state"]
    assert seen == "deleted before a sample showed DRAIN" or (
        "DRAIN" in seen and "Reason=gpufleet: interruption" in seen), report
    # The batch job was requeued once (not lost, not failed) and then ran to completion (on whichever node).
    state, restarts, node_list = report["job"].split()
    assert (state, restarts) == ("JobState=COMPLETED", "Restarts=1"), report["job"]
    assert node_list.removeprefix("NodeList=") in TRAIN, report["job"]


def test_the_drained_nodes_second_boot_brings_it_back(cluster):
    states = dict(line.split()[:2] for line in cluster.controller.get("back", "").split("|") if line.strip())
    assert states == {name: "idle" for name in NODES}, context(cluster)
