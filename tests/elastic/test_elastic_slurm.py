"""An elastic group's plan as slurm.conf declares it (gpufleet.scheduler.elastic): names, the smallest shape of the
chosen and fallback types, features and timings, rendered by gpufleet.scheduler.power; the node names expanded by
Debian's `scontrol show hostnames` (with a slurm.conf of the group's lines) where slurm-client is installed."""

from __future__ import annotations

import subprocess

import pytest

from gpufleet.catalog.loader import load_catalog
from gpufleet.pipeline import plan_node_groups
from gpufleet.scheduler.elastic import elastic_group, node_prefix
from gpufleet.scheduler.power import cloud_node_lines, partition_lines, real_memory_mib
from gpufleet.spec import parse_cluster_spec

from ..scheduler.test_slurm_daemons import SLURM_HINT
from ..validators import require_tool
from .test_elastic_spec import BASE, TCP


def test_a_fixed_group_has_no_declaration():
    [plan] = plan_node_groups(parse_cluster_spec({**BASE, "nodes": 2})).groups
    assert elastic_group(plan) is None


def test_the_declaration_takes_the_smallest_shape_of_the_chosen_and_fallback_types():
    [plan] = plan_node_groups(parse_cluster_spec({**TCP, "accelerator": {
        "instance_type": "g6.12xlarge", "fallback_types": ["g6.24xlarge", "g6.xlarge"]}})).groups
    group = elastic_group(plan)
    assert group is not None
    catalog = load_catalog()
    small = catalog.instance("aws", "g6.xlarge")
    assert small is not None
    assert (group.gpus, group.cpus, group.memory_mib) == (small.gpus, small.vcpus, real_memory_mib(small.memory_gib))
    assert group.features == ("g6.12xlarge", "g6.xlarge", "g6.24xlarge", "tcp")
    assert (group.node_prefix, group.max_nodes, group.min_nodes) == ("gpufleet-nodes-", 4, 0)
    assert (group.suspend_time_s, group.resume_timeout_s) == (600, 900)
    assert cloud_node_lines(group) == [
        f"NodeName=gpufleet-nodes-[1-4] State=CLOUD CPUs={small.vcpus} RealMemory={group.memory_mib} "
        "Gres=gpu:1 Features=gpu,g6.12xlarge,g6.xlarge,g6.24xlarge,tcp"]
    assert partition_lines(group)[1] == ("PartitionName=gpu Nodes=gpu Default=YES MaxTime=INFINITE State=UP "
                                         "OverSubscribe=NO SuspendTime=600 ResumeTimeout=900")


def test_a_groups_names_carry_the_cluster_and_the_group_and_the_slurm_settings(tmp_path):
    plans = plan_node_groups(parse_cluster_spec({**BASE, "nodes": 2, "scheduler": {"kind": "slurm", "slurm": {
        "suspend_time_minutes": 3, "resume_timeout_minutes": 25}}, "node_groups": {
            "burst": {"nodes": {"min": 1, "max": 12}}, "fixed": {}}}), name="Team_A")
    group = elastic_group(plans.group("burst"))
    assert group is not None and elastic_group(plans.group("fixed")) is None
    assert (group.name, group.partition, group.node_prefix, group.nodes) == ("burst", "burst", "team-a-burst-",
                                                                             "team-a-burst-[1-12]")
    assert (group.min_nodes, group.suspend_time_s, group.resume_timeout_s, group.default) == (1, 180, 1500, True)
    scontrol = require_tool("scontrol", SLURM_HINT)  # skips locally without it, fails in CI
    conf = tmp_path / "slurm.conf"
    conf.write_text("\n".join(["ClusterName=team-a", "SlurmctldHost=localhost", *cloud_node_lines(group),
                               *partition_lines(group)]) + "\n")
    done = subprocess.run([scontrol, "show", "hostnames", group.nodes], capture_output=True, text=True, timeout=30,
                          env={"SLURM_CONF": str(conf), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    names = done.stdout.split()
    assert names == [f"team-a-burst-{index}" for index in range(1, 13)]


@pytest.mark.parametrize("cluster, group, expected", [("gpufleet", None, "gpufleet-nodes-"),
                                                      ("9lives", "a", "n-9lives-a-"), ("--", "x", "x-")])
def test_node_prefixes_are_valid_power_config_prefixes(cluster, group, expected):
    assert node_prefix(cluster, group) == expected
