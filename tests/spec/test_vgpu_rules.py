"""vGPU slices: every ask a slice cannot serve is refused at its field with one message, on each cloud; a good spec
per cloud plans, and its plan passes the policy pack."""

from __future__ import annotations

import pytest

from gpufleet.catalog import load_catalog
from gpufleet.catalog.selector import select
from gpufleet.policy.engine import check_plan, mandatory
from gpufleet.spec import SpecError, parse_cluster_spec

from ..plan.plan_docs import plan_doc

CAT = load_catalog()
GOOD = {
    "aws": {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 2,
            "accelerator": {"gpu": "L4", "gpu_fraction": 0.25}, "image": {"kind": "ubuntu-22.04"}},
    "azure": {"cloud": "azure", "region": "westeurope", "nodes": 2,
              "accelerator": {"gpu": "A10", "gpu_fraction": 1 / 6}, "image": {"kind": "ubuntu-22.04"},
              "node": {"driver": {"grid_sha256": "ab" * 32}},
              "access": {"ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGdwdWZsZWV0LWV4YW1wbGUtcmVwbGFjZS1tZS0wMDAw "
                         "you@example.com"}},
    "gcp": {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-b", "nodes": 2,
            "accelerator": {"gpu": "RTX-PRO-6000", "gpu_fraction": 0.125}, "image": {"kind": "ubuntu-22.04"}},
}
CHOSEN = {"aws": "g6f.2xlarge", "azure": "Standard_NV6ads_A10_v5", "gcp": "g4-standard-6"}


def problems(spec: dict) -> list:
    with pytest.raises(SpecError) as caught:
        select(parse_cluster_spec(spec), CAT)
    return caught.value.problems


@pytest.mark.parametrize("cloud", GOOD)
def test_a_good_slice_spec_selects_the_slice_without_placement(cloud):
    chosen = select(parse_cluster_spec(GOOD[cloud]), CAT)
    assert chosen.instance.name == CHOSEN[cloud] and chosen.fabric is None and chosen.placement_group is False


# (change, field path, words the message must carry)
REFUSALS = [
    ({"node": {"mig": {"profiles": ["1g.6gb"]}}}, "node.mig.profiles", "no MIG"),
    ({"node": {"mps": {"enabled": True}}}, "node.mps.enabled", "without memory isolation"),
    ({"node": {"nccl": {"env": {"NCCL_SOCKET_IFNAME": "eth0"}}}}, "node.nccl.env.NCCL_SOCKET_IFNAME", "NCCL network"),
    ({"node": {"nccl": {"env": {"NCCL_P2P_DISABLE": "1"}}}}, "node.nccl.env.NCCL_P2P_DISABLE", "peer-to-peer"),
    ({"node": {"health": {"nccl_allreduce": True}}}, "node.health.nccl_allreduce", "nothing to all-reduce"),
    ({"placement_group": True}, "placement_group", "drop `placement_group`"),
    ({"image": {"kind": "driver-ready"}}, "image.kind", "datacenter driver"),
]
RDMA = {"aws": "efa", "azure": "infiniband", "gcp": "gpudirect"}
PLACEMENT_WORD = {"aws": "cluster placement group", "azure": "proximity placement group",
                  "gcp": "compact placement policy"}


def _merge(base: dict, change: dict) -> dict:
    merged = dict(base)
    for key, value in change.items():
        merged[key] = _merge(base.get(key, {}), value) if isinstance(value, dict) else value
    return merged


@pytest.mark.parametrize("cloud", GOOD)
@pytest.mark.parametrize("change, path, words", REFUSALS)
def test_each_ask_a_slice_cannot_serve_is_refused_at_its_field(cloud, change, path, words):
    found = problems(_merge(GOOD[cloud], change))
    assert [p.path for p in found] == [path], found
    assert words in found[0].expected and f"{CHOSEN[cloud]} is a vGPU slice" in found[0].expected
    if path == "placement_group":
        assert PLACEMENT_WORD[cloud] in found[0].expected


@pytest.mark.parametrize("cloud", GOOD)
def test_the_clouds_rdma_fabric_is_refused_on_a_slice(cloud):
    found = problems({**GOOD[cloud], "fabric": RDMA[cloud]})
    assert [p.path for p in found] == ["fabric"] and "no RDMA fabric" in found[0].expected


def test_the_datacenter_driver_is_refused_by_default_with_the_way_out():
    spec = {k: v for k, v in GOOD["aws"].items() if k != "image"}
    (problem,) = problems(spec)
    assert problem.path == "image.kind" and "ubuntu-22.04" in problem.expected and "GRID" in problem.expected


def test_aws_placement_group_name_and_gcp_max_distance_are_refused_too():
    assert [p.path for p in problems({**GOOD["aws"], "placement_group_name": "pg"})] == ["placement_group_name"]
    assert [p.path for p in problems({**GOOD["gcp"], "placement_max_distance": 1})] == ["placement_max_distance"]


def test_several_asks_are_reported_together_once_each():
    spec = _merge(GOOD["aws"], {"fabric": "efa", "placement_group": True, "node": {"mps": {"enabled": True},
                                                                                   "mig": {"profiles": ["1g.6gb"]}}})
    assert sorted(p.path for p in problems(spec)) == ["fabric", "node.mig.profiles", "node.mps.enabled",
                                                      "placement_group"]


