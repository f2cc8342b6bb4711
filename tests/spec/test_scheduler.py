"""`scheduler:`: defaults, and every refusal naming its field."""

import pytest
import yaml

from gpufleet.plan.stackfile import read_stack_config
from gpufleet.spec import SpecError, parse_cluster_spec
from tests.yaml_reader import read_yaml

BASE = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2, "accelerator": {"gpu": "H100"}}
SLURM = {"scheduler": {"kind": "slurm"}}


def problems(raw: dict) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(raw)
    return [str(p) for p in caught.value.problems]


def test_no_scheduler_by_default():
    assert parse_cluster_spec(BASE).scheduler.kind == "none"


def test_slurm_defaults_requeue_on_and_partition_gpu():
    slurm = parse_cluster_spec({**BASE, **SLURM}).scheduler.slurm
    assert (slurm.partition, slurm.requeue, slurm.state_disk_gib, slurm.controller_instance_type) == \
        ("gpu", True, 20, None)


def test_unknown_kind_is_refused_with_the_choices():
    assert problems({**BASE, "scheduler": {"kind": "pbs"}}) == [
        "`scheduler.kind`: got 'pbs'; expected one of 'none' or 'slurm'"]


def test_slurm_settings_without_kind_slurm_are_refused():
    assert problems({**BASE, "scheduler": {"slurm": {"partition": "train"}}})[0].startswith(
        "`scheduler.kind`: got 'none'; `scheduler.slurm` is set: add `scheduler.kind: slurm`")


@pytest.mark.parametrize(("field", "value", "expected"), [
    ("partition", "two words", "`scheduler.slurm.partition`: got 'two words'; expected a value like 'gpu', 'train'"),
    ("requeue", "sometimes", "`scheduler.slurm.requeue`: got 'sometimes'; input should be a valid boolean"),
    ("state_disk_gib", 5, "`scheduler.slurm.state_disk_gib`: got 5; expected a whole number from 10 to 1024"),
    ("colour", "red", "`scheduler.slurm.colour`: got 'red'; unknown key; expected one of `partition`"),
])
def test_bad_slurm_values_name_their_field(field, value, expected):
    raw = {**BASE, "scheduler": {"kind": "slurm", "slurm": {field: value}}}
    assert problems(raw)[0].startswith(expected)


@pytest.mark.parametrize(("cloud", "region", "zone", "size"), [
    ("aws", "us-east-2", "use2-az2", "Standard_D2s_v5"),
    ("azure", "eastus", "1", "m7i.large"),
    ("gcp", "us-central1", "us-central1-a", "Standard_D2s_v5"),
])
def test_controller_type_of_another_cloud_is_refused(cloud, region, zone, size):
    raw = {**BASE, "cloud": cloud, "region": region, "zone": zone,
           "scheduler": {"kind": "slurm", "slurm": {"controller_instance_type": size}}}
    assert problems(raw)[0].startswith(f"`scheduler.slurm.controller_instance_type`: got '{size}'; expected")


def test_ubuntu_22_04_is_refused_naming_images_that_work():
    message = problems({**BASE, **SLURM, "image": {"kind": "ubuntu-22.04"}})[0]
    assert message.startswith("`image.kind`: got 'ubuntu-22.04'; Ubuntu 22.04's archive has Slurm 21.08")
    assert "base oss ami for ubuntu 24.04" in message.lower() and "ubuntu-24.04" in message


def test_a_pinned_22_04_image_is_refused():
    raw = {**BASE, **SLURM, "cloud": "azure", "region": "eastus", "zone": "1",
           "image": {"id": "microsoft-dsvm:ubuntu-hpc:2204:latest"}}
    assert problems(raw)[0].startswith("`image.id`: got 'microsoft-dsvm:ubuntu-hpc:2204:latest'; names an Ubuntu 22.04")


def test_slurm_on_an_inference_fleet_is_refused():
    raw = {**read_yaml(yaml.safe_dump(read_stack_config("aws-infer")["gpufleet:cluster"])), **SLURM}
    assert any(p.startswith("`scheduler.kind`: got 'slurm'; an inference fleet") for p in problems(raw))


def test_mig_profiles_under_slurm_are_refused():
    raw = {**BASE, **SLURM, "accelerator": {"instance_type": "p4d.24xlarge"},
           "node": {"mig": {"profiles": ["3g.20gb", "3g.20gb"]}}}
    assert any(p.startswith("`node.mig.profiles`: got ['3g.20gb', '3g.20gb']; Slurm schedules whole GPUs")
               for p in problems(raw))
