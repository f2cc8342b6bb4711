"""The power programs' Azure half against a loopback Azure Resource Manager and IMDS (fake_azure.py): a resume
grows the target's Uniform scale set by the nodes it needs and names each new instance through its user data; a
zone whose scale-out fails with an allocation error (nested in the operation's error details, the failed instances
deleted again) falls back to the next target in the same resume; a quota refusal is named as quota; release deletes
exactly the named idle nodes' instances by id, lowering the capacity by them and never touching a busy node's."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from gpufleet.cloud_init.power.azure import AzureProvider
from gpufleet.cloud_init.power.config import (
    NODE_NAME_KEY,
    AzureApi,
    AzureGroup,
    AzureTarget,
    PowerConfig,
    PowerGroup,
)
from gpufleet.cloud_init.power.engine import release, resume
from gpufleet.cloud_init.power.metrics import PowerState

from .fake_azure import FakeAzure
from .fake_slurm import FakeSlurm

GROUP_ID = "/subscriptions/00000000-0000-0000-0000-000000000001/resourceGroups/train/providers/Microsoft.Compute"
SETS = {f"{GROUP_ID}/virtualMachineScaleSets/train-{zone}": "Standard_ND96isr_H100_v5" for zone in ("1", "2")}
ZONE1, ZONE2 = sorted(SETS)


@pytest.fixture
def cloud(tmp_path):
    verdicts: dict[str, tuple[str, str]] = {}  # scale set name -> how its scale-outs fail
    fake = FakeAzure(SETS, lambda name, attempt: verdicts.get(name))
    server = fake.server().start()
    group = PowerGroup(name="train", partition="train", node_prefix="train-", max_nodes=8, azure=AzureGroup(
        targets=tuple(AzureTarget(scale_set_id=key, vm_size=size, zone=key[-1]) for key, size in sorted(SETS.items()))))
    config = PowerConfig(cloud="azure", cluster_id="c0ffee", groups=(group,), azure=AzureApi(
        management_url=server.url, metadata_url=server.url), state_dir=str(tmp_path / "state"),
        metrics_file=str(tmp_path / "metrics.prom"))
    provider = AzureProvider(config, poll_s=0.01)
    yield fake, config, provider, verdicts
    server.close()


def run(command, config, provider, names, busy=()):
    slurm = FakeSlurm(names, busy)
    command(config, provider, slurm, PowerState(config.state_dir, config.metrics_file, ["train"]), names)
    return slurm


def named(fake: FakeAzure, scale_set: str) -> dict[str, str]:
    """node -> instance id, from each instance's user data."""
    found = {}
    for instance_id, vm in fake.sets[scale_set.lower()]["instances"].items():
        text = base64.b64decode(vm["properties"]["userData"] or b"").decode()
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key == NODE_NAME_KEY:
                found[value] = instance_id
    return found


def test_a_resume_grows_the_scale_set_and_names_each_instance_by_its_user_data(cloud):
    fake, config, provider, verdicts = cloud
    slurm = run(resume, config, provider, ["train-1", "train-2"])
    assert slurm.updates == []
    assert fake.sets[ZONE1.lower()]["capacity"] == 2
    assert named(fake, ZONE1) == {"train-1": "0", "train-2": "1"}
    assert ("PATCH", ZONE1, {"sku": {"capacity": 2}}) in fake.calls


def test_an_allocation_failure_falls_back_to_the_next_zone_and_deletes_the_failed_instances(cloud):
    fake, config, provider, verdicts = cloud
    verdicts["train-1"] = ("capacity", "ZonalAllocationFailed")
    slurm = run(resume, config, provider, ["train-3"])
    assert slurm.updates == []
    assert fake.sets[ZONE1.lower()]["instances"] == {} and fake.sets[ZONE1.lower()]["capacity"] == 0
    assert ("POST", f"{ZONE1}/delete", {"instanceIds": ["0"]}) in fake.calls
    assert named(fake, ZONE2) == {"train-3": "0"}


def test_quota_and_capacity_everywhere_leave_the_nodes_down_named_by_the_last_error(cloud):
    fake, config, provider, verdicts = cloud
    verdicts["train-1"] = ("capacity", "ZonalAllocationFailed")
    verdicts["train-2"] = ("quota", "OperationNotAllowed")
    slurm = run(resume, config, provider, ["train-4", "train-5"])
    reason = "gpufleet quota: OperationNotAllowed on Standard_ND96isr_H100_v5 2 (2 of 2 targets failed)"
    assert slurm.updates == [(("train-4", "train-5"), "DOWN", reason),
                             (("train-4", "train-5"), "POWER_DOWN_FORCE", reason)]
    assert all(scale_set["instances"] == {} for scale_set in fake.sets.values())
    metrics = Path(config.metrics_file).read_text()
    assert 'gpufleet_capacity_short{group="train",reason="quota"} 1' in metrics
    assert 'gpufleet_power_resume_failures_total{group="train",reason="quota"} 2' in metrics


def test_release_deletes_exactly_the_idle_named_instances(cloud):
    fake, config, provider, verdicts = cloud
    names = ["train-1", "train-2", "train-3"]
    run(resume, config, provider, names)
    assert named(fake, ZONE1) == {"train-1": "0", "train-2": "1", "train-3": "2"}
    run(release, config, provider, ["train-1", "train-2"], busy=("train-2",))
    assert named(fake, ZONE1) == {"train-2": "1", "train-3": "2"}
    assert fake.sets[ZONE1.lower()]["capacity"] == 2
    assert [call for call in fake.calls if call[1].endswith("/delete")] == [
        ("POST", f"{ZONE1}/delete", {"instanceIds": ["0"]})]


def test_an_instance_whose_user_data_names_another_node_is_not_touched(cloud):
    fake, config, provider, verdicts = cloud
    run(resume, config, provider, ["train-1"])
    vm = fake.sets[ZONE1.lower()]["instances"]["0"]
    vm["properties"]["userData"] = base64.b64encode(f"{NODE_NAME_KEY}=train-7\n".encode()).decode()
    run(release, config, provider, ["train-1"])
    assert "0" in fake.sets[ZONE1.lower()]["instances"]