def test_whole_gpu_types_keep_their_rules():
    spec = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 2,
            "accelerator": {"instance_type": "g6.xlarge"}, "node": {"mps": {"enabled": True}}}
    assert select(parse_cluster_spec(spec), CAT).instance.name == "g6.xlarge"


SLICE_PLANS = {
    "aws-dev": ("accelerator.instance_type=null", "accelerator.gpu=L4", "accelerator.gpu_fraction=0.25",
                "image.kind=ubuntu-22.04", "nodes=2"),
    "azure-dev": ("accelerator.instance_type=Standard_NV12ads_A10_v5", "region=westeurope", "image.kind=ubuntu-22.04",
                  f"node.driver.grid_sha256={'ab' * 32}"),
    "gcp-dev": ("accelerator.instance_type=g4-standard-12", "zone=us-central1-b", "image.kind=ubuntu-22.04"),
}
NODE_TYPE = {"aws-dev": ("aws:ec2/launchTemplate:LaunchTemplate", "instanceType", "g6f.2xlarge"),
             "azure-dev": ("azure-native:compute:VirtualMachineScaleSet", "sku", "Standard_NV12ads_A10_v5"),
             "gcp-dev": ("gcp:compute/instanceTemplate:InstanceTemplate", "machineType", "g4-standard-12")}


@pytest.mark.parametrize("stack", SLICE_PLANS)
def test_a_slice_plans_on_each_cloud_and_passes_the_policy_pack(stack):
    document = plan_doc(stack, *SLICE_PLANS[stack])
    kind, key, expected = NODE_TYPE[stack]
    nodes = [r for r in document["resources"] if r["type"] == kind]
    assert nodes, sorted({r["type"] for r in document["resources"]})
    value = nodes[0]["inputs"][key]
    assert (value["name"] if isinstance(value, dict) else value) == expected
    assert mandatory(check_plan(document)) == []


def test_azure_needs_the_grid_driver_pinned_because_microsoft_publishes_no_checksum():
    spec = {k: v for k, v in GOOD["azure"].items() if k != "node"}
    (problem,) = problems(spec)
    assert problem.path == "node.driver.grid_sha256" and "NVIDIA-Linux-x86_64-570.211.01-grid-azure.run" in \
        problem.expected and "sha256sum" in problem.expected


@pytest.mark.parametrize("cloud", ["aws", "gcp"])
def test_aws_and_gcp_verify_against_their_listing_without_a_pin(cloud):
    assert select(parse_cluster_spec(GOOD[cloud]), CAT).spec.node.driver.grid_sha256 is None


def test_a_grid_pin_on_a_whole_gpu_type_is_refused():
    spec = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 1,
            "accelerator": {"instance_type": "g6.xlarge"}, "node": {"driver": {"grid_sha256": "ab" * 32}}}
    assert [p.path for p in problems(spec)] == ["node.driver.grid_sha256"]


@pytest.mark.parametrize("value", ["abc", "AB" * 32, "g" * 64])
def test_a_grid_pin_that_is_no_sha256_is_refused_at_the_field(value):
    with pytest.raises(SpecError) as caught:
        parse_cluster_spec(_merge(GOOD["azure"], {"node": {"driver": {"grid_sha256": value}}}))
    assert [p.path for p in caught.value.problems] == ["node.driver.grid_sha256"]


SLICE_CLI = ["--set", "accelerator={gpu: L4, gpu_fraction: 0.25}", "--set", "image.kind=ubuntu-22.04"]


@pytest.mark.parametrize("overrides, field", [
    (["--set", "node.mps.enabled=true"], "`node.mps.enabled`"),
    (["--set", "fabric=efa"], "`fabric`"),
    (["--set", "image.kind=driver-ready"], "`image.kind`"),
    (["--set", "accelerator.gpu_fraction=2"], "`accelerator.gpu_fraction`"),
])
def test_the_cli_exits_2_with_one_message_naming_the_field(capsys, overrides, field):
    from gpufleet.plan.cli import main
    code = main(["plan", "aws-dev", *SLICE_CLI, *overrides])
    out = capsys.readouterr()
    text = out.out + out.err
    assert code == 2 and field in text and text.count("problem(s)") == 1 and "Traceback" not in text, text


def test_an_aws_slice_node_may_read_only_the_pinned_driver_prefix():
    document = plan_doc("aws-dev", *SLICE_PLANS["aws-dev"])
    policies = [r for r in document["resources"] if r["type"] == "aws:iam/rolePolicy:RolePolicy"
                and r["name"].endswith("-role-grid-driver")]
    assert len(policies) == 1
    import json
    statements = json.loads(policies[0]["inputs"]["policy"])["Statement"]
    assert [(s["Action"], s["Resource"]) for s in statements] == [
        ("s3:ListBucket", "arn:aws:s3:::ec2-linux-nvidia-drivers"),
        ("s3:GetObject", "arn:aws:s3:::ec2-linux-nvidia-drivers/grid-19.5/*")]
    assert statements[0]["Condition"] == {"StringLike": {"s3:prefix": ["grid-19.5/*"]}}
    whole = plan_doc("aws-dev")
    assert not any(r["name"].endswith("-role-grid-driver") for r in whole["resources"])
