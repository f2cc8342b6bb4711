"""The one checking pipeline (issue 10, item 3): every cloud goes through `plan_cluster`, every stage's problems
come out in one SpecError, and the ClusterPlan carries what the components read (the Selection's fields + user data)."""

from __future__ import annotations

import ast
from dataclasses import fields
from pathlib import Path

import pytest

from gpufleet import cloud_init
from gpufleet.catalog.selector import Selection
from gpufleet.pipeline import ClusterPlan, check_cluster_input, cloud_rules, plan_cluster
from gpufleet.spec import SpecError, parse_cluster_spec

COMPONENTS = Path(__file__).resolve().parents[1] / "components"
KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw me"
SPECS = {
    "aws": {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
            "accelerator": {"instance_type": "p5.48xlarge"}},
    "azure": {"cloud": "azure", "region": "eastus", "nodes": 1, "access": {"ssh_public_key": KEY},
              "accelerator": {"instance_type": "Standard_NC24ads_A100_v4"}},
    "gcp": {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 1,
            "accelerator": {"instance_type": "g2-standard-8"}},
}


def problems_of(raw: dict) -> list[str]:
    with pytest.raises(SpecError) as caught:
        check_cluster_input(raw)
    return [p.path for p in caught.value.problems]


@pytest.mark.parametrize("cloud", sorted(SPECS))
def test_every_cloud_plans_through_the_pipeline(cloud):
    plan = plan_cluster(parse_cluster_spec(SPECS[cloud]), name="c")
    assert isinstance(plan, ClusterPlan) and isinstance(plan, Selection)
    assert plan.cloud_config.startswith("#cloud-config")
    assert plan.user_data == cloud_init.encode_user_data(plan.cloud_config, cloud)


def test_cluster_plan_keeps_the_selection_field_names():
    names = [f.name for f in fields(ClusterPlan)]
    assert names[:7] == ["spec", "instance", "gpu", "fabric", "placement_group", "price", "warnings"]
    assert {"user_data", "cloud_config", "cluster_name"} <= set(names)


@pytest.mark.parametrize("cloud", sorted(SPECS))
def test_every_cloud_has_rules_with_the_three_entry_points(cloud):
    rules = cloud_rules(cloud)
    assert (COMPONENTS / cloud / "rules.py").is_file()
    spec = parse_cluster_spec(SPECS[cloud])
    assert rules.spec_problems(spec) == []
    plan = plan_cluster(spec)
    assert rules.plan_problems(plan) == [] and isinstance(rules.plan_warnings(plan), list)


@pytest.mark.parametrize("cloud", sorted(SPECS))
def test_components_call_the_pipeline_not_the_selector(cloud):
    """Cloud code consumes the ClusterPlan: no cluster.py selects or renders user data itself. (It may encode the
    plan's cloud-config again once a shared filesystem's address is known: gpufleet.storage.boot.user_data_with_source.)"""
    tree = ast.parse((COMPONENTS / cloud / "cluster.py").read_text())
    called = {node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
              for node in ast.walk(tree) if isinstance(node, ast.Call)}
    assert called & {"plan_cluster", "plan_node_groups"} and not called & {"select", "user_data_for"}


def test_shape_and_catalog_problems_come_out_together():
    found = problems_of({**SPECS["aws"], "nodes": 0, "accelerator": {"gpu": "H10"}})
    assert found == ["nodes", "accelerator.gpu"]


def test_cloud_spec_rules_and_catalog_problems_come_out_together():
    found = problems_of({**SPECS["aws"], "network": {"cidr": "10.0.0.0/8"}, "accelerator": {"gpu": "H10"}})
    assert set(found) == {"network.cidr", "accelerator.gpu"}


def test_cloud_plan_rules_and_user_data_size_come_out_together():
    import base64
    import random
    noise = base64.b64encode(random.Random(0).randbytes(cloud_init.AZURE_CUSTOM_DATA_MAX_BYTES)).decode()
    big = {"nccl": {"env": {"NCCL_BIG": noise}}}
    found = problems_of({**SPECS["azure"], "nodes": 0, "node": {**big, "spot": {}}})
    assert set(found) == {"nodes", "node"}


