"""A cluster of node groups on Debian's real Slurm: the controller's slurm.conf (a NodeSet and a partition per group)
starts slurmctld, and a dynamic node of each group, registering with its group's line from its own rendered user
data, lands in its group's partition with its GPUs, where `srun -p <partition>` runs. Loopback only, one slurmd after
the other, in a private mount namespace (tests/scheduler/partitions.sh), about 10 s."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gpufleet.boot import boot_config
from gpufleet.pipeline import plan_node_groups
from gpufleet.scheduler.conf import controller_files, controller_settings
from gpufleet.spec import parse_cluster_spec

from .test_slurm_daemons import free_ports, require_slurm_on_loopback, sections

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent
SPEC = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "accelerator": {"instance_type": "p5.48xlarge"},
        "scheduler": {"kind": "slurm"},
        "node_groups": {"train": {"nodes": 2, "market": "spot", "slurm_default": True},
                        "debug": {"nodes": 1, "slurm_partition": "interactive"},
                        "eval": {"nodes": 2, "accelerator": {"gpu": "L40S", "gpus_per_node": 1}}}}


@pytest.fixture(scope="module")
def partitions(tmp_path_factory):
    require_slurm_on_loopback("slurmctld", "slurmd", "scontrol", "sinfo", "srun", "munged")
    plans = plan_node_groups(parse_cluster_spec(SPEC))
    work = tmp_path_factory.mktemp("partitions")
    settings = controller_settings(plans, plans.first.cluster_name)
    for name, text in controller_files(settings).items():
        (work / name).write_text(text)
    for name in ("task-prolog", "prolog", "epilog"):
        (work / name).write_text("#!/bin/sh\nexit 0\n")
        (work / name).chmod(0o755)
    registrations = {f"{plan.group}1": boot_config(plan, plan.cluster_name, group=plan.group).slurm.node_conf
                     for plan in plans.groups}
    ctld_port, slurmd_port = free_ports(2)
    env = dict(os.environ, GPUS=str(settings.gpus_per_node), CTLD_PORT=str(ctld_port), SLURMD_PORT=str(slurmd_port),
               NODES=";".join(f"{name}={conf}" for name, conf in registrations.items()))
    done = subprocess.run(["unshare", "-m", "bash", str(HERE / "partitions.sh"), str(work)], capture_output=True,
                          text=True, timeout=180, env=env)
    logs = "".join(p.read_text() for p in (work / "log").glob("*.log"))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\n{logs[-4000:]}"
    return sections(done.stdout), plans, registrations


@pytest.mark.parametrize(("node", "partition", "gres"), [
    ("debug1", "interactive", "gpu:8"), ("eval1", "eval", "gpu:1"), ("train1", "train", "gpu:8")])
def test_each_groups_node_lands_in_its_partition_with_its_gpus_and_runs_its_jobs(partitions, node, partition, gres):
    found, _, registrations = partitions
    lines = found[f"node {node}"].splitlines()
    name, state, where, features, gpus = lines[0].split()
    assert (name, state, where, gpus) == (node, "idle", partition, gres), lines
    assert node[:-1] in features.split(",")  # the group's name, which places the node in its NodeSet
    assert ("efa" in features.split(",")) == (node != "eval1")  # the L40S group has no RDMA fabric
    assert f"ran-on {node} in {partition}" in lines


def test_sinfo_lists_each_partition_with_its_nodes_and_the_marked_one_is_the_default(partitions):
    found, _, _ = partitions
    listed = {line.split()[0]: line.split()[1:] for line in found["partitions"].splitlines()}
    assert listed == {"interactive": ["NO", "debug1"], "eval": ["NO", "eval1"], "train": ["YES", "train1"]}
