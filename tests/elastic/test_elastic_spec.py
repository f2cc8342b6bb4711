"""Elastic counts and capacity fallbacks in the spec: `nodes: {min, max}` at the cluster's level and a group's, the
Slurm settings' defaults, and every refusal at the path the user writes (min above max, a range without Slurm, on
inference, on a reservation or Capacity Block; fallbacks of another GPU, fabric or count on RDMA, zones with
placement or outside the region). Fallback types are checked by the catalog selection and ranked by price."""

from __future__ import annotations

import pytest

from gpufleet.groups.cost import elastic_cost, group_cost_lines, group_cost_rows
from gpufleet.groups.resolve import group_specs
from gpufleet.pipeline import check_cluster_input, plan_node_groups
from gpufleet.spec import SpecError, parse_cluster_spec
from gpufleet.spec.elastic_rules import resume_timeout_minutes

BASE = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": {"min": 0, "max": 4},
        "accelerator": {"instance_type": "p5.48xlarge"}, "market": "spot", "scheduler": {"kind": "slurm"}}
TCP = {**BASE, "market": "on-demand", "fabric": "tcp", "placement_group": False, "accelerator": {"instance_type": "g6.12xlarge"}}


def problems(raw: dict) -> list[str]:
    with pytest.raises(SpecError) as caught:
        check_cluster_input(raw)
    return [str(p) for p in caught.value.problems]


def plan(raw: dict):
    """Every check of `raw`, elastic groups planned (the cloud components refuse to declare them yet)."""
    return plan_node_groups(parse_cluster_spec(raw))


def test_a_range_keeps_max_as_the_count_and_the_range_beside_it():
    spec = parse_cluster_spec(BASE)
    assert spec.nodes == 4 and spec.nodes_range is not None
    assert (spec.nodes_range.min, spec.nodes_range.max) == (0, 4)
    fixed = parse_cluster_spec({**BASE, "nodes": 3})
    assert fixed.nodes == 3 and fixed.nodes_range is None


def test_a_group_sets_its_own_range_or_a_fixed_count_over_the_clusters():
    spec = parse_cluster_spec({**BASE, "node_groups": {"burst": {}, "debug": {"nodes": 1},
                                                       "big": {"nodes": {"min": 1, "max": 16}}}})
    found = {group.name: group.spec for group in group_specs(spec)}
    assert (found["burst"].nodes, found["burst"].nodes_range.model_dump()) == (4, {"min": 0, "max": 4})
    assert (found["debug"].nodes, found["debug"].nodes_range) == (1, None)
    assert (found["big"].nodes, found["big"].nodes_range.model_dump()) == (16, {"min": 1, "max": 16})


@pytest.mark.parametrize("change, expected", [
    ({"nodes": {"min": 5, "max": 4}}, "`nodes`: got {'min': 5, 'max': 4}; min (5) is more than max (4)"),
    ({"nodes": {"min": 0}}, "`nodes.max`: got nothing; this field is required"),
    ({"nodes": {"min": -1, "max": 4}}, "`nodes.min`: got -1; expected"),
    ({"nodes": {"min": 0, "max": 4, "step": 2}}, "`nodes.step`: got 2; unknown key; expected one of `min`, `max`"),
    ({"scheduler": {"kind": "none"}}, "`nodes`: got {'min': 0, 'max': 4}; an elastic range grows and shrinks with "
                                      "the Slurm queue: set `scheduler.kind: slurm`"),
    ({"market": {"type": "on-demand", "capacity_reservation_id": "cr-0123456789abcdef0"}},
     "`nodes`: got {'min': 0, 'max': 4}; a capacity reservation is paid for whole"),
    ({"accelerator": {"instance_type": "p5.48xlarge", "fallback_types": ["p5.48xlarge"]}},
     "`accelerator.fallback_types[0]`: got 'p5.48xlarge'; is the chosen `accelerator.instance_type` already"),
    ({"accelerator": {"instance_type": "p5.48xlarge", "fallback_types": ["p4d.24xlarge", "p4d.24xlarge"]}},
     "`accelerator.fallback_types`: got ['p4d.24xlarge', 'p4d.24xlarge']; p4d.24xlarge listed more than once"),
])
def test_bad_ranges_and_fallbacks_are_refused_at_their_field(change, expected):
    found = problems({**BASE, **change})
    assert any(problem.startswith(expected) for problem in found), found