def test_aws_user_data_over_16_kb_is_no_problem_only_the_rule_is():
    """AWS stores a large cloud-config in S3 (gpufleet.aws.node_config): only the placement rule is reported."""
    import base64
    import random
    noise = base64.b64encode(random.Random(0).randbytes(cloud_init.AWS_USER_DATA_MAX_BYTES)).decode()
    found = problems_of({**SPECS["aws"], "placement_group": False, "node": {"nccl": {"env": {"NCCL_BIG": noise}}}})
    assert set(found) == {"placement_group"}


def test_missing_price_warning_on_every_cloud():
    spec = parse_cluster_spec({**SPECS["azure"], "nodes": 2, "market": "spot",
                               "accelerator": {"instance_type": "Standard_ND96isr_H100_v5"}})
    assert any("no spot price" in w for w in plan_cluster(spec).warnings)


class TestAwsRules:
    from gpufleet.aws import rules

    @pytest.mark.parametrize("cidr, ok", [("10.0.0.0/16", True), ("10.0.0.0/24", True), ("10.0.0.0/25", False),
                                          ("10.0.0.0/15", False), ("0.0.0.0/0", False)])
    def test_vpc_range(self, cidr, ok):
        spec = parse_cluster_spec({**SPECS["aws"], "network": {"cidr": cidr}})
        assert (self.rules.vpc_cidr_fits(spec) == []) is ok

    def test_ecdsa_key_is_refused(self):
        import base64
        import struct
        blob = b"".join(struct.pack(">I", len(f)) + f for f in (b"ecdsa-sha2-nistp256", b"nistp256", b"\x04" * 65))
        spec = parse_cluster_spec({**SPECS["aws"], "access": {
            "ssh_public_key": f"ecdsa-sha2-nistp256 {base64.b64encode(blob).decode()}"}})
        assert [p.path for p in self.rules.key_pair_is_importable(spec)] == ["access.ssh_public_key"]

    def test_capacity_block_needs_no_placement_group(self):
        spec = parse_cluster_spec({**SPECS["aws"], "placement_group": False, "market": {
            "capacity_reservation_id": "cr-0123456789abcdef0", "capacity_block": True,
            "capacity_block_start": "2099-01-10T11:30:00Z", "capacity_block_end": "2099-01-12T11:30:00Z"}})
        assert self.rules.plan_problems(plan_cluster(spec)) == []


class TestAzureAndGcpRules:
    def test_azure_refuses_a_vnet_wider_than_a_slash_8(self):
        from gpufleet.azure.rules import vnet_prefix_fits
        spec = parse_cluster_spec({**SPECS["azure"], "network": {"cidr": "0.0.0.0/1"}})
        assert [p.path for p in vnet_prefix_fits(spec)] == ["network.cidr"]

    def test_azure_refuses_a_short_rsa_key(self):
        import base64
        import struct

        from gpufleet.azure.rules import ssh_key_fits_azure
        fields_ = (b"ssh-rsa", b"\x01\x00\x01", b"\x00" + b"\xff" * 128)
        blob = base64.b64encode(b"".join(struct.pack(">I", len(f)) + f for f in fields_)).decode()
        spec = parse_cluster_spec({**SPECS["azure"], "access": {"ssh_public_key": f"ssh-rsa {blob}"}})
        assert "at least 2048 bits" in str(ssh_key_fits_azure(spec)[0])

    @pytest.mark.parametrize("cidr, ok", [("10.0.0.0/16", True), ("10.0.0.0/29", True), ("10.0.0.0/30", False),
                                          ("0.0.0.0/1", False)])
    def test_gcp_primary_range(self, cidr, ok):
        from gpufleet.gcp.rules import primary_range_fits
        spec = parse_cluster_spec({**SPECS["gcp"], "network": {"cidr": cidr}})
        assert (primary_range_fits(spec) == []) is ok

    def test_gcp_gpu_subnets_need_room_outside_the_primary_range(self):
        from gpufleet.gcp.rules import gpu_subnets_avoid_primary
        spec = parse_cluster_spec({**SPECS["gcp"], "nodes": 2, "accelerator": {"instance_type": "a3-ultragpu-8g"},
                                   "market": "spot", "zone": "us-central1-b", "fabric": "gpudirect", "network": {"cidr": "10.0.0.0/16"}})
        assert gpu_subnets_avoid_primary(plan_cluster(spec)) == []
