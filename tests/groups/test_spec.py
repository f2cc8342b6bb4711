"""Node groups in the spec: what a group inherits and overrides, and every refusal at the path the user writes."""

from __future__ import annotations

import pytest

from gpufleet.groups.resolve import group_specs
from gpufleet.pipeline import check_cluster_input, plan_node_groups
from gpufleet.spec import SpecError, parse_cluster_spec

BASE = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": 2,
        "accelerator": {"instance_type": "p5.48xlarge"}, "market": "spot", "scheduler": {"kind": "slurm"},
        "node": {"driver": {"branch": "580"}, "nccl": {"env": {"NCCL_ALGO": "Ring"}}}}
THREE = {"train": {}, "debug": {"nodes": 1, "market": "on-demand"},
         "eval": {"nodes": 2, "accelerator": {"gpu": "L40S", "gpus_per_node": 1}, "market": {"type": "on-demand"},
                  "node": {"nccl": {"debug": "INFO"}}}}


def groups(**node_groups):
    return {group.name: group for group in group_specs(parse_cluster_spec({**BASE, "node_groups": node_groups}))}


def problems(raw: dict) -> list[str]:
    with pytest.raises(SpecError) as caught:
        check_cluster_input(raw)
    return [str(p) for p in caught.value.problems]


def test_a_group_inherits_the_cluster_and_replaces_what_it_names():
    found = groups(**THREE)
    assert list(found) == ["debug", "eval", "train"]  # by name: Pulumi does not keep a mapping's order
    train, debug, evaluation = found["train"].spec, found["debug"].spec, found["eval"].spec
    assert (train.nodes, train.market.type, train.accelerator.instance_type) == (2, "spot", "p5.48xlarge")
    assert (debug.nodes, debug.market.type, debug.accelerator.instance_type) == (1, "on-demand", "p5.48xlarge")
    # `accelerator` is replaced whole: the cluster's instance type does not leak into a group that names a GPU.
    assert evaluation.accelerator.instance_type is None and evaluation.accelerator.gpu == "L40S"
    # `node` is merged key by key: the group's NCCL debug level, the cluster's driver and NCCL environment.
    assert evaluation.node.nccl.debug == "INFO" and evaluation.node.nccl.env == {"NCCL_ALGO": "Ring"}
    assert evaluation.node.driver.branch == "580" and train.node.nccl.debug == "WARN"
    assert all(group.spec.node_groups is None and group.spec.zone == "use2-az2" for group in found.values())


def test_partitions_default_to_the_group_name_and_the_first_by_name_is_the_default():
    found = groups(**THREE)
    assert {name: group.partition for name, group in found.items()} == {"debug": "debug", "eval": "eval",
                                                                       "train": "train"}
    assert [name for name, group in found.items() if group.slurm_default] == ["debug"]
    marked = groups(**{**THREE, "train": {"slurm_default": True, "slurm_partition": "gpu"}})
    assert [(n, g.partition) for n, g in marked.items() if g.slurm_default] == [("train", "gpu")]


def test_a_spec_without_groups_is_one_group_that_is_the_spec_itself():
    spec = parse_cluster_spec(BASE)
    (only,) = group_specs(spec)
    assert only.name is None and only.spec is spec and only.partition == "gpu"


def test_top_level_nodes_and_accelerator_may_come_from_every_group_instead():
    raw = {key: value for key, value in BASE.items() if key not in ("nodes", "accelerator")}
    spec = parse_cluster_spec({**raw, "node_groups": {"a": {"nodes": 1, "accelerator": {"gpu": "H100"}}}})
    assert spec.nodes is None and group_specs(spec)[0].spec.nodes == 1
    found = problems({**raw, "node_groups": {"a": {"nodes": 1}, "b": {"accelerator": {"gpu": "H100"}}}})
    assert found == ["`node_groups.a.accelerator`: got nothing; required: set it in the group or at the top level "
                     "(`accelerator`)",
                     "`node_groups.b.nodes`: got nothing; required: set it in the group or at the top level (`nodes`)"]
    assert problems(raw) == ["`nodes`: got nothing; this field is required",
                             "`accelerator`: got nothing; this field is required"]


@pytest.mark.parametrize(("node_groups", "expected"), [
    ({"debug": {"market": {"typ": "spot"}}},
     "`node_groups.debug.market.typ`: got 'spot'; unknown key; expected one of `type`, `on_demand_base`"),
    ({"debug": {"market": {"type": "sopt"}}},
     "`node_groups.debug.market.type`: got 'sopt'; expected one of 'on-demand', 'spot' or 'mixed'"),
    ({"debug": {"nodes": 0}}, "`node_groups.debug.nodes`: got 0; expected a whole number from 1 to 4096"),
    ({"debug": {"zone": "use2-az1"}}, "`node_groups.debug.zone`: got 'use2-az1'; unknown key; expected one of "
     "`nodes`, `accelerator`"),
    ({"Debug_1": {}}, "`node_groups.Debug_1`: got 'Debug_1'; expected a group name of lower-case letters"),
    ({"a" * 16: {}}, f"`node_groups.{'a' * 16}`: got '{'a' * 16}'; expected a group name"),
    ({"debug-": {}}, "`node_groups.debug-`: got 'debug-'; expected a group name"),
    ({}, "`node_groups`: got {}; expected at least 1 entry"),
    ({"a": {}, "b": {"slurm_partition": "a"}},
     "`node_groups.b.slurm_partition`: got 'a'; node group 'a' forms that partition already"),
    ({"a": {"slurm_default": True}, "b": {"slurm_default": True}},
     "`node_groups.b.slurm_default`: got true; node group 'a' is the default partition already"),
    ({"a": {"slurm_partition": "bad name"}}, "`node_groups.a.slurm_partition`: got 'bad name'; expected a value"),
    ({"a": {"node": {"exporters": {"dcgm": False}}}}, "`node_groups.a.node.exporters`: got {'dcgm': False, "
     "'node': True}; the exporters are the cluster's"),
    ({"a": {"nodes": 4000}, "b": {"nodes": 97}}, "`node_groups`: got {'a': 4000, 'b': 97}; 4097 nodes in all; a "
     "cluster holds at most 4096"),
])
def test_bad_groups_are_refused_at_the_field(node_groups, expected):
    found = problems({**BASE, "node_groups": node_groups})
    assert len(found) == 1 and found[0].startswith(expected), found