def test_a_range_on_an_inference_fleet_is_refused():
    raw = {"cloud": "aws", "region": "us-east-2", "zone": "use2-az2", "nodes": {"min": 1, "max": 4},
           "accelerator": {"instance_type": "g6e.xlarge"}, "workload": "inference",
           "inference": {"model_repository": "s3://models/repo", "models": [{"name": "m", "platform": "onnx"}]}}
    found = problems(raw)
    assert any(p.startswith("`nodes`: got {'min': 1, 'max': 4}; an inference fleet scales with "
                            "`inference.autoscaling`") for p in found), found


def test_a_groups_bad_range_is_refused_at_the_group():
    found = problems({**BASE, "nodes": 2, "node_groups": {"a": {"nodes": {"min": 3, "max": 2}}, "b": {}}})
    assert found[0].startswith("`node_groups.a.nodes`: got {'min': 3, 'max': 2}; min (3) is more than max (2)"), found


def test_fallbacks_need_a_range():
    found = problems({**BASE, "nodes": 2, "fallback_zones": ["use2-az3"],
                      "accelerator": {"instance_type": "p5.48xlarge", "fallback_types": ["p4d.24xlarge"]}})
    assert [p.split(";")[0] for p in found] == ["`accelerator.fallback_types`: got ['p4d.24xlarge']",
                                                "`fallback_zones`: got ['use2-az3']"], found


@pytest.mark.parametrize("fallback, expected", [
    ("p4d.24xlarge", "carries A100 GPUs; expected a type with the chosen p5.48xlarge's H100"),
    ("p5.4xlarge", "has 1 GPUs a node, p5.48xlarge 8; on an RDMA fabric (efa) a group's nodes carry the same count"),
    ("m7i.large", "did you mean"),
])
def test_each_fallback_type_is_checked_against_the_catalog_and_the_chosen_type(fallback, expected):
    found = problems({**BASE, "accelerator": {"instance_type": "p5.48xlarge", "fallback_types": [fallback]}})
    assert len(found) == 1 and found[0].startswith(f"`accelerator.fallback_types[0]`: got '{fallback}'; "), found
    assert expected in found[0], found


def test_a_fallback_of_another_fabric_is_refused():
    found = problems({**TCP, "fabric": "auto", "placement_group": None,
                      "accelerator": {"instance_type": "g6.12xlarge", "fallback_types": ["g6.xlarge"]}})
    assert any("has fabric none (TCP); expected the chosen g6.12xlarge's efa" in p for p in found), found


def test_fallback_types_are_ranked_cheapest_first_unpriced_last_and_the_plan_keeps_the_order():
    [group] = plan({**TCP, "accelerator": {"instance_type": "g6.12xlarge",
                                           "fallback_types": ["g6.48xlarge", "g6.24xlarge", "g6.xlarge"]}}).groups
    assert group.fallbacks == ("g6.xlarge", "g6.24xlarge", "g6.48xlarge")
    prices = [check_price(name) for name in group.fallbacks]
    assert prices == sorted(prices)
    spot = plan({**TCP, "market": "spot", "accelerator": {  # no spot price in the zone's rows: as written
        "instance_type": "g6.12xlarge", "fallback_types": ["g6.48xlarge", "g6.24xlarge"]}})
    assert spot.groups[0].fallbacks == ("g6.48xlarge", "g6.24xlarge")


def check_price(instance_type: str) -> float:
    price = plan({**TCP, "accelerator": {"instance_type": instance_type}}).groups[0].price.on_demand
    assert price is not None
    return price


@pytest.mark.parametrize("zones, expected", [
    (["use2-az2"], "`fallback_zones[0]`: got 'use2-az2'; is listed already (or is `zone`)"),
    (["us-west-2a"], "`fallback_zones[0]`: got 'us-west-2a'; expected a zone of us-east-2"),
])
def test_fallback_zones_are_other_zones_of_the_region(zones, expected):
    found = problems({**TCP, "fallback_zones": zones})
    assert any(p.startswith(expected) for p in found), found


