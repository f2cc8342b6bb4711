"""The power programs' GCP half against the loopback Compute Engine (fake_gce.py), in the default run (the same
fake drives Debian's slurmctld in test_power_daemons.py, marked slow): a zonal bulk insert of the named instances
from the group's template, the next zone tried on ZONE_RESOURCE_POOL_EXHAUSTED within the same resume, quota named
as quota when nothing is left, and release deleting the named idle nodes' instances, never a busy node's or an
instance without the cluster's label."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpufleet.cloud_init.power.config import CLUSTER_KEY, GcpApi, GcpGroup, GcpTarget, PowerConfig, PowerGroup
from gpufleet.cloud_init.power.engine import release, resume
from gpufleet.cloud_init.power.gcp import GcpProvider
from gpufleet.cloud_init.power.metrics import PowerState

from .fake_gce import FakeGce
from .fake_slurm import FakeSlurm

PROJECT, CLUSTER = "test-project", "c0ffee"
ZONES = ("us-central1-a", "us-central1-b")
TEMPLATE = f"projects/{PROJECT}/global/instanceTemplates/train"


@pytest.fixture
def cloud(tmp_path):
    verdicts: dict[tuple[str, str], str] = {}  # (zone, instance) -> error code
    fake = FakeGce(PROJECT, {TEMPLATE: {"machineType": "a3-highgpu-8g", "labels": {CLUSTER_KEY: CLUSTER}}},
                   lambda zone, name, attempt, machine_type: verdicts.get((zone, name)))
    server = fake.server().start()
    group = PowerGroup(name="train", partition="train", node_prefix="train-", max_nodes=4, gcp=GcpGroup(targets=tuple(
        GcpTarget(instance_template=TEMPLATE, zone=zone, machine_type="a3-highgpu-8g") for zone in ZONES)))
    config = PowerConfig(cloud="gcp", cluster_id=CLUSTER, groups=(group,), gcp=GcpApi(
        project=PROJECT, compute_url=f"{server.url}/compute/v1", metadata_url=server.url),
        state_dir=str(tmp_path / "state"), metrics_file=str(tmp_path / "metrics.prom"))
    yield fake, config, GcpProvider(config), verdicts
    server.close()


def run(command, config, provider, names, busy=()):
    slurm = FakeSlurm(names, busy)
    command(config, provider, slurm, PowerState(config.state_dir, config.metrics_file, ["train"]), names)
    return slurm


def test_a_resume_bulk_inserts_the_named_instances_and_falls_back_to_the_next_zone(cloud):
    fake, config, provider, verdicts = cloud
    verdicts[(ZONES[0], "train-2")] = "ZONE_RESOURCE_POOL_EXHAUSTED"
    slurm = run(resume, config, provider, ["train-1", "train-2"])
    assert slurm.updates == []
    assert sorted(fake.instances) == [(ZONES[0], "train-1"), (ZONES[1], "train-2")]
    inserts = [(path.split("/")[6], sorted(body["perInstanceProperties"]), body["sourceInstanceTemplate"])
               for method, path, body in fake.calls if path.endswith("/bulkInsert")]
    assert inserts == [(ZONES[0], ["train-1", "train-2"], TEMPLATE), (ZONES[1], ["train-2"], TEMPLATE)]


def test_nothing_left_leaves_the_nodes_down_with_quota_named_as_quota(cloud):
    fake, config, provider, verdicts = cloud
    verdicts[(ZONES[0], "train-3")] = "ZONE_RESOURCE_POOL_EXHAUSTED_WITH_DETAILS"
    verdicts[(ZONES[1], "train-3")] = "QUOTA_EXCEEDED"
    slurm = run(resume, config, provider, ["train-3"])
    reason = "gpufleet quota: QUOTA_EXCEEDED on a3-highgpu-8g us-central1-b (2 of 2 targets failed)"
    assert slurm.updates == [(("train-3",), "DOWN", reason), (("train-3",), "POWER_DOWN_FORCE", reason)]
    assert fake.instances == {}
    assert 'gpufleet_capacity_short{group="train",reason="quota"} 1' in Path(config.metrics_file).read_text()


def test_release_deletes_the_idle_named_instances_only(cloud):
    fake, config, provider, _ = cloud
    run(resume, config, provider, ["train-1", "train-2", "train-3"])
    fake.instances[(ZONES[0], "train-3")]["labels"] = {CLUSTER_KEY: "another-cluster"}
    run(release, config, provider, ["train-1", "train-2", "train-3"], busy=("train-2",))
    assert sorted(fake.instances) == [(ZONES[0], "train-2"), (ZONES[0], "train-3")]