def test_partition_settings_without_slurm_and_a_cluster_partition_with_groups_are_refused():
    raw = {key: value for key, value in BASE.items() if key != "scheduler"}
    found = problems({**raw, "node_groups": {"a": {"slurm_partition": "x", "slurm_default": True}}})
    assert found == ["`node_groups.a.slurm_partition`: got 'x'; only applies with `scheduler.kind: slurm`",
                     "`node_groups.a.slurm_default`: got true; only applies with `scheduler.kind: slurm`"]
    found = problems({**BASE, "scheduler": {"kind": "slurm", "slurm": {"partition": "gpu"}}, "node_groups": {"a": {}}})
    assert found[0].startswith("`scheduler.slurm.partition`: got 'gpu'; with `node_groups` each group is a "
                               "partition of its own")


def test_an_inference_fleet_takes_no_groups():
    raw = {"cloud": "aws", "region": "us-east-1", "zone": "use1-az4", "nodes": 2,
           "accelerator": {"instance_type": "g6.xlarge"}, "workload": "inference",
           "inference": {"model_repository": "s3://m/r", "models": [{"name": "m", "platform": "onnxruntime_onnx"}],
                         "autoscaling": {"min_nodes": 2, "max_nodes": 4}},
           "node_groups": {"a": {}}}
    assert any(p.startswith("`node_groups`: got ['a']; an inference fleet is one group") for p in problems(raw))


def test_every_rule_runs_on_each_group_with_the_groups_path():
    """Catalog selection, GPU/driver/MIG rules and the cloud's rules, each on the group whose value fails."""
    found = problems({**BASE, "node_groups": {
        "gpu": {"accelerator": {"gpu": "H10"}},
        "mig": {"accelerator": {"gpu": "L40S", "gpus_per_node": 1}, "node": {"mig": {"profiles": ["1g.10gb"]}}},
        "cuda": {"node": {"driver": {"branch": "535"}, "cuda": "13.0"}},
        "ok": {}}})
    assert any(p.startswith("`node_groups.gpu.accelerator.gpu`: got 'H10'; did you mean") for p in found), found
    assert any(p.startswith("`node_groups.mig.node.mig.profiles`") for p in found), found
    assert any(p.startswith("`node_groups.cuda.node.") for p in found), found
    assert not any("node_groups.ok" in p for p in found), found


GCP = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-b", "nodes": 2, "market": "spot",
       "accelerator": {"instance_type": "a3-megagpu-8g"}}


def test_a_cluster_field_that_fails_for_some_groups_names_them():
    """`zone` is the cluster's; a group whose type is not offered there is named."""
    found = problems({**GCP, "zone": "us-central1-a", "node_groups": {
        "ultra": {"accelerator": {"instance_type": "a3-ultragpu-8g"}}, "mega": {}}})
    assert found == ["`zone`: got 'us-central1-a'; a3-ultragpu-8g is not offered in that zone; offered in "
                     "'us-central1-b' (in node group 'ultra')"]


def test_groups_on_different_fabrics_are_refused_and_a_group_without_one_runs_outside_the_placement():
    found = problems({**GCP, "node_groups": {"mega": {}, "ultra": {"accelerator": {"instance_type": "a3-ultragpu-8g"}}}})
    assert any(p.startswith("`node_groups.ultra.accelerator`: got 'a3-ultragpu-8g'; runs the") for p in found), found
    plans = plan_node_groups(parse_cluster_spec({**BASE, "node_groups": {
        "train": {}, "eval": {"accelerator": {"instance_type": "g6e.xlarge"}, "market": "on-demand"}}}))
    assert {plan.group: plan.placement_group for plan in plans.groups} == {"eval": False, "train": True}
    assert any(w.startswith("node group 'eval' (g6e.xlarge) has no RDMA fabric: it runs outside") for w in plans.warnings)
    assert [plan.group for plan in plans.placed] == ["train"]


def test_a_vgpu_group_and_an_rdma_group_each_get_their_own_driver():
    plans = plan_node_groups(parse_cluster_spec({**BASE, "image": {"kind": "ubuntu-24.04"}, "node_groups": {
        "train": {}, "slice": {"accelerator": {"instance_type": "g6f.xlarge"}, "market": "on-demand"}}}))
    slice_config, train_config = plans.group("slice").cloud_config, plans.group("train").cloud_config
    assert "grid" in slice_config.lower() and "grid" not in train_config.lower()
    assert plans.group("train").fabric == "efa" and plans.group("slice").fabric is None


def test_each_groups_user_data_is_measured_against_the_limit():
    gcp = {"cloud": "gcp", "region": "us-central1", "zone": "us-central1-a", "nodes": 1,
           "accelerator": {"instance_type": "g2-standard-8"}}
    huge = {f"NCCL_X{i}": "y" * 2000 for i in range(200)}
    found = problems({**gcp, "node_groups": {"small": {}, "big": {"node": {"nccl": {"env": huge}}}}})
    assert any(p.startswith("`node_groups.big.node`:") and "gcp allows at most" in p for p in found), found
    assert not any("node_groups.small" in p for p in found)
