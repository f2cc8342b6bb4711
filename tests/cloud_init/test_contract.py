"""The contract the cloud components call: user_data_for + encode_user_data."""

from __future__ import annotations

import base64
import gzip

import pytest

from gpufleet import cloud_init
from gpufleet.boot import boot_config, user_data_for

from .conftest import aws_selection


def test_user_data_starts_with_cloud_config_and_is_deterministic():
    first = user_data_for(aws_selection(), "train")
    second = user_data_for(aws_selection(), "train")
    assert first.startswith("#cloud-config\n")
    assert first == second


def test_aws_encoding_is_gzip_then_base64_with_fixed_mtime():
    text = user_data_for(aws_selection(), "train")
    encoded = cloud_init.encode_user_data(text, "aws")
    raw = base64.b64decode(encoded)
    assert raw[:2] == b"\x1f\x8b" and raw[4:8] == b"\x00\x00\x00\x00"  # gzip magic, mtime 0
    assert gzip.decompress(raw).decode() == text
    assert encoded == cloud_init.encode_user_data(text, "aws")


def test_azure_is_base64_of_gzip_and_gcp_is_text():
    text = "#cloud-config\n{}\n"
    assert gzip.decompress(base64.b64decode(cloud_init.encode_user_data(text, "azure"))).decode() == text
    assert cloud_init.encode_user_data(text, "gcp") == text


@pytest.mark.parametrize("cloud, limit", [("aws", cloud_init.AWS_USER_DATA_MAX_BYTES),
                                          ("azure", cloud_init.AZURE_CUSTOM_DATA_MAX_BYTES),
                                          ("gcp", cloud_init.GCP_METADATA_VALUE_MAX_BYTES)])
def test_over_the_limit_is_refused_with_the_size(cloud, limit):
    import os
    text = "#cloud-config\n# " + base64.b64encode(os.urandom(limit)).decode() + "\n"
    with pytest.raises(ValueError, match=rf"{cloud} user data is \d+ .*over the limit of {limit}"):
        cloud_init.encode_user_data(text, cloud)


def test_unknown_cloud_is_refused():
    with pytest.raises(ValueError, match="unknown cloud 'oci'"):
        cloud_init.encode_user_data("#cloud-config\n", "oci")


def test_p5_boot_config_has_catalog_facts():
    config = boot_config(aws_selection(), "train")
    assert (config.gpus, config.gpu_model, config.nvswitch, config.fabric, config.rdma_devices) == (8, "H100", True,
                                                                                                   "efa", 32)
    assert config.driver_flavor == "open" and not config.nvlink_subnet_manager and config.min_driver_branch == 580


def _oversized(cloud_limit: int) -> dict:
    """A node spec whose drain command alone is over `cloud_limit` bytes, even after gzip (random base64)."""
    import os
    return {"spot": {"drain_command": "echo " + base64.b64encode(os.urandom(cloud_limit)).decode()}}


@pytest.mark.parametrize("row, cloud, limit", [("azure", "azure", cloud_init.AZURE_CUSTOM_DATA_MAX_BYTES),
                                               ("gcp", "gcp", cloud_init.GCP_METADATA_VALUE_MAX_BYTES)])
def test_oversized_node_software_is_a_spec_error_naming_the_limit(row, cloud, limit):
    from gpufleet.spec.errors import SpecError

    from .conftest import AZURE_NC_A100, GCP_G2, selection_for
    node = _oversized(limit)
    selection = selection_for({"azure": AZURE_NC_A100, "gcp": GCP_G2}[row], market="spot", node=node)
    from gpufleet.pipeline import plan_cluster
    with pytest.raises(SpecError, match=rf"`node`: got '\d+ .* of {cloud} user data'; {cloud} allows at most {limit}"):
        plan_cluster(selection.spec, name="train")


def test_oversized_aws_node_software_goes_by_reference_not_refused():
    """AWS: a cloud-config over 16 KB is planned for S3 behind a boothook (gpufleet.aws.node_config)."""
    from gpufleet.pipeline import plan_cluster
    plan = plan_cluster(aws_selection(market="spot", node=_oversized(cloud_init.AWS_USER_DATA_MAX_BYTES)).spec,
                        name="train")
    assert plan.by_reference and plan.user_data == ""
    assert cloud_init.measured_size(plan.cloud_config, "aws") > cloud_init.AWS_USER_DATA_MAX_BYTES
    small = plan_cluster(aws_selection(market="spot").spec, name="train")
    assert not small.by_reference and small.user_data == cloud_init.encode_user_data(small.cloud_config, "aws")


def test_every_aws_option_with_both_storage_parts_goes_by_reference():
    """Stock Ubuntu, every node option, shared Lustre and local NVMe: over AWS's 16 KB of gzip user data, so the
    cloud-config goes to S3 whole (never truncated) and the launch template gets the boothook."""
    from gpufleet.pipeline import plan_cluster

    from .conftest import _aws
    selection = _aws("p5.48xlarge", market="spot", image={"kind": "ubuntu-24.04"}, node={
        "mps": {"enabled": True}, "health": {"dcgm_diag": True, "nccl_allreduce": True},
        "isolation": {"cpu_quota_percent": 9000, "allowed_cpus": "0-95"}},
        storage={"shared": {"kind": "lustre"}, "local_nvme": {"enabled": True}})
    plan = plan_cluster(selection.spec, name="gpufleet-test")
    assert plan.by_reference and "06-shared-storage" in plan.cloud_config