def test_fallback_zones_are_refused_where_the_group_is_placed():
    found = problems({**BASE, "fallback_zones": ["use2-az3"]})
    assert found == ["`fallback_zones`: got ['use2-az3']; p5.48xlarge on efa is placed in one zone (a cluster "
                     "placement group): set `placement_group: false` to let nodes start in other zones, or drop "
                     "`fallback_zones`"], found
    assert plan({**TCP, "fallback_zones": ["use2-az3", "us-east-2c"]}).groups[0].spec.fallback_zones == [
        "use2-az3", "us-east-2c"]


def test_the_slurm_settings_default_to_ten_idle_minutes_and_boot_to_ready_with_margin():
    spec = parse_cluster_spec(BASE)
    assert spec.scheduler.slurm.suspend_time_minutes == 10
    assert resume_timeout_minutes(spec) == 15
    assert resume_timeout_minutes(parse_cluster_spec({**BASE, "image": {"kind": "ubuntu-24.04"}})) == 30
    chosen = parse_cluster_spec({**BASE, "scheduler": {"kind": "slurm", "slurm": {"resume_timeout_minutes": 40}}})
    assert resume_timeout_minutes(chosen) == 40
    found = problems({**BASE, "scheduler": {"kind": "slurm", "slurm": {"suspend_time_minutes": 0}}})
    assert found[0].startswith("`scheduler.slurm.suspend_time_minutes`: got 0; expected"), found


def test_elastic_groups_are_planned_but_refused_where_they_would_be_declared(monkeypatch):
    """A cloud whose component does not declare elastic groups (outside `ELASTIC_CLOUDS`): `check_cluster_input`
    (and each cloud's component, through the same function) refuses them at `nodes`, rather than declaring a fixed
    fleet of `max` nodes. AWS declares them: the same spec passes there."""
    from gpufleet import pipeline

    raw = {**BASE, "nodes": 2, "node_groups": {"burst": {"nodes": {"min": 0, "max": 8}}, "fixed": {}}}
    check_cluster_input(raw)  # passes
    monkeypatch.setattr(pipeline, "ELASTIC_CLOUDS", frozenset({"gcp"}))
    found = problems(raw)
    assert found == ["`node_groups.burst.nodes`: got {'min': 0, 'max': 8}; elastic groups are checked and priced, "
                     "but this release's aws component does not declare them yet: give a fixed number of nodes"]
    plans = plan({**BASE, "nodes": 2, "node_groups": {"burst": {"nodes": {"min": 0, "max": 8}}, "fixed": {}}})
    assert [plan.spec.nodes for plan in plans.groups] == [8, 2]


def test_the_cost_rows_show_an_elastic_groups_node_hour_idle_and_full_cost():
    plans = plan({**BASE, "market": "on-demand", "nodes": 2, "node_groups": {
        "burst": {"nodes": {"min": 0, "max": 4}}, "keep": {"nodes": {"min": 1, "max": 2}}, "fixed": {}}})
    rows = {row["group"]: row for row in group_cost_rows(plans)}
    price = plans.group("burst").price.on_demand
    assert price is not None
    assert rows["burst"]["label"] == "burst: 0-4 x p5.48xlarge"
    assert (rows["burst"]["usd_per_node_hour"], rows["burst"]["idle_usd_per_hour"],
            rows["burst"]["full_usd_per_hour"]) == (round(price, 2), 0.0, round(4 * price, 2))
    assert rows["burst"]["note"] == f"idle: $0.00/h, full: ${4 * price:,.2f}/h"
    assert rows["keep"]["note"] == f"idle: ${price:,.2f}/h, full: ${2 * price:,.2f}/h"
    assert "usd_per_node_hour" not in rows["fixed"] and rows["fixed"]["note"] == ""
    lines = group_cost_lines(group_cost_rows(plans))
    assert f"   ${price:,.2f} per node-hour; idle: $0.00/h, full: ${4 * price:,.2f}/h (the row: full)" in lines


def test_a_mixed_elastic_group_buys_its_on_demand_base_first():
    [group] = plan({**BASE, "market": {"type": "mixed", "on_demand_base": 1}}).groups
    cost = elastic_cost(group)
    assert cost is not None and group.price.on_demand is not None and group.price.spot is not None
    assert cost.usd_per_node_hour == round(group.price.on_demand, 2)
    assert cost.full_usd_per_hour == round(group.price.on_demand + 3 * group.price.spot, 2)
